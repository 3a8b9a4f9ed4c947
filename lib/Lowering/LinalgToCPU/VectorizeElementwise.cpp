//===- VectorizeElementwise.cpp - kiln-vectorize-elementwise --------------===//
//
//   linalg.generic {parallel x3} ins(%x: memref<16x34x34xf32>, %b: memref<16xf32>)
//                                outs(%y: memref<16x34x34xf32>)
// =>
//   for i, j:  for k in chunks of 16 (the last one masked):
//     y[i, j, k..] = body(x[i, j, k..], broadcast(b[i]))       (vectors)
//
// An elementwise op on memrefs (a generic, a fill, a copy: padding, an
// epilogue kernel formation left on its own, a transpose keeping rows whole) runs along its innermost loop
// in vectors: operands contiguous along that loop are loaded as rows, the
// others are read once per row and broadcast. Left to LLVM, these nests
// unroll their short innermost loop and vectorize an outer one instead,
// with gathers and scatters (or element-by-element inserts), an order of
// magnitude slower. An op over whole contiguous buffers is one long row of
// the flattened buffers. Ops whose innermost loop strides through some
// operand (a transpose), and rows longer than 64 elements of strided views
// (LLVM vectorizes along those, interleaved), are left as they are. Rows
// of a length known at run time (attention's keys) run as whole vectors
// and one masked to the row's end.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Passes.h"
#include "kiln/Lowering/VectorRows.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNVECTORIZEELEMENTWISE
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Rows shorter than kMinRow stay scalar: a vector would be mostly mask.
/// Rows longer than kMaxRow are left to LLVM, which vectorizes (and
/// interleaves) a long innermost loop well; it is the short ones, fully
/// unrolled, that make it vectorize the wrong loop.
constexpr int64_t kMinRow = 4, kMaxRow = 64;

/// The widest element bits among the op's memref operands, or 0 when some
/// operand can't be read as rows along the innermost loop `inner`.
unsigned rowElementBits(linalg::LinalgOp op, unsigned inner, bool dynamicRows) {
  unsigned bits = 0;
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type) {
      if (map.getNumResults()) // a scalar operand must be used as one
        return 0;
      continue;
    }
    unsigned elemBits = type.getElementTypeBitWidth();
    // Rows of a static length; the dimensions around them may be dynamic
    // (a batch: the outer loops then run to their sizes at run time).
    bool staticRows = type.getRank() == 0 || !type.isDynamicDim(type.getRank() - 1);
    if ((!staticRows && !dynamicRows) || elemBits < 8 || elemBits % 8 ||
        !map.isProjectedPermutation())
      return 0;
    bool alongRows = map.isFunctionOfDim(inner);
    if (alongRows) {
      auto last = dyn_cast<AffineDimExpr>(map.getResults().back());
      if (!last || last.getPosition() != inner || !type.isLastDimUnitStride())
        return 0;
    } else if (op.isDpsInit(&operand)) {
      return 0; // every row would write the same elements
    }
    bits = std::max(bits, elemBits);
  }
  return bits;
}

/// The op seen as rows: each operand's value and indexing map, the loop
/// ranges (the innermost along the rows).
struct RowView {
  SmallVector<Value> values;
  SmallVector<AffineMap> maps;
  SmallVector<int64_t> ranges;
};

/// When every operand is a whole contiguous buffer indexed by the loops in
/// order (or a scalar), the op is one long row over the flattened buffers:
/// no masked row ends, and a fill or copy of a tensor is one vector loop.
bool isFlat(linalg::LinalgOp op) {
  if (op.getNumLoops() < 2 || llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic))
    return false;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (type && (!op.getMatchingIndexingMap(&operand).isIdentity() ||
                 !type.getLayout().isIdentity()))
      return false;
  }
  return true;
}

/// The flat view of an op isFlat accepts: its buffers collapsed to 1-D.
RowView flatView(PatternRewriter &b, linalg::GenericOp op) {
  int64_t total = 1;
  for (int64_t r : op.getStaticLoopRanges())
    total *= r;
  RowView view;
  view.ranges = {total};
  MLIRContext *ctx = op.getContext();
  b.setInsertionPoint(op);
  for (OpOperand &operand : op->getOpOperands()) {
    Value v = operand.get();
    auto type = dyn_cast<MemRefType>(v.getType());
    if (!type) {
      view.values.push_back(v);
      view.maps.push_back(AffineMap::get(1, 0, ctx));
      continue;
    }
    ReassociationIndices all = llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
    view.values.push_back(
        memref::CollapseShapeOp::create(b, op.getLoc(), v, ArrayRef<ReassociationIndices>{all}));
    view.maps.push_back(AffineMap::getMultiDimIdentityMap(1, ctx));
  }
  return view;
}

class RowEmitter {
public:
  RowEmitter(PatternRewriter &b, linalg::GenericOp op, RowView view, int64_t lanes)
      : b(b), loc(op.getLoc()), op(op), view(std::move(view)), lanes(lanes) {}

  void emit() {
    SmallVector<Value> ivs;
    if (llvm::any_of(view.ranges, ShapedType::isDynamic))
      return emitDynamicOuter();
    emitOuter(view.ranges, ivs);
  }

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

  /// One parallel loop over every dimension but the innermost, then the
  /// rows.
  void emitOuter(ArrayRef<int64_t> ranges, SmallVector<Value> &ivs) {
    SmallVector<int64_t> steps(ranges.size() - 1, 1);
    rows::forParallel(b, loc, ranges.drop_back(), steps, [&](ArrayRef<Value> outer) {
      SmallVector<Value> at(outer);
      emitRow(at, ranges.back());
    });
  }

  /// Outer loops that run to sizes known at run time (the rows static).
  void emitDynamicOuter() {
    SmallVector<Value> sizes = rows::loopSizes(b, loc, op);
    rows::forParallelTo(b, loc, ArrayRef<Value>(sizes).drop_back(), [&](ArrayRef<Value> outer) {
      SmallVector<Value> at(outer);
      if (ShapedType::isDynamic(view.ranges.back()))
        emitDynamicRow(at, sizes.back());
      else
        emitRow(at, view.ranges.back());
    });
  }

  /// A row of a length known at run time (attention's keys): whole vectors
  /// in a loop, then, if any are left, one vector masked to them.
  void emitDynamicRow(SmallVector<Value> &ivs, Value width) {
    Value L = index(lanes);
    Value whole = arith::MulIOp::create(b, loc, arith::DivUIOp::create(b, loc, width, L), L);
    auto loop = scf::ForOp::create(b, loc, index(0), whole, L);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(loop.getBody());
      ivs.push_back(loop.getInductionVar());
      emitVector(ivs, lanes);
      ivs.pop_back();
    }
    Value rest = arith::SubIOp::create(b, loc, width, whole);
    Value any = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, rest, index(0));
    auto tail = scf::IfOp::create(b, loc, any, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&tail.getThenRegion().front());
    mask = vector::CreateMaskOp::create(b, loc, VectorType::get({lanes}, b.getI1Type()),
                                        ValueRange{rest});
    ivs.push_back(whole);
    emitVector(ivs, lanes);
    ivs.pop_back();
    mask = Value();
  }

  /// The row at `ivs`: whole vectors in a loop (four per iteration on long
  /// rows, for independent work in flight), the rest unrolled, the last one
  /// masked.
  void emitRow(SmallVector<Value> &ivs, int64_t width) {
    int64_t unroll = width >= 8 * lanes ? 4 : 1, step = unroll * lanes;
    int64_t looped = width / step * step;
    if (looped == width && unroll == 1)
      looped -= step; // the last vector is emitted after the loop
    if (looped > 0) {
      // Independent chunks: a flattened buffer's one row may be split over
      // the thread pool.
      auto loop = scf::ParallelOp::create(b, loc, ValueRange{index(0)}, ValueRange{index(looped)},
                                          ValueRange{index(step)});
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPoint(loop.getBody()->getTerminator());
      for (int64_t u = 0; u < unroll; ++u) {
        Value at = loop.getInductionVars()[0];
        if (u)
          at = arith::AddIOp::create(b, loc, at, index(u * lanes));
        ivs.push_back(at);
        emitVector(ivs, lanes);
        ivs.pop_back();
      }
    }
    for (int64_t at = std::max<int64_t>(looped, 0); at < width; at += lanes) {
      ivs.push_back(index(at));
      emitVector(ivs, std::min(lanes, width - at));
      ivs.pop_back();
    }
  }

  SmallVector<Value> indicesOf(AffineMap map, ArrayRef<Value> ivs) {
    return llvm::map_to_vector(map.getResults(), [&](AffineExpr e) {
      return ivs[cast<AffineDimExpr>(e).getPosition()];
    });
  }

  void emitVector(ArrayRef<Value> ivs, int64_t valid) {
    unsigned inner = ivs.size() - 1;
    Block &body = op.getRegion().front();
    SmallVector<Value> args;
    for (OpOperand &operand : op->getOpOperands()) {
      unsigned i = operand.getOperandNumber();
      BlockArgument arg = body.getArgument(i);
      auto vecType = VectorType::get({lanes}, arg.getType());
      if (op.isDpsInit(&operand) && arg.use_empty()) {
        args.push_back(arith::ConstantOp::create(b, loc, vecType, b.getZeroAttr(vecType)));
        continue;
      }
      Value v = view.values[i];
      AffineMap map = view.maps[i];
      if (!isa<MemRefType>(v.getType())) {
        args.push_back(vector::BroadcastOp::create(b, loc, vecType, v));
      } else if (map.isFunctionOfDim(inner) && mask) {
        args.push_back(rows::maskedLoad(b, loc, v, indicesOf(map, ivs), mask));
      } else if (map.isFunctionOfDim(inner)) {
        args.push_back(rows::load(b, loc, v, indicesOf(map, ivs), lanes, valid));
      } else {
        Value x = memref::LoadOp::create(b, loc, v, indicesOf(map, ivs));
        args.push_back(vector::BroadcastOp::create(b, loc, vecType, x));
      }
    }
    SmallVector<Value> results = rows::applyBody(b, loc, body, args, lanes);
    for (auto [result, init] : llvm::zip(results, op.getDpsInitsMutable())) {
      unsigned i = init.getOperandNumber();
      if (mask)
        rows::maskedStore(b, loc, result, view.values[i], indicesOf(view.maps[i], ivs), mask);
      else
        rows::store(b, loc, result, view.values[i], indicesOf(view.maps[i], ivs), valid);
    }
  }

  PatternRewriter &b;
  Location loc;
  linalg::GenericOp op;
  RowView view;
  int64_t lanes;
  Value mask; // set while emitting a row's masked end known at run time
};

struct VectorizeRows : OpInterfaceRewritePattern<linalg::LinalgOp> {
  VectorizeRows(MLIRContext *ctx, unsigned vectorBits)
      : OpInterfaceRewritePattern(ctx), vectorBits(vectorBits) {}

  LogicalResult matchAndRewrite(linalg::LinalgOp op, PatternRewriter &rewriter) const override {
    if (!op.hasPureBufferSemantics() || op.getNumLoops() == 0 ||
        op.getNumLoops() != op.getNumParallelLoops() || op.hasIndexSemantics() ||
        op->getNumResults())
      return rewriter.notifyMatchFailure(op, "not an elementwise op on buffers");
    if (!isa<linalg::GenericOp, linalg::FillOp, linalg::CopyOp, linalg::MapOp,
             linalg::TransposeOp>(op))
      return rewriter.notifyMatchFailure(op, "not a generic, fill, copy, map or transpose");
    // A transpose that keeps the innermost dimension copies rows like any
    // copy; inside a kernel (a B packed into panels by its column tile) it
    // was left scalar. A kernel of its own is left to LLVM, which did
    // better (ResNet-50's run-time packs of 1x1 convolution images: 47 ->
    // 79 us as rows).
    bool transpose = isa<linalg::TransposeOp>(op);
    if (transpose && !op->getParentOfType<scf::ParallelOp>())
      return rewriter.notifyMatchFailure(op, "a transpose kernel of its own");
    unsigned inner = op.getNumLoops() - 1;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    bool dynamicRows = ShapedType::isDynamic(ranges[inner]);
    if (!dynamicRows && ranges[inner] < kMinRow)
      return rewriter.notifyMatchFailure(op, "rows too short");
    unsigned bits = rowElementBits(op, inner, dynamicRows);
    if (!bits)
      return rewriter.notifyMatchFailure(op, "an operand is not read along rows");
    // Every check before generalizing: a pattern that fails must not have
    // changed the IR.
    Block &body = *op.getBlock();
    if (!rows::isElementwiseBody(body))
      return rewriter.notifyMatchFailure(op, "body not elementwise-mappable");
    // Integer division traps on the zeros a masked row end reads (and x86
    // has no vector integer division to gain from).
    if (body.walk([](Operation *inner) {
              return isa<arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp,
                         arith::CeilDivSIOp, arith::CeilDivUIOp, arith::FloorDivSIOp>(inner)
                         ? WalkResult::interrupt()
                         : WalkResult::advance();
            }).wasInterrupted())
      return rewriter.notifyMatchFailure(op, "integer division");
    bool flat = isFlat(op);
    if (!flat && !dynamicRows && ranges[inner] > kMaxRow) // a long row: LLVM vectorizes it well
      return rewriter.notifyMatchFailure(op, "long rows left to LLVM");
    auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
    if (!generic) {
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::GenericOp> g = linalg::generalizeNamedOp(rewriter, op);
      if (failed(g))
        return failure();
      generic = *g; // `op` is erased from here on
      if (transpose) {
        FailureOr<linalg::GenericOp> inOrder = sourceOrder(rewriter, generic);
        if (failed(inOrder))
          return failure();
        generic = *inOrder;
        ranges = generic.getStaticLoopRanges();
      }
    }
    std::optional<RowView> view;
    if (flat)
      view = flatView(rewriter, generic);
    else
      view = RowView{llvm::to_vector(generic->getOperands()), generic.getIndexingMapsArray(),
                     ranges};
    int64_t lanes = 1;
    while ((dynamicRows || lanes < view->ranges.back()) && lanes * bits < vectorBits)
      lanes *= 2;
    rewriter.setInsertionPoint(generic);
    RowEmitter(rewriter, generic, std::move(*view), lanes).emit();
    rewriter.eraseOp(generic);
    return success();
  }

  /// A transpose's loops in the order of its source's dimensions: it
  /// reads the source row after row, each row's vectors in turn, and
  /// scatters the rows into the destination. A 1x1 convolution's column
  /// tile packs its panel [K, 2, 16] -> [2, K, 16] from an image whose
  /// rows are 12 KB apart: in the destination's order it read one line of
  /// each of the K rows, then the next line of each (two passes over K
  /// pages); in the source's order both lines of a row at once.
  /// ResNet-50's 256 -> 64 channel 1x1 convolution at 56x56 on one SPR
  /// core: 1.03 -> 0.83 ms.
  static FailureOr<linalg::GenericOp> sourceOrder(PatternRewriter &rewriter,
                                                  linalg::GenericOp generic) {
    AffineMap in = generic.getMatchingIndexingMap(generic.getDpsInputOperand(0));
    SmallVector<unsigned> order;
    for (AffineExpr e : in.getResults())
      order.push_back(cast<AffineDimExpr>(e).getPosition());
    if (llvm::is_sorted(order))
      return generic;
    return linalg::interchangeGenericOp(rewriter, generic, order);
  }

  unsigned vectorBits;
};

struct KilnVectorizeElementwisePass final
    : impl::KilnVectorizeElementwiseBase<KilnVectorizeElementwisePass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<VectorizeRows>(&getContext(), vectorBits);
    rows::populateRowReductionPatterns(patterns, vectorBits);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      getOperation().emitError("kiln-vectorize-elementwise: rewriting did not converge");
      return signalPassFailure();
    }
  }
};

} // namespace
} // namespace kiln

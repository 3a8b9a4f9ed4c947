//===- VectorizeReductions.cpp - row reductions in vector accumulators ----===//
//
//   linalg.generic {parallel, reduction} ins(%x: memref<R x 1024>) outs(%s: memref<R>)
//     ^(%a, %acc): %e = exp(%a); %y = addf %acc, %e
// =>
//   for r:  acc[0..3] = splat(-0.0)
//           for k in chunks of 4 x 16:  acc[u] = acc[u] + exp(x[r, k + 16u ..])
//           (the row's tail masked to the identity)
//           s[r] = reduce<add>(acc[0] + acc[1] + acc[2] + acc[3], s[r])
//
// Lowered to loops, a row reduction (layer-norm's mean and variance,
// softmax's max and sum) is one chain of dependent scalar additions: LLVM
// may not reassociate them, so it neither vectorizes nor overlaps them, at
// one add per 3-4 cycles. Here the row is reduced into four independent
// vector accumulators and combined once at its end: the sum's order changes
// (as in every vectorized runtime: onnxruntime, PyTorch), its value only by
// rounding. Part of kiln-vectorize-elementwise.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/VectorRows.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

using namespace mlir;

namespace kiln {
namespace {

/// Rows shorter than this stay scalar.
constexpr int64_t kMinReductionRow = 16;

/// The vector combining kind of a reduction's combiner and its identity.
struct Combiner {
  Operation *op;
  vector::CombiningKind kind;
  double identity;
};

std::optional<Combiner> matchCombiner(linalg::GenericOp g) {
  Block &body = g.getRegion().front();
  Value yielded = body.getTerminator()->getOperand(0);
  Operation *op = yielded.getDefiningOp();
  BlockArgument out = g.getRegionOutputArgs()[0];
  if (!op || op->getNumOperands() != 2 || op->getBlock() != &body ||
      !llvm::is_contained(op->getOperands(), out) || !out.hasOneUse())
    return std::nullopt;
  double inf = std::numeric_limits<double>::infinity();
  // -0.0 is exact for addition (x + -0 == x, including x = -0).
  if (isa<arith::AddFOp>(op))
    return Combiner{op, vector::CombiningKind::ADD, -0.0};
  if (isa<arith::MulFOp>(op))
    return Combiner{op, vector::CombiningKind::MUL, 1.0};
  if (isa<arith::MaximumFOp>(op))
    return Combiner{op, vector::CombiningKind::MAXIMUMF, -inf};
  if (isa<arith::MinimumFOp>(op))
    return Combiner{op, vector::CombiningKind::MINIMUMF, inf};
  if (isa<arith::MaxNumFOp>(op))
    return Combiner{op, vector::CombiningKind::MAXNUMF, -inf};
  if (isa<arith::MinNumFOp>(op))
    return Combiner{op, vector::CombiningKind::MINNUMF, inf};
  return std::nullopt;
}

/// The output a float buffer indexed by the rows, the inputs read along
/// them (contiguous) or per row; static unless sizes are known at run time.
LogicalResult checkOperands(linalg::GenericOp g, PatternRewriter &b, unsigned inner,
                            bool dynamic) {
  Value out = g.getDpsInits()[0];
  auto outType = dyn_cast<MemRefType>(out.getType());
  Type elem = outType ? outType.getElementType() : Type();
  if (!outType || (!dynamic && !outType.hasStaticShape()) || !isa<Float32Type, Float64Type>(elem) ||
      g.getMatchingIndexingMap(g.getDpsInitOperand(0)).isFunctionOfDim(inner) ||
      !g.getMatchingIndexingMap(g.getDpsInitOperand(0)).isProjectedPermutation())
    return b.notifyMatchFailure(g, "output not a float buffer indexed by the rows");
  for (OpOperand *in : g.getDpsInputOperands()) {
    auto t = dyn_cast<MemRefType>(in->get().getType());
    AffineMap map = g.getMatchingIndexingMap(in);
    if (!t || (!dynamic && !t.hasStaticShape()) || !map.isProjectedPermutation() ||
        t.getElementTypeBitWidth() < 8)
      return b.notifyMatchFailure(g, "input not a static buffer");
    if (map.isFunctionOfDim(inner)) {
      auto last = dyn_cast<AffineDimExpr>(map.getResults().back());
      if (!last || last.getPosition() != inner || !t.isLastDimUnitStride())
        return b.notifyMatchFailure(g, "input not contiguous along the row");
    }
  }
  return success();
}

/// `body` at every row of `g` (its loops before `inner`), in one parallel
/// loop: the rows are independent. Static bounds where they are known.
void forEachRow(PatternRewriter &b, linalg::GenericOp g, unsigned inner,
                function_ref<void(ArrayRef<Value>)> body) {
  Location loc = g.getLoc();
  SmallVector<int64_t> ranges = g.getStaticLoopRanges();
  if (llvm::any_of(ArrayRef<int64_t>(ranges).take_front(inner), ShapedType::isDynamic)) {
    SmallVector<Value> sizes = rows::loopSizes(b, loc, g);
    rows::forParallelTo(b, loc, ArrayRef<Value>(sizes).take_front(inner), body);
    return;
  }
  SmallVector<int64_t> steps(inner, 1);
  rows::forParallel(b, loc, ArrayRef<int64_t>(ranges).take_front(inner), steps, body);
}

struct VectorizeRowReduction : OpRewritePattern<linalg::GenericOp> {
  VectorizeRowReduction(MLIRContext *ctx, unsigned vectorBits)
      : OpRewritePattern(ctx), vectorBits(vectorBits) {}

  LogicalResult matchAndRewrite(linalg::GenericOp g, PatternRewriter &b) const override {
    unsigned loops = g.getNumLoops(), inner = loops - 1;
    if (!g.hasPureBufferSemantics() || g.getNumDpsInits() != 1 || loops == 0 ||
        g.getNumReductionLoops() != 1 || g.getIteratorTypesArray()[inner] != utils::IteratorType::reduction ||
        g.hasIndexSemantics())
      return b.notifyMatchFailure(g, "not a reduction along the innermost loop");
    SmallVector<int64_t> ranges = g.getStaticLoopRanges();
    // Sizes known at run time (attention's rows of keys) take the dynamic
    // form below; a static row must be long enough to be worth vectors.
    bool dynamic = llvm::any_of(ranges, ShapedType::isDynamic);
    // A row of a static length takes the static form under a dynamic batch
    // too, so a dynamic artifact sums in a static one's order, bit for bit.
    bool dynamicRow = ShapedType::isDynamic(ranges[inner]);
    if (!dynamicRow && ranges[inner] < kMinReductionRow)
      return b.notifyMatchFailure(g, "short rows");
    if (failed(checkOperands(g, b, inner, dynamic)))
      return failure();
    Value out = g.getDpsInits()[0];
    Type elem = cast<MemRefType>(out.getType()).getElementType();
    std::optional<Combiner> combiner = matchCombiner(g);
    if (!combiner || !rows::isElementwiseBody(g.getRegion().front()))
      return b.notifyMatchFailure(g, "not an elementwise body ending in a combiner");

    Location loc = g.getLoc();
    int64_t lanes = std::max<int64_t>(vectorBits / elem.getIntOrFloatBitWidth(), 1);
    auto vec = VectorType::get({lanes}, elem);
    Value identity = arith::ConstantOp::create(
        b, loc, vec, DenseElementsAttr::get(vec, b.getFloatAttr(elem, combiner->identity)));
    auto index = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
    Block &body = g.getRegion().front();

    // The body on the vectors at column `k` of the row at `ivs`, the
    // accumulator argument bound to the identity: the element's term.
    // (A mask known at run time replaces `valid` when set.)
    Value dynMask;
    auto term = [&](SmallVector<Value> &ivs, Value k, int64_t valid) {
      ivs.push_back(k);
      SmallVector<Value> args;
      for (OpOperand *in : g.getDpsInputOperands()) {
        AffineMap map = g.getMatchingIndexingMap(in);
        SmallVector<Value> at = llvm::map_to_vector(map.getResults(), [&](AffineExpr e) {
          return ivs[cast<AffineDimExpr>(e).getPosition()];
        });
        auto argVec = VectorType::get({lanes}, cast<MemRefType>(in->get().getType()).getElementType());
        if (map.isFunctionOfDim(inner) && dynMask)
          args.push_back(rows::maskedLoad(b, loc, in->get(), at, dynMask));
        else if (map.isFunctionOfDim(inner))
          args.push_back(rows::load(b, loc, in->get(), at, lanes, valid));
        else
          args.push_back(vector::BroadcastOp::create(
              b, loc, argVec, memref::LoadOp::create(b, loc, in->get(), at)));
      }
      args.push_back(identity);
      ivs.pop_back();
      Value y = rows::applyBody(b, loc, body, args, lanes)[0];
      if (dynMask)
        return arith::SelectOp::create(b, loc, dynMask, y, identity).getResult();
      if (valid < lanes) { // lanes past the row's end contribute nothing
        Value mask = vector::ConstantMaskOp::create(
            b, loc, VectorType::get({lanes}, b.getI1Type()), ArrayRef<int64_t>{valid});
        y = arith::SelectOp::create(b, loc, mask, y, identity);
      }
      return y;
    };
    auto combine = [&](Value x, Value y) -> Value {
      OperationState state(loc, combiner->op->getName().getStringRef(), ValueRange{x, y},
                           TypeRange{x.getType()}, combiner->op->getAttrs());
      return b.create(state)->getResult(0);
    };
    // `unroll` accumulators over [lb, ub); then the row's total stored
    // with the output's old value.
    auto unrolled = [&](SmallVector<Value> &ivs, int64_t unroll, Value lb, Value ub,
                        Value step) {
      SmallVector<Value> acc(unroll, identity);
      auto loop = scf::ForOp::create(b, loc, lb, ub, step, acc);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      SmallVector<Value> next;
      for (int64_t u = 0; u < unroll; ++u) {
        Value k = u ? arith::AddIOp::create(b, loc, loop.getInductionVar(), index(u * lanes))
                          .getResult()
                    : loop.getInductionVar();
        next.push_back(combine(loop.getRegionIterArgs()[u], term(ivs, k, lanes)));
      }
      scf::YieldOp::create(b, loc, next);
      b.setInsertionPointAfter(loop);
      return SmallVector<Value>(loop.getResults().begin(), loop.getResults().end());
    };
    auto store = [&](SmallVector<Value> &ivs, ArrayRef<Value> acc) {
      Value total = acc[0];
      for (Value a : acc.drop_front())
        total = combine(total, a);
      SmallVector<Value> outAt = llvm::map_to_vector(
          g.getMatchingIndexingMap(g.getDpsInitOperand(0)).getResults(),
          [&](AffineExpr e) { return ivs[cast<AffineDimExpr>(e).getPosition()]; });
      Value init = memref::LoadOp::create(b, loc, out, outAt);
      Value r = vector::ReductionOp::create(b, loc, combiner->kind, total, init);
      memref::StoreOp::create(b, loc, r, out, outAt);
    };
    b.setInsertionPoint(g);
    if (dynamicRow) {
      // Whole steps of 4 vectors, then one at a time masked to the row's end.
      SmallVector<Value> sizes = rows::loopSizes(b, loc, g);
      Value width = sizes[inner];
      auto row = [&](SmallVector<Value> &ivs) {
        Value step = index(4 * lanes);
        Value looped =
            arith::MulIOp::create(b, loc, arith::DivUIOp::create(b, loc, width, step), step);
        SmallVector<Value> acc = unrolled(ivs, 4, index(0), looped, step);
        auto tail = scf::ForOp::create(b, loc, looped, width, index(lanes), ValueRange{acc[0]});
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(tail.getBody());
          Value k = tail.getInductionVar();
          dynMask = vector::CreateMaskOp::create(
              b, loc, VectorType::get({lanes}, b.getI1Type()),
              ValueRange{arith::SubIOp::create(b, loc, width, k).getResult()});
          Value t = term(ivs, k, lanes);
          dynMask = Value();
          scf::YieldOp::create(b, loc, combine(tail.getRegionIterArgs()[0], t));
        }
        acc[0] = tail.getResult(0);
        store(ivs, acc);
      };
      forEachRow(b, g, inner, [&](ArrayRef<Value> outer) {
        SmallVector<Value> ivs(outer);
        row(ivs);
      });
      b.eraseOp(g);
      return success();
    }
    int64_t width = ranges[inner];
    int64_t unroll = width >= 4 * lanes ? 4 : 1, step = unroll * lanes;
    int64_t looped = width / step * step;
    auto emit = [&](SmallVector<Value> &ivs) {
      SmallVector<Value> acc(unroll, identity);
      if (looped > 0)
        acc = unrolled(ivs, unroll, index(0), index(looped), index(step));
      // The tail into the first accumulator, as the dynamic form's.
      for (int64_t at = looped; at < width; at += lanes)
        acc[0] = combine(acc[0], term(ivs, index(at), std::min(lanes, width - at)));
      store(ivs, acc);
    };
    forEachRow(b, g, inner, [&](ArrayRef<Value> outer) {
      SmallVector<Value> ivs(outer);
      emit(ivs);
    });
    b.eraseOp(g);
    return success();
  }

  unsigned vectorBits;
};

} // namespace

void rows::populateRowReductionPatterns(RewritePatternSet &patterns, unsigned vectorBits) {
  patterns.add<VectorizeRowReduction>(patterns.getContext(), vectorBits);
}

} // namespace kiln

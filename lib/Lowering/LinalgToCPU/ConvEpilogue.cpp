//===- ConvEpilogue.cpp - shared pieces of the conv and matmul tiles ------===//
//
// The epilogue matching and application, and the (c, kh) loop nest, that
// kiln-vectorize-conv's two tiles and kiln-vectorize-matmul share
// (ConvEpilogue.h).
//
//===----------------------------------------------------------------------===//

#include "ConvEpilogue.h"
#include "kiln/Lowering/VectorRows.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace kiln {

namespace {

/// f32 (or i32: an 8-bit product's sums) with unit-stride rows of a
/// static length (the leading dimensions may be dynamic: a matmul's rows
/// known at run time).
bool isStatic32Bit(Value v) {
  auto t = dyn_cast<MemRefType>(v.getType());
  return t && (t.getElementType().isF32() || t.getElementType().isInteger(32)) &&
         (t.getRank() == 0 || (t.isLastDimUnitStride() && !t.isDynamicDim(t.getRank() - 1)));
}

} // namespace

Value viewRoot(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<memref::SubViewOp, memref::ExpandShapeOp, memref::CollapseShapeOp, memref::CastOp>(
            def))
      break;
    v = def->getOperand(0);
  }
  return v;
}

std::optional<Epilogue> matchEpilogue(linalg::LinalgOp conv, bool columnVectors) {
  Value acc = conv.getDpsInits()[0];
  // Past the views of the epilogue's operands, and the small ops computing
  // them that do not touch the product's operands (an 8-bit product's zero
  // point times its weights' column sums): the tile is emitted where the
  // epilogue is, after them.
  auto independent = [&](Operation *op) {
    auto l = dyn_cast<linalg::LinalgOp>(op);
    if (!l || !l.hasPureBufferSemantics())
      return false;
    for (Value v : l.getDpsInits())
      if (!(v.getDefiningOp<memref::AllocaOp>() || v.getDefiningOp<memref::AllocOp>()) ||
          llvm::any_of(conv->getOperands(), [&](Value c) { return viewRoot(c) == v; }))
        return false;
    return llvm::none_of(op->getOperands(), [&](Value v) { return viewRoot(v) == viewRoot(acc); });
  };
  Operation *next = conv->getNextNode();
  while (next && (isa<memref::SubViewOp, memref::ExpandShapeOp, memref::CollapseShapeOp,
                      arith::ConstantOp, memref::AllocaOp>(next) ||
                  independent(next)))
    next = next->getNextNode();
  auto g = dyn_cast_or_null<linalg::GenericOp>(next);
  auto accType = dyn_cast<MemRefType>(acc.getType());
  if (!g || !accType || !g.hasPureBufferSemantics() || g.getNumDpsInits() != 1 ||
      g.getNumLoops() != accType.getRank() || g.getNumParallelLoops() != accType.getRank() ||
      g.hasIndexSemantics() || accType.getRank() == 0)
    return std::nullopt;
  unsigned columns = accType.getRank() - 1;
  OpOperand *init = g.getDpsInitOperand(0);
  auto outType = dyn_cast<MemRefType>(init->get().getType());
  if (!outType || outType.getShape() != accType.getShape() || !isStatic32Bit(init->get()) ||
      !g.getMatchingIndexingMap(init).isIdentity() ||
      !g.getRegionOutputArgs()[0].use_empty() || init->get() == acc)
    return std::nullopt;
  Epilogue e{g, 0, std::nullopt};
  bool reads = false;
  for (OpOperand *in : g.getDpsInputOperands()) {
    AffineMap map = g.getMatchingIndexingMap(in);
    if (!isStatic32Bit(in->get()) || !map.isProjectedPermutation())
      return std::nullopt;
    bool sameShape = cast<MemRefType>(in->get().getType()).getShape() == accType.getShape();
    if (in->get() == acc) {
      if (!map.isIdentity() || reads)
        return std::nullopt;
      reads = true;
      e.accInput = in->getOperandNumber();
    } else if (!(map.isIdentity() && sameShape) && map.isFunctionOfDim(columns) &&
               !(columnVectors && map.getResults().back() == getAffineDimExpr(columns, g.getContext()))) {
      return std::nullopt; // read along the columns other than in place
    }
  }
  if (!reads)
    return std::nullopt;
  if (!rows::isElementwiseBody(g.getRegion().front()))
    return std::nullopt;
  // The temporary must be for the epilogue alone: written by its fill and
  // the convolution, read by the epilogue.
  linalg::FillOp fill;
  for (Operation *user : acc.getUsers()) {
    if (user == conv.getOperation() || user == g.getOperation() ||
        isa<memref::DeallocOp>(user))
      continue;
    auto f = dyn_cast<linalg::FillOp>(user);
    if (!f || f->getNextNode() != conv.getOperation() || fill)
      return std::nullopt;
    fill = f;
  }
  if (!acc.getDefiningOp<memref::AllocaOp>() && !acc.getDefiningOp<memref::AllocOp>())
    return std::nullopt;
  if (fill) {
    if (auto c = fill.getInputs()[0].getDefiningOp<arith::ConstantOp>()) {
      if (auto f = dyn_cast<FloatAttr>(c.getValue()))
        e.fill = f.getValueAsDouble();
      else if (auto i = dyn_cast<IntegerAttr>(c.getValue()); i && i.getType().isInteger(32))
        e.fill = (double)i.getInt();
    }
  }
  if (fill && !e.fill)
    return std::nullopt;
  return e;
}

Value applyEpilogue(OpBuilder &b, Location loc, const Epilogue &epilogue, Value acc,
                    llvm::function_ref<Value(OpOperand *)> input) {
  linalg::GenericOp g = epilogue.op;
  SmallVector<Value> args;
  for (OpOperand *operand : g.getDpsInputOperands())
    args.push_back(operand->getOperandNumber() == epilogue.accInput ? acc : input(operand));
  args.push_back(acc); // the output's argument: unused (matchEpilogue checks)
  int64_t lanes = cast<VectorType>(acc.getType()).getNumElements();
  return rows::applyBody(b, loc, g.getRegion().front(), args, lanes)[0];
}

Value applyEpilogue(OpBuilder &b, Location loc, const Epilogue &epilogue, Value acc,
                    ArrayRef<Value> idx, int64_t valid) {
  auto vec = cast<VectorType>(acc.getType());
  unsigned columns = idx.size() - 1;
  return applyEpilogue(b, loc, epilogue, acc, [&](OpOperand *operand) -> Value {
    linalg::GenericOp g = epilogue.op;
    AffineMap m = g.getMatchingIndexingMap(operand);
    SmallVector<Value> at;
    for (AffineExpr e : m.getResults())
      at.push_back(idx[cast<AffineDimExpr>(e).getPosition()]);
    if (m.isFunctionOfDim(columns))
      return rows::load(b, loc, operand->get(), at, vec.getNumElements(), valid);
    Value x = memref::LoadOp::create(b, loc, operand->get(), at);
    return vector::BroadcastOp::create(b, loc, vec, x);
  });
}

SmallVector<Value> reduceOverChannelRows(
    OpBuilder &b, Location loc, Value c0, int64_t count, int64_t KH, ValueRange inits,
    llvm::function_ref<SmallVector<Value>(Value, Value, ArrayRef<Value>)> step) {
  auto index = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
  auto cLoop = scf::ForOp::create(b, loc, index(0), index(count), index(1), inits);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(cLoop.getBody());
  Value c = arith::AddIOp::create(b, loc, c0, cLoop.getInductionVar());
  auto khLoop =
      scf::ForOp::create(b, loc, index(0), index(KH), index(1), cLoop.getRegionIterArgs());
  {
    OpBuilder::InsertionGuard g2(b);
    b.setInsertionPointToStart(khLoop.getBody());
    SmallVector<Value> acc(khLoop.getRegionIterArgs());
    scf::YieldOp::create(b, loc, step(c, khLoop.getInductionVar(), acc));
  }
  scf::YieldOp::create(b, loc, khLoop.getResults());
  return SmallVector<Value>(cLoop.getResults());
}

void eraseWithEpilogue(RewriterBase &rewriter, linalg::LinalgOp conv,
                       const std::optional<Epilogue> &epilogue) {
  Value acc = conv.getDpsInits()[0];
  rewriter.eraseOp(conv);
  if (!epilogue)
    return;
  rewriter.eraseOp(epilogue->op);
  for (Operation *user : llvm::make_early_inc_range(acc.getUsers()))
    if (isa<linalg::FillOp>(user))
      rewriter.eraseOp(user);
}

} // namespace kiln

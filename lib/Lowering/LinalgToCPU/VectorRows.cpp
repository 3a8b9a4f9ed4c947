//===- VectorRows.cpp - contiguous rows as vectors on the CPU -------------===//

#include "kiln/Lowering/VectorRows.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace kiln::rows {
namespace {
Value mask(OpBuilder &b, Location loc, int64_t lanes, int64_t valid) {
  return vector::ConstantMaskOp::create(b, loc, VectorType::get({lanes}, b.getI1Type()),
                                        ArrayRef<int64_t>{valid});
}
} // namespace

void forRange(OpBuilder &b, Location loc, int64_t extent, int64_t step,
              llvm::function_ref<void(Value)> body) {
  if (extent <= 0)
    return;
  auto index = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
  if (extent <= step) {
    body(index(0));
    return;
  }
  auto loop = scf::ForOp::create(b, loc, index(0), index(extent), index(step));
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(loop.getBody());
  body(loop.getInductionVar());
}

void forParallel(OpBuilder &b, Location loc, ArrayRef<int64_t> extents, ArrayRef<int64_t> steps,
                 llvm::function_ref<void(ArrayRef<Value>)> body) {
  auto index = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
  SmallVector<Value> lbs, ubs, st, ivs(extents.size());
  SmallVector<unsigned> looped;
  for (auto [d, extent] : llvm::enumerate(extents)) {
    if (extent <= 0)
      return;
    if (extent <= steps[d]) {
      ivs[d] = index(0);
      continue;
    }
    looped.push_back(d);
    lbs.push_back(index(0));
    ubs.push_back(index(extent));
    st.push_back(index(steps[d]));
  }
  if (looped.empty()) {
    body(ivs);
    return;
  }
  auto loop = scf::ParallelOp::create(b, loc, lbs, ubs, st);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  for (auto [i, d] : llvm::enumerate(looped))
    ivs[d] = loop.getInductionVars()[i];
  body(ivs);
}

SmallVector<Value> loopSizes(OpBuilder &b, Location loc, linalg::LinalgOp op) {
  SmallVector<Value> sizes;
  for (Range r : op.createLoopRanges(b, loc))
    sizes.push_back(getValueOrCreateConstantIndexOp(b, loc, r.size));
  return sizes;
}

void forParallelTo(OpBuilder &b, Location loc, ValueRange sizes,
                   llvm::function_ref<void(ArrayRef<Value>)> body) {
  if (sizes.empty()) {
    body({});
    return;
  }
  auto index = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
  SmallVector<Value> lbs(sizes.size(), index(0)), steps(sizes.size(), index(1));
  auto loop = scf::ParallelOp::create(b, loc, lbs, sizes, steps);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  SmallVector<Value> ivs(loop.getInductionVars());
  body(ivs);
}

Value load(OpBuilder &b, Location loc, Value base, ValueRange idx, int64_t lanes,
           int64_t valid) {
  auto type = VectorType::get({lanes}, cast<MemRefType>(base.getType()).getElementType());
  if (valid >= lanes)
    return vector::LoadOp::create(b, loc, type, base, idx);
  Value zero = arith::ConstantOp::create(b, loc, type, b.getZeroAttr(type));
  return vector::MaskedLoadOp::create(b, loc, type, base, idx, mask(b, loc, lanes, valid), zero);
}

void store(OpBuilder &b, Location loc, Value v, Value base, ValueRange idx, int64_t valid) {
  int64_t lanes = cast<VectorType>(v.getType()).getNumElements();
  if (valid >= lanes)
    vector::StoreOp::create(b, loc, v, base, idx);
  else
    vector::MaskedStoreOp::create(b, loc, base, idx, mask(b, loc, lanes, valid), v);
}

Value maskedLoad(OpBuilder &b, Location loc, Value base, ValueRange idx, Value mask) {
  auto type = VectorType::get(cast<VectorType>(mask.getType()).getShape(),
                              cast<MemRefType>(base.getType()).getElementType());
  Value zero = arith::ConstantOp::create(b, loc, type, b.getZeroAttr(type));
  return vector::MaskedLoadOp::create(b, loc, type, base, idx, mask, zero);
}

void maskedStore(OpBuilder &b, Location loc, Value v, Value base, ValueRange idx, Value mask) {
  vector::MaskedStoreOp::create(b, loc, base, idx, mask, v);
}

namespace {
/// A load of one element the same for every element of the body: its
/// indices (if any) come from outside it (a scale computed at run time,
/// fused in as a 0-d buffer: onnxruntime's dynamic quantization).
bool isInvariantLoad(Operation &op) {
  auto load = dyn_cast<memref::LoadOp>(op);
  return load && llvm::none_of(load->getOperands(), [&](Value v) {
           return v.getParentBlock() == op.getBlock();
         });
}
} // namespace

bool isElementwiseBody(Block &body) {
  for (Operation &op : body.without_terminator())
    if (!isInvariantLoad(op) &&
        (!OpTrait::hasElementwiseMappableTraits(&op) || op.getNumRegions() || !isPure(&op)))
      return false;
  return true;
}

void applyOps(OpBuilder &b, Location loc, llvm::iterator_range<Block::iterator> ops,
              IRMapping &map, int64_t lanes) {
  for (Operation &op : ops) {
    if (isInvariantLoad(op)) { // loaded once, in every lane
      Value x = b.clone(op)->getResult(0);
      map.map(op.getResult(0), vector::BroadcastOp::create(
                                   b, loc, VectorType::get({lanes}, x.getType()), x));
      continue;
    }
    SmallVector<Value> operands =
        llvm::map_to_vector(op.getOperands(), [&](Value v) { return lookupLanes(b, loc, map, v, lanes); });
    SmallVector<Type> types = llvm::map_to_vector(
        op.getResultTypes(), [&](Type t) -> Type { return VectorType::get({lanes}, t); });
    OperationState state(loc, op.getName().getStringRef(), operands, types, op.getAttrs());
    map.map(op.getResults(), b.create(state)->getResults());
  }
}

Value lookupLanes(OpBuilder &b, Location loc, IRMapping &map, Value v, int64_t lanes) {
  if (Value mapped = map.lookupOrNull(v))
    return mapped;
  // Defined outside the body: a scalar, the same in every lane.
  return vector::BroadcastOp::create(b, loc, VectorType::get({lanes}, v.getType()), v);
}

SmallVector<Value> applyBody(OpBuilder &b, Location loc, Block &body, ArrayRef<Value> args,
                             int64_t lanes) {
  IRMapping map;
  map.map(body.getArguments(), args);
  applyOps(b, loc, body.without_terminator(), map, lanes);
  return llvm::map_to_vector(body.getTerminator()->getOperands(),
                             [&](Value v) { return lookupLanes(b, loc, map, v, lanes); });
}

} // namespace kiln::rows

//===- LoopExtents.cpp - loop sizes known at run time in kernels -----------===//
//
// A dynamic model's row group (RowGroups.cpp) must know that two ops run
// over the same rows when their sizes are known only at run time: a size is
// named by what measures it (an input's dimension, an arena view's size
// operand), followed back through casts, views and reshapes that keep it.
// Two sizes with the same source are equal; any other two may differ.
// Inside a kernel the sizes are read again from its own buffers.
//
//===----------------------------------------------------------------------===//

#include "KernelFactory.h"
#include "kiln/Lowering/Host/DimBounds.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace kiln {

Extent valueExtent(Value v) {
  if (std::optional<int64_t> c = getConstantIntValue(v))
    return Extent{*c};
  if (auto dim = v.getDefiningOp<memref::DimOp>())
    if (std::optional<int64_t> d = dim.getConstantIndex())
      return dimExtent(dim.getSource(), *d);
  return Extent{ShapedType::kDynamic, v, -1};
}

Extent dimExtent(Value m, int64_t d) {
  auto type = cast<MemRefType>(m.getType());
  if (!type.isDynamicDim(d))
    return Extent{type.getDimSize(d)};
  // The dynamic sizes before `d`: the position of d's among the operands.
  auto dynamicIndex = [&](MemRefType t) {
    int64_t n = 0;
    for (int64_t i = 0; i < d; ++i)
      n += t.isDynamicDim(i);
    return n;
  };
  Operation *def = m.getDefiningOp();
  if (auto cast = dyn_cast_or_null<memref::CastOp>(def))
    return dimExtent(cast.getSource(), d);
  if (auto view = dyn_cast_or_null<memref::ViewOp>(def))
    return valueExtent(view.getSizes()[dynamicIndex(type)]);
  if (auto alloc = dyn_cast_or_null<memref::AllocOp>(def))
    return valueExtent(alloc.getDynamicSizes()[dynamicIndex(type)]);
  if (auto alloca = dyn_cast_or_null<memref::AllocaOp>(def))
    return valueExtent(alloca.getDynamicSizes()[dynamicIndex(type)]);
  if (auto expand = dyn_cast_or_null<memref::ExpandShapeOp>(def)) {
    OpFoldResult size = expand.getMixedOutputShape()[d];
    if (auto v = dyn_cast<Value>(size))
      return valueExtent(v);
  }
  if (auto collapse = dyn_cast_or_null<memref::CollapseShapeOp>(def)) {
    // A dimension collapsed from one dynamic one and static 1s is that one.
    ReassociationIndices group = collapse.getReassociationIndices()[d];
    auto srcType = collapse.getSrcType();
    int64_t only = -1, others = 0;
    for (int64_t s : group) {
      if (srcType.isDynamicDim(s))
        only = only < 0 ? s : -2;
      else
        others += srcType.getDimSize(s) != 1;
    }
    if (only >= 0 && others == 0)
      return dimExtent(collapse.getSrc(), only);
  }
  return Extent{ShapedType::kDynamic, m, d};
}

Extent loopExtent(linalg::LinalgOp op, unsigned loop) {
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType()))
      continue;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    for (auto [i, e] : llvm::enumerate(map.getResults()))
      if (auto dim = dyn_cast<AffineDimExpr>(e); dim && dim.getPosition() == loop)
        return dimExtent(operand.get(), i);
  }
  return Extent{op.getStaticLoopRanges()[loop]};
}

namespace {
using Key = std::pair<const void *, int64_t>;
Key keyOf(const Extent &e) {
  return e.dynamic() ? Key{e.source.getAsOpaquePointer(), e.dim} : Key{nullptr, e.size};
}
} // namespace

void SameExtents::add(linalg::LinalgOp op) {
  SmallVector<std::optional<Extent>> first(op.getNumLoops());
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType()))
      continue;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    for (auto [i, e] : llvm::enumerate(map.getResults())) {
      auto dim = dyn_cast<AffineDimExpr>(e);
      if (!dim)
        continue;
      Extent x = dimExtent(operand.get(), i);
      std::optional<Extent> &f = first[dim.getPosition()];
      if (!f)
        f = x;
      else
        unite(*f, x);
    }
  }
}

Key SameExtents::find(Key k) const {
  for (auto it = parent.find(k); it != parent.end() && it->second != k; it = parent.find(k))
    k = it->second;
  return k;
}

void SameExtents::unite(const Extent &a, const Extent &b) {
  Key x = find(keyOf(a)), y = find(keyOf(b));
  if (x == y)
    return;
  // A static size leads its class: two classes with different static
  // sizes would be a contradiction (never, in ops the verifier accepted).
  if (y.first == nullptr)
    std::swap(x, y);
  parent[y] = x;
  parent.try_emplace(x, x);
}

/// The largest loop `loop` of `op` can be: the tightest bound (the
/// inputs' declared maxima) of the buffers it indexes.
std::optional<int64_t> largestLoop(linalg::LinalgOp op, unsigned loop, ArrayAttr inputMax) {
  std::optional<int64_t> best;
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType()))
      continue;
    for (auto [i, e] : llvm::enumerate(op.getMatchingIndexingMap(&operand).getResults()))
      if (auto dim = dyn_cast<AffineDimExpr>(e); dim && dim.getPosition() == loop)
        if (auto range = dimRange(operand.get(), i, inputMax))
          best = std::min(best.value_or(range->second), range->second);
  }
  return best;
}

bool SameExtents::equal(const Extent &a, const Extent &b) const {
  return a == b || find(keyOf(a)) == find(keyOf(b));
}

std::optional<int64_t> SameExtents::bound(const Extent &e, ArrayAttr inputMax) const {
  if (!e.dynamic())
    return e.size;
  // The tightest bound of any extent known equal (an output's size has
  // none of its own; the input it equals does).
  auto boundOf = [&](Key k) -> std::optional<int64_t> {
    if (!k.first)
      return k.second;
    Value v = Value::getFromOpaquePointer(k.first);
    auto range = k.second >= 0 ? dimRange(v, k.second, inputMax) : indexRange(v, inputMax);
    return range ? std::optional<int64_t>(range->second) : std::nullopt;
  };
  Key root = find(keyOf(e));
  std::optional<int64_t> best = boundOf(keyOf(e));
  for (auto &[k, p] : parent)
    if (find(k) == root)
      if (std::optional<int64_t> b = boundOf(k))
        best = std::min(best.value_or(*b), *b);
  return best;
}

namespace {
/// Whether dimension `da` of memref `a` and `db` of `b` are surely equal:
/// the same extent, sizes computed alike, or collapses of such.
bool sameDim(Value a, int64_t da, Value b, int64_t db, int depth) {
  Extent ea = dimExtent(a, da), eb = dimExtent(b, db);
  if (ea == eb)
    return true;
  if (!ea.dynamic() || !eb.dynamic() || depth == 0)
    return false;
  if (ea.dim < 0 && eb.dim < 0)
    return sameIndex(ea.source, eb.source, depth - 1);
  auto ca = ea.source.getDefiningOp<memref::CollapseShapeOp>();
  auto cb = eb.source.getDefiningOp<memref::CollapseShapeOp>();
  if (!ca || !cb)
    return false;
  ReassociationIndices ga = ca.getReassociationIndices()[ea.dim];
  ReassociationIndices gb = cb.getReassociationIndices()[eb.dim];
  if (ga.size() != gb.size())
    return false;
  for (auto [x, y] : llvm::zip(ga, gb))
    if (!sameDim(ca.getSrc(), x, cb.getSrc(), y, depth - 1))
      return false;
  return true;
}

/// The factors of a product of index multiplications (`v` itself when
/// it is none).
void factorsOf(Value v, SmallVectorImpl<Value> &out) {
  if (auto mul = v.getDefiningOp<arith::MulIOp>()) {
    factorsOf(mul.getLhs(), out);
    factorsOf(mul.getRhs(), out);
    return;
  }
  out.push_back(v);
}
} // namespace

bool sameIndex(Value a, Value b, int depth) {
  if (a == b || valueExtent(a) == valueExtent(b))
    return true;
  // Products in any order (a nest's trip counts, its loops permuted).
  if (a.getDefiningOp<arith::MulIOp>() && b.getDefiningOp<arith::MulIOp>() && depth > 0) {
    SmallVector<Value> fa, fb;
    factorsOf(a, fa);
    factorsOf(b, fb);
    if (fa.size() != fb.size())
      return false;
    SmallVector<bool> used(fb.size());
    for (Value x : fa) {
      auto it = llvm::find_if(llvm::seq<size_t>(0, fb.size()), [&](size_t k) {
        return !used[k] && sameIndex(x, fb[k], depth - 1);
      });
      if (it == llvm::seq<size_t>(0, fb.size()).end())
        return false;
      used[*it] = true;
    }
    return true;
  }
  auto dimA = a.getDefiningOp<memref::DimOp>(), dimB = b.getDefiningOp<memref::DimOp>();
  if (dimA && dimB && dimA.getConstantIndex() && dimB.getConstantIndex())
    return sameDim(dimA.getSource(), *dimA.getConstantIndex(), dimB.getSource(),
                   *dimB.getConstantIndex(), depth);
  Operation *x = a.getDefiningOp(), *y = b.getDefiningOp();
  if (!x || !y || depth == 0 || x->getName() != y->getName() ||
      x->getAttrDictionary() != y->getAttrDictionary() ||
      x->getNumOperands() != y->getNumOperands() || x->getNumResults() != 1 ||
      y->getNumResults() != 1 || !isPure(x) || !isPure(y))
    return false;
  for (auto [u, v] : llvm::zip(x->getOperands(), y->getOperands()))
    if (!sameIndex(u, v, depth - 1))
      return false;
  return true;
}

SmallVector<Value> loopSizesIn(OpBuilder &b, Location loc, linalg::LinalgOp op, IRMapping &map) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<Value> sizes;
  for (auto [loop, r] : llvm::enumerate(ranges)) {
    if (!ShapedType::isDynamic(r)) {
      sizes.push_back(arith::ConstantIndexOp::create(b, loc, r));
      continue;
    }
    Value size;
    for (OpOperand &operand : op->getOpOperands()) {
      if (size || !isa<MemRefType>(operand.get().getType()))
        continue;
      AffineMap m = op.getMatchingIndexingMap(&operand);
      for (auto [i, e] : llvm::enumerate(m.getResults()))
        if (auto dim = dyn_cast<AffineDimExpr>(e); dim && dim.getPosition() == loop && !size)
          size = memref::DimOp::create(b, loc, map.lookupOrDefault(operand.get()), i);
    }
    assert(size && "a dynamic loop is some operand's dimension");
    sizes.push_back(size);
  }
  return sizes;
}

SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value linear, ArrayRef<Value> sizes) {
  SmallVector<Value> out(sizes.size());
  Value rest = linear;
  for (int64_t d = sizes.size() - 1; d >= 0; --d) {
    if (d == 0) {
      out[d] = rest;
      break;
    }
    out[d] = arith::RemUIOp::create(b, loc, rest, sizes[d]);
    rest = arith::DivUIOp::create(b, loc, rest, sizes[d]);
  }
  return out;
}

Value productOf(OpBuilder &b, Location loc, ArrayRef<Value> sizes) {
  // The static sizes folded into one constant (a row's 300 stays 300).
  int64_t known = 1;
  Value total;
  for (Value s : sizes) {
    if (std::optional<int64_t> c = getConstantIntValue(s))
      known *= *c;
    else
      total = total ? arith::MulIOp::create(b, loc, total, s).getResult() : s;
  }
  Value c = arith::ConstantIndexOp::create(b, loc, known);
  if (!total)
    return c;
  return known == 1 ? total : arith::MulIOp::create(b, loc, total, c).getResult();
}

} // namespace kiln

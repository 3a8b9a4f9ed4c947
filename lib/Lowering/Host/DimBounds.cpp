//===- DimBounds.cpp - the range of a size the host computes --------------===//

#include "kiln/Lowering/Host/DimBounds.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;

namespace kiln {
namespace {

/// [lo, hi] of an index value computed from the inputs' sizes.
using Interval = std::pair<int64_t, int64_t>;

std::optional<Interval> rangeOf(Value v, ArrayAttr inputMax, unsigned depth);

/// The range of dimension `d` of memref `m`: static, an input's (its
/// maximum from `inputMax`), an allocation's size, or through the views
/// between (reshapes, casts, subviews).
std::optional<Interval> dimRangeAt(Value m, int64_t d, ArrayAttr inputMax, unsigned depth) {
  auto type = dyn_cast<MemRefType>(m.getType());
  if (!type || d < 0 || d >= type.getRank() || depth > 32)
    return std::nullopt;
  if (!type.isDynamicDim(d))
    return Interval{type.getDimSize(d), type.getDimSize(d)};
  if (auto arg = dyn_cast<BlockArgument>(m)) {
    auto maxima = inputMax && arg.getArgNumber() < inputMax.size()
                      ? dyn_cast<DenseI64ArrayAttr>(inputMax[arg.getArgNumber()])
                      : nullptr;
    if (!maxima || d >= (int64_t)maxima.size() || maxima[d] < 0)
      return std::nullopt;
    return Interval{0, maxima[d]};
  }
  Operation *def = m.getDefiningOp();
  if (auto alloc = dyn_cast_or_null<memref::AllocOp>(def))
    return rangeOf(alloc.getDynamicSizes()[type.getDynamicDimIndex(d)], inputMax, depth + 1);
  if (auto view = dyn_cast_or_null<memref::ViewOp>(def)) // (an arena's, once planned)
    return rangeOf(view.getSizes()[type.getDynamicDimIndex(d)], inputMax, depth + 1);
  if (auto expand = dyn_cast_or_null<memref::ExpandShapeOp>(def)) {
    OpFoldResult size = expand.getMixedOutputShape()[d];
    if (auto c = getConstantIntValue(size))
      return Interval{*c, *c};
    return rangeOf(cast<Value>(size), inputMax, depth + 1);
  }
  if (auto collapse = dyn_cast_or_null<memref::CollapseShapeOp>(def)) {
    Interval product{1, 1};
    SmallVector<ReassociationIndices> groups = collapse.getReassociationIndices();
    for (int64_t s : groups[d]) {
      auto r = dimRangeAt(collapse.getSrc(), s, inputMax, depth + 1);
      if (!r || r->first < 0 || __builtin_mul_overflow(product.first, r->first, &product.first) ||
          __builtin_mul_overflow(product.second, r->second, &product.second))
        return std::nullopt;
    }
    return product;
  }
  if (auto subview = dyn_cast_or_null<memref::SubViewOp>(def)) {
    // Its sizes, rank-reduced dimensions dropped.
    llvm::SmallBitVector dropped = subview.getDroppedDims();
    int64_t seen = -1;
    for (auto [i, size] : llvm::enumerate(subview.getMixedSizes())) {
      if (dropped.test(i) || ++seen != d)
        continue;
      if (auto c = getConstantIntValue(size))
        return Interval{*c, *c};
      return rangeOf(cast<Value>(size), inputMax, depth + 1);
    }
    return std::nullopt;
  }
  if (isa_and_nonnull<memref::CastOp>(def))
    return dimRangeAt(def->getOperand(0), d, inputMax, depth + 1);
  return std::nullopt;
}

/// The range of affine expression `e` over operands of ranges `ranges`
/// (dims, then symbols): sums, products by a constant, and divisions of a
/// nonnegative value by a positive constant (a reified reshape's sizes).
std::optional<Interval> exprRange(AffineExpr e, unsigned numDims,
                                  ArrayRef<std::optional<Interval>> ranges) {
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return Interval{c.getValue(), c.getValue()};
  if (auto d = dyn_cast<AffineDimExpr>(e))
    return ranges[d.getPosition()];
  if (auto s = dyn_cast<AffineSymbolExpr>(e))
    return ranges[numDims + s.getPosition()];
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return std::nullopt;
  auto a = exprRange(bin.getLHS(), numDims, ranges), b = exprRange(bin.getRHS(), numDims, ranges);
  if (!a || !b)
    return std::nullopt;
  int64_t lo, hi;
  switch (e.getKind()) {
  case AffineExprKind::Add:
    if (__builtin_add_overflow(a->first, b->first, &lo) ||
        __builtin_add_overflow(a->second, b->second, &hi))
      return std::nullopt;
    return Interval{lo, hi};
  case AffineExprKind::Mul:
    if (a->first < 0 || b->first < 0 || __builtin_mul_overflow(a->first, b->first, &lo) ||
        __builtin_mul_overflow(a->second, b->second, &hi))
      return std::nullopt;
    return Interval{lo, hi};
  case AffineExprKind::FloorDiv:
  case AffineExprKind::CeilDiv:
    if (a->first < 0 || b->first <= 0)
      return std::nullopt;
    return Interval{a->first / b->second, (a->second + b->first - 1) / b->first};
  default:
    return std::nullopt;
  }
}

/// The range of `v` on the host: constants, dimensions (dimRange), and
/// index arithmetic over them; nullopt when unbounded or unknown.
std::optional<Interval> rangeOf(Value v, ArrayAttr inputMax, unsigned depth) {
  if (depth > 32)
    return std::nullopt;
  auto sub = [&](Value w) { return rangeOf(w, inputMax, depth + 1); };
  if (auto c = getConstantIntValue(v))
    return Interval{*c, *c};
  Operation *def = v.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (auto dim = dyn_cast<memref::DimOp>(def)) {
    auto d = getConstantIntValue(dim.getIndex());
    return d ? dimRangeAt(dim.getSource(), *d, inputMax, depth + 1) : std::nullopt;
  }
  if (isa<arith::IndexCastOp, arith::IndexCastUIOp>(def))
    return sub(def->getOperand(0));
  if (auto apply = dyn_cast<affine::AffineApplyOp>(def)) {
    SmallVector<std::optional<Interval>> ranges;
    for (Value operand : apply.getMapOperands())
      ranges.push_back(sub(operand));
    AffineMap map = apply.getAffineMap();
    return exprRange(map.getResult(0), map.getNumDims(), ranges);
  }
  if (def->getNumOperands() != 2 || def->getNumResults() != 1)
    return std::nullopt;
  auto a = sub(def->getOperand(0)), b = sub(def->getOperand(1));
  if (!a || !b)
    return std::nullopt;
  int64_t lo, hi;
  bool overflow = false;
  if (isa<arith::AddIOp>(def)) {
    overflow = __builtin_add_overflow(a->first, b->first, &lo) ||
               __builtin_add_overflow(a->second, b->second, &hi);
  } else if (isa<arith::SubIOp>(def)) {
    overflow = __builtin_sub_overflow(a->first, b->second, &lo) ||
               __builtin_sub_overflow(a->second, b->first, &hi);
  } else if (isa<arith::MulIOp>(def) && a->first >= 0 && b->first >= 0) {
    overflow = __builtin_mul_overflow(a->first, b->first, &lo) ||
               __builtin_mul_overflow(a->second, b->second, &hi);
  } else if (isa<arith::DivUIOp, arith::DivSIOp, arith::CeilDivUIOp, arith::CeilDivSIOp>(def) &&
             a->first >= 0 && b->first > 0) {
    lo = a->first / b->second;
    hi = (a->second + b->first - 1) / b->first;
  } else if (isa<arith::MinSIOp, arith::MinUIOp>(def)) {
    lo = std::min(a->first, b->first), hi = std::min(a->second, b->second);
  } else if (isa<arith::MaxSIOp, arith::MaxUIOp>(def)) {
    lo = std::max(a->first, b->first), hi = std::max(a->second, b->second);
  } else {
    return std::nullopt;
  }
  if (overflow)
    return std::nullopt;
  return Interval{lo, hi};
}

} // namespace

std::optional<std::pair<int64_t, int64_t>> indexRange(Value v, ArrayAttr inputMax) {
  return rangeOf(v, inputMax, 0);
}

std::optional<std::pair<int64_t, int64_t>> dimRange(Value m, int64_t d, ArrayAttr inputMax) {
  return dimRangeAt(m, d, inputMax, 0);
}

} // namespace kiln

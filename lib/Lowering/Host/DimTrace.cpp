//===- DimTrace.cpp - what argument dimensions a dimension is -------------===//

#include "DimTrace.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

using namespace mlir;

namespace kiln {
namespace {

/// Where a walk back from a dimension ends: at an argument's dimension, at
/// a size value the IR computes, or nowhere (neither is set).
struct WalkEnd {
  BlockArgument arg;
  int64_t dim = 0;
  Value size;
  tensor::CollapseShapeOp collapse; // dimension `dim` merges a group
};

/// Follows dimension `d` of `v` back while it stays one dimension of one
/// value.
WalkEnd walkDim(Value v, int64_t d) {
  for (int steps = 0; steps < 10000; ++steps) {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return {arg, d, {}, {}};
    Operation *op = v.getDefiningOp();
    if (auto dps = dyn_cast<DestinationStyleOpInterface>(op)) {
      v = dps.getTiedOpOperand(cast<OpResult>(v))->get();
      continue;
    }
    if (auto cast = dyn_cast<tensor::CastOp>(op)) {
      v = cast.getSource();
      continue;
    }
    // A reshape's dimension that is a group of its own (a batch kept in
    // place) is the source's.
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
      auto group = collapse.getReassociationIndices()[d];
      if (group.size() != 1)
        return {{}, d, {}, collapse};
      v = collapse.getSrc();
      d = group[0];
      continue;
    }
    Value size;
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
      auto groups = expand.getReassociationIndices();
      auto it = llvm::find_if(groups, [&](const ReassociationIndices &g) {
        return llvm::is_contained(g, d);
      });
      if (it == groups.end())
        return {};
      if (it->size() == 1) {
        v = expand.getSrc();
        d = it - groups.begin();
        continue;
      }
      // One of a split group: the size the expansion was given.
      size = dyn_cast_if_present<Value>(expand.getMixedOutputShape()[d]);
    }
    // A slice's or tensor.empty's dimension whose size is a tensor.dim
    // (of the slice's source, kept whole, or of another value) is that
    // dimension; any other size value ends the walk.
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op);
        slice && slice.getSourceType().getRank() == slice.getType().getRank())
      size = dyn_cast_if_present<Value>(slice.getMixedSizes()[d]);
    else if (auto empty = dyn_cast<tensor::EmptyOp>(op))
      size = empty.getDynamicSize(d);
    if (!size)
      return {};
    auto dim = size.getDefiningOp<tensor::DimOp>();
    std::optional<int64_t> index = dim ? dim.getConstantIndex() : std::nullopt;
    if (!index)
      return {{}, 0, size, {}};
    v = dim.getSource();
    d = *index;
  }
  return {};
}

std::optional<DimSum> sumOf(Value v, int64_t d, Block *entry, int depth);

/// out += coef * factors; false past int64 or 64 terms.
bool accumulate(DimSum &out, const std::vector<ArgDim> &factors, int64_t coef) {
  int64_t &c = out[factors];
  if (__builtin_add_overflow(c, coef, &c))
    return false;
  if (c == 0)
    out.erase(factors);
  return out.size() <= 64;
}

/// a * b; nothing past int64, 64 terms or 16 factors in a term.
std::optional<DimSum> multiply(const DimSum &a, const DimSum &b) {
  DimSum out;
  for (const auto &[fa, ca] : a)
    for (const auto &[fb, cb] : b) {
      std::vector<ArgDim> factors = fa;
      factors.insert(factors.end(), fb.begin(), fb.end());
      llvm::sort(factors);
      int64_t coef;
      if (factors.size() > 16 || __builtin_mul_overflow(ca, cb, &coef) ||
          !accumulate(out, factors, coef))
        return std::nullopt;
    }
  return out;
}

/// The polynomial an index value computes (depth: how far the recursion
/// went, bounded so that hostile IR cannot exhaust the stack).
std::optional<DimSum> sizeSum(Value size, Block *entry, int depth) {
  if (depth > 256)
    return std::nullopt;
  if (auto c = getConstantIntValue(size)) {
    DimSum sum;
    if (*c)
      sum[{}] = *c;
    return sum;
  }
  Operation *op = size.getDefiningOp();
  if (!op)
    return std::nullopt;
  if (auto dim = dyn_cast<tensor::DimOp>(op)) {
    auto index = dim.getConstantIndex();
    return index ? sumOf(dim.getSource(), *index, entry, depth + 1) : std::nullopt;
  }
  if (isa<arith::IndexCastOp, arith::IndexCastUIOp>(op))
    return sizeSum(op->getOperand(0), entry, depth + 1);
  if (!isa<arith::AddIOp, arith::SubIOp, arith::MulIOp>(op))
    return std::nullopt;
  auto lhs = sizeSum(op->getOperand(0), entry, depth + 1);
  auto rhs = lhs ? sizeSum(op->getOperand(1), entry, depth + 1) : std::nullopt;
  if (!rhs)
    return std::nullopt;
  if (isa<arith::MulIOp>(op))
    return multiply(*lhs, *rhs);
  DimSum out;
  int64_t sign = isa<arith::SubIOp>(op) ? -1 : 1;
  for (const auto &[f, c] : *lhs)
    if (!accumulate(out, f, c))
      return std::nullopt;
  for (const auto &[f, c] : *rhs) {
    int64_t coef;
    if (__builtin_mul_overflow(c, sign, &coef) || !accumulate(out, f, coef))
      return std::nullopt;
  }
  return out;
}

std::optional<DimSum> sumOf(Value v, int64_t d, Block *entry, int depth) {
  if (auto type = dyn_cast<ShapedType>(v.getType()); type.hasRank() && !type.isDynamicDim(d))
    return type.getDimSize(d) ? DimSum{{{}, type.getDimSize(d)}} : DimSum{};
  WalkEnd end = walkDim(v, d);
  if (end.arg) {
    if (end.arg.getOwner() != entry)
      return std::nullopt;
    return DimSum{{{ArgDim(end.arg.getArgNumber(), end.dim)}, 1}};
  }
  if (end.size)
    return sizeSum(end.size, entry, depth + 1);
  if (!end.collapse)
    return std::nullopt;
  // A merged group's size is the product of its dimensions'.
  std::optional<DimSum> product = DimSum{{{}, 1}};
  ReassociationIndices group = end.collapse.getReassociationIndices()[end.dim];
  for (int64_t g : group) {
    auto factor = sumOf(end.collapse.getSrc(), g, entry, depth + 1);
    product = factor ? multiply(*product, *factor) : std::nullopt;
    if (!product)
      return std::nullopt;
  }
  return product;
}
} // namespace

std::optional<DimSum> traceDimSum(Value v, int64_t d, Block *entry) {
  return sumOf(v, d, entry, 0);
}

std::optional<std::pair<BlockArgument, int64_t>> traceDim(Value v, int64_t d) {
  WalkEnd end = walkDim(v, d);
  if (!end.arg)
    return std::nullopt;
  return std::make_pair(end.arg, end.dim);
}

} // namespace kiln

//===- DimTrace.cpp - which argument dimension a dimension equals ---------===//

#include "DimTrace.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

using namespace mlir;

namespace kiln {

/// The argument dimension that dimension `d` of `v` equals, when the IR
/// says so without computing it.
std::optional<std::pair<BlockArgument, int64_t>> traceDim(Value v, int64_t d) {
  for (int steps = 0; steps < 10000; ++steps) {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return std::make_pair(arg, d);
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
        return std::nullopt;
      v = collapse.getSrc();
      d = group[0];
      continue;
    }
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
      auto groups = expand.getReassociationIndices();
      auto it = llvm::find_if(groups, [&](const ReassociationIndices &g) {
        return llvm::is_contained(g, d);
      });
      if (it == groups.end() || it->size() != 1)
        return std::nullopt;
      v = expand.getSrc();
      d = it - groups.begin();
      continue;
    }
    // A slice's or tensor.empty's dimension whose size is a tensor.dim
    // (of the slice's source, kept whole, or of another value) is that
    // dimension.
    Value size;
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op);
        slice && slice.getSourceType().getRank() == slice.getType().getRank())
      size = dyn_cast_if_present<Value>(slice.getMixedSizes()[d]);
    else if (auto empty = dyn_cast<tensor::EmptyOp>(op))
      size = empty.getDynamicSize(d);
    auto dim = size ? size.getDefiningOp<tensor::DimOp>() : tensor::DimOp();
    std::optional<int64_t> index = dim ? dim.getConstantIndex() : std::nullopt;
    if (!index)
      return std::nullopt;
    v = dim.getSource();
    d = *index;
    continue;
  }
  return std::nullopt;
}


} // namespace kiln

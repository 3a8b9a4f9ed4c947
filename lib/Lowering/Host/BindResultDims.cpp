//===- BindResultDims.cpp - kiln-bind-result-dims pass --------------------===//
//
// func.func @main(%x: tensor<?x64xf32> {kiln.dims = ["batch", 64]})
//     -> tensor<?x10xf32>
//   %e = tensor.empty(tensor.dim %x, 0); %r = linalg.generic ... outs(%e)
//   return %r
// => the result gets {kiln.dims = ["batch", 10]}.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

namespace kiln {
#define GEN_PASS_DEF_KILNBINDRESULTDIMS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

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
    if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
      Value size = empty.getDynamicSize(d);
      auto dim = size.getDefiningOp<tensor::DimOp>();
      std::optional<int64_t> index = dim ? dim.getConstantIndex() : std::nullopt;
      if (!index)
        return std::nullopt;
      v = dim.getSource();
      d = *index;
      continue;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

struct KilnBindResultDimsPass final : impl::KilnBindResultDimsBase<KilnBindResultDimsPass> {
  void runOnOperation() override {
    auto main = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal())
      return;
    auto ret = cast<func::ReturnOp>(main.getBody().front().getTerminator());
    Builder b(&getContext());
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (!type || type.hasStaticShape())
        continue;
      auto name = main.getResultAttrOfType<StringAttr>(i, KilnDialect::getNameAttrName());
      SmallVector<Attribute> dims;
      for (int64_t d = 0; d < type.getRank(); ++d) {
        if (!type.isDynamicDim(d)) {
          dims.push_back(b.getI64IntegerAttr(type.getDimSize(d)));
          continue;
        }
        auto source = traceDim(v, d);
        auto bound = source ? main.getArgAttrOfType<ArrayAttr>(source->first.getArgNumber(),
                                                               KilnDialect::getDimsAttrName())
                            : ArrayAttr();
        auto symbol = bound && source->second < (int64_t)bound.size()
                          ? dyn_cast<StringAttr>(bound[source->second])
                          : StringAttr();
        if (!symbol) {
          main.emitError() << "output '" << (name ? name.str() : std::to_string(i))
                           << "': dimension " << d
                           << " is computed from the dynamic dimensions rather than equal to "
                              "one of them; such outputs are not supported yet (pin the "
                              "dynamic dimensions with --shape or --dim)";
          return signalPassFailure();
        }
        dims.push_back(symbol);
      }
      main.setResultAttr(i, KilnDialect::getDimsAttrName(), b.getArrayAttr(dims));
    }
  }
};

} // namespace
} // namespace kiln

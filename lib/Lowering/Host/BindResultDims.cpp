//===- BindResultDims.cpp - kiln-bind-result-dims pass --------------------===//
//
// func.func @main(%x: tensor<?x64xf32> {kiln.dims = ["batch", 64]})
//     -> tensor<?x10xf32>
//   %e = tensor.empty(tensor.dim %x, 0); %r = linalg.generic ... outs(%e)
//   return %r
// => the result gets {kiln.dims = ["batch", 10]}.
//
//===----------------------------------------------------------------------===//

#include "DimTrace.h"
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

//===- PrivatizeEntry.cpp - kiln-privatize-entry pass ---------------------===//
//
// func.func @main(%x {kiln.name = "x"}) => func.func private @main(%x)
// so that buffer-results-to-out-params turns its results into out-params;
// a value returned twice (two outputs CSE made one) is copied for the
// second, as each output is a buffer of its own.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace kiln {
#define GEN_PASS_DEF_KILNPRIVATIZEENTRY
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {
/// kiln.input_dim_max from the inputs' kiln.dims and the symbols' ranges,
/// when some input has a dynamic dimension.
void recordInputMaxima(func::FuncOp f) {
  ModuleOp module = f->getParentOfType<ModuleOp>();
  auto ranges = module->getAttrOfType<DictionaryAttr>(KilnDialect::getDimRangesAttrName());
  if (!ranges)
    return;
  Builder b(f.getContext());
  SmallVector<Attribute> inputs;
  for (unsigned i = 0; i < f.getNumArguments(); ++i) {
    auto type = dyn_cast<ShapedType>(f.getArgumentTypes()[i]);
    auto dims = f.getArgAttrOfType<ArrayAttr>(i, KilnDialect::getDimsAttrName());
    SmallVector<int64_t> maxima;
    for (int64_t d = 0; type && d < type.getRank(); ++d) {
      int64_t max = type.isDynamicDim(d) ? -1 : type.getDimSize(d);
      auto symbol = type.isDynamicDim(d) && dims && d < (int64_t)dims.size()
                        ? dyn_cast<StringAttr>(dims[d])
                        : nullptr;
      if (symbol)
        if (auto range = ranges.getAs<DenseI64ArrayAttr>(symbol); range && range.size() == 2)
          max = range[1];
      maxima.push_back(max);
    }
    inputs.push_back(b.getDenseI64ArrayAttr(maxima));
  }
  module->setAttr(KilnDialect::getInputDimMaxAttrName(), b.getArrayAttr(inputs));
}

struct KilnPrivatizeEntryPass final
    : impl::KilnPrivatizeEntryBase<KilnPrivatizeEntryPass> {
  void runOnOperation() override {
    auto f = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!f)
      return;
    f.setPrivate();
    // The kiln.* attributes (names, training roles) were read into the
    // signature already. Inputs belong to the caller: never written in
    // place (a scatter into an input would change the caller's data).
    auto strip = [](DictionaryAttr attrs) {
      SmallVector<NamedAttribute> kept;
      for (NamedAttribute a : attrs ? attrs.getValue() : ArrayRef<NamedAttribute>())
        if (!a.getName().strref().starts_with("kiln."))
          kept.push_back(a);
      return kept;
    };
    recordInputMaxima(f);
    for (unsigned i = 0; i < f.getNumArguments(); ++i) {
      f.setArgAttrs(i, strip(f.getArgAttrDict(i)));
      f.setArgAttr(i, "bufferization.writable", BoolAttr::get(&getContext(), false));
    }
    for (unsigned i = 0; i < f.getNumResults(); ++i)
      f.setResultAttrs(i, strip(f.getResultAttrDict(i)));
    // Two outputs of one value (`a = Relu(x); b = Relu(x)` after CSE): the
    // second gets a copy (buffer-results-to-out-params crashed on
    // `return %v, %v`). A fresh allocation, not a copy into tensor.empty:
    // eliminate-empty-tensors would fold that copy back into one buffer.
    f.walk([](func::ReturnOp ret) {
      llvm::SmallPtrSet<Value, 8> seen;
      OpBuilder b(ret);
      for (OpOperand &operand : ret->getOpOperands()) {
        Value v = operand.get();
        auto type = dyn_cast<RankedTensorType>(v.getType());
        if (seen.insert(v).second || !type)
          continue;
        operand.set(bufferization::AllocTensorOp::create(b, ret.getLoc(), type, ValueRange(), v));
      }
    });
  }
};

} // namespace
} // namespace kiln

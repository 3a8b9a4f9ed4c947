//===- LiftParameters.cpp - kiln-lift-parameters --------------------------===//
//
//   %w = kiln.constant dense_resource<fc.weight> {kiln.initializer = "fc.weight"}
// =>
//   func.func @main(..., %w: tensor<..> {kiln.name = "fc.weight", kiln.param,
//                                        kiln.initial = dense_resource<fc.weight>})
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/Transforms/Passes.h"
#include "MainFunction.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringSet.h"

namespace kiln {
#define GEN_PASS_DEF_KILNLIFTPARAMETERS
#include "kiln/Dialects/Kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The initial value as a resource blob (the weights blob holds only
/// resources): inline constants (scalars) are copied into one.
ElementsAttr asResource(ElementsAttr value, StringRef name) {
  if (isa<DenseResourceElementsAttr>(value))
    return value;
  auto dense = cast<DenseElementsAttr>(value);
  auto type = cast<ShapedType>(dense.getType());
  size_t elemBytes = type.getElementTypeBitWidth() / 8;
  std::vector<char> bytes;
  ArrayRef<char> raw = dense.getRawData();
  for (int64_t i = 0; i < type.getNumElements(); ++i)
    bytes.insert(bytes.end(), raw.begin() + (dense.isSplat() ? 0 : i * elemBytes),
                 raw.begin() + (dense.isSplat() ? 0 : i * elemBytes) + elemBytes);
  auto blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, alignof(std::max_align_t));
  return cast<ElementsAttr>(DenseResourceElementsAttr::get(type, name, std::move(blob)));
}

struct KilnLiftParametersPass final : impl::KilnLiftParametersBase<KilnLiftParametersPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = lookupMain(module, "kiln-lift-parameters");
    if (!main)
      return signalPassFailure();
    llvm::StringSet<> frozen, found;
    for (const std::string &name : freeze)
      frozen.insert(name);
    // Running statistics feed batch_norm's mean and variance: buffers, not
    // parameters.
    auto isRunningStat = [](ConstantOp c) {
      return !c->use_empty() && llvm::all_of(c->getUses(), [](OpOperand &use) {
        return isa<BatchNormOp>(use.getOwner()) && use.getOperandNumber() >= 3;
      });
    };
    Builder b(&getContext());
    SmallVector<ConstantOp> constants(main.getOps<ConstantOp>());
    for (ConstantOp c : constants) {
      auto name = c->getAttrOfType<StringAttr>(KilnDialect::getInitializerAttrName());
      if (!name)
        continue;
      found.insert(name.strref());
      bool buffer = isRunningStat(c);
      if (frozen.contains(name.strref()) || (buffer && !batchNormStats) || c->use_empty() ||
          !isFloatTensor(c.getResult()))
        continue;
      NamedAttrList attrs;
      attrs.set(KilnDialect::getNameAttrName(), name);
      attrs.set(buffer ? KilnDialect::getBufferAttrName() : KilnDialect::getParamAttrName(),
                b.getUnitAttr());
      attrs.set(KilnDialect::getInitialAttrName(), asResource(c.getValue(), name.strref()));
      unsigned index = main.getNumArguments();
      if (failed(main.insertArgument(index, c.getType(), attrs.getDictionary(&getContext()),
                                     c.getLoc())))
        return signalPassFailure();
      c.replaceAllUsesWith(main.getArgument(index));
      c.erase();
    }
    for (const std::string &name : freeze)
      if (!found.contains(name)) {
        module.emitError() << "--freeze " << name
                           << ": the model has no floating-point initializer of that name";
        return signalPassFailure();
      }
  }
};

} // namespace
} // namespace kiln

//===- Signless.cpp - kiln-signless pass ----------------------------------===//
//
// %r = kiln.div %a, %b : tensor<4xui8>, tensor<4xui8> -> tensor<4xui8>
//   => %r = kiln.div %a, %b {kiln.unsigned} : tensor<4xi8>, ... -> tensor<4xi8>
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/Transforms/Passes.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSIGNLESS
#include "kiln/Dialects/Kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

bool isUnsignedTensor(Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  return rt && rt.getElementType().isUnsignedInteger();
}

Type signless(Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  if (!rt || !rt.getElementType().isUnsignedInteger())
    return t;
  return RankedTensorType::get(
      rt.getShape(), IntegerType::get(t.getContext(), rt.getElementType().getIntOrFloatBitWidth()));
}

/// The same constant with signless elements (the bits do not change).
Attribute signlessConstant(ElementsAttr value) {
  auto type = cast<RankedTensorType>(signless(value.getType()));
  if (auto dense = dyn_cast<DenseIntElementsAttr>(value))
    return dense.bitcast(type.getElementType());
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value))
    return DenseResourceElementsAttr::get(type, resource.getRawHandle());
  return value;
}

struct KilnSignlessPass final : impl::KilnSignlessBase<KilnSignlessPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    // Mark every op first, while all types are still the imported ones...
    getOperation().walk([&](Operation *op) {
      bool unsignedIn = llvm::any_of(op->getOperandTypes(), isUnsignedTensor);
      bool unsignedOut = llvm::any_of(op->getResultTypes(), isUnsignedTensor);
      if (isa<CastOp>(op)) {
        if (unsignedIn)
          op->setAttr(KilnDialect::getUnsignedInAttrName(), UnitAttr::get(ctx));
        if (unsignedOut)
          op->setAttr(KilnDialect::getUnsignedOutAttrName(), UnitAttr::get(ctx));
      } else if (unsignedIn && op->getDialect() && isa<KilnDialect>(op->getDialect())) {
        op->setAttr(KilnDialect::getUnsignedAttrName(), UnitAttr::get(ctx));
      }
    });
    // ...then retype values and constants.
    getOperation().walk([&](Operation *op) {
      if (auto c = dyn_cast<ConstantOp>(op); c && isUnsignedTensor(c.getType()))
        c.setValueAttr(cast<ElementsAttr>(signlessConstant(c.getValue())));
      for (Value r : op->getResults())
        r.setType(signless(r.getType()));
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (BlockArgument arg : block.getArguments())
            arg.setType(signless(arg.getType()));
    });
    getOperation().walk([&](func::FuncOp f) {
      auto type = f.getFunctionType();
      f.setType(FunctionType::get(ctx, llvm::map_to_vector(type.getInputs(), signless),
                                  llvm::map_to_vector(type.getResults(), signless)));
    });
  }
};

} // namespace
} // namespace kiln

//===- KilnDialect.cpp - kiln dialect registration ------------------------===//

#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/InliningUtils.h"

using namespace mlir;
using namespace kiln;

#include "kiln/Dialects/Kiln/IR/KilnDialect.cpp.inc"

namespace {
/// Every kiln op is pure and region-free: the training pipeline inlines the
/// forward and backward functions kiln-partition makes back into @main.
struct KilnInlinerInterface : DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final { return true; }
};
} // namespace

void KilnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "kiln/Dialects/Kiln/IR/KilnOps.cpp.inc"
      >();
  addInterfaces<KilnInlinerInterface>();
}

Operation *KilnDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

//===- LowerCollectives.cpp - kiln-lower-collectives ----------------------===//
//
//   kiln.all_reduce_in_place "mean" %buf : memref<16x8xf32>
// =>
//   func.func private @__kiln_all_reduce_0(memref<16x8xf32>)
//       attributes {kiln.collective = "mean", kiln.elements = 128, kiln.dtype = 0}
//   func.call @__kiln_all_reduce_0(%buf)
// kiln.all_reduce_start likewise, marked kiln.phase = "start";
// kiln.all_reduce_wait as a declaration marked kiln.phase = "wait" only.
//
// kiln-emit-entry gives the declaration its body (a call of the host's
// all_reduce), after the bare-pointer lowering made the memref a pointer.
//
//===----------------------------------------------------------------------===//

#include "kiln/ArtifactFormat.h"
#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace kiln {
#define GEN_PASS_DEF_KILNLOWERCOLLECTIVES
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The runtime's dtype code (kiln_dtype_t) of a float element type.
std::optional<int32_t> dtypeCode(Type t) {
  if (t.isF32())
    return 0;
  if (t.isF64())
    return 1;
  if (t.isF16())
    return 2;
  if (t.isBF16())
    return 3;
  return std::nullopt;
}

struct KilnLowerCollectivesPass final
    : impl::KilnLowerCollectivesBase<KilnLowerCollectivesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (isa<AllReduceInPlaceOp, AllReduceStartOp, AllReduceWaitOp>(op))
        ops.push_back(op);
    });
    MLIRContext *ctx = &getContext();
    OpBuilder top = OpBuilder::atBlockEnd(module.getBody());
    for (auto [k, op] : llvm::enumerate(ops)) {
      Value buffer = op->getOperand(0);
      auto type = cast<MemRefType>(buffer.getType());
      std::optional<int32_t> dtype = dtypeCode(type.getElementType());
      if (!type.getLayout().isIdentity() || !dtype) {
        op->emitOpError("needs a dense f32, f64, f16 or bf16 buffer, not ") << type;
        return signalPassFailure();
      }
      auto decl = func::FuncOp::create(top, op->getLoc(), "__kiln_all_reduce_" + std::to_string(k),
                                       FunctionType::get(ctx, {type}, {}));
      decl.setPrivate();
      StringAttr reduction;
      if (auto inPlace = dyn_cast<AllReduceInPlaceOp>(op))
        reduction = inPlace.getReductionAttr();
      else if (auto start = dyn_cast<AllReduceStartOp>(op))
        reduction = start.getReductionAttr();
      if (reduction) { // a wait carries none
        decl->setAttr(KilnDialect::getCollectiveAttrName(), reduction);
        decl->setAttr(KilnDialect::getCollectiveElementsAttrName(),
                      top.getI64IntegerAttr(type.getNumElements()));
        decl->setAttr(KilnDialect::getCollectiveDtypeAttrName(), top.getI32IntegerAttr(*dtype));
      }
      if (!isa<AllReduceInPlaceOp>(op))
        decl->setAttr(KilnDialect::getCollectivePhaseAttrName(),
                      StringAttr::get(ctx, isa<AllReduceStartOp>(op) ? "start" : "wait"));
      OpBuilder b(op);
      func::CallOp::create(b, op->getLoc(), decl, ValueRange{buffer});
      op->erase();
    }
  }
};

} // namespace
} // namespace kiln

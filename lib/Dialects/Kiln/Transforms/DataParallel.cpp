//===- DataParallel.cpp - kiln-data-parallel ------------------------------===//
//
//   func.func @main(...) -> (%loss, %dw {kiln.grad_of = 1})
// =>
//   %dw_mean = kiln.all_reduce "mean" %dw      (right after %dw's producer)
//   %loss_mean = kiln.all_reduce "mean" %loss
//   return %loss_mean, %dw_mean
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/Transforms/Passes.h"
#include "MainFunction.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNDATAPARALLEL
#include "kiln/Dialects/Kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct KilnDataParallelPass final : impl::KilnDataParallelBase<KilnDataParallelPass> {
  void runOnOperation() override {
    func::FuncOp main = lookupMain(getOperation(), "kiln-data-parallel");
    if (!main)
      return signalPassFailure();
    auto ret = cast<func::ReturnOp>(main.front().getTerminator());
    if (ret.getNumOperands() == 0 || !isa<RankedTensorType>(ret.getOperand(0).getType()) ||
        cast<RankedTensorType>(ret.getOperand(0).getType()).getNumElements() != 1) {
      main.emitError("kiln-data-parallel expects @main to return the loss first "
                     "(run it after kiln-add-loss and kiln-autograd)");
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    auto mean = StringAttr::get(ctx, "mean");
    llvm::DenseMap<Value, Value> reduced; // a value returned twice is reduced once
    for (unsigned r = 0; r < ret.getNumOperands(); ++r) {
      if (r != 0 && !main.getResultAttr(r, KilnDialect::getGradOfAttrName()))
        continue;
      Value v = ret.getOperand(r);
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (!type || !isa<FloatType>(type.getElementType())) {
        main.emitError("result ") << r << " of @main is not a floating-point tensor; "
                                         "there is no mean of it over ranks";
        return signalPassFailure();
      }
      Value &slot = reduced[v];
      if (!slot) {
        OpBuilder b(ctx);
        if (Operation *def = v.getDefiningOp())
          b.setInsertionPointAfter(def);
        else
          b.setInsertionPointToStart(&main.front());
        auto op = AllReduceOp::create(b, v.getLoc(), type, v, mean);
        op->setAttr(KilnDialect::getBackwardAttrName(), UnitAttr::get(ctx));
        slot = op.getResult();
      }
      ret->setOperand(r, slot);
    }
  }
};

} // namespace
} // namespace kiln

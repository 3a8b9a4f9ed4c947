//===- SplitSharedFills.cpp - kiln-split-shared-fills pass ----------------===//
//
// %z = linalg.fill ins(0) outs(%e)             %z = linalg.fill ins(0) outs(%e)
// %a = conv ins(..) outs(%z)           =>      %a = conv ins(..) outs(%z)
// %b = conv ins(..) outs(%z)                   %e2 = tensor.empty; %z2 = linalg.fill ins(0) outs(%e2)
//                                              %b = conv ins(..) outs(%z2)
//
// Without it, bufferization fills one buffer and copies it into %b's.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPLITSHAREDFILLS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct KilnSplitSharedFillsPass final
    : impl::KilnSplitSharedFillsBase<KilnSplitSharedFillsPass> {
  void runOnOperation() override {
    SmallVector<linalg::FillOp> fills;
    getOperation()->walk([&](linalg::FillOp fill) {
      if (fill.hasPureTensorSemantics())
        fills.push_back(fill);
    });
    for (linalg::FillOp fill : fills) {
      // Destination uses: a linalg op's init (it reads and overwrites it).
      SmallVector<OpOperand *> inits;
      for (OpOperand &use : fill->getResult(0).getUses())
        if (auto user = dyn_cast<linalg::LinalgOp>(use.getOwner()))
          if (user.isDpsInit(&use))
            inits.push_back(&use);
      if (inits.size() < 2 && !(inits.size() == 1 && !fill->getResult(0).hasOneUse()))
        continue;
      // The first use in program order keeps the fill unless another use
      // (a read) also needs its value; then every destination gets its own.
      bool keepFirst = inits.size() == size_t(std::distance(fill->getResult(0).use_begin(),
                                                            fill->getResult(0).use_end()));
      llvm::sort(inits, [](OpOperand *a, OpOperand *b) {
        return a->getOwner()->isBeforeInBlock(b->getOwner());
      });
      for (auto [i, use] : llvm::enumerate(inits)) {
        if (keepFirst && i == 0)
          continue;
        Operation *user = use->getOwner();
        if (user->getBlock() != fill->getBlock())
          continue;
        OpBuilder b(user);
        Value dest = fill.getOutputs()[0];
        if (auto empty = dest.getDefiningOp<tensor::EmptyOp>())
          dest = b.clone(*empty)->getResult(0);
        auto copy = linalg::FillOp::create(b, fill.getLoc(), fill.getInputs()[0], dest);
        use->set(copy.getResult(0));
      }
    }
  }
};

} // namespace
} // namespace kiln

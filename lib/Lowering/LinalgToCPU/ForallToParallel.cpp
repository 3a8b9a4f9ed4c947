//===- ForallToParallel.cpp - kiln-forall-to-parallel ---------------------===//
//
// Upstream's scf.forall -> scf.parallel conversion, keeping each loop's
// discardable attributes (kiln.split_rows, which kiln-form-kernels puts
// on a kernel's loop and kiln-outline-kernels reads).
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln {
#define GEN_PASS_DEF_KILNFORALLTOPARALLEL
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct KilnForallToParallelPass final
    : impl::KilnForallToParallelBase<KilnForallToParallelPass> {
  void runOnOperation() override {
    SmallVector<scf::ForallOp> loops;
    getOperation().walk([&](scf::ForallOp op) { loops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (scf::ForallOp op : loops) {
      SmallVector<NamedAttribute> attrs(op->getDiscardableAttrs());
      rewriter.setInsertionPoint(op);
      scf::ParallelOp parallel;
      if (failed(scf::forallToParallelLoop(rewriter, op, &parallel))) {
        op.emitError("kiln-forall-to-parallel: cannot convert this loop");
        return signalPassFailure();
      }
      for (NamedAttribute a : attrs)
        parallel->setAttr(a.getName(), a.getValue());
    }
  }
};

} // namespace
} // namespace kiln

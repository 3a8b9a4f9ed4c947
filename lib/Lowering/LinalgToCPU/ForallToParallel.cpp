//===- ForallToParallel.cpp - kiln-forall-to-parallel ---------------------===//
//
// Upstream's scf.forall -> scf.parallel conversion, keeping each loop's
// discardable attributes (kiln.spread, which kiln-form-kernels puts
// on a kernel's loop and kiln-outline-kernels reads). A marked loop's
// loops of one iteration (a unit batch) go now: the canonicalizer would
// rebuild the loop without them and without its marks.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
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
      bool marked = op->hasAttr(kSpreadAttr);
      rewriter.setInsertionPoint(op);
      scf::ParallelOp parallel;
      if (failed(scf::forallToParallelLoop(rewriter, op, &parallel))) {
        op.emitError("kiln-forall-to-parallel: cannot convert this loop");
        return signalPassFailure();
      }
      if (marked)
        parallel = dropUnitLoops(rewriter, parallel);
      for (NamedAttribute a : attrs)
        parallel->setAttr(a.getName(), a.getValue());
    }
  }

  /// `op` without its loops of one iteration (a unit batch's), which the
  /// canonicalizer would drop by rebuilding the loop, losing its marks.
  static scf::ParallelOp dropUnitLoops(IRRewriter &rewriter, scf::ParallelOp op) {
    SmallVector<Value> lbs, ubs, steps, ivs;
    for (auto [lb, ub, step] : llvm::zip(op.getLowerBound(), op.getUpperBound(), op.getStep())) {
      std::optional<int64_t> l = getConstantIntValue(lb), u = getConstantIntValue(ub),
                             s = getConstantIntValue(step);
      if (l && u && s && *u > *l && *u - *l <= *s) {
        ivs.push_back(lb);
        continue;
      }
      lbs.push_back(lb);
      ubs.push_back(ub);
      steps.push_back(step);
      ivs.push_back({});
    }
    if (lbs.size() == op.getNumLoops() || lbs.empty() || !op.getInitVals().empty())
      return op;
    rewriter.setInsertionPoint(op);
    auto loop = scf::ParallelOp::create(rewriter, op.getLoc(), lbs, ubs, steps);
    rewriter.eraseOp(loop.getBody()->getTerminator());
    SmallVector<Value> kept(loop.getInductionVars());
    unsigned next = 0;
    for (Value &iv : ivs)
      if (!iv)
        iv = kept[next++];
    rewriter.mergeBlocks(op.getBody(), loop.getBody(), ivs);
    rewriter.eraseOp(op);
    return loop;
  }
};

} // namespace
} // namespace kiln

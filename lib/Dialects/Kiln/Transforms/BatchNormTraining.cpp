//===- BatchNormTraining.cpp - kiln-batch-norm-training -------------------===//
//
//   %y = kiln.batch_norm %x, %s, %b, %rm, %rv     (%rm, %rv: kiln.buffer args)
// =>
//   %m = mean of %x over N, H, W;  %v = mean of (%x - %m)^2
//   %y = kiln.batch_norm %x, %s, %b, %m, %v
//   @main also returns %rm * momentum + %m * (1 - momentum) and
//   %rv * momentum + %v * n/(n-1) * (1 - momentum)  (kiln.update on %rm, %rv)
// With `sync` (SyncBatchNorm), %m and %v are kiln.all_reduce "mean" of the
// rank's own, and n counts the whole global batch.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/Transforms/Passes.h"
#include "MainFunction.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Dialects/Kiln/IR/ShapeUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNBATCHNORMTRAINING
#include "kiln/Dialects/Kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The batch variance `var` (over `axes` of `x`) times n / (n - 1), as
/// PyTorch's running variance; n read at run time under a dynamic batch
/// (kept as is where n is 1). `ranks`, when given, multiplies n: the
/// global batch of a data-parallel run.
Value unbiasedVariance(GradBuilder &g, Value x, ArrayRef<int64_t> axes, Value var, Value ranks) {
  ArrayRef<int64_t> xs = shapeOf(x);
  if (!ShapedType::isDynamic(xs[0]) && !ranks) {
    int64_t n = numElements(xs) / xs[1];
    return n > 1 ? g.mul(var, (double)n / (n - 1)) : var;
  }
  Value n = g.countOf(x, axes);
  if (ranks)
    n = g.mul(n, ranks);
  Value less = g.op<MaxOp>({g.sub(n, g.scalar(1, n)), g.scalar(1, n)});
  return g.mul(var, g.div(n, less));
}

/// The mean over ranks of `v` (SyncBatchNorm's statistics).
Value overRanks(GradBuilder &g, Value v) {
  return AllReduceOp::create(g.b, g.loc, v.getType(), v, g.b.getStringAttr("mean"));
}

struct KilnBatchNormTrainingPass final
    : impl::KilnBatchNormTrainingBase<KilnBatchNormTrainingPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = lookupMain(module, "kiln-batch-norm-training");
    if (!main)
      return signalPassFailure();
    auto ret = cast<func::ReturnOp>(main.front().getTerminator());
    auto isBuffer = [&](Value v) {
      auto arg = dyn_cast<BlockArgument>(v);
      return arg && main.getArgAttr(arg.getArgNumber(), KilnDialect::getBufferAttrName());
    };
    SmallVector<Value> results;
    SmallVector<DictionaryAttr> resultAttrs;
    unsigned first = ret.getNumOperands();
    llvm::DenseSet<Value> updated;
    SmallVector<BatchNormOp> norms(main.getOps<BatchNormOp>());
    for (BatchNormOp bn : norms) {
      Value runMean = bn.getMean(), runVar = bn.getVariance();
      if (!isBuffer(runMean) || !isBuffer(runVar))
        continue;
      if (!updated.insert(runMean).second || !updated.insert(runVar).second) {
        bn.emitOpError("shares its running statistics with another batch_norm; training "
                       "would update them twice");
        return signalPassFailure();
      }
      OpBuilder b(bn);
      GradBuilder g(b, bn.getLoc());
      Value x = bn.getInput();
      ArrayRef<int64_t> xs = shapeOf(x);
      SmallVector<int64_t> axes{0}, perChannel(xs.size(), 1);
      for (size_t d = 2; d < xs.size(); ++d)
        axes.push_back(d);
      perChannel[1] = xs[1];
      // Synchronized, each rank's shard is as large: the mean of the ranks'
      // means is the global mean, likewise the variance about it.
      Value mean = g.reduceMean(x, axes, false);
      if (sync)
        mean = overRanks(g, mean);
      Value centered = g.sub(x, g.reshape(mean, perChannel));
      Value var = g.reduceMean(g.square(centered), axes, false);
      Value ranks;
      if (sync) {
        var = overRanks(g, var);
        Value one = g.scalar(1.0, x);
        ranks = AllReduceOp::create(b, bn.getLoc(), one.getType(), one, b.getStringAttr("sum"));
      }
      bn.getMeanMutable().assign(mean);
      bn.getVarianceMutable().assign(var);
      // The running statistics, after the return's operands are computed.
      b.setInsertionPoint(ret);
      double m = bn.getMomentum().convertToFloat();
      Value unbiased = unbiasedVariance(g, x, axes, var, ranks);
      for (auto [running, batch] : {std::pair{runMean, mean}, std::pair{runVar, unbiased}}) {
        unsigned arg = cast<BlockArgument>(running).getArgNumber();
        main.setArgAttr(arg, KilnDialect::getUpdateAttrName(),
                        b.getI64IntegerAttr(first + results.size()));
        results.push_back(g.add(g.mul(running, m), g.mul(batch, 1.0 - m)));
        auto name = main.getArgAttrOfType<StringAttr>(arg, KilnDialect::getNameAttrName());
        resultAttrs.push_back(
            namedResult(&getContext(), name ? name.str() : "input" + std::to_string(arg)));
      }
      if (g.failed())
        return signalPassFailure();
    }
    if (!results.empty())
      appendResults(main, results, resultAttrs);
  }
};

} // namespace
} // namespace kiln

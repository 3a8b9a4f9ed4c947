//===- Optimizer.cpp - kiln-optimizer -------------------------------------===//
//
//   func.func @main(%x, %w {kiln.param}) -> (%loss, %dw {kiln.grad_of = 1})
// => (adam)
//   func.func @main(%x, %w {kiln.param, kiln.update = 2},
//                   %m {kiln.name = "w.exp_avg", kiln.state, kiln.update = 3}, ...,
//                   %step {kiln.name = "step", kiln.state, kiln.update = 5})
//       -> (%loss, %dw, %w_new, %m_new, %v_new, %step_new)
//
// The update formulas are PyTorch's (torch/optim/sgd.py, adam.py, adamw.py,
// single-tensor form), elementwise, so fusion makes a few kernels of them.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/Transforms/Passes.h"
#include "MainFunction.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"

namespace kiln {
#define GEN_PASS_DEF_KILNOPTIMIZER
#include "kiln/Dialects/Kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct KilnOptimizerPass final : impl::KilnOptimizerBase<KilnOptimizerPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = lookupMain(module, "kiln-optimizer");
    if (!main)
      return signalPassFailure();
    bool sgd = optimizer == "sgd", adamw = optimizer == "adamw";
    if (!sgd && optimizer != "adam" && !adamw) {
      main.emitError() << "unknown optimizer '" << optimizer << "' (expected sgd, adam or adamw)";
      return signalPassFailure();
    }
    double wd = weightDecay >= 0 ? weightDecay : (adamw ? 0.01 : 0.0);
    if (lr < 0 || momentum < 0 || wd < 0 || eps < 0 || beta1 < 0 || beta1 >= 1 || beta2 < 0 ||
        beta2 >= 1 || (nesterov && (momentum <= 0 || dampening != 0))) {
      main.emitError() << "invalid optimizer settings (PyTorch's rules: lr, momentum, "
                          "weight decay, eps >= 0; betas in [0, 1); Nesterov needs momentum "
                          "and zero dampening)";
      return signalPassFailure();
    }
    auto ret = cast<func::ReturnOp>(main.front().getTerminator());
    SmallVector<std::pair<unsigned, Value>> trained; // (param arg, gradient)
    for (unsigned r = 0; r < ret.getNumOperands(); ++r)
      if (auto of = main.getResultAttrOfType<IntegerAttr>(r, KilnDialect::getGradOfAttrName()))
        trained.push_back({(unsigned)of.getInt(), ret.getOperand(r)});
    if (trained.empty()) {
      main.emitError("kiln-optimizer: nothing to train (no gradients; run kiln-autograd first)");
      return signalPassFailure();
    }

    MLIRContext *ctx = &getContext();
    OpBuilder b(ret);
    unsigned first = ret.getNumOperands();
    // New results, and the argument each one feeds on the next step.
    SmallVector<std::pair<unsigned, Value>> updates;
    auto addState = [&](StringRef name, Type type) -> BlockArgument {
      NamedAttrList attrs;
      attrs.set(KilnDialect::getNameAttrName(), b.getStringAttr(name));
      attrs.set(KilnDialect::getStateAttrName(), b.getUnitAttr());
      unsigned index = main.getNumArguments();
      (void)main.insertArgument(index, type, attrs.getDictionary(ctx), main.getLoc());
      return main.getArgument(index);
    };
    BlockArgument step = addState("step", RankedTensorType::get({}, b.getF32Type()));
    // The learning rate is an input too (a hyperparameter: initialized to
    // --lr, passed through unchanged), so a program can schedule it.
    BlockArgument lrArg;
    {
      float initial = (float)lr;
      auto type = RankedTensorType::get({}, b.getF32Type());
      auto blob = HeapAsmResourceBlob::allocateAndCopyInferAlign(ArrayRef<float>(initial));
      NamedAttrList attrs;
      attrs.set(KilnDialect::getNameAttrName(), b.getStringAttr("learning_rate"));
      attrs.set(KilnDialect::getHyperAttrName(), b.getUnitAttr());
      attrs.set(KilnDialect::getInitialAttrName(),
                DenseResourceElementsAttr::get(type, "learning_rate", std::move(blob)));
      unsigned index = main.getNumArguments();
      (void)main.insertArgument(index, type, attrs.getDictionary(ctx), main.getLoc());
      lrArg = main.getArgument(index);
    }
    GradBuilder g(b, main.getLoc());
    Value nextStep = g.add(step, 1.0);
    Value firstStep = g.op<EqualOp>({step, g.scalar(0, step)});
    for (auto [index, grad] : trained) {
      Value p = main.getArgument(index);
      Value lrT = g.cast(lrArg, cast<RankedTensorType>(p.getType()).getElementType());
      auto nameAttr = main.getArgAttrOfType<StringAttr>(index, KilnDialect::getNameAttrName());
      std::string name = nameAttr ? nameAttr.str() : "input" + std::to_string(index);
      if (!nameAttr)
        main.setArgAttr(index, KilnDialect::getNameAttrName(), b.getStringAttr(name));
      Value d = grad;
      if (!adamw && wd != 0)
        d = g.add(d, g.mul(p, wd));
      if (sgd) {
        if (momentum != 0) {
          BlockArgument buf = addState(name + ".momentum_buffer", p.getType());
          // The first step starts the buffer at the gradient itself.
          Value next = g.where(firstStep, d,
                               g.add(g.mul(buf, momentum), g.mul(d, 1.0 - dampening)));
          updates.push_back({buf.getArgNumber(), next});
          d = nesterov ? g.add(d, g.mul(next, momentum)) : next;
        }
        updates.push_back({index, g.sub(p, g.mul(d, lrT))});
        continue;
      }
      Value base =
          adamw && wd != 0 ? g.mul(p, g.sub(g.scalar(1, lrT), g.mul(lrT, wd))) : p;
      BlockArgument m = addState(name + ".exp_avg", p.getType());
      BlockArgument v = addState(name + ".exp_avg_sq", p.getType());
      Value mNext = g.add(g.mul(m, beta1), g.mul(d, 1.0 - beta1));
      Value vNext = g.add(g.mul(v, beta2), g.mul(g.square(d), 1.0 - beta2));
      Type et = cast<RankedTensorType>(p.getType()).getElementType();
      Value t = g.cast(nextStep, et);
      Value bc1 = g.sub(g.scalar(1, t), g.op<PowOp>({g.scalar(beta1, t), t}));
      Value bc2 = g.sub(g.scalar(1, t), g.op<PowOp>({g.scalar(beta2, t), t}));
      Value denom = g.add(g.div(g.unary("kiln.sqrt", vNext), g.unary("kiln.sqrt", bc2)), eps);
      Value stepSize = g.div(lrT, bc1);
      updates.push_back({index, g.sub(base, g.mul(stepSize, g.div(mNext, denom)))});
      updates.push_back({m.getArgNumber(), mNext});
      updates.push_back({v.getArgNumber(), vNext});
    }
    updates.push_back({step.getArgNumber(), nextStep});
    updates.push_back({lrArg.getArgNumber(), lrArg});
    if (g.failed())
      return signalPassFailure();
    // Parameters first, then optimizer state, then the step.
    SmallVector<std::pair<unsigned, Value>> ordered;
    for (bool params : {true, false})
      for (auto &u : updates)
        if ((bool)main.getArgAttr(u.first, KilnDialect::getParamAttrName()) == params)
          ordered.push_back(u);
    SmallVector<Value> results;
    SmallVector<DictionaryAttr> resultAttrs;
    for (auto [arg, value] : ordered) {
      main.setArgAttr(arg, KilnDialect::getUpdateAttrName(),
                      b.getI64IntegerAttr(first + results.size()));
      results.push_back(value);
      resultAttrs.push_back(namedResult(
          ctx, main.getArgAttrOfType<StringAttr>(arg, KilnDialect::getNameAttrName()).strref()));
    }
    appendResults(main, results, resultAttrs);
  }
};

} // namespace
} // namespace kiln

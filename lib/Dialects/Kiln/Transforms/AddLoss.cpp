//===- AddLoss.cpp - kiln-add-loss ----------------------------------------===//
//
//   func.func @main(%x, params...) -> (%logits)
// => (cross_entropy)
//   func.func @main(%x, %label: tensor<Nxi64>, params...) -> (%loss: tensor<f32>)
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/Transforms/Passes.h"
#include "MainFunction.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Dialects/Kiln/IR/ShapeUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNADDLOSS
#include "kiln/Dialects/Kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct KilnAddLossPass final : impl::KilnAddLossBase<KilnAddLossPass> {
  using Base::Base;

  /// A label with dynamic dimensions (the model's batch) gets symbols of
  /// its own, `<label>.<axis>`, ranged 1..; kiln-unify-dims then makes
  /// each the model's, as the loss reads both in one loop.
  ArrayAttr labelDims(ModuleOp module, RankedTensorType type) {
    auto ranges = module->getAttrOfType<DictionaryAttr>(KilnDialect::getDimRangesAttrName());
    if (type.hasStaticShape() || !ranges)
      return {};
    Builder b(module.getContext());
    NamedAttrList all(ranges);
    SmallVector<Attribute> dims;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (!type.isDynamicDim(d)) {
        dims.push_back(b.getI64IntegerAttr(type.getDimSize(d)));
        continue;
      }
      std::string symbol = labelName + "." + std::to_string(d);
      dims.push_back(b.getStringAttr(symbol));
      all.set(symbol, b.getDenseI64ArrayAttr({1, -1}));
    }
    module->setAttr(KilnDialect::getDimRangesAttrName(), all.getDictionary(module.getContext()));
    return b.getArrayAttr(dims);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = lookupMain(module, "kiln-add-loss");
    if (!main)
      return signalPassFailure();
    if (loss != "mse" && loss != "cross_entropy" && loss != "output") {
      main.emitError() << "unknown loss '" << loss << "' (expected mse, cross_entropy or output)";
      return signalPassFailure();
    }
    auto ret = cast<func::ReturnOp>(main.front().getTerminator());
    if (ret.getNumOperands() != 1) {
      main.emitError() << "--loss=" << loss << " needs a model with one output; this one has "
                       << ret.getNumOperands();
      return signalPassFailure();
    }
    Value out = ret.getOperand(0);
    auto outType = dyn_cast<RankedTensorType>(out.getType());
    if (!outType || !isa<FloatType>(outType.getElementType())) {
      main.emitError() << "the model's output must be a floating-point tensor to train on, not "
                       << out.getType();
      return signalPassFailure();
    }
    OpBuilder b(ret);
    GradBuilder g(b, ret.getLoc());
    Value lossValue;
    if (loss == "output") {
      if (outType.getNumElements() != 1) {
        main.emitError() << "--loss=output needs a one-element output (the loss), not "
                         << outType;
        return signalPassFailure();
      }
      lossValue = g.reshape(out, {});
    } else {
      Type labelType = outType;
      int64_t axis = 1;
      if (loss == "cross_entropy") {
        auto a = normalizeAxis(classAxis, outType.getRank());
        if (outType.getRank() < 2 || !a) {
          main.emitError() << "--loss=cross_entropy needs logits with a class axis "
                           << (int64_t)classAxis << " (and a batch axis), not " << outType;
          return signalPassFailure();
        }
        axis = *a;
        SmallVector<int64_t> shape(outType.getShape());
        shape.erase(shape.begin() + axis);
        labelType = RankedTensorType::get(shape, b.getI64Type());
      }
      // The label goes after the model's inputs, before parameters and buffers.
      unsigned index = 0;
      while (index < main.getNumArguments() &&
             !main.getArgAttr(index, KilnDialect::getParamAttrName()) &&
             !main.getArgAttr(index, KilnDialect::getBufferAttrName()))
        ++index;
      for (unsigned i = 0; i < main.getNumArguments(); ++i)
        if (auto n = main.getArgAttrOfType<StringAttr>(i, KilnDialect::getNameAttrName());
            n && n == labelName) {
          main.emitError() << "the model already has an input named '" << labelName
                           << "'; name the label with --label-name";
          return signalPassFailure();
        }
      NamedAttrList attrs;
      attrs.set(KilnDialect::getNameAttrName(), b.getStringAttr(labelName));
      attrs.set(KilnDialect::getLabelAttrName(), b.getUnitAttr());
      if (loss == "cross_entropy") // the runtime checks labels against it
        attrs.set(KilnDialect::getClassesAttrName(), b.getI64IntegerAttr(outType.getDimSize(axis)));
      if (auto dims = labelDims(module, cast<RankedTensorType>(labelType)))
        attrs.set(KilnDialect::getDimsAttrName(), dims);
      if (failed(main.insertArgument(index, labelType, attrs.getDictionary(&getContext()),
                                     main.getLoc())))
        return signalPassFailure();
      Value label = main.getArgument(index);
      if (loss == "mse") {
        lossValue = g.reduceMean(g.square(g.sub(out, label)), {}, false);
      } else {
        // mean(logsumexp(x) - x[label]) over the batch (and any extra dims).
        Value max = g.op<ReduceMaxOp>({out}, {g.attr("axes", ArrayRef<int64_t>{axis}),
                                              g.attr("keepdims", true)});
        Value sum = g.reduceSum(g.unary("kiln.exp", g.sub(out, max)), {axis}, true);
        Value lse = g.add(g.unary("kiln.log", sum), max);
        Value index1 = g.op<UnsqueezeOp>({label}, {g.attr("axes", ArrayRef<int64_t>{axis})});
        Value picked = g.op<GatherElementsOp>({out, index1}, {g.attr("axis", axis)});
        lossValue = g.reduceMean(g.sub(lse, picked), {}, false);
      }
    }
    if (g.failed())
      return signalPassFailure();
    setResults(main, lossValue, {namedResult(&getContext(), "loss")});
  }
};

} // namespace
} // namespace kiln

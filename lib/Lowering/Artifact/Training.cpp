//===- Training.cpp - the training step's layout in the signature ---------===//

#include "Artifact.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Dialects/Kiln/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;

namespace kiln {

FailureOr<TrainingLayout> recordTraining(ModuleOp module) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main)
    return module.emitError("module has no func.func @main");
  TrainingLayout layout;
  SmallVector<Attribute> initial;
  for (unsigned i = 0; i < main.getNumArguments(); ++i) {
    auto update = main.getArgAttrOfType<IntegerAttr>(i, KilnDialect::getUpdateAttrName());
    if (!update)
      continue;
    TrainingLayout::Update u{i, (unsigned)update.getInt()};
    if (main.getArgAttr(i, KilnDialect::getHyperAttrName()))
      continue; // after the parameters, below
    if (auto value = main.getArgAttr(i, KilnDialect::getInitialAttrName())) {
      layout.params.push_back(u);
      initial.push_back(value);
      main.removeArgAttr(i, KilnDialect::getInitialAttrName());
    } else {
      layout.states.push_back(u);
    }
  }
  // Hyperparameters' initial values follow the parameters' in the weights.
  for (unsigned i = 0; i < main.getNumArguments(); ++i)
    if (auto update = main.getArgAttrOfType<IntegerAttr>(i, KilnDialect::getUpdateAttrName());
        update && main.getArgAttr(i, KilnDialect::getHyperAttrName())) {
      layout.hypers.push_back({i, (unsigned)update.getInt()});
      initial.push_back(main.getArgAttr(i, KilnDialect::getInitialAttrName()));
      main.removeArgAttr(i, KilnDialect::getInitialAttrName());
    }
  for (unsigned i = 0; i < main.getNumArguments(); ++i)
    if (auto classes = main.getArgAttrOfType<IntegerAttr>(i, KilnDialect::getClassesAttrName()))
      layout.classLabels.push_back({i, classes.getInt()});
  for (unsigned r = 0; r < main.getNumResults(); ++r)
    if (auto of = main.getResultAttrOfType<IntegerAttr>(r, KilnDialect::getGradOfAttrName()))
      layout.grads.push_back({r, (unsigned)of.getInt()});
  if (layout.params.empty())
    return main.emitError("nothing to train: the model has no floating-point initializers "
                          "(or all are frozen)");
  module->setAttr(KilnDialect::getInitialStateAttrName(),
                  ArrayAttr::get(module.getContext(), initial));
  return layout;
}

LogicalResult prepareInferenceEntry(ModuleOp module, const TrainingOptions &options) {
  // Dropout is off outside training: its input passes, its mask is all true.
  SmallVector<DropoutOp> drops;
  module.walk([&](DropoutOp d) { drops.push_back(d); });
  for (DropoutOp d : drops) {
    OpBuilder b(d);
    auto maskType = cast<RankedTensorType>(d.getMask().getType());
    Value ones = ConstantOp::create(b, d.getLoc(),
                                    DenseElementsAttr::get(maskType, b.getBoolAttr(true)));
    d.getOutput().replaceAllUsesWith(d.getInput());
    d.getMask().replaceAllUsesWith(ones);
    d.erase();
  }
  PassManager pm(module.getContext());
  KilnLiftParametersOptions lift;
  lift.freeze.assign(options.freeze.begin(), options.freeze.end());
  lift.batchNormStats = options.batchNormTraining;
  pm.addPass(createKilnLiftParameters(lift));
  if (failed(pm.run(module)))
    return failure();
  auto main = module.lookupSymbol<func::FuncOp>("main");
  for (unsigned i = 0; i < main.getNumArguments(); ++i)
    main.removeArgAttr(i, KilnDialect::getInitialAttrName()); // the trainer supplies the values
  return success();
}

std::string trainingLines(ModuleOp lowered, const TrainingLayout &layout) {
  auto offsets =
      lowered->getAttrOfType<DenseI64ArrayAttr>(KilnDialect::getInitialStateOffsetsAttrName());
  std::string s = "train " + std::to_string(layout.lossOutput) + "\n";
  for (size_t i = 0; i < layout.params.size(); ++i)
    s += "param " + std::to_string(layout.params[i].input) + " " +
         std::to_string(layout.params[i].output) + " " +
         std::to_string(offsets && (int64_t)i < offsets.size() ? offsets[i] : -1) + "\n";
  for (size_t i = 0; i < layout.hypers.size(); ++i) {
    size_t k = layout.params.size() + i;
    s += "hyper " + std::to_string(layout.hypers[i].input) + " " +
         std::to_string(layout.hypers[i].output) + " " +
         std::to_string(offsets && (int64_t)k < offsets.size() ? offsets[k] : -1) + "\n";
  }
  for (const auto &u : layout.states)
    s += "state " + std::to_string(u.input) + " " + std::to_string(u.output) + "\n";
  for (const auto &[out, in] : layout.grads)
    s += "grad " + std::to_string(out) + " " + std::to_string(in) + "\n";
  for (const auto &[in, classes] : layout.classLabels)
    s += "labels " + std::to_string(in) + " " + std::to_string(classes) + "\n";
  if (layout.dataParallel)
    s += "distributed\n";
  return s;
}

} // namespace kiln

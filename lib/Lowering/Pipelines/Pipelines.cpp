//===- Pipelines.cpp - Kiln's named compilation pipelines -----------------===//
//
// Per-pass headers only (the Conversion/Passes.h umbrella costs ~20 s/TU).
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Pipelines/Pipelines.h"
#include "kiln/Dialects/Kiln/Transforms/Passes.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace kiln {

void buildKilnGraphPipeline(OpPassManager &pm) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void buildKilnTrainingPipeline(OpPassManager &pm, const TrainingOptions &options) {
  KilnLiftParametersOptions lift;
  lift.freeze.assign(options.freeze.begin(), options.freeze.end());
  lift.batchNormStats = options.batchNormTraining;
  pm.addPass(createKilnLiftParameters(lift));
  KilnAddLossOptions loss;
  loss.loss = options.loss;
  loss.labelName = options.labelName;
  loss.classAxis = options.classAxis;
  pm.addPass(createKilnAddLoss(loss));
  pm.addPass(createKilnBatchNormTraining());
  KilnDecomposeDropoutOptions dropout;
  dropout.stepCounter = true;
  dropout.seed = options.seed;
  pm.addPass(createKilnDecomposeDropout(dropout));
  pm.addPass(createKilnAutograd());
  KilnPartitionOptions partition;
  partition.recompute = options.recompute;
  pm.addPass(createKilnPartition(partition));
  KilnOptimizerOptions opt;
  opt.optimizer = options.optimizer;
  opt.lr = options.lr;
  opt.momentum = options.momentum;
  opt.dampening = options.dampening;
  opt.nesterov = options.nesterov;
  opt.weightDecay = options.weightDecay;
  opt.beta1 = options.beta1;
  opt.beta2 = options.beta2;
  opt.eps = options.eps;
  pm.addPass(createKilnOptimizer(opt));
  // One step, one function again: the memory planner and fusion see the
  // forward, the backward and the update together.
  pm.addPass(createInlinerPass());
  pm.addPass(createSymbolDCEPass());
  buildKilnGraphPipeline(pm);
}

void buildKilnToLinalgPipeline(OpPassManager &pm) {
  buildKilnGraphPipeline(pm);
  pm.addPass(createKilnSignless());
  pm.addPass(createKilnDecomposeDropout()); // training-mode dropout at inference: counter 0
  pm.addNestedPass<func::FuncOp>(createKilnToLinalg());
  pm.addPass(createKilnFuseElementwise());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Unit dimensions (keepdims reductions) out of the maps, so every
  // producer-consumer map is a projected permutation that tiling can slice.
  pm.addNestedPass<func::FuncOp>(createLinalgFoldUnitExtentDimsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addNestedPass<func::FuncOp>(createKilnFormKernels());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void buildCPULinalgToLLVMPipeline(OpPassManager &pm) {
  pm.addNestedPass<func::FuncOp>(createKilnInterchangeLoops());
  pm.addPass(createKilnPrivatizeEntry());
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Results become caller-owned out-params; static allocations of results
  // are replaced by the out-param itself, so outputs are written in place.
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  pm.addPass(createCanonicalizerPass());
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addNestedPass<func::FuncOp>(createKilnCopyToLinalg());
  // Kernels formed as scf.forall run as parallel loops (tasks when big).
  pm.addNestedPass<func::FuncOp>(createForallToParallelLoopPass());
  // Intermediates in one arena placed by liveness, then the weights in one
  // blob: each one more argument of @main, in that order. The blob goes into
  // the artifact as raw bytes after LLVM's optimizer (or into a side file,
  // --weights=external): translating and optimizing 100 MB of constants as
  // LLVM arrays took a minute and 4 GB for ResNet-50.
  pm.addPass(createKilnPlanMemory());
  pm.addNestedPass<func::FuncOp>(createKilnStackTemporaries());
  KilnExternalizeWeightsOptions weights;
  weights.minBytes = 64; // scalars and tiny tables stay foldable constants
  pm.addPass(createKilnExternalizeWeights(weights));
  // Parallel loops: the outermost ones with enough work become tasks for
  // the runtime's thread pool, the rest lower to plain loops.
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createKilnOutlineKernels());
  pm.addNestedPass<func::FuncOp>(createKilnApproximateMath());
  // bf16 conversions become integer arithmetic (no compiler-rt helpers).
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  ConvertFuncToLLVMPassOptions funcToLLVM;
  funcToLLVM.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(funcToLLVM));
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createKilnEmitEntry());
}

void registerKilnPipelines() {
  PassPipelineRegistration<>("kiln-graph-opt", "kiln graph cleanup",
                             buildKilnGraphPipeline);
  PassPipelineRegistration<>("kiln-lower-to-linalg",
                             "kiln => fused linalg on tensors", buildKilnToLinalgPipeline);
  PassPipelineRegistration<>("kiln-cpu-lower-to-llvm",
                             "linalg on tensors => LLVM dialect for the host CPU",
                             buildCPULinalgToLLVMPipeline);
}

} // namespace kiln

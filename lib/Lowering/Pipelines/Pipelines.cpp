//===- Pipelines.cpp - Kiln's named compilation pipelines -----------------===//
//
// Per-pass headers only (the Conversion/Passes.h umbrella costs ~20 s/TU).
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Pipelines/Pipelines.h"
#include "kiln/Dialects/Kiln/Transforms/Passes.h"
#include "kiln/Lowering/ConvTiles.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
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
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/X86TargetParser.h"

using namespace mlir;

namespace kiln {

void buildKilnGraphPipeline(OpPassManager &pm) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createKilnFoldBatchNorm());
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

void buildKilnToLinalgPipeline(OpPassManager &pm) { buildKilnToLinalgPipeline(pm, true); }

unsigned cpuVectorBits(const std::string &cpu) {
  // A CPU's list names some features and not those they imply (x86-64-v4
  // lists avx512bw, not avx512f): any AVX-512 feature means 512 bits.
  llvm::StringMap<bool> features;
  if (cpu.empty() || cpu == "native") {
    features = llvm::sys::getHostCPUFeatures();
  } else {
    SmallVector<StringRef> list;
    llvm::X86::getFeaturesForCPU(cpu, list, /*NeedPlus=*/false);
    for (StringRef f : list)
      features[f] = true;
  }
  bool avx512 = false, avx = false;
  for (const auto &f : features) {
    avx512 |= f.second && f.first().starts_with("avx512");
    avx |= f.second && (f.first() == "avx" || f.first() == "avx2");
  }
  return avx512 ? 512 : avx ? 256 : 128;
}

void buildKilnToLinalgPipeline(OpPassManager &pm, bool formKernels, const CpuOptions &cpu) {
  buildKilnGraphPipeline(pm);
  pm.addPass(createKilnSignless());
  pm.addPass(createKilnDecomposeDropout()); // training-mode dropout at inference: counter 0
  pm.addNestedPass<func::FuncOp>(createKilnToLinalg());
  if (formKernels) { // the CPU's
    pm.addNestedPass<func::FuncOp>(createKilnPointwiseConvAsMatmul({cpu.vectorBits}));
    pm.addNestedPass<func::FuncOp>(createKilnDepthwiseConv());
  }
  pm.addPass(createKilnFuseElementwise());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Unit dimensions (keepdims reductions) out of the maps, so every
  // producer-consumer map is a projected permutation that tiling can slice.
  pm.addNestedPass<func::FuncOp>(createLinalgFoldUnitExtentDimsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (!formKernels)
    return;
  KilnPackMatmulWeightsOptions pack;
  pack.vectorBits = cpu.vectorBits;
  pm.addNestedPass<func::FuncOp>(createKilnPackMatmulWeights(pack));
  if (packsConvWeights(cpu.vectorBits)) {
    KilnPackConvWeightsOptions packConv;
    packConv.vectorBits = cpu.vectorBits;
    pm.addNestedPass<func::FuncOp>(createKilnPackConvWeights(packConv));
  }
  KilnFormKernelsOptions form;
  form.convVectorBits = cpu.vectorBits;
  pm.addNestedPass<func::FuncOp>(createKilnFormKernels(form));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

namespace {

/// One-shot bufferization with results as caller-owned out-params: static
/// allocations of results are replaced by the out-param itself, so outputs
/// are written in place.
void addBufferization(OpPassManager &pm) {
  pm.addPass(createKilnPrivatizeEntry());
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  pm.addNestedPass<func::FuncOp>(createKilnResultsInPlace()); // through reshapes too
  pm.addPass(createCanonicalizerPass());
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addNestedPass<func::FuncOp>(createKilnCopyToLinalg());
}

/// Intermediates in one arena placed by liveness, then the weights in one
/// blob: each one more argument of @main, in that order. The blob goes into
/// the artifact as raw bytes after LLVM's optimizer (or into a side file,
/// --weights=external): translating and optimizing 100 MB of constants as
/// LLVM arrays took a minute and 4 GB for ResNet-50.
void addMemoryPlan(OpPassManager &pm, bool stackTemporaries, unsigned epilogueReach = 0) {
  KilnPlanMemoryOptions plan;
  plan.epilogueReach = epilogueReach;
  pm.addPass(createKilnPlanMemory(plan));
  if (stackTemporaries)
    pm.addNestedPass<func::FuncOp>(createKilnStackTemporaries());
  KilnExternalizeWeightsOptions weights;
  weights.minBytes = 64; // scalars and tiny tables stay foldable constants
  pm.addPass(createKilnExternalizeWeights(weights));
}

/// Host code (loops, calls, views) => LLVM dialect with bare pointers, then
/// the artifact's entry point.
void addHostLowering(OpPassManager &pm) {
  pm.addNestedPass<func::FuncOp>(createKilnApproximateMath());
  // Arithmetic and math on bf16 (an Add, a Sqrt of a bf16 model) in f32,
  // rounded back per op: x86 has no bf16 arithmetic, and LLVM would
  // promote it through compiler-rt helpers the artifact cannot link (math
  // on f16 likewise, for one path for both). Then bf16 conversions become
  // integer arithmetic (no compiler-rt helpers).
  pm.addPass(math::createMathExtendToSupportedTypes());
  arith::ArithEmulateUnsupportedFloatsOptions bf16;
  bf16.sourceTypeStrs = {"bf16"};
  pm.addPass(arith::createArithEmulateUnsupportedFloats(bf16));
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // Math on vectors LLVM has no intrinsic for is unrolled into libm calls
  // on extracted lanes: before the vector ops are lowered.
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createConvertVectorToLLVMPass()); // register-tiled and row kernels
  pm.addPass(createUBToLLVMConversionPass()); // poison from vector shape casts
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
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

} // namespace

void buildCPULinalgToLLVMPipeline(OpPassManager &pm) {
  buildCPULinalgToLLVMPipeline(pm, CpuOptions());
}

void buildCPULinalgToLLVMPipeline(OpPassManager &pm, const CpuOptions &cpu) {
  pm.addNestedPass<func::FuncOp>(createKilnInterchangeLoops());
  pm.addPass(createKilnSplitSharedFills()); // a fill written in place, not a copy of one
  addBufferization(pm);
  // Kernels formed as scf.forall run as parallel loops (tasks when big).
  pm.addNestedPass<func::FuncOp>(createForallToParallelLoopPass());
  addMemoryPlan(pm, /*stackTemporaries=*/true);
  pm.addNestedPass<func::FuncOp>(createKilnPadCopies());
  KilnVectorizeConvOptions conv;
  conv.vectorBits = cpu.vectorBits;
  pm.addNestedPass<func::FuncOp>(createKilnVectorizeConv(conv));
  KilnVectorizeMatmulOptions matmul;
  matmul.vectorBits = cpu.vectorBits;
  pm.addNestedPass<func::FuncOp>(createKilnVectorizeMatmul(matmul));
  KilnVectorizeElementwiseOptions elementwise;
  elementwise.vectorBits = cpu.vectorBits;
  pm.addNestedPass<func::FuncOp>(createKilnVectorizeElementwise(elementwise));
  pm.addNestedPass<func::FuncOp>(createKilnTileTransposes());
  // Parallel loops: the outermost ones with enough work become tasks for
  // the runtime's thread pool, the rest lower to plain loops.
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createKilnOutlineKernels());
  addHostLowering(pm);
}

void buildCUDALinalgToLLVMPipeline(OpPassManager &pm, const CudaOptions &options) {
  // Each convolution and matmul gets its own zero fill, written in place
  // (then dropped for tensor-core kernels), not a copy of a shared one;
  // each op its own empty destination, placed by the memory plan.
  KilnSplitSharedFillsOptions split;
  split.empties = true;
  pm.addPass(createKilnSplitSharedFills(split));
  addBufferization(pm);
  // The row groups that will take a small contraction (attention's) are
  // marked first, on the loops as the outliner sees them.
  pm.addNestedPass<func::FuncOp>(createKilnGpuParallelFirst());
  pm.addNestedPass<func::FuncOp>(createKilnGpuTransposeOperands());
  // At batch 1 the heads' split transposes a unit batch that attention
  // reads collapsed away: into the collapsed view, they fold into the
  // group as at larger batches.
  pm.addNestedPass<func::FuncOp>(createKilnGpuDropTransposeUnitDims());
  pm.addNestedPass<func::FuncOp>(createKilnGpuMarkRowGroups());
  // Every top-level buffer lives in the arena (device memory); no host
  // stack temporaries, since only kernels touch memory. A matmul's inputs
  // outlive the elementwise ops its kernel may take as epilogue (bias,
  // activation, a transpose of the heads), whose outputs then never share
  // their bytes; a marked group's buffers live to its end.
  addMemoryPlan(pm, /*stackTemporaries=*/false, /*epilogueReach=*/6);
  KilnOutlineGpuKernelsOptions outline;
  outline.chip = options.chip;
  pm.addPass(createKilnOutlineGpuKernels(outline));
  OpPassManager &gpu = pm.nest<gpu::GPUModuleOp>();
  // Tensor-core matmuls: vector.contract on 16x8x8 tiles => ldmatrix and
  // mma.sync (tf32), then NVVM.
  gpu.addPass(createKilnGpuLowerMma());
  gpu.addPass(createCanonicalizerPass()); // the conversion leaves the old loop values dead
  gpu.addPass(createConvertNVGPUToNVVMPass());
  gpu.addPass(createConvertVectorToSCFPass());
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  gpu.addPass(arith::createArithExpandOpsPass(expand));
  gpu.addPass(createLowerAffinePass());
  gpu.addPass(createSCFToControlFlowPass());
  gpu.addPass(memref::createExpandStridedMetadataPass());
  gpu.addPass(createLowerAffinePass());
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.useBarePtrCallConv = true; // kernels take bare pointers, as the launcher passes them
  nvvm.indexBitwidth = 64;
  gpu.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  gpu.addPass(createKilnGpuExternDynamicShared());
  // NVVM ops that exist only as PTX (wgmma, fence.proxy) => inline assembly.
  gpu.addPass(createConvertNVVMToLLVMPass());
  gpu.addPass(createCanonicalizerPass());
  gpu.addPass(createCSEPass());
  gpu.addPass(createReconcileUnrealizedCastsPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa"; // PTX; ptxas runs later, when installed
  binary.toolkitPath = options.toolkit;
  pm.addPass(createGpuModuleToBinaryPass(binary));
  pm.addPass(createKilnEmbedPtx());
  addHostLowering(pm);
}

void registerKilnPipelines() {
  PassPipelineRegistration<>("kiln-graph-opt", "kiln graph cleanup",
                             buildKilnGraphPipeline);
  PassPipelineRegistration<>("kiln-lower-to-linalg",
                             "kiln => fused linalg on tensors",
                             [](OpPassManager &pm) { buildKilnToLinalgPipeline(pm); });
  PassPipelineRegistration<>(
      "kiln-cuda-lower-to-llvm",
      "linalg on tensors => CUDA kernels as PTX + host code in the LLVM dialect",
      [](OpPassManager &pm) { buildCUDALinalgToLLVMPipeline(pm, CudaOptions()); });
  PassPipelineRegistration<>("kiln-cpu-lower-to-llvm",
                             "linalg on tensors => LLVM dialect for the host CPU",
                             [](OpPassManager &pm) { buildCPULinalgToLLVMPipeline(pm); });
}

} // namespace kiln

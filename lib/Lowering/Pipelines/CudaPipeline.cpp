//===- CudaPipeline.cpp - linalg on tensors to CUDA kernels and a host ----===//

#include "PipelineParts.h"
#include "kiln/Lowering/Passes.h"
#include "kiln/Lowering/Pipelines/Pipelines.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace kiln {
namespace {

/// The tuning options of a pass that plans tensor-core matmuls.
template <typename PassOptions> PassOptions withTuning(PassOptions o, const GpuTuning &t) {
  o.mma = t.mma;
  o.tileN = t.tileN;
  o.loads = t.loads;
  o.tf32Drain = t.tf32Drain;
  o.cluster = t.cluster;
  return o;
}

} // namespace

void buildCUDALinalgToLLVMPipeline(OpPassManager &pm, const CudaOptions &options) {
  // Scalars the host program reads from tensors (a shape, a count, a
  // condition) come from @__kiln_output_dims, run on the host before the
  // run, which is lowered apart as host code.
  pm.addPass(createKilnHostValues());
  pm.addPass(createKilnLowerOutputDims());
  // Recurrences, Scans and Ifs run as the host program's loops and
  // branches: their state in one buffer each.
  pm.addNestedPass<func::FuncOp>(createKilnGpuCarryInPlace());
  addFusion(pm);
  // Each convolution and matmul gets its own zero fill, written in place
  // (then dropped for tensor-core kernels), not a copy of a shared one;
  // each op its own empty destination, placed by the memory plan.
  KilnSplitSharedFillsOptions split;
  split.empties = true;
  pm.addPass(createKilnSplitSharedFills(split));
  // Again, after the canonicalizer: it drops the while loops' state their
  // conditions need not pass on, which bufferization would then copy.
  pm.addNestedPass<func::FuncOp>(createKilnGpuCarryInPlace());
  addBufferization(pm);
  // The row groups that will take a small contraction (attention's) are
  // marked first, on the loops as the outliner sees them.
  pm.addNestedPass<func::FuncOp>(createKilnGpuParallelFirst());
  pm.addNestedPass<func::FuncOp>(createKilnGpuTransposeOperands(
      withTuning(KilnGpuTransposeOperandsOptions(), options.tuning)));
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
  // Dynamic buffers too, at their largest sizes; those sized by values
  // read before the run have none, and come from the session's device
  // allocator at run time.
  addMemoryPlan(pm, /*stackTemporaries=*/false, /*epilogueReach=*/6, /*dynamicAtMax=*/true,
                /*requireBounds=*/true, /*dynamicMaxBytes=*/0, /*inLoops=*/true);
  auto outline = withTuning(KilnOutlineGpuKernelsOptions(), options.tuning);
  outline.chip = options.chip;
  pm.addPass(createKilnOutlineGpuKernels(outline));
  // Kernels and launches of buffers with dynamic sizes take a pointer and
  // the sizes: the kernels are lowered with bare pointers.
  pm.addPass(createKilnSplitDynamicArgs());
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
  gpu.addPass(createKilnExpandDynamicGroups()); // (a dynamic model's reshapes)
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
  addHostLowering(pm, /*deviceAllocations=*/true);
}

} // namespace kiln

//===- CpuPipeline.cpp - linalg on tensors to the CPU's code --------------===//

#include "PipelineParts.h"
#include "kiln/Lowering/ConvTiles.h"
#include "kiln/Lowering/Passes.h"
#include "kiln/Lowering/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace kiln {

void buildCPUKernelFormationPipeline(OpPassManager &pm, const CpuOptions &cpu) {
  pm.addNestedPass<func::FuncOp>(createKilnPointwiseConvAsMatmul({cpu.vectorBits}));
  pm.addNestedPass<func::FuncOp>(createKilnDepthwiseConv());
  // After them: they collapse the elementwise ops after a product onto its
  // shape, which fusion and unit-dim folding would otherwise have changed.
  addFusion(pm);
  KilnPackMatmulWeightsOptions pack;
  pack.vectorBits = cpu.vectorBits;
  pm.addNestedPass<func::FuncOp>(createKilnPackMatmulWeights(pack));
  // Before the weights are packed: the convolutions it takes are not.
  if (cpu.winograd && cpu.vectorBits >= 128) {
    KilnWinogradConvOptions winograd;
    winograd.vectorBits = cpu.vectorBits;
    pm.addNestedPass<func::FuncOp>(createKilnWinogradConv(winograd));
  }
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

void buildCPULinalgToLLVMPipeline(OpPassManager &pm, const CpuOptions &cpu) {
  buildCPUKernelFormationPipeline(pm, cpu);
  pm.addNestedPass<func::FuncOp>(createKilnInterchangeLoops());
  pm.addPass(createKilnSplitSharedFills()); // a fill written in place, not a copy of one
  addBufferization(pm);
  // Kernels formed as scf.forall run as parallel loops (tasks when big).
  pm.addNestedPass<func::FuncOp>(createForallToParallelLoopPass());
  // Buffers of dynamic sizes bounded by the inputs' maxima in the arena at
  // their largest (where the allocator's cost shows: small ones); the
  // unbounded and those past 64 MiB at their largest (BERT-base's scores
  // at --dim batch=1..1024: 12 GiB, which every session would reserve)
  // from the session's allocator at run time.
  addMemoryPlan(pm, /*stackTemporaries=*/true, /*epilogueReach=*/0, /*dynamicAtMax=*/true,
                /*requireBounds=*/false, /*dynamicMaxBytes=*/int64_t(64) << 20);
  pm.addNestedPass<func::FuncOp>(createKilnPadCopies());
  KilnVectorizeWinogradOptions winograd;
  winograd.vectorBits = cpu.vectorBits;
  pm.addNestedPass<func::FuncOp>(createKilnVectorizeWinograd(winograd));
  KilnVectorizePoolOptions pool;
  pool.vectorBits = cpu.vectorBits;
  pm.addNestedPass<func::FuncOp>(createKilnVectorizePool(pool));
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
  pm.addNestedPass<func::FuncOp>(createKilnApproximateMath());
  addHostLowering(pm);
}

} // namespace kiln

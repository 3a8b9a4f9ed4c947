//===- HostPipeline.cpp - the pipeline parts both targets share -----------===//
//
// Bufferization, the memory plan and the host program's lowering to the
// LLVM dialect: the steps the CPU and CUDA pipelines run alike.
//
//===----------------------------------------------------------------------===//

#include "PipelineParts.h"
#include "kiln/Lowering/Host/HostToLLVM.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace kiln {

void addFusion(OpPassManager &pm) {
  pm.addPass(createKilnFuseElementwise());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Unit dimensions (keepdims reductions) out of the maps, so every
  // producer-consumer map is a projected permutation that tiling can slice.
  pm.addNestedPass<func::FuncOp>(createLinalgFoldUnitExtentDimsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

/// One-shot bufferization with results as caller-owned out-params: static
/// allocations of results are replaced by the out-param itself, so outputs
/// are written in place.
void addBufferization(OpPassManager &pm) {
  pm.addPass(createKilnPrivatizeEntry());
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion = bufferization::LayoutMapOption::IdentityLayoutMap;
  // A Loop's carried values (scf.while) get a new buffer per iteration.
  bufferize.allowReturnAllocsFromLoops = true;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  pm.addNestedPass<func::FuncOp>(createKilnResultsInPlace()); // through reshapes too
  pm.addPass(createCanonicalizerPass());
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addNestedPass<func::FuncOp>(createKilnCopyToLinalg());
  // Each reduction's wait as late as its buffer allows, while every buffer
  // is still an allocation of its own (before the memory plan).
  pm.addNestedPass<func::FuncOp>(createKilnScheduleCollectives());
}

/// Intermediates in one arena placed by liveness, then the weights in one
/// blob: each one more argument of @main, in that order. The blob goes into
/// the artifact as raw bytes after LLVM's optimizer (or into a side file,
/// --weights=external): translating and optimizing 100 MB of constants as
/// LLVM arrays took a minute and 4 GB for ResNet-50.
void addMemoryPlan(OpPassManager &pm, bool stackTemporaries, unsigned epilogueReach,
                   bool dynamicAtMax, bool requireBounds, int64_t dynamicMaxBytes,
                   bool inLoops) {
  KilnPlanMemoryOptions plan;
  plan.inLoops = inLoops;
  plan.epilogueReach = epilogueReach;
  plan.dynamicAtMax = dynamicAtMax;
  plan.requireBounds = requireBounds;
  plan.dynamicMaxBytes = dynamicMaxBytes;
  pm.addPass(createKilnPlanMemory(plan));
  if (stackTemporaries)
    pm.addNestedPass<func::FuncOp>(createKilnStackTemporaries());
  KilnExternalizeWeightsOptions weights;
  weights.minBytes = 64; // scalars and tiny tables stay foldable constants
  pm.addPass(createKilnExternalizeWeights(weights));
}

/// Host code (loops, calls, views) => LLVM dialect with bare pointers, then
/// the artifact's entry point. On the CPU the kernels are host code too.
void addHostLowering(OpPassManager &pm, bool deviceAllocations, bool amx) {
  // After the memory plan, which would not place a buffer a call reads.
  pm.addPass(createKilnLowerCollectives());
  addHostToLLVM(pm, deviceAllocations, amx);
  pm.addPass(createKilnEmitEntry());
}

} // namespace kiln

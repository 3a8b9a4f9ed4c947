//===- HostPipeline.cpp - the pipeline parts both targets share -----------===//
//
// Bufferization, the memory plan and the host program's lowering to the
// LLVM dialect: the steps the CPU and CUDA pipelines run alike.
//
//===----------------------------------------------------------------------===//

#include "PipelineParts.h"
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
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
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
                   bool dynamicAtMax, bool requireBounds, int64_t dynamicMaxBytes) {
  KilnPlanMemoryOptions plan;
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
void addHostLowering(OpPassManager &pm) {
  // After the memory plan, which would not place a buffer a call reads.
  pm.addPass(createKilnLowerCollectives());
  // Memrefs with dynamic sizes as pointers and sizes, for bare pointers.
  pm.addPass(createKilnSplitDynamicArgs());
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
  pm.addNestedPass<func::FuncOp>(createKilnExpandDynamicGroups());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // Math on vectors LLVM has no intrinsic for is unrolled into libm calls
  // on extracted lanes: before the vector ops are lowered.
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createConvertVectorToLLVMPass()); // register-tiled and row kernels
  pm.addPass(createUBToLLVMConversionPass());  // poison from vector shape casts
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

} // namespace kiln

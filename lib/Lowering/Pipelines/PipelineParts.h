//===- PipelineParts.h - pipeline steps the stages share --------*- C++ -*-===//

#ifndef KILN_LIB_LOWERING_PIPELINES_PIPELINEPARTS_H
#define KILN_LIB_LOWERING_PIPELINES_PIPELINEPARTS_H

#include <cstdint>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace kiln {

/// Elementwise fusion, then unit dimensions folded out of the maps.
void addFusion(mlir::OpPassManager &pm);

/// One-shot bufferization with results as caller-owned out-params.
void addBufferization(mlir::OpPassManager &pm);

/// Intermediates in one arena placed by liveness, then the weights in one
/// blob (`stackTemporaries`: small per-tile temporaries on the stack;
/// `epilogueReach`: ops after a product whose inputs stay live with it;
/// `dynamicAtMax`: buffers with dynamic sizes placed at their largest;
/// `requireBounds`: one without a largest size is an error, else it stays a
/// run-time allocation, as does one past `dynamicMaxBytes` at its largest;
/// `inLoops`: buffers made in the host program's loops and branches too).
void addMemoryPlan(mlir::OpPassManager &pm, bool stackTemporaries, unsigned epilogueReach = 0,
                   bool dynamicAtMax = false, bool requireBounds = true,
                   int64_t dynamicMaxBytes = 0, bool inLoops = false);

/// The host program => LLVM dialect with bare pointers, then the entry point
/// (`deviceAllocations`: CUDA's, whose buffers sized at run time are device
/// memory from the session).
void addHostLowering(mlir::OpPassManager &pm, bool deviceAllocations = false, bool amx = false);

} // namespace kiln

#endif // KILN_LIB_LOWERING_PIPELINES_PIPELINEPARTS_H

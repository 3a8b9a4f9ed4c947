//===- CpuPipeline.cpp - linalg on tensors to the CPU's code --------------===//

#include "PipelineParts.h"
#include "kiln/Lowering/ConvTiles.h"
#include "kiln/Lowering/MatmulTiles.h"
#include "kiln/Lowering/Passes.h"
#include "kiln/Lowering/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace kiln {

namespace {
/// A CPU pass on functions, created with the target's vector width.
template <typename Options>
void addWithWidth(OpPassManager &pm, const CpuOptions &cpu,
                  std::unique_ptr<Pass> (*create)(Options)) {
  Options options;
  options.vectorBits = cpu.vectorBits;
  pm.addNestedPass<func::FuncOp>(create(options));
}
} // namespace

void buildCPUKernelFormationPipeline(OpPassManager &pm, const CpuOptions &cpu) {
  pm.addNestedPass<func::FuncOp>(createKilnPointwiseConvAsMatmul({cpu.vectorBits}));
  pm.addNestedPass<func::FuncOp>(createKilnFoldChannelScales());
  pm.addNestedPass<func::FuncOp>(createKilnDepthwiseConv());
  // After them: they collapse the elementwise ops after a product onto its
  // shape, which fusion and unit-dim folding would otherwise have changed.
  addFusion(pm);
  pm.addNestedPass<func::FuncOp>(createKilnCollapseReductionLoops());
  // Before the weights are packed: the convolutions it takes are not.
  if (cpu.winograd && cpu.vectorBits >= 128) {
    // From 64 channels: AVX2's packed direct tile runs them at about 0.65
    // of the FMA peak, below the products' 0.75 (ResNet-50's 64-channel
    // 3x3 at 56x56 on 2 Zen 2 cores: 1.55 -> 1.2 ms, onnxruntime 1.24);
    // AVX-512's at 0.9-1.2 ms on 2 Sapphire Rapids cores, 0.5-0.6 by
    // Winograd (onnxruntime 0.84; ResNet-50 at batch 8 250-258 -> 238-240
    // ms).
    KilnWinogradConvOptions winograd;
    winograd.vectorBits = cpu.vectorBits;
    winograd.minChannels = 64;
    winograd.outputTile = cpu.winogradTile;
    pm.addNestedPass<func::FuncOp>(createKilnWinogradConv(winograd));
  }
  // B panels that stay in L2 beside A's rows: 1 MiB on a Sapphire Rapids
  // (2 MiB of L2), 256 KiB on a Zen 2 (512 KiB), where a 1x1
  // convolution's 800 KB image read whole by each row tile had
  // MobileNetV3's 16 -> 64 at 112x112 at 0.21 ms, 0.17 in column panels
  // (the model 5.0 -> 4.8 ms, EfficientNet-B0 10.7 -> 10.4). Images past
  // them are packed per column tile.
  int64_t columnBlockBytes = cpu.l2Bytes / 2;
  // After Winograd's rewrite: its products' constant filters are packed
  // by rows like a 1x1 convolution's weights.
  KilnPackMatmulWeightsOptions pack;
  pack.vectorBits = cpu.vectorBits;
  pack.int8 = cpu.int8Tiles;
  pack.int8Saturate = cpu.int8Saturate;
  pack.columnBlockBytes = columnBlockBytes;
  pm.addNestedPass<func::FuncOp>(createKilnPackMatmulWeights(pack));
  // AVX2's 8-bit tiles broadcast A's pairs of k from i16 rows.
  if (cpu.int8Tiles && int8Group(cpu.vectorBits, cpu.int8Saturate) == 2)
    pm.addNestedPass<func::FuncOp>(createKilnWidenInt8Rows());
  if (packsConvWeights(cpu.vectorBits))
    addWithWidth<KilnPackConvWeightsOptions>(pm, cpu, createKilnPackConvWeights);
  KilnFormKernelsOptions form;
  form.convVectorBits = cpu.vectorBits;
  form.amx = cpu.amx;
  form.columnBlockBytes = columnBlockBytes;
  // Each row tile of a group streams all of its linear layers' weights:
  // past half the L2 they come from L3 for every tile. A small encoder's
  // feed-forward (256 -> 1024 -> 256, 2 MB) at 2048 tokens on 2 Sapphire
  // Rapids cores ran at 120 GFLOP/s as one kernel, 25 GB/s of weights
  // from L3; as two, each product's B panels stay in L2 (BERT 4 layers at
  // 8x256 97 -> 67 ms, 4x128 24.6 -> 15.3 ms).
  form.maxSharedBytes = columnBlockBytes;
  pm.addNestedPass<func::FuncOp>(createKilnFormKernels(form));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void buildCPULinalgToLLVMPipeline(OpPassManager &pm, const CpuOptions &cpu) {
  // Scalars read from the data (a shape given as an input, NonZero's
  // count) are computed once, before the run, by kiln_model_output_dims,
  // rather than again in @main.
  pm.addPass(createKilnHostValues());
  buildCPUKernelFormationPipeline(pm, cpu);
  pm.addNestedPass<func::FuncOp>(createKilnInterchangeLoops());
  pm.addPass(createKilnSplitSharedFills()); // a fill written in place, not a copy of one
  addBufferization(pm);
  // Kernels formed as scf.forall run as parallel loops (tasks when big).
  pm.addNestedPass<func::FuncOp>(createKilnForallToParallel());
  // Convolutions read the images zero pads were made of (before planning:
  // the images live on until them).
  KilnImplicitPaddingOptions implicitPadding;
  implicitPadding.vectorBits = cpu.vectorBits;
  pm.addPass(createKilnImplicitPadding(implicitPadding));
  // Before planning: a run's buffers then live through all of it.
  if (cpu.imageChains)
    pm.addNestedPass<func::FuncOp>(createKilnImageChains());
  // Buffers of dynamic sizes bounded by the inputs' maxima in the arena at
  // their largest (where the allocator's cost shows: small ones); the
  // unbounded and those past 64 MiB at their largest (BERT-base's scores
  // at --dim batch=1..1024: 12 GiB, which every session would reserve)
  // from the session's allocator at run time.
  addMemoryPlan(pm, /*stackTemporaries=*/true, /*epilogueReach=*/0, /*dynamicAtMax=*/true,
                /*requireBounds=*/false, /*dynamicMaxBytes=*/int64_t(64) << 20);
  pm.addNestedPass<func::FuncOp>(createKilnPadCopies());
  addWithWidth<KilnVectorizeWinogradOptions>(pm, cpu, createKilnVectorizeWinograd);
  addWithWidth<KilnVectorizePoolOptions>(pm, cpu, createKilnVectorizePool);
  addWithWidth<KilnVectorizeConvOptions>(pm, cpu, createKilnVectorizeConv);
  KilnVectorizeMatmulOptions matmul;
  matmul.vectorBits = cpu.vectorBits;
  matmul.amx = cpu.amx;
  pm.addNestedPass<func::FuncOp>(createKilnVectorizeMatmul(matmul));
  addWithWidth<KilnVectorizeElementwiseOptions>(pm, cpu, createKilnVectorizeElementwise);
  pm.addNestedPass<func::FuncOp>(createKilnTileTransposes());
  // Without AVX-512 a masked store is microcode on AMD cores (Zen 2: half
  // of a Winograd input transform's time).
  if (cpu.vectorBits < 512)
    pm.addNestedPass<func::FuncOp>(createKilnSplitMaskedStores());
  // Parallel loops: the outermost ones with enough work become tasks for
  // the runtime's thread pool, the rest lower to plain loops.
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createKilnOutlineKernels());
  pm.addNestedPass<func::FuncOp>(createKilnApproximateMath());
  addHostLowering(pm, /*deviceAllocations=*/false, cpu.amx);
}

} // namespace kiln

//===- Pipelines.h - Kiln's named compilation pipelines ---------*- C++ -*-===//
//
// The stage ladder (docs/architecture.md) as pass pipelines, each registered
// under a name with its target's options, so kiln-opt and the lit tests run
// exactly what `kiln compile` runs, for every target variant.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_PIPELINES_PIPELINES_H
#define KILN_LOWERING_PIPELINES_PIPELINES_H

namespace mlir {
class DialectRegistry;
class OpPassManager;
} // namespace mlir

#include "kiln/Lowering/GpuTuning.h"

#include <string>
#include <vector>

namespace kiln {

/// What `kiln compile --train` builds: loss, optimizer and their settings
/// (PyTorch's defaults; weightDecay < 0 means the optimizer's default).
struct TrainingOptions {
  std::string loss = "mse";      // mse | cross_entropy | output
  std::string optimizer = "sgd"; // sgd | adam | adamw
  std::string labelName = "label";
  int64_t classAxis = 1; // cross_entropy's class axis in the logits
  std::vector<std::string> freeze;
  double lr = 1e-3, momentum = 0, dampening = 0, weightDecay = -1;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  bool nesterov = false;
  bool recompute = true;         // kiln-partition's min-cut; false saves everything
  bool batchNormTraining = true; // batch statistics (PyTorch's train()); false: eval()
  int64_t seed = 0;              // mixed into every dropout's random stream
  bool dataParallel = false;     // loss and gradients averaged over ranks (--distributed)
  bool syncBatchNorm = false;    // batch statistics of the global batch (--sync-batch-norm)
};

/// `kiln --train`: parameters lifted, the loss added, the gradients
/// (kiln-autograd) and the optimizer update appended, then cleaned up.
void buildKilnTrainingPipeline(mlir::OpPassManager &pm, const TrainingOptions &options);

/// `kiln-graph-opt`: canonicalize and CSE on the kiln dialect, fold
/// batch-norms, sink transposes (and with `channelsLastConvs` run depthwise
/// convolutions channels last where that cancels permutes).
void buildKilnGraphPipeline(mlir::OpPassManager &pm, bool channelsLastConvs = false);

/// The CPU code is generated for: the width of its vector registers sizes
/// the register tiles and decides which weights are packed.
struct CpuOptions {
  unsigned vectorBits = 512;
  /// Wide 3x3 convolutions by Winograd's F(4x4, 3x3) or F(2x2, 3x3)
  /// (kiln-winograd-conv): faster, rounded differently from the direct sums.
  bool winograd = true;
  int64_t winogradTile = 4; // the largest output tile side m taken
  /// Runs of kernels over a batch of 4 or more images run image by image
  /// (kiln-image-chains): faster where they pass big images along.
  bool imageChains = true;
  /// AVX512-VNNI: 8-bit products (kiln.matmul_integer) run on vpdpbusd,
  /// their weights packed for it.
  bool vnni = false;
  /// 8-bit products on an integer tile at all: vpdpbusd (`vnni`), or AVX2's
  /// vpmaddwd (256-bit vectors), their weights packed for it.
  bool int8Tiles = false;
  /// AVX2 (int8Tiles without vnni): 8-bit products as onnxruntime's MLAS
  /// computes them there, vpmaddubsw's two products a 16-bit lane
  /// saturated at +-32767 (`--int8-arith=saturate`): weights packed in
  /// fours, ~1.3x the exact vpmaddwd tile's rate, sums that differ where
  /// a pair passes the i16 range.
  bool int8Saturate = false;
  /// AMX-INT8 (with vnni): 8-bit products of 16 rows or more on the tile
  /// unit (kiln-vectorize-matmul's `amx`).
  bool amx = false;
  /// L2 bytes per core: a matmul whose B is past half of it is tiled by
  /// column panels (kiln-form-kernels' column-block-bytes).
  int64_t l2Bytes = 2 << 20;
};

/// The vector register width of `cpu` as `kiln compile --cpu` names it
/// ("" or "native": this machine; else an LLVM CPU name such as
/// x86-64-v3): 512 with AVX-512, 256 with AVX, else 128.
unsigned cpuVectorBits(const std::string &cpu);
/// Whether `cpu` (named as for cpuVectorBits) has AVX512-VNNI.
bool cpuHasVnni(const std::string &cpu);
/// Whether `cpu` has AVX2 (vpmaddwd on 256-bit vectors).
bool cpuHasAvx2(const std::string &cpu);
/// Whether `cpu` has AMX-INT8 (and, for this machine, the kernel lets a
/// process use the tile registers).
bool cpuHasAmx(const std::string &cpu);
/// The L2 bytes per core of this machine for "" or "native" (when the
/// system says), else `fallback`: a CPU's name does not give its caches.
int64_t cpuL2Bytes(const std::string &cpu, int64_t fallback);

/// `--target=cuda`: the GPU architecture, the CUDA toolkit whose libdevice
/// math kernels link against ("" = $CUDA_HOME or the default), and the
/// tensor-core kernels' settings.
struct CudaOptions {
  std::string chip = "sm_80";
  std::string toolkit;
  GpuTuning tuning;
};

/// What the code is generated for: the target and its options.
struct TargetOptions {
  enum Kind { CPU, CUDA } kind = CPU;
  CpuOptions cpu;
  CudaOptions cuda;
};

/// The stage ladder: the IR a compile reaches, in order. Each stage runs
/// on the IR of the one before; `kiln compile --emit=<name>` stops there.
///  - kiln:   the imported graph, cleaned up (target-free);
///  - linalg: linalg on tensors, one or a few ops per kiln op (target-free);
///  - llvm:   fused, the target's kernels and the host program that runs
///            them, in the LLVM dialect (CUDA kernels as PTX on the module).
///            Fusion belongs here: the CPU rewrites 1x1 and depthwise
///            convolutions first, with their epilogues on the product's
///            shape.
enum class Stage { Kiln, Linalg, LLVM };

/// The passes that take the IR of the stage before `stage` to `stage`.
void buildStage(mlir::OpPassManager &pm, Stage stage, const TargetOptions &target);
/// Every stage from the imported module up to `last`, in order.
void buildPipelineTo(mlir::OpPassManager &pm, Stage last, const TargetOptions &target);

/// `kiln-lower-to-linalg`: kiln => linalg on tensors; the same for every
/// target.
void buildKilnToLinalgPipeline(mlir::OpPassManager &pm);

/// `kiln-cpu-form-kernels`: linalg on tensors => the CPU's kernels, tiled
/// and fused on tensors (1x1 and depthwise convolutions rewritten, then
/// elementwise fusion, constant weights packed for the register tiles).
void buildCPUKernelFormationPipeline(mlir::OpPassManager &pm, const CpuOptions &cpu);

/// `kiln-cpu-lower-to-llvm`: linalg on tensors => the CPU's kernels =>
/// bufferized loops and register tiles => LLVM dialect; results become
/// caller-owned out-params, pointers are bare.
void buildCPULinalgToLLVMPipeline(mlir::OpPassManager &pm, const CpuOptions &cpu);

/// `kiln-cuda-lower-to-llvm`: linalg on tensors => fused => bufferized loops => one
/// kernel per loop nest in a gpu.module serialized to PTX (`kiln.ptx` on the
/// module), and the host program that launches them in the LLVM dialect.
void buildCUDALinalgToLLVMPipeline(mlir::OpPassManager &pm, const CudaOptions &options);

/// Registers the pipelines above with the pass registry, each with its
/// target's options (`kiln-cuda-lower-to-llvm{chip=sm_90a loads=tma}`).
void registerKilnPipelines();

/// Every dialect, interface model and translation the compiler driver needs.
void registerKilnDialects(mlir::DialectRegistry &registry);

} // namespace kiln

#endif // KILN_LOWERING_PIPELINES_PIPELINES_H

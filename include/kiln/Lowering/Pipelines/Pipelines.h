//===- Pipelines.h - Kiln's named compilation pipelines ---------*- C++ -*-===//
//
// The stages of DESIGN.md as pass pipelines, each registered under a name so
// kiln-opt and the lit tests run exactly what `kiln compile` runs.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_PIPELINES_PIPELINES_H
#define KILN_LOWERING_PIPELINES_PIPELINES_H

namespace mlir {
class DialectRegistry;
class OpPassManager;
} // namespace mlir

#include <string>
#include <vector>

namespace kiln {

/// What `kiln compile --train` builds: loss, optimizer and their settings
/// (PyTorch's defaults; weightDecay < 0 means the optimizer's default).
struct TrainingOptions {
  std::string loss = "mse";       // mse | cross_entropy | output
  std::string optimizer = "sgd";  // sgd | adam | adamw
  std::string labelName = "label";
  int64_t classAxis = 1;          // cross_entropy's class axis in the logits
  std::vector<std::string> freeze;
  double lr = 1e-3, momentum = 0, dampening = 0, weightDecay = -1;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  bool nesterov = false;
  bool recompute = true; // kiln-partition's min-cut; false saves everything
  bool batchNormTraining = true; // batch statistics (PyTorch's train()); false: eval()
  int64_t seed = 0;               // mixed into every dropout's random stream
};

/// `kiln --train`: parameters lifted, the loss added, the gradients
/// (kiln-autograd) and the optimizer update appended, then cleaned up.
void buildKilnTrainingPipeline(mlir::OpPassManager &pm, const TrainingOptions &options);

/// `kiln-graph-opt`: canonicalize and CSE on the kiln dialect.
void buildKilnGraphPipeline(mlir::OpPassManager &pm);

/// The CPU code is generated for: the width of its vector registers sizes
/// the register tiles of convolutions.
struct CpuOptions {
  unsigned vectorBits = 512;
};

/// The vector register width of `cpu` as `kiln compile --cpu` names it
/// ("" or "native": this machine; else an LLVM CPU name such as
/// x86-64-v3): 512 with AVX-512, 256 with AVX, else 128.
unsigned cpuVectorBits(const std::string &cpu);

/// `kiln-lower-to-linalg`: kiln => linalg on tensors with elementwise fusion.
void buildKilnToLinalgPipeline(mlir::OpPassManager &pm);
/// The same; `formKernels` false stops after elementwise fusion (the CUDA
/// target maps loop nests to threads itself).
void buildKilnToLinalgPipeline(mlir::OpPassManager &pm, bool formKernels,
                               const CpuOptions &cpu = CpuOptions());

/// `kiln-cpu-lower-to-llvm`: linalg on tensors => bufferized loops => LLVM
/// dialect; results become caller-owned out-params, pointers are bare.
void buildCPULinalgToLLVMPipeline(mlir::OpPassManager &pm);
void buildCPULinalgToLLVMPipeline(mlir::OpPassManager &pm, const CpuOptions &cpu);

/// `--target=cuda`: the GPU architecture and the CUDA toolkit whose
/// libdevice math kernels link against ("" = $CUDA_HOME or the default).
struct CudaOptions {
  std::string chip = "sm_80";
  std::string toolkit;
};

/// `kiln-cuda-lower-to-llvm`: linalg on tensors => bufferized loops => one
/// kernel per loop nest in a gpu.module serialized to PTX (`kiln.ptx` on the
/// module), and the host program that launches them in the LLVM dialect.
void buildCUDALinalgToLLVMPipeline(mlir::OpPassManager &pm, const CudaOptions &options);

/// Registers the pipelines above with the pass registry.
void registerKilnPipelines();

/// Every dialect, interface model and translation the compiler driver needs.
void registerKilnDialects(mlir::DialectRegistry &registry);

} // namespace kiln

#endif // KILN_LOWERING_PIPELINES_PIPELINES_H

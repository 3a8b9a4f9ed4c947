//===- RegisterPipelines.cpp - the pipelines as kiln-opt names them -------===//
//
// Each registered pipeline takes its target's options, so a lit test
// reaches every variant `kiln compile` builds:
//   kiln-opt -kiln-cpu-lower-to-llvm='vector-bits=256'
//   kiln-opt -kiln-cuda-lower-to-llvm='chip=sm_90a loads=tma cluster=2'
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Pipelines/Pipelines.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace kiln {
namespace {

struct CpuPipelineOptions : PassPipelineOptions<CpuPipelineOptions> {
  Option<unsigned> vectorBits{*this, "vector-bits",
                              llvm::cl::desc("vector register width (512, 256 or 128)"),
                              llvm::cl::init(512)};
  Option<bool> vnni{*this, "vnni", llvm::cl::desc("AVX512-VNNI tiles for 8-bit products"),
                    llvm::cl::init(false)};
  Option<bool> int8{*this, "int8",
                    llvm::cl::desc("integer tiles for 8-bit products: vpmaddwd with 256-bit "
                                   "vectors (AVX2); with 512-bit ones, vnni's"),
                    llvm::cl::init(false)};
  Option<bool> int8Saturate{*this, "int8-saturate",
                            llvm::cl::desc("with int8 on 256-bit vectors: vpmaddubsw's "
                                           "saturating pairs, not exact vpmaddwd"),
                            llvm::cl::init(false)};
  CpuOptions get() const {
    CpuOptions o;
    o.vectorBits = vectorBits;
    o.vnni = vnni;
    // vpmaddwd's tile is AVX2's; 512-bit 8-bit tiles are VNNI's only.
    o.int8Tiles = vnni || (int8 && vectorBits == 256);
    o.int8Saturate = o.int8Tiles && !vnni && int8Saturate;
    return o;
  }
};

struct CudaPipelineOptions : PassPipelineOptions<CudaPipelineOptions> {
  Option<std::string> chip{*this, "chip", llvm::cl::desc("the GPU architecture (sm_80, sm_90a)"),
                           llvm::cl::init("sm_80")};
  Option<std::string> toolkit{*this, "toolkit",
                              llvm::cl::desc("the CUDA toolkit (libdevice); default: found")};
  Option<std::string> mma{*this, "mma", llvm::cl::desc("mma.sync's <k>x<stages> (32x4, 64x3)")};
  Option<int64_t> tileN{*this, "tile-n", llvm::cl::desc("wgmma tiles' columns (128 or 256)"),
                        llvm::cl::init(0)};
  Option<std::string> loads{*this, "loads",
                            llvm::cl::desc("wgmma tiles loaded by async, tma or ring"),
                            llvm::cl::init("async")};
  Option<bool> tf32Drain{*this, "tf32-drain",
                         llvm::cl::desc("the f32 wgmma kernel drains each k tile"),
                         llvm::cl::init(false)};
  Option<int64_t> cluster{*this, "cluster", llvm::cl::desc("blocks a cluster (1, or 2 with tma)"),
                          llvm::cl::init(1)};
  CudaOptions get() const {
    CudaOptions o;
    o.chip = chip;
    o.toolkit = toolkit;
    o.tuning.mma = mma;
    o.tuning.tileN = tileN;
    o.tuning.loads = loads;
    o.tuning.tf32Drain = tf32Drain;
    o.tuning.cluster = cluster;
    return o;
  }
};

} // namespace

void registerKilnPipelines() {
  PassPipelineRegistration<>("kiln-graph-opt", "kiln graph cleanup",
                             [](OpPassManager &pm) { buildKilnGraphPipeline(pm); });
  PassPipelineRegistration<>("kiln-lower-to-linalg",
                             "kiln => linalg on tensors (the same for every target)",
                             [](OpPassManager &pm) { buildKilnToLinalgPipeline(pm); });
  PassPipelineRegistration<CpuPipelineOptions>(
      "kiln-cpu-form-kernels", "linalg on tensors => the CPU's kernels, fused and tiled",
      [](OpPassManager &pm, const CpuPipelineOptions &o) {
        buildCPUKernelFormationPipeline(pm, o.get());
      });
  PassPipelineRegistration<CpuPipelineOptions>("kiln-cpu-lower-to-llvm",
                                               "linalg on tensors => LLVM dialect for the CPU",
                                               [](OpPassManager &pm, const CpuPipelineOptions &o) {
                                                 buildCPULinalgToLLVMPipeline(pm, o.get());
                                               });
  PassPipelineRegistration<CudaPipelineOptions>(
      "kiln-cuda-lower-to-llvm",
      "linalg on tensors => CUDA kernels as PTX + host code in the LLVM dialect",
      [](OpPassManager &pm, const CudaPipelineOptions &o) {
        buildCUDALinalgToLLVMPipeline(pm, o.get());
      });
}

} // namespace kiln

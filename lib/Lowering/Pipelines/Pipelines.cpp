//===- Pipelines.cpp - the stage ladder and its target-free stages --------===//
//
// Per-pass headers only (the Conversion/Passes.h umbrella costs ~20 s/TU).
// The CPU's and CUDA's stages are in CpuPipeline.cpp and CudaPipeline.cpp.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Pipelines/Pipelines.h"
#include "kiln/Dialects/Kiln/Transforms/Passes.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/X86TargetParser.h"

#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

using namespace mlir;

namespace kiln {

void buildKilnGraphPipeline(OpPassManager &pm, bool channelsLastConvs) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createKilnFoldBatchNorm());
  KilnSinkTransposesOptions sink;
  sink.channelsLastConvs = channelsLastConvs;
  pm.addPass(createKilnSinkTransposes(sink));
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
  KilnBatchNormTrainingOptions batchNorm;
  batchNorm.sync = options.syncBatchNorm;
  pm.addPass(createKilnBatchNormTraining(batchNorm));
  KilnDecomposeDropoutOptions dropout;
  dropout.stepCounter = true;
  dropout.seed = options.seed;
  pm.addPass(createKilnDecomposeDropout(dropout));
  pm.addPass(createKilnAutograd());
  if (options.dataParallel)
    pm.addPass(createKilnDataParallel());
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

namespace {
/// The features of `cpu` as `kiln compile --cpu` names it.
llvm::StringMap<bool> cpuFeatures(const std::string &cpu) {
  if (cpu.empty() || cpu == "native")
    return llvm::sys::getHostCPUFeatures();
  llvm::StringMap<bool> features;
  SmallVector<StringRef> list;
  llvm::X86::getFeaturesForCPU(cpu, list, /*NeedPlus=*/false);
  for (StringRef f : list)
    features[f] = true;
  return features;
}
} // namespace

bool cpuHasVnni(const std::string &cpu) { return cpuFeatures(cpu).lookup("avx512vnni"); }

bool cpuHasAvx2(const std::string &cpu) { return cpuFeatures(cpu).lookup("avx2"); }

bool cpuHasAmx(const std::string &cpu) {
  llvm::StringMap<bool> features = cpuFeatures(cpu);
  if (!features.lookup("amx-int8") || !features.lookup("amx-tile"))
    return false;
  if (!cpu.empty() && cpu != "native")
    return true; // for another machine: its name says
#if defined(__linux__) && defined(__x86_64__)
  // Linux hands out the tile state on request only; where it refuses (an
  // old kernel, a VM without it), the tiles would fault, here and in the
  // runtime, which asks the same before running such an artifact.
  constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

int64_t cpuL2Bytes(const std::string &cpu, int64_t fallback) {
  if (!cpu.empty() && cpu != "native")
    return fallback;
  long bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return bytes > 0 ? bytes : fallback;
}

unsigned cpuVectorBits(const std::string &cpu) {
  // A CPU's list names some features and not those they imply (x86-64-v4
  // lists avx512bw, not avx512f): any AVX-512 feature means 512 bits.
  llvm::StringMap<bool> features = cpuFeatures(cpu);
  bool avx512 = false, avx = false;
  for (const auto &f : features) {
    avx512 |= f.second && f.first().starts_with("avx512");
    avx |= f.second && (f.first() == "avx" || f.first() == "avx2");
  }
  return avx512 ? 512 : avx ? 256 : 128;
}

void buildKilnToLinalgPipeline(OpPassManager &pm) {
  pm.addPass(createKilnSignless());
  pm.addPass(createKilnDecomposeDropout()); // training-mode dropout at inference: counter 0
  pm.addNestedPass<func::FuncOp>(createKilnToLinalg());
  pm.addPass(createKilnUnifyDims());      // dimensions that must be equal: one symbol
  pm.addPass(createKilnBindResultDims()); // outputs' dynamic sizes, for the signature
}

void buildStage(OpPassManager &pm, Stage stage, const TargetOptions &target) {
  switch (stage) {
  case Stage::Kiln:
    // The CPU's register tiles take depthwise convolutions either way.
    return buildKilnGraphPipeline(pm, target.kind == TargetOptions::CPU);
  case Stage::Linalg:
    return buildKilnToLinalgPipeline(pm);
  case Stage::LLVM:
    if (target.kind == TargetOptions::CUDA)
      return buildCUDALinalgToLLVMPipeline(pm, target.cuda);
    return buildCPULinalgToLLVMPipeline(pm, target.cpu);
  }
}

void buildPipelineTo(OpPassManager &pm, Stage last, const TargetOptions &target) {
  for (Stage s : {Stage::Kiln, Stage::Linalg, Stage::LLVM}) {
    buildStage(pm, s, target);
    if (s == last)
      return;
  }
}

} // namespace kiln

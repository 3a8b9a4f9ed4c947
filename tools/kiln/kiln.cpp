//===- kiln.cpp - the kiln command line -----------------------------------===//
//
// kiln compile MODEL.onnx -o OUT.so [--target=cpu] [--shape N=1x3] [--emit=...]
// kiln run ARTIFACT.so --input NAME=FILE... [--output-dir DIR]
// kiln verify ARTIFACT.so --input NAME=FILE... --expected NAME=FILE...
// kiln bench ARTIFACT.so [--input NAME=FILE]... [--warmup N] [--runs N] [--threads N]
//                        [--device cpu|cuda]
// kiln inspect MODEL.onnx|ARTIFACT.so
// kiln compile MODEL.onnx --train --loss=mse|cross_entropy|output --optimizer=sgd|adam|adamw
//                         --lr=F ... -o train.so
// kiln train train.so --input NAME=FILE... --label FILE --steps N [--save-params DIR]
//                     [--save-grads DIR] [--load-params DIR]
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "kiln/Lowering/Artifact/Compiler.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstring>

namespace {

/// `kiln compile`'s flags, before they become CompileOptions.
struct CompileFlags {
  kiln::CompileOptions opts;
  std::vector<std::string> shapes, dimFlags, consts;
  bool report = false;
  std::string batchNorm = "train", recompute = "mincut";
};

void addCompileFlags(CLI::App *compile, CompileFlags &f) {
  compile->add_option("model", f.opts.input, "the .onnx model")->required();
  compile->add_option("-o,--output", f.opts.output,
                      "output file (- for stdout with text stages); required unless --report");
  compile->add_option("--target", f.opts.target, "cpu (default) or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  compile->add_option("--gpu-arch", f.opts.gpuArch,
                      "CUDA: the GPU to generate PTX for (default sm_80, whose PTX also "
                      "runs on later GPUs; sm_90a for Hopper)");
  auto &tuning = f.opts.gpuTuning;
  compile->add_option("--gpu-mma", tuning.mma,
                      "CUDA: big mma.sync products' k step and ring depth, <k>x<stages> "
                      "(32x4, 64x3; for measuring variants)");
  compile->add_option("--gpu-tile-n", tuning.tileN,
                      "CUDA sm_90a: wgmma tiles' columns, 128 or 256 (default: per matmul)");
  compile
      ->add_option("--gpu-loads", tuning.loads,
                   "CUDA sm_90a: wgmma tiles loaded by async (default: a loading warpgroup, "
                   "cp.async), tma (that warpgroup by TMA) or ring (every thread)")
      ->check(CLI::IsMember({"async", "tma", "ring"}));
  compile->add_flag("--gpu-tf32-drain", tuning.tf32Drain,
                    "CUDA sm_90a: the f32 wgmma kernel waits for each k tile");
  compile
      ->add_option("--gpu-cluster", tuning.cluster,
                   "CUDA sm_90a: blocks a cluster along M, 1 or 2 (2 with --gpu-loads=tma)")
      ->check(CLI::IsMember({1, 2}));
  compile->add_option("--emit", f.opts.emit, "kiln|linalg|llvm|ptx|obj|static|so|header")
      ->check(CLI::IsMember({"kiln", "linalg", "llvm", "ptx", "obj", "static", "so", "header"}));
  compile->add_option("--name", f.opts.name,
                      "C identifier for the header class and the static form's symbols "
                      "(default: the output file's name)");
  compile->add_flag("--header", f.opts.header, "also write the typed C++ header beside -o");
  compile->add_flag("--stats", f.opts.stats,
                    "print ops imported, kernels, arena and weight bytes, time per stage");
  compile
      ->add_option("--weights", f.opts.weights,
                   "embedded (default) or external: NAME.weights beside the artifact, "
                   "mapped by the runtime")
      ->check(CLI::IsMember({"embedded", "external"}));
  compile->add_option("--shape", f.shapes,
                      "an input's shape: NAME=D0xD1..., each D a size (pinned) or a range "
                      "MIN..MAX / MIN.. (dynamic)");
  compile->add_option("--dim", f.dimFlags,
                      "the range of a dynamic dimension: SYMBOL=MIN..MAX (the ONNX dim_param, "
                      "or INPUT.AXIS)");
  compile->add_option("--const-input", f.consts,
                      "compile an input in as a constant: NAME=FILE (.npy or .pb)");
  compile->add_option("--cpu", f.opts.cpu,
                      "LLVM CPU to generate code for (default: this machine's; x86-64-v2 or "
                      "x86-64-v3 for artifacts that run elsewhere)");
  compile->add_flag("!--no-winograd", f.opts.winograd,
                    "CPU: compute 3x3 convolutions directly, not by Winograd's transforms "
                    "(slower on wide channels; sums in the direct order)");
  compile->add_option("--winograd-tile", f.opts.winogradTile,
                      "CPU: the largest output tile of Winograd's F(m x m, 3x3): 4 (fastest, "
                      "filters stored 4x their size) or 2 (1.8x, rounding closer to the direct sums)")
      ->check(CLI::IsMember({2, 4}));
  compile->add_flag("!--no-image-chains", f.opts.imageChains,
                    "CPU: run every kernel over the whole batch, not image by image where "
                    "that keeps the images in cache (for more threads than images)");
  compile->add_option("--int8-arith", f.opts.int8Arith,
                      "CPU, 8-bit products on AVX2 without VNNI: exact (default), or saturate: "
                      "as onnxruntime computes them there (vpmaddubsw, each pair of products "
                      "saturated at 16 bits), ~1.3x faster, its numbers")
      ->check(CLI::IsMember({"exact", "saturate"}));
  compile->add_flag("--report", f.report,
                    "print per-node support and exit without compiling (1 if unsupported)");
  compile->add_flag("--print-ir-after-all", f.opts.printIRAfterAll,
                    "print the IR after every pass to stderr (debugging)");
  compile->add_flag("--time-passes", f.opts.timePasses,
                    "print the time of every pass to stderr (finding slow compiles)");
}

/// `kiln compile --train`'s loss, optimizer and their settings.
void addTrainingFlags(CLI::App *compile, CompileFlags &f) {
  auto &tr = f.opts.training;
  compile->add_flag("--train", f.opts.train,
                    "compile the training step: forward, gradients, optimizer update");
  compile->add_option("--loss", tr.loss, "mse (default), cross_entropy or output")
      ->check(CLI::IsMember({"mse", "cross_entropy", "output"}));
  compile->add_option("--optimizer", tr.optimizer, "sgd (default), adam or adamw")
      ->check(CLI::IsMember({"sgd", "adam", "adamw"}));
  compile->add_option("--lr", tr.lr, "learning rate (default 1e-3)")->check(CLI::NonNegativeNumber);
  compile->add_option("--momentum", tr.momentum, "SGD momentum (default 0)")
      ->check(CLI::NonNegativeNumber);
  compile->add_option("--dampening", tr.dampening, "SGD dampening (default 0)");
  compile->add_flag("--nesterov", tr.nesterov, "SGD with Nesterov momentum");
  compile->add_option("--weight-decay", tr.weightDecay, "weight decay (default 0; 0.01 for adamw)")
      ->check(CLI::NonNegativeNumber);
  compile->add_option("--beta1", tr.beta1, "Adam beta1 (default 0.9)");
  compile->add_option("--beta2", tr.beta2, "Adam beta2 (default 0.999)");
  compile->add_option("--eps", tr.eps, "Adam epsilon (default 1e-8)");
  compile->add_option("--label-name", tr.labelName, "name of the label input (default label)");
  compile->add_option("--seed", tr.seed, "dropout's random stream (default 0)");
  compile->add_option("--class-axis", tr.classAxis,
                      "cross_entropy: the logits' class axis (default 1, as PyTorch; -1 for "
                      "[batch, time, vocabulary] logits)");
  compile->add_option("--freeze", tr.freeze, "an initializer not to train (repeatable)");
  compile->add_flag("--distributed", tr.dataParallel,
                    "data-parallel: the loss and gradients averaged over the ranks of a "
                    "communicator at every step (kiln train --distributed under mpirun)");
  compile->add_flag("--sync-batch-norm", tr.syncBatchNorm,
                    "with --distributed: batch norm normalizes with the statistics of the "
                    "global batch (PyTorch's SyncBatchNorm), not each rank's own");
  compile->add_option(
      "--params", f.opts.params,
      "DIR: initializers replaced by DIR/<name>.npy (from kiln train --save-params)");
  compile
      ->add_option("--batch-norm", f.batchNorm,
                   "train (default): batch statistics, running statistics updated (PyTorch's "
                   "train()); eval: running statistics fixed")
      ->check(CLI::IsMember({"train", "eval"}));
  compile
      ->add_option("--recompute", f.recompute,
                   "mincut (default): recompute cheap activations in the backward pass "
                   "instead of keeping them; none: keep everything")
      ->check(CLI::IsMember({"mincut", "none"}));
}

/// `kiln train`'s command line.
CLI::App *addTrainCommand(CLI::App &app, kiln::TrainFlags &f) {
  auto *train = app.add_subcommand("train", "run training steps of an artifact built with --train");
  train->add_option("artifact", f.artifact, "the compiled training .so")->required();
  train->add_option("--input", f.inputs, "NAME=FILE (.npy or .pb)");
  train->add_option("--label", f.label, "FILE: the label (.npy or .pb)");
  train->add_option("--steps", f.steps, "training steps (default 1)")
      ->check(CLI::Range(0, 100000000));
  train->add_option("--save-params", f.saveParams,
                    "write every parameter as DIR/<name>.npy and the optimizer state as "
                    "DIR/optimizer/<name>.npy");
  train->add_option("--save-grads", f.saveGrads,
                    "write the last step's gradients as DIR/<name>.npy");
  train->add_option("--load-params", f.loadParams,
                    "start from DIR/<name>.npy parameters (and DIR/optimizer/, if saved)");
  train->add_option("--lr", f.lr, "learning rate (default: the one compiled in)")
      ->check(CLI::NonNegativeNumber);
  train->add_option("--save-outputs", f.saveOutputs,
                    "after training, run the model on the inputs and write DIR/<output>.npy");
  train->add_option("--threads", f.threads, "CPU threads (0 = all hardware threads)")
      ->check(CLI::Range(0, 1024));
  train->add_flag("--distributed", f.distributed,
                  "one rank of an MPI job (under mpirun): each rank trains on its shard of "
                  "dim 0 of the inputs and label, gradients averaged; rank 0 prints and saves");
  return train;
}

int runCompile(CompileFlags &f) {
  f.opts.training.recompute = f.recompute == "mincut";
  f.opts.training.batchNormTraining = f.batchNorm == "train";
  if (f.opts.training.syncBatchNorm &&
      (!f.opts.training.dataParallel || !f.opts.training.batchNormTraining))
  {
    std::fprintf(stderr, "error: --sync-batch-norm needs --train --distributed and batch "
                         "statistics (not --batch-norm=eval)\n");
    return 1;
  }
  for (const auto &flag : f.shapes) {
    std::string error;
    if (!kiln::parseShapeFlag(flag, f.opts.shapes, error)) {
      std::fprintf(stderr, "error: %s\n", error.c_str());
      return 2;
    }
  }
  for (const auto &flag : f.dimFlags) {
    std::string error;
    if (!kiln::parseDimFlag(flag, f.opts.dims, error)) {
      std::fprintf(stderr, "error: %s\n", error.c_str());
      return 2;
    }
  }
  for (const auto &flag : f.consts) {
    auto eq = flag.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == flag.size()) {
      std::fprintf(stderr, "error: --const-input expects NAME=FILE, got '%s'\n", flag.c_str());
      return 2;
    }
    f.opts.constInputs[flag.substr(0, eq)] = flag.substr(eq + 1);
  }
  if (f.report)
    return kiln::reportSupport(f.opts);
  if (f.opts.output.empty()) {
    std::fprintf(stderr, "error: --output is required (-o FILE)\n");
    return 2;
  }
  return kiln::compileModel(f.opts);
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"Kiln: an ahead-of-time compiler for neural networks"};
  app.require_subcommand(1);

  CompileFlags compileFlags;
  auto *compile = app.add_subcommand("compile", "compile an ONNX model to an artifact");
  addCompileFlags(compile, compileFlags);
  addTrainingFlags(compile, compileFlags);

  std::string artifact, outputDir;
  std::vector<std::string> inputs;
  std::string device; // "" = the one the artifact was compiled for
  auto *run =
      app.add_subcommand("run", "run an artifact (on the CPU or the GPU it was compiled for)");
  run->add_option("artifact", artifact, "the compiled .so")->required();
  run->add_option("--input", inputs, "NAME=FILE (.npy or ONNX TensorProto .pb)");
  run->add_option("--output-dir", outputDir, "write <output name>.npy here");
  run->add_option("--device", device,
                  "cpu or cuda: checked against the artifact's --target (default: that one)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  int threads = 0;
  run->add_option("--threads", threads, "CPU threads (0 = all hardware threads)")
      ->check(CLI::Range(0, 1024));

  kiln::TrainFlags trainFlags;
  auto *train = addTrainCommand(app, trainFlags);

  std::string gotPath, wantPath;
  auto *compare = app.add_subcommand("compare", "compare tensors (.npy/.pb files or folders)");
  compare->add_option("got", gotPath, "a tensor file, or a folder of .npy files")->required();
  compare->add_option("want", wantPath, "the reference file or folder")->required();

  std::vector<std::string> expected;
  double rtol = 1e-4, atol = 1e-5;
  auto *verify = app.add_subcommand("verify", "run an artifact and compare with references");
  verify->add_option("artifact", artifact, "the compiled .so")->required();
  verify->add_option("--input", inputs, "NAME=FILE (.npy or .pb)");
  verify->add_option("--expected", expected, "NAME=FILE reference output")->required();
  for (auto *cmd : {verify, compare}) {
    cmd->add_option("--rtol", rtol, "relative tolerance (default 1e-4)");
    cmd->add_option("--atol", atol, "absolute tolerance (default 1e-5)");
  }
  verify->add_option("--threads", threads, "CPU threads (0 = all hardware threads)")
      ->check(CLI::Range(0, 1024));

  int warmup = 10, iterations = 100;
  auto *bench =
      app.add_subcommand("bench", "time an artifact (random data for inputs not given); last line: "
                                  "median_ms=... p10_ms=... p90_ms=... runs=...");
  bench->add_option("artifact", artifact, "the compiled .so")->required();
  bench->add_option("--input", inputs, "NAME=FILE (.npy or .pb)");
  bench->add_option("--warmup", warmup, "untimed runs first (default 10)")
      ->check(CLI::Range(0, 100000));
  bench->add_option("--runs,--iterations", iterations, "timed runs (default 100)")
      ->check(CLI::Range(1, 1000000));
  bench->add_option("--threads", threads, "CPU threads (0 = all hardware threads)")
      ->check(CLI::Range(0, 1024));
  std::vector<std::string> benchShapes;
  bench->add_option("--shape", benchShapes,
                    "NAME=D0xD1...: the shape of a random input with dynamic dimensions");
  bool perKernel = false;
  bench->add_flag("--per-kernel", perKernel,
                  "also print each kernel's share of the time, with its ONNX nodes");
  bench
      ->add_option("--device", device,
                   "cpu or cuda: checked against the artifact's --target (default: that one)")
      ->check(CLI::IsMember({"cpu", "cuda"}));

  std::string target;
  auto *inspect = app.add_subcommand("inspect", "describe a model or an artifact");
  inspect->add_option("file", target, "MODEL.onnx or ARTIFACT.so");
  bool support = false, listOps = false;
  inspect->add_flag("--support", support, "per-node support report of a model (exit 1 if not)");
  inspect->add_flag("--list-ops", listOps, "the supported ONNX ops as a Markdown table");
  std::string graph;
  inspect->add_option("--graph", graph,
                      "draw a model's fusion plan: the graph with each kernel as a cluster "
                      "(Graphviz DOT; also .svg when `dot` is installed)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  if (compile->parsed())
    return runCompile(compileFlags);
  if (compare->parsed())
    return kiln::compareFiles(gotPath, wantPath, rtol, atol);
  if (train->parsed())
    return kiln::trainArtifact(trainFlags);
  if (bench->parsed())
    return kiln::benchArtifact(artifact, inputs, warmup, iterations, threads, device, perKernel,
                               benchShapes);
  if (verify->parsed())
    return kiln::verifyArtifact(artifact, inputs, expected, rtol, atol, threads);
  if (run->parsed())
    return kiln::runArtifact(artifact, inputs, outputDir, threads, device);
  if (listOps)
    return kiln::listOnnxOps();
  if (target.empty()) {
    std::fprintf(stderr, "error: inspect needs a file (or --list-ops)\n");
    return 2;
  }
  auto endsWith = [&](const char *suffix) {
    size_t n = std::strlen(suffix);
    return target.size() > n && target.compare(target.size() - n, n, suffix) == 0;
  };
  bool isModel = endsWith(".onnx") || endsWith(".onnxtxt");
  if (!graph.empty()) {
    if (!isModel) {
      std::fprintf(stderr, "error: --graph reads a model (.onnx)\n");
      return 2;
    }
    kiln::CompileOptions options;
    options.input = target;
    options.output = graph;
    options.graph = graph;
    return kiln::compileModel(options);
  }
  if (support) {
    if (!isModel) {
      std::fprintf(stderr, "error: --support reads a model (.onnx)\n");
      return 2;
    }
    kiln::CompileOptions options;
    options.input = target;
    return kiln::reportSupport(options);
  }
  return isModel ? kiln::inspectModel(target) : kiln::inspectArtifact(target);
}

//===- Compiler.h - from a model file to an artifact ------------*- C++ -*-===//
//
// The driver behind `kiln compile`: import, the stage ladder (Pipelines.h),
// and the emission of each stage (`--emit=kiln|linalg|llvm|obj|static|so`) and of
// the typed header (`--emit=header`, `--header`). Errors are
// printed to stderr as `error: <file>: <node> (<op>): <message>`.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_ARTIFACT_COMPILER_H
#define KILN_LOWERING_ARTIFACT_COMPILER_H

#include "kiln/Lowering/Pipelines/Pipelines.h"
#include "kiln/Support/DimRange.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln {

struct CompileOptions {
  std::string input;             // model.onnx
  std::string output;            // artifact or dump path ("-" = stdout)
  std::string emit = "so";       // kiln | linalg | llvm | obj | static | so | header
  std::string target = "cpu";    // cpu | cuda
  std::string gpuArch = "sm_80"; // --gpu-arch (cuda)
  GpuTuning gpuTuning;           // --gpu-mma, --gpu-tile-n, ... (cuda)
  std::string cpu = "";          // LLVM CPU name; empty = this machine's (native)
  bool winograd = true;          // --no-winograd: direct 3x3 convolutions only (cpu)
  int64_t winogradTile = 4;      // --winograd-tile: F(4x4, 3x3) or F(2x2, 3x3) at most (cpu)
  bool imageChains = true;       // --no-image-chains: every kernel over the whole batch (cpu)
  /// --int8-arith (cpu): "exact" 8-bit products, or "saturate": on AVX2
  /// without VNNI, onnxruntime's vpmaddubsw arithmetic (pairs of products
  /// saturated at 16 bits; faster, its numbers).
  std::string int8Arith = "exact";
  std::map<std::string, std::vector<DimRange>> shapes; // --shape NAME=D0xD1 (D: N or MIN..MAX)
  std::map<std::string, DimRange> dims;                // --dim SYMBOL=MIN..MAX
  /// NAME -> .npy/.pb file: graph inputs compiled in as constants.
  std::map<std::string, std::string> constInputs;
  bool printIRAfterAll = false;  // debugging: dump the IR after every pass
  bool timePasses = false;       // print every pass's time (slow compiles)
  /// C identifier naming the model in the header and in the static form's
  /// symbols (NAME_kiln_model_run); empty = from the output file's name.
  std::string name;
  bool header = false;           // also write the typed header beside -o
  bool stats = false;            // print ops, kernels, memory and stage times
  /// `kiln inspect MODEL --graph=FILE.dot`: stop once kernels are formed and
  /// draw the fusion plan there (and FILE.svg when Graphviz is installed).
  std::string graph;
  /// "embedded" (in the artifact) or "external": a NAME.weights file beside
  /// it that the runtime maps (the shared library's stem, or --name).
  std::string weights = "embedded";
  /// `--train`: compile the training step (forward, gradients, optimizer
  /// update) instead of inference.
  bool train = false;
  TrainingOptions training;
  /// `--params DIR`: initializers replaced by DIR/<name>.npy where such a
  /// file exists (what `kiln train --save-params` wrote).
  std::string params;
};

/// Compiles per `options`; returns the process exit code (0 ok, 1 error).
/// Nothing is left at `options.output` when it fails.
int compileModel(const CompileOptions &options);

/// Parses `NAME=D0xD1...` (each D a size or MIN..MAX) into `shapes`; false
/// with `error` set when bad.
bool parseShapeFlag(const std::string &flag,
                    std::map<std::string, std::vector<DimRange>> &shapes,
                    std::string &error);

/// Parses `SYMBOL=MIN..MAX` into `dims`; false with `error` set when bad.
bool parseDimFlag(const std::string &flag, std::map<std::string, DimRange> &dims,
                  std::string &error);

/// `kiln inspect MODEL.onnx`: prints inputs, outputs and the op histogram.
int inspectModel(const std::string &path);

/// `kiln inspect MODEL --support` / `kiln compile MODEL --report`: the
/// per-node support report; exit code 1 when anything is unsupported.
int reportSupport(const CompileOptions &options);

/// `kiln inspect --list-ops`: the supported ONNX ops as a Markdown table.
int listOnnxOps();

} // namespace kiln

#endif // KILN_LOWERING_ARTIFACT_COMPILER_H

//===- Artifact.h - pieces of the artifact writer ---------------*- C++ -*-===//

#ifndef KILN_LIB_LOWERING_ARTIFACT_ARTIFACT_H
#define KILN_LIB_LOWERING_ARTIFACT_ARTIFACT_H

#include "kiln/Lowering/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace kiln {

/// One input or output of the model, as the signature records it.
struct TensorInfo {
  bool isInput;
  std::string name;
  std::string dtype; // "f32", "i64", ... (ArtifactFormat.h)
  std::vector<int64_t> shape; // -1: dynamic
  /// Per dimension, the symbol a dynamic one is bound to ("" when static,
  /// or when an output's dimension is not bound yet).
  std::vector<std::string> symbols;
};

/// The inputs then outputs of `@main` in a kiln- or linalg-level module.
mlir::FailureOr<std::vector<TensorInfo>> describeMain(mlir::ModuleOp module);

/// The signature text (ArtifactFormat.h) of `@main` in a kiln- or
/// linalg-level module. With `complete`, every dynamic dimension of an
/// output must be bound to a symbol (kiln-bind-result-dims), else it is an
/// error.
mlir::FailureOr<std::string> buildSignature(mlir::ModuleOp module, bool complete = false);

/// The typed C++ header (`--emit=header`) for a model whose symbols carry
/// `name` (a C identifier). A model with dynamic dimensions passes its
/// symbols with their smallest sizes: its class sizes buffers per call
/// (resize()).
std::string buildHeader(const std::vector<TensorInfo> &tensors, const std::string &name,
                        const std::string &modelFile,
                        const std::vector<std::pair<std::string, int64_t>> &symbolMinima = {});

/// Gathers the `kiln.ops` of every kernel function (kiln-outline-kernels)
/// into the module's `kiln.kernel_table`: one line per kernel, its name then
/// the ONNX nodes it computes, tab-separated. emitNative exports it as
/// `kiln_artifact_kernels` for `kiln inspect`.
void collectKernelTable(mlir::ModuleOp module);

/// Writes the ONNX graph of `model` as Graphviz DOT with each kernel of
/// `kernelTable` (collectKernelTable's format) drawn as a cluster.
bool writeFusionGraph(const std::string &model, const std::string &kernelTable,
                      llvm::raw_ostream &os, std::string &error);

/// Where a training step's parameters, optimizer state and gradients sit
/// among @main's inputs and outputs (kiln-optimizer's attributes).
struct TrainingLayout {
  struct Update {
    unsigned input, output; // the argument and the result that replaces it
  };
  std::vector<Update> params, states, hypers; // hypers: the learning rate
  std::vector<std::pair<unsigned, unsigned>> grads; // (output, parameter input)
  unsigned lossOutput = 0;
  std::vector<std::pair<unsigned, int64_t>> classLabels; // (input, classes)
  bool dataParallel = false; // kiln-data-parallel: averaged over ranks
};

/// Reads the layout off a kiln-level module after the training pipeline and
/// moves the parameters' initial values into the module attribute
/// `kiln.initial_state` (in `params` order) for kiln-externalize-weights.
mlir::FailureOr<TrainingLayout> recordTraining(mlir::ModuleOp module);

/// The training artifact's inference entry: the model as imported for
/// training, its parameters (and batch-norm buffers) lifted to inputs named
/// as in the training step, dropout off. Compiled beside the step with the
/// exports prefixed `kiln_infer_`, so the runtime runs the model with the
/// trainer's current parameters.
mlir::LogicalResult prepareInferenceEntry(mlir::ModuleOp module, const TrainingOptions &options);

/// The signature's `train`, `param`, `state` and `grad` lines, with the
/// initial values' offsets in the weights that kiln-externalize-weights
/// left on the lowered module.
std::string trainingLines(mlir::ModuleOp lowered, const TrainingLayout &layout);

/// The signature's `arena`/`weights` lines, from the attributes that
/// kiln-plan-memory leaves on the lowered module.
std::string memoryPlanLines(mlir::ModuleOp module);

/// Gathers the blobs kiln-externalize-weights left on `module` into one
/// `kiln.weights_blob` attribute that emitNative exports, as raw bytes, as
/// `kiln_artifact_weights` (counted in `kiln.weight_bytes`). With
/// `releaseSources`, the gathered blobs are freed (nothing else in the
/// context may read them: not with a training step's inference module).
void embedWeights(mlir::ModuleOp module, bool releaseSources);

/// Writes the blobs kiln-externalize-weights left on `module` into the
/// file at `path` (none when empty) at their offsets, sets `line` to the
/// signature's `external_weights <bytes> <fnv1a-64 hex>` line, and drops the
/// attribute. Without the attribute, `line` is empty.
mlir::LogicalResult writeExternalWeights(mlir::ModuleOp module, const std::string &path,
                                         std::string &line, std::string &error);

/// Translates an LLVM-dialect module to LLVM IR, adds the artifact globals,
/// optimizes for the host (or `cpu`), and writes LLVM IR text (`emitIR`) or
/// an object file to `os`.
/// `symbolPrefix` goes before the exported names (empty for shared
/// libraries, "NAME_" for objects linked statically).
mlir::LogicalResult emitNative(mlir::ModuleOp module, const std::string &signature,
                               const std::string &cpu, const std::string &symbolPrefix,
                               bool emitIR,
                               llvm::raw_pwrite_stream &os, std::string &error);

/// Archives an object file into a static library (`ar`), as `member`.
mlir::LogicalResult archiveStaticLibrary(const std::string &object, const std::string &member,
                                         const std::string &output, std::string &error);

/// Links object files into a shared library with the system C compiler.
mlir::LogicalResult linkSharedLibrary(llvm::ArrayRef<std::string> objects,
                                      const std::string &output, std::string &error);

/// ptxas from the CUDA toolkit at `toolkit` or on PATH; "" when there is none.
std::string findPtxas(const std::string &toolkit);

/// sm_70 ... sm_120a: what ptxas and the NVPTX backend take as a chip.
bool isGpuArch(llvm::StringRef arch);

/// The CUDA pipeline's options for `chip` and `tuning`, with the toolkit
/// found on this machine (CudaStage.cpp).
CudaOptions cudaOptions(const std::string &chip, const GpuTuning &tuning);

/// After the CUDA pipeline: refuses PTX that calls libdevice when there is
/// no toolkit, and (with `assemble` and ptxas found) adds the machine code
/// as `kiln.cubin`. `input` prefixes the error.
mlir::LogicalResult finishDeviceCode(mlir::ModuleOp module, const std::string &input,
                                     const std::string &chip, bool assemble, std::string &error);

struct CompileOptions;
struct ImportOptions;
/// The import options `kiln compile`'s flags ask for (ImportInputs.cpp):
/// shapes, constant inputs, initializer values; false with `error`.
bool gatherImportOptions(const CompileOptions &opts, ImportOptions &out, std::string &error);

/// Assembles `ptx` for `arch` (sm_80...) into `cubin`; false with `error`
/// (ptxas's log) when ptxas refuses it.
bool assemblePtx(const std::string &ptxas, const std::string &ptx, const std::string &arch,
                 std::string &cubin, std::string &error);

/// The archs an artifact for `arch` carries machine code for: `arch`, and
/// sm_90 when `arch` is older (Hopper).
std::vector<std::string> machineCodeArchs(const std::string &arch);

/// Machine code of `ptx` for machineCodeArchs(arch): one cubin, or a fat
/// binary of several when the toolkit's fatbinary is beside ptxas.
bool assembleDeviceCode(const std::string &ptxas, const std::string &ptx,
                        const std::string &arch, std::string &code, std::string &error);

/// A file written under a temporary name and renamed into place on commit;
/// destroyed uncommitted, it leaves nothing behind.
class AtomicOutput {
public:
  explicit AtomicOutput(std::string target);
  ~AtomicOutput();
  /// The temporary path to write (empty if it could not be created).
  const std::string &path() const { return tmp; }
  /// Why the temporary could not be created ("cannot create a file in DIR: ...").
  const std::string &error() const { return createError; }
  mlir::LogicalResult commit(std::string &error);

private:
  std::string target, tmp, createError;
  bool committed = false;
};

} // namespace kiln

#endif // KILN_LIB_LOWERING_ARTIFACT_ARTIFACT_H

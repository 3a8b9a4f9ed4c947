//===- Compiler.cpp - the `kiln compile` and `kiln inspect` drivers -------===//
//
// A compile climbs the stage ladder (Pipelines.h) as far as --emit asks,
// printing the IR of a text stage there, else writes the artifact: the
// signature, the weights, the object code, the shared or static library.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Artifact/Compiler.h"
#include "Artifact.h"
#include "CompileStats.h"
#include "CompilerSupport.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Lowering/OutputDims.h"

#include "kiln/Lowering/OnnxToKiln/OnnxImporter.h"
#include "kiln/Lowering/Pipelines/Pipelines.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

using namespace mlir;

namespace kiln {
namespace {

/// What `--emit` writes, the last stage of the ladder it needs (none: the
/// header, from the imported signature), and whether it is text (which
/// may go to stdout).
struct EmitForm {
  enum Kind { Header, Kiln, Linalg, LLVM, PTX, Obj, Static, SO } kind;
  const char *name;
  std::optional<Stage> stage;
  bool text;
};
const EmitForm kEmitForms[] = {
    {EmitForm::Header, "header", std::nullopt, true},  {EmitForm::Kiln, "kiln", Stage::Kiln, true},
    {EmitForm::Linalg, "linalg", Stage::Linalg, true}, {EmitForm::LLVM, "llvm", Stage::LLVM, true},
    {EmitForm::PTX, "ptx", Stage::LLVM, true},         {EmitForm::Obj, "obj", Stage::LLVM, false},
    {EmitForm::Static, "static", Stage::LLVM, false},  {EmitForm::SO, "so", Stage::LLVM, false}};

const EmitForm *findEmitForm(const std::string &name) {
  for (const EmitForm &form : kEmitForms)
    if (name == form.name)
      return &form;
  return nullptr;
}

DialectRegistry compilerRegistry() {
  DialectRegistry registry;
  registerKilnDialects(registry);
  return registry;
}

/// The target `opts` asks for, or an error naming the flag.
std::optional<TargetOptions> targetFor(const CompileOptions &opts, const EmitForm &emit,
                                       std::string &error) {
  TargetOptions target;
  if (opts.target != "cpu" && opts.target != "cuda") {
    error = "--target=" + opts.target + " (expected cpu or cuda)";
    return std::nullopt;
  }
  target.cpu.vectorBits = cpuVectorBits(opts.cpu);
  target.cpu.winograd = opts.winograd;
  target.cpu.winogradTile = opts.winogradTile;
  target.cpu.imageChains = opts.imageChains;
  target.cpu.vnni = target.cpu.vectorBits >= 512 && cpuHasVnni(opts.cpu);
  target.cpu.amx = target.cpu.vnni && cpuHasAmx(opts.cpu);
  target.cpu.int8Tiles =
      target.cpu.vnni || (target.cpu.vectorBits == 256 && cpuHasAvx2(opts.cpu));
  target.cpu.l2Bytes = cpuL2Bytes(opts.cpu, target.cpu.l2Bytes);
  if (opts.int8Arith != "exact" && opts.int8Arith != "saturate") {
    error = "--int8-arith=" + opts.int8Arith + " (expected exact or saturate)";
    return std::nullopt;
  }
  // Only AVX2's tile has a choice: vpdpbusd and AMX sum exactly anyway.
  target.cpu.int8Saturate =
      opts.int8Arith == "saturate" && target.cpu.int8Tiles && !target.cpu.vnni;
  if (opts.target == "cpu") {
    if (emit.kind == EmitForm::PTX)
      error = "--emit=ptx goes with --target=cuda";
    else if (!opts.gpuTuning.isDefault())
      error = "the --gpu-* kernel settings go with --target=cuda";
    return error.empty() ? std::optional(target) : std::nullopt;
  }
  target.kind = TargetOptions::CUDA;
  if (opts.int8Arith != "exact") {
    error = "--int8-arith=" + opts.int8Arith + " goes with --target=cpu";
    return std::nullopt;
  }
  if (!isGpuArch(opts.gpuArch)) {
    error = "--gpu-arch=" + opts.gpuArch +
            " (expected sm_<major><minor>[a] from sm_70, e.g. sm_80 or sm_90a)";
    return std::nullopt;
  }
  if (std::string problem = opts.gpuTuning.problem(); !problem.empty()) {
    error = "--gpu-" + problem;
    return std::nullopt;
  }
  target.cuda = cudaOptions(opts.gpuArch, opts.gpuTuning);
  return target;
}

/// One compile: the module and what the artifact records beside it.
class ModelCompiler {
public:
  ModelCompiler(const CompileOptions &opts, const TargetOptions &target, const EmitForm &emit,
                std::string name)
      : opts(opts), target(target), emit(emit), name(std::move(name)), context(compilerRegistry()),
        handler(&context, [](Diagnostic &d) {
          printDiagnostic(d);
          return success();
        }) {
    context.disableMultithreading();    // 2-core machines; keeps diagnostics ordered
    context.printOpOnDiagnostic(false); // errors name the node; IR is for --emit
  }

  int run();
  /// LLVM ran out of AMX tile registers in some kernel (a function with
  /// more tile shapes than it can configure): compile again without them.
  bool retryWithoutTiles = false;

private:
  /// writeNative's failure: reported, or with AMX tiles in the way, a
  /// retry asked for (nothing written: the outputs are atomic).
  int nativeFailed(const std::string &error) {
    if (target.cpu.amx && error.find("ran out of registers") != std::string::npos) {
      retryWithoutTiles = true;
      return 1;
    }
    return fail(error);
  }
  bool cuda() const { return target.kind == TargetOptions::CUDA; }
  bool external() const { return opts.weights == "external"; }
  LogicalResult runPipeline(ModuleOp m, llvm::function_ref<void(OpPassManager &)> build);
  LogicalResult importModel();
  LogicalResult addTraining();
  int writeHeader(const std::string &path);
  int printModule();
  /// Climbs the ladder; an exit code when --emit stopped on the way.
  std::optional<int> lower();
  /// The lowered module's weights, kernel table and signature lines.
  std::optional<int> recordLowered();
  int writeObjectForms();
  int writeSharedLibrary();
  /// The training library's kiln_infer_* object (the model with the
  /// trainer's parameters, for the CPU).
  LogicalResult writeInferenceObject(const std::string &path, std::string &error);
  int done() {
    if (opts.stats)
      stats.print(opts.input, externalBytes);
    return 0;
  }

  const CompileOptions &opts;
  TargetOptions target;
  const EmitForm &emit;
  std::string name;
  CompileStats stats;
  MLIRContext context;
  ScopedDiagnosticHandler handler;
  OwningOpRef<ModuleOp> module;
  /// A training library also runs the model with the trainer's
  /// parameters: the imported model, compiled beside the step.
  OwningOpRef<ModuleOp> inferModule;
  std::optional<TrainingLayout> training;
  std::string signature;
  std::vector<TensorInfo> tensors;
  std::optional<AtomicOutput> weightsFile;
  uint64_t externalBytes = 0;
};

LogicalResult ModelCompiler::runPipeline(ModuleOp m,
                                         llvm::function_ref<void(OpPassManager &)> build) {
  PassManager pm(&context);
  build(pm);
  if (opts.printIRAfterAll) {
    // To stderr, after each pass that changed the IR; large constants
    // elided: a real model's weights (hundreds of MB of resource blobs)
    // had been printed before and after every pass.
    OpPrintingFlags flags;
    flags.elideLargeElementsAttrs(16).elideLargeResourceString(64);
    pm.enableIRPrinting([](Pass *, Operation *) { return false; },
                        [](Pass *, Operation *) { return true; },
                        /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/true,
                        /*printAfterOnlyOnFailure=*/false, llvm::errs(), flags);
  }
  if (opts.timePasses)
    pm.enableTiming(); // a report per pipeline, to stderr
  return pm.run(m);
}

LogicalResult ModelCompiler::importModel() {
  stats.stage("import");
  ImportOptions importOptions;
  if (std::string error; !gatherImportOptions(opts, importOptions, error)) {
    fail(error);
    return failure();
  }
  // Only where a tile runs them; a training step differentiates f32 ones.
  importOptions.integerProducts = !cuda() && target.cpu.int8Tiles && !opts.train;
  importOptions.integerConvs = importOptions.integerProducts;
  importOptions.integerDepthwise = importOptions.integerProducts && target.cpu.vnni;
  // A kiln-dialect module (tests, people debugging a pass) or an ONNX model.
  module = llvm::StringRef(opts.input).ends_with(".mlir")
               ? parseSourceFile<ModuleOp>(opts.input, &context)
               : importOnnxModel(context, opts.input, importOptions);
  if (!module)
    return failure();
  stats.countImported(*module);
  return success();
}

LogicalResult ModelCompiler::addTraining() {
  // A CUDA step's forward pass is compiled for the CPU (the trainer
  // fetches the parameters from the device for it).
  if (emit.kind == EmitForm::SO) {
    inferModule = module->clone();
    if (failed(prepareInferenceEntry(*inferModule, opts.training)))
      return failure();
  }
  stats.stage("autograd");
  if (failed(runPipeline(*module,
                         [&](OpPassManager &pm) { buildKilnTrainingPipeline(pm, opts.training); })))
    return failure();
  if (auto p = (*module)->getAttrOfType<DictionaryAttr>(KilnDialect::getPartitionAttrName())) {
    auto get = [&](StringRef k) { return cast<IntegerAttr>(p.get(k)).getInt(); };
    stats.partition =
        "  activations kept for the backward pass: " + std::to_string(get("saved_bytes")) +
        " bytes (" + std::to_string(get("save_all_bytes")) + " if nothing were recomputed; " +
        std::to_string(get("recomputed_ops")) + " ops recomputed)\n";
    (*module)->removeAttr(KilnDialect::getPartitionAttrName());
  }
  auto layout = recordTraining(*module);
  if (failed(layout))
    return failure();
  training = *layout;
  training->dataParallel = opts.training.dataParallel;
  return success();
}

int ModelCompiler::writeHeader(const std::string &path) {
  std::vector<std::pair<std::string, int64_t>> minima;
  if (auto ranges = (*module)->getAttrOfType<DictionaryAttr>(KilnDialect::getDimRangesAttrName()))
    for (NamedAttribute r : ranges)
      minima.emplace_back(r.getName().str(), cast<DenseI64ArrayAttr>(r.getValue())[0]);
  return writeText(path, [&](llvm::raw_fd_ostream &os) {
    os << buildHeader(tensors, name, llvm::sys::path::filename(opts.input).str(), minima);
    return true;
  });
}

int ModelCompiler::printModule() {
  return writeText(opts.output, [&](llvm::raw_fd_ostream &os) {
    module->print(os);
    return true;
  });
}

std::optional<int> ModelCompiler::lower() {
  for (Stage stage : {Stage::Kiln, Stage::Linalg, Stage::LLVM}) {
    stats.stage(stage == Stage::Kiln ? "graph" : stage == Stage::Linalg ? "linalg" : "lower");
    if (failed(runPipeline(*module, [&](OpPassManager &pm) { buildStage(pm, stage, target); })))
      return 1;
    if (stage == Stage::LLVM)
      break;
    if (stage == Stage::Linalg && ((*module)->hasAttr(KilnDialect::getDimRangesAttrName()) ||
                                   (*module)->hasAttr(kDimValuesAttrName))) {
      // The outputs' dynamic dimensions are bound now (kiln-bind-result-dims).
      auto sig = buildSignature(*module, /*complete=*/true);
      auto described = describeMain(*module);
      if (failed(sig) || failed(described))
        return 1;
      signature = *sig;
      tensors = *described;
    }
    if (emit.stage == stage)
      return printModule();
  }
  // The scalars the host program reads, computed before the run
  // (kiln-host-values): which results of kiln_model_output_dims they are.
  if (auto values = (*module)->getAttrOfType<DenseI64ArrayAttr>(kHostValuesAttrName))
    signature += "hostvalues " + std::to_string(values[0]) + " " + std::to_string(values[1]) + "\n";
  if (!cuda())
    return std::nullopt;
  std::string error;
  if (failed(finishDeviceCode(
          *module, opts.input, opts.gpuArch,
          /*assemble=*/emit.kind != EmitForm::PTX && emit.kind != EmitForm::LLVM, error)))
    return fail(error);
  signature += "target cuda " + opts.gpuArch + "\n";
  if (emit.kind == EmitForm::PTX)
    return writeText(opts.output, [&](llvm::raw_fd_ostream &os) {
      if (auto ptx = (*module)->getAttrOfType<StringAttr>(KilnDialect::getPtxAttrName()))
        os << ptx.getValue();
      return true;
    });
  return std::nullopt;
}

std::optional<int> ModelCompiler::recordLowered() {
  // Embedded weights: one blob the code generator adds as raw bytes.
  if (!external())
    embedWeights(*module, /*releaseSources=*/!inferModule);
  // On CUDA the constants no blob holds went into the kernels' PTX: the
  // weights the runtime copies to the device are the blob's bytes alone
  // (counting the others made it copy past the blob's end; the PTX
  // emulator's AddressSanitizer run found it).
  if (cuda() && !external()) {
    auto blob =
        (*module)->getAttrOfType<DenseResourceElementsAttr>(KilnDialect::getWeightsBlobAttrName());
    (*module)->setAttr(
        KilnDialect::getWeightBytesAttrName(),
        Builder(&context).getI64IntegerAttr(blob ? blob.getType().getNumElements() : 0));
  }
  collectKernelTable(*module);
  stats.countKernels(*module);
  if (!opts.graph.empty())
    return drawGraph(
        opts, (*module)->getAttrOfType<StringAttr>(KilnDialect::getKernelTableAttrName()).str());
  signature += memoryPlanLines(*module);
  if (training)
    signature += trainingLines(*module, *training);
  if (!external())
    return std::nullopt;
  // External weights: written now, beside the artifact; the signature
  // records their size and checksum for the runtime to check.
  if (emit.kind != EmitForm::LLVM) {
    llvm::SmallString<256> path(opts.output);
    if (emit.kind == EmitForm::SO) {
      llvm::sys::path::replace_extension(path, ".weights");
    } else { // the static form finds it by the model's name
      llvm::sys::path::remove_filename(path);
      llvm::sys::path::append(path, name + ".weights");
    }
    weightsFile.emplace(path.str().str());
    if (weightsFile->path().empty())
      return fail(weightsFile->error());
  }
  std::string line, error;
  if (failed(writeExternalWeights(*module, weightsFile ? weightsFile->path() : "", line, error)))
    return fail(error);
  signature += line;
  externalBytes = std::strtoull(line.c_str() + line.find(' ') + 1, nullptr, 10);
  return std::nullopt;
}

int ModelCompiler::writeObjectForms() {
  // Linked statically: exports carry the model's name, so several models
  // can live in one program.
  std::string prefix = name + "_", error;
  AtomicOutput out(opts.output);
  AtomicOutput object(opts.output + ".o");
  const std::string &objectPath = emit.kind == EmitForm::Obj ? out.path() : object.path();
  if (out.path().empty() || object.path().empty())
    return fail(out.path().empty() ? out.error() : object.error());
  if (failed(writeNative(*module, signature, opts.cpu, prefix, objectPath, error)))
    return nativeFailed(error);
  if ((emit.kind == EmitForm::Static &&
       failed(archiveStaticLibrary(objectPath, name + ".o", out.path(), error))) ||
      (weightsFile && failed(weightsFile->commit(error))) || failed(out.commit(error)))
    return fail(error);
  return done();
}

LogicalResult ModelCompiler::writeInferenceObject(const std::string &path, std::string &error) {
  auto inferSignature = buildSignature(*inferModule);
  TargetOptions cpu;
  cpu.cpu = target.cpu;
  if (failed(inferSignature) || failed(runPipeline(*inferModule, [&](OpPassManager &pm) {
        buildPipelineTo(pm, Stage::Linalg, cpu);
      })))
    return failure();
  // A dynamic batch: the outputs' dimensions are bound now (as lower()
  // does for the step).
  if ((*inferModule)->hasAttr(KilnDialect::getDimRangesAttrName()))
    inferSignature = buildSignature(*inferModule, /*complete=*/true);
  if (failed(inferSignature) || failed(runPipeline(*inferModule, [&](OpPassManager &pm) {
        buildStage(pm, Stage::LLVM, cpu);
      })))
    return failure();
  embedWeights(*inferModule, /*releaseSources=*/false); // small: the parameters are inputs here
  collectKernelTable(*inferModule);
  *inferSignature += memoryPlanLines(*inferModule);
  if (failed(writeNative(*inferModule, *inferSignature, opts.cpu, "kiln_infer_", path, error))) {
    nativeFailed(error);
    return failure();
  }
  return success();
}

int ModelCompiler::writeSharedLibrary() {
  std::string error;
  AtomicOutput object(opts.output + ".o");
  AtomicOutput library(opts.output);
  if (object.path().empty() || library.path().empty())
    return fail(library.path().empty() ? library.error() : object.error());
  if (failed(writeNative(*module, signature, opts.cpu, "", object.path(), error)))
    return nativeFailed(error);
  std::vector<std::string> objects{object.path()};
  std::optional<AtomicOutput> inferObject;
  if (inferModule) {
    inferObject.emplace(opts.output + ".infer.o");
    if (inferObject->path().empty())
      return fail(inferObject->error());
    if (failed(writeInferenceObject(inferObject->path(), error)))
      return 1;
    objects.push_back(inferObject->path());
  }
  stats.stage("link");
  if (failed(linkSharedLibrary(objects, library.path(), error)))
    return fail(error);
  if (opts.header) {
    llvm::SmallString<256> headerPath(opts.output);
    llvm::sys::path::replace_extension(headerPath, ".h");
    if (int rc = writeHeader(headerPath.str().str()))
      return rc;
  }
  if ((weightsFile && failed(weightsFile->commit(error))) || failed(library.commit(error)))
    return fail(error);
  return done();
}

int ModelCompiler::run() {
  if (failed(importModel()))
    return 1;
  if (auto ranges = (*module)->getAttrOfType<DictionaryAttr>(KilnDialect::getDimRangesAttrName());
      ranges && cuda()) {
    // Device buffers are planned at the largest shapes (no device
    // allocator at run time): every symbol needs a maximum.
    std::string unbounded;
    for (NamedAttribute range : ranges)
      if (auto minMax = dyn_cast<DenseI64ArrayAttr>(range.getValue());
          minMax && minMax.size() == 2 && minMax[1] < 0)
        unbounded += (unbounded.empty() ? "" : ", ") + range.getName().str();
    if (!unbounded.empty())
      return fail(opts.input + ": --target=cuda sizes device memory for the largest shapes, and " +
                  "these dynamic dimensions have no maximum: " + unbounded +
                  "; give each one with --dim SYMBOL=MIN..MAX (or pin it with --dim SYMBOL=N)");
  }
  if (opts.train && failed(addTraining()))
    return 1;
  auto sig = buildSignature(*module);
  auto described = describeMain(*module);
  if (failed(sig) || failed(described))
    return 1;
  signature = *sig;
  tensors = *described;
  if (!emit.stage)
    return writeHeader(opts.output);
  if (std::optional<int> rc = lower())
    return *rc;
  if (std::optional<int> rc = recordLowered())
    return *rc;
  stats.stage("llvm");
  if (emit.kind == EmitForm::LLVM)
    return writeText(opts.output, [&](llvm::raw_fd_ostream &os) {
      std::string error;
      if (succeeded(emitNative(*module, signature, opts.cpu, "", true, os, error)))
        return true;
      fail(error);
      return false;
    });
  if (opts.output == "-" && !emit.text)
    return fail("--emit=" + opts.emit + " writes a binary file: pass -o FILE");
  return emit.kind == EmitForm::SO ? writeSharedLibrary() : writeObjectForms();
}

} // namespace

int compileModel(const CompileOptions &opts) {
  const EmitForm *emit = findEmitForm(opts.emit);
  if (!emit)
    return fail("unknown --emit=" + opts.emit +
                " (expected kiln, linalg, llvm, ptx, obj, static, so or header)");
  std::string error;
  std::optional<TargetOptions> target = targetFor(opts, *emit, error);
  if (!target)
    return fail(error);
  installCompileErrorHandlers();
  if (!llvm::sys::fs::exists(opts.input))
    return fail(opts.input + ": no such file");
  if (opts.output.empty())
    return fail("no output: pass -o FILE");
  std::string name = modelName(opts);
  if (name.empty())
    return fail("--name " + opts.name + " is not a C identifier (or is a C++ keyword)");
  if (opts.weights != "embedded" && opts.weights != "external")
    return fail("--weights=" + opts.weights + " (expected embedded or external)");
  if (opts.header && emit->kind != EmitForm::SO)
    return fail("--header goes with a shared library (--emit=so); use --emit=header alone");
  int rc;
  {
    ModelCompiler compiler(opts, *target, *emit, name);
    rc = compiler.run();
    if (!compiler.retryWithoutTiles)
      return rc;
  }
  // The products on AVX512-VNNI instead, every kernel compiling.
  target->cpu.amx = false;
  ModelCompiler again(opts, *target, *emit, name);
  return again.run();
}

int reportSupport(const CompileOptions &opts) {
  ImportOptions importOptions;
  importOptions.shapes = opts.shapes;
  importOptions.dims = opts.dims;
  std::string text;
  bool ok = reportOnnxSupport(opts.input, importOptions, text);
  llvm::outs() << text;
  return ok ? 0 : 1;
}

int listOnnxOps() {
  auto ops = supportedOnnxOps();
  llvm::outs() << "# ONNX operators supported by Kiln\n\n"
               << "Generated from the importer's handler table by `kiln inspect --list-ops`\n"
               << "(build target `onnx-ops-doc`; the `onnx-ops-doc` test checks it is current).\n"
               << "Ops are in the default domain (`ai.onnx`, opsets 1 to 21) unless written\n"
               << "`domain::Op` (the training ops of `ai.onnx.preview.training`, and\n"
               << "onnxruntime's quantized `com.microsoft` ops of its QOperator format);\n"
               << "dynamic input dimensions reach the ops listed in docs/dynamic-shapes.md;\n"
               << "elsewhere `--shape` or `--dim` pins them.\n\n"
               << ops.size() << " operators.\n\n"
               << "| operator | known limits |\n|---|---|\n";
  for (const auto &op : ops) {
    std::string limits = onnxOpLimits(op);
    llvm::outs() << "| " << op << " | " << (limits.empty() ? "" : limits) << " |\n";
  }
  return 0;
}

int inspectModel(const std::string &path) {
  std::string text, error;
  if (!describeOnnxModel(path, text, error))
    return fail(path + ": " + error);
  llvm::outs() << text;
  return 0;
}

} // namespace kiln

//===- Compiler.cpp - the `kiln compile` and `kiln inspect` drivers -------===//

#include "kiln/Lowering/Artifact/Compiler.h"
#include "Artifact.h"
#include "CompileStats.h"

#include "kiln/Lowering/OnnxToKiln/OnnxImporter.h"
#include "kiln/Lowering/Pipelines/Pipelines.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <unistd.h>

using namespace mlir;

namespace kiln {
namespace {

/// `error: model.onnx: node 'fc1' (Gemm): message`, from the importer's
/// NameLoc(node, FileLineColLoc(file)) locations.
void printDiagnostic(Diagnostic &diag) {
  std::string where;
  Location loc = diag.getLocation();
  if (auto fused = dyn_cast<FusedLoc>(loc); fused && !fused.getLocations().empty())
    loc = fused.getLocations().front();
  while (true) {
    if (auto name = dyn_cast<NameLoc>(loc)) {
      where = name.getName().str() + (where.empty() ? "" : ": " + where);
      loc = name.getChildLoc();
    } else if (auto file = dyn_cast<FileLineColLoc>(loc)) {
      std::string f = file.getFilename().str();
      if (file.getLine() > 0)
        f += ":" + std::to_string(file.getLine()) + ":" + std::to_string(file.getColumn());
      where = f + (where.empty() ? "" : ": " + where);
      break;
    } else if (auto callsite = dyn_cast<CallSiteLoc>(loc)) {
      loc = callsite.getCallee();
    } else {
      break;
    }
  }
  const char *severity = diag.getSeverity() == DiagnosticSeverity::Error     ? "error"
                         : diag.getSeverity() == DiagnosticSeverity::Warning ? "warning"
                                                                             : "note";
  llvm::errs() << severity << ": " << (where.empty() ? "" : where + ": ") << diag.str() << "\n";
  for (auto &note : diag.getNotes())
    llvm::errs() << "  note: " << note.str() << "\n";
}

/// Out of memory or a fatal LLVM error mid-compile: say so, remove the
/// temporary outputs (registered with RemoveFileOnSignal), exit 1 -- never
/// abort with a signal.
[[noreturn]] void fatalCompileError(const char *what, const char *reason) {
  llvm::errs() << "error: " << what << (reason && *reason ? std::string(": ") + reason : "")
               << "\n";
  llvm::sys::RunInterruptHandlers();
  _exit(1);
}

void installCompileErrorHandlers() {
  static bool installed = false;
  if (installed)
    return;
  installed = true;
  llvm::install_bad_alloc_error_handler([](void *, const char *reason, bool) {
    fatalCompileError("out of memory while compiling", reason);
  });
  llvm::install_fatal_error_handler([](void *, const char *reason, bool) {
    fatalCompileError("internal compiler error", reason);
  });
}

int fail(const std::string &msg) {
  llvm::errs() << "error: " << msg << "\n";
  return 1;
}

int writeText(const std::string &output, llvm::function_ref<bool(llvm::raw_fd_ostream &)> print);

/// The fusion plan as DOT at opts.graph, and as SVG beside it when `dot`
/// (Graphviz) is on PATH.
int drawGraph(const CompileOptions &opts, const std::string &kernelTable) {
  std::string error;
  if (int rc = writeText(opts.graph, [&](llvm::raw_fd_ostream &os) {
        if (writeFusionGraph(opts.input, kernelTable, os, error))
          return true;
        fail(opts.input + ": " + error);
        return false;
      }))
    return rc;
  llvm::outs() << "wrote " << opts.graph << "\n";
  auto dot = llvm::sys::findProgramByName("dot");
  if (!dot || opts.graph == "-")
    return 0;
  llvm::SmallString<256> svg(opts.graph);
  llvm::sys::path::replace_extension(svg, ".svg");
  llvm::SmallVector<llvm::StringRef> args{*dot, "-Tsvg", opts.graph, "-o", svg};
  std::string message;
  if (llvm::sys::ExecuteAndWait(*dot, args, std::nullopt, {}, 0, 0, &message) != 0)
    return fail("dot could not draw " + opts.graph + (message.empty() ? "" : ": " + message));
  llvm::outs() << "wrote " << svg << "\n";
  return 0;
}

/// Writes a text stage to `output` ("-" = stdout), atomically: when `print`
/// fails, nothing is left at `output`.
int writeText(const std::string &output, llvm::function_ref<bool(llvm::raw_fd_ostream &)> print) {
  if (output == "-" || output.empty())
    return print(llvm::outs()) ? 0 : 1;
  AtomicOutput out(output);
  if (out.path().empty())
    return fail(out.error());
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(out.path(), ec);
    if (ec)
      return fail("cannot write '" + output + "': " + ec.message());
    if (!print(os))
      return 1;
  }
  std::string error;
  return failed(out.commit(error)) ? fail(error) : 0;
}

/// Object code for `module` into the file at `path`.
LogicalResult writeNative(ModuleOp module, const std::string &signature, const std::string &cpu,
                          const std::string &prefix, const std::string &path,
                          std::string &error) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = "cannot write '" + path + "': " + ec.message();
    return failure();
  }
  return emitNative(module, signature, cpu, prefix, false, os, error);
}

/// The model's C identifier: --name, else the output file's stem
/// ("models/mlp.so" -> "mlp"; "new.so" -> "new_model", a stem that is a
/// C++ keyword is no reason to refuse the file name); empty when --name is
/// not an identifier.
std::string modelName(const CompileOptions &opts) {
  std::string name = opts.name;
  bool derived = name.empty();
  if (derived) {
    name = llvm::sys::path::stem(opts.output == "-" ? opts.input : opts.output).str();
    if (llvm::StringRef(name).starts_with("lib") && opts.emit == "static")
      name = name.substr(3);
    for (char &c : name)
      if (!llvm::isAlnum(c))
        c = '_';
    if (name.empty() || llvm::isDigit(name[0]))
      name = "model_" + name;
  }
  // It names a C++ class and C symbols: an identifier, and not a keyword.
  static const char *keywords[] = {
      "alignas", "alignof", "auto", "bool", "break", "case", "catch", "char", "class", "const",
      "constexpr", "continue", "default", "delete", "do", "double", "else", "enum", "explicit",
      "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int", "long",
      "mutable", "namespace", "new", "noexcept", "nullptr", "operator", "private", "protected",
      "public", "register", "return", "short", "signed", "sizeof", "static", "struct",
      "switch", "template", "this", "throw", "true", "try", "typedef", "typename", "union",
      "unsigned", "using", "virtual", "void", "volatile", "while"};
  if (derived && llvm::is_contained(keywords, name))
    name += "_model";
  bool ok = !name.empty() && !llvm::isDigit(name[0]) && !llvm::is_contained(keywords, name) &&
            llvm::all_of(name, [](char c) { return llvm::isAlnum(c) || c == '_'; });
  return ok ? name : "";
}

} // namespace

bool parseShapeFlag(const std::string &flag, std::map<std::string, std::vector<int64_t>> &shapes,
                    std::string &error) {
  auto eq = flag.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == flag.size()) {
    error = "--shape expects NAME=D0xD1..., got '" + flag + "'";
    return false;
  }
  std::vector<int64_t> dims;
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(flag).substr(eq + 1).split(parts, 'x');
  for (auto p : parts) {
    int64_t d;
    if (p.getAsInteger(10, d) || d < 0 || d > (int64_t(1) << 40)) {
      error = "--shape " + flag + ": '" + p.str() + "' is not a valid dimension";
      return false;
    }
    dims.push_back(d);
  }
  shapes[flag.substr(0, eq)] = dims;
  return true;
}

int compileModel(const CompileOptions &opts) {
  static const char *stages[] = {"kiln", "linalg", "llvm", "obj", "static", "so", "header", "ptx"};
  if (!llvm::is_contained(stages, opts.emit))
    return fail("unknown --emit=" + opts.emit +
                " (expected kiln, linalg, llvm, ptx, obj, static, so or header)");
  if (opts.target != "cpu" && opts.target != "cuda")
    return fail("--target=" + opts.target + " (expected cpu or cuda)");
  bool cuda = opts.target == "cuda";
  CpuOptions cpu{cpuVectorBits(opts.cpu)};
  if (opts.emit == "ptx" && !cuda)
    return fail("--emit=ptx goes with --target=cuda");
  if (cuda && !isGpuArch(opts.gpuArch))
    return fail("--gpu-arch=" + opts.gpuArch + " (expected sm_<major><minor>[a] from sm_70, "
                "e.g. sm_80 or sm_90a)");
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
  if (opts.header && opts.emit != "so")
    return fail("--header goes with a shared library (--emit=so); use --emit=header alone");

  CompileStats stats;
  stats.stage("import");
  DialectRegistry registry;
  registerKilnDialects(registry);
  MLIRContext context(registry);
  context.disableMultithreading(); // 2-core machines; keeps diagnostics ordered
  context.printOpOnDiagnostic(false); // errors name the node; IR is for --emit
  ScopedDiagnosticHandler handler(&context, [](Diagnostic &d) {
    printDiagnostic(d);
    return success();
  });

  ImportOptions importOptions;
  if (std::string error; !gatherImportOptions(opts, importOptions, error))
    return fail(error);
  // A kiln-dialect module (tests, people debugging a pass) or an ONNX model.
  OwningOpRef<ModuleOp> module =
      llvm::StringRef(opts.input).ends_with(".mlir")
          ? parseSourceFile<ModuleOp>(opts.input, &context)
          : importOnnxModel(context, opts.input, importOptions);
  if (!module)
    return 1;
  stats.countImported(*module);
  auto runOn = [&](ModuleOp m, llvm::function_ref<void(OpPassManager &)> build) {
    PassManager pm(&context);
    build(pm);
    if (opts.printIRAfterAll)
      pm.enableIRPrinting(); // to stderr, after every pass
    if (opts.timePasses)
      pm.enableTiming(); // a report per pipeline, to stderr
    return pm.run(m);
  };
  auto run = [&](llvm::function_ref<void(OpPassManager &)> build) {
    return runOn(*module, build);
  };
  std::optional<TrainingLayout> training;
  // A training library also runs the model with the trainer's parameters:
  // the imported model, compiled beside the step (exports kiln_infer_*).
  OwningOpRef<ModuleOp> inferModule;
  // A CUDA step's forward pass is compiled for the CPU (the trainer fetches
  // the parameters from the device for it).
  if (opts.train && opts.emit == "so") {
    inferModule = module->clone();
    if (failed(prepareInferenceEntry(*inferModule, opts.training)))
      return 1;
  }
  if (opts.train) {
    stats.stage("autograd");
    if (failed(run([&](OpPassManager &pm) { buildKilnTrainingPipeline(pm, opts.training); })))
      return 1;
    if (auto p = (*module)->getAttrOfType<DictionaryAttr>("kiln.partition")) {
      auto get = [&](StringRef k) { return cast<IntegerAttr>(p.get(k)).getInt(); };
      stats.partition = "  activations kept for the backward pass: " +
                        std::to_string(get("saved_bytes")) + " bytes (" +
                        std::to_string(get("save_all_bytes")) + " if nothing were recomputed; " +
                        std::to_string(get("recomputed_ops")) + " ops recomputed)\n";
      (*module)->removeAttr("kiln.partition");
    }
    auto layout = recordTraining(*module);
    if (failed(layout))
      return 1;
    training = *layout;
  }
  auto signature = buildSignature(*module);
  auto tensors = describeMain(*module);
  if (failed(signature) || failed(tensors))
    return 1;
  auto writeHeader = [&](const std::string &path) {
    return writeText(path, [&](llvm::raw_fd_ostream &os) {
      os << buildHeader(*tensors, name, llvm::sys::path::filename(opts.input).str());
      return true;
    });
  };
  if (opts.emit == "header")
    return writeHeader(opts.output);

  stats.stage("graph");
  if (failed(run(buildKilnGraphPipeline)))
    return 1;
  if (opts.emit == "kiln")
    return writeText(opts.output, [&](llvm::raw_fd_ostream &os) {
      module->print(os);
      return true;
    });
  stats.stage("linalg");
  if (failed(run([&](OpPassManager &pm) { buildKilnToLinalgPipeline(pm, !cuda, cpu); })))
    return 1;
  if (opts.emit == "linalg")
    return writeText(opts.output, [&](llvm::raw_fd_ostream &os) {
      module->print(os);
      return true;
    });
  bool external = opts.weights == "external";
  stats.stage("lower");
  if (cuda) {
    if (failed(run([&](OpPassManager &pm) {
          buildCUDALinalgToLLVMPipeline(pm, cudaOptions(opts.gpuArch));
        })))
      return 1;
    std::string error;
    if (failed(finishDeviceCode(*module, opts.input, opts.gpuArch,
                                /*assemble=*/opts.emit != "ptx" && opts.emit != "llvm", error)))
      return fail(error);
    *signature += "target cuda " + opts.gpuArch + "\n";
    if (opts.emit == "ptx")
      return writeText(opts.output, [&](llvm::raw_fd_ostream &os) {
        if (auto ptx = (*module)->getAttrOfType<StringAttr>("kiln.ptx"))
          os << ptx.getValue();
        return true;
      });
  } else if (failed(run([&](OpPassManager &pm) { buildCPULinalgToLLVMPipeline(pm, cpu); }))) {
    return 1;
  }
  // Embedded weights: one blob the code generator adds as raw bytes.
  if (!external)
    embedWeights(*module);
  // On CUDA the constants no blob holds went into the kernels' PTX: the
  // weights the runtime copies to the device are the blob's bytes alone
  // (counting the others made it copy past the blob's end; the PTX
  // emulator's AddressSanitizer run found it).
  if (cuda && !external) {
    auto blob = (*module)->getAttrOfType<DenseResourceElementsAttr>("kiln.weights_blob");
    (*module)->setAttr("kiln.weight_bytes",
                       Builder(module->getContext())
                           .getI64IntegerAttr(blob ? blob.getType().getNumElements() : 0));
  }
  collectKernelTable(*module);
  stats.countKernels(*module);
  if (!opts.graph.empty())
    return drawGraph(opts, (*module)->getAttrOfType<StringAttr>("kiln.kernel_table").str());
  *signature += memoryPlanLines(*module);
  if (training)
    *signature += trainingLines(*module, *training);
  // External weights: written now, beside the artifact; the signature
  // records their size and checksum for the runtime to check.
  std::optional<AtomicOutput> weightsFile;
  if (external && opts.emit != "llvm") {
    llvm::SmallString<256> path(opts.output);
    if (opts.emit == "so") {
      llvm::sys::path::replace_extension(path, ".weights");
    } else { // the static form finds it by the model's name
      llvm::sys::path::remove_filename(path);
      llvm::sys::path::append(path, name + ".weights");
    }
    weightsFile.emplace(path.str().str());
    if (weightsFile->path().empty())
      return fail(weightsFile->error());
  }
  uint64_t externalBytes = 0;
  if (external) {
    std::string line, werror;
    if (failed(writeExternalWeights(*module, weightsFile ? weightsFile->path() : "", line, werror)))
      return fail(werror);
    *signature += line;
    externalBytes = std::strtoull(line.c_str() + line.find(' ') + 1, nullptr, 10);
  }
  auto done = [&] {
    if (opts.stats)
      stats.print(opts.input, externalBytes);
    return 0;
  };
  stats.stage("llvm");

  std::string error;
  if (opts.emit == "llvm")
    return writeText(opts.output, [&](llvm::raw_fd_ostream &os) {
      if (succeeded(emitNative(*module, *signature, opts.cpu, "", true, os, error)))
        return true;
      fail(error);
      return false;
    });
  if (opts.output == "-")
    return fail("--emit=" + opts.emit + " writes a binary file: pass -o FILE");
  if (opts.emit == "obj" || opts.emit == "static") {
    // Linked statically: exports carry the model's name, so several models
    // can live in one program.
    std::string prefix = name + "_";
    AtomicOutput out(opts.output);
    AtomicOutput object(opts.output + ".o");
    const std::string &objectPath = opts.emit == "obj" ? out.path() : object.path();
    if (out.path().empty() || object.path().empty())
      return fail(out.path().empty() ? out.error() : object.error());
    if (failed(writeNative(*module, *signature, opts.cpu, prefix, objectPath, error)) ||
        (opts.emit == "static" &&
         failed(archiveStaticLibrary(objectPath, name + ".o", out.path(), error))) ||
        (weightsFile && failed(weightsFile->commit(error))) || failed(out.commit(error)))
      return fail(error);
    return done();
  }
  AtomicOutput object(opts.output + ".o");
  AtomicOutput library(opts.output);
  if (object.path().empty() || library.path().empty())
    return fail(library.path().empty() ? library.error() : object.error());
  if (failed(writeNative(*module, *signature, opts.cpu, "", object.path(), error)))
    return fail(error);
  std::vector<std::string> objects{object.path()};
  std::optional<AtomicOutput> inferObject;
  if (inferModule) {
    // The model for inference with the trainer's parameters, for the CPU:
    // exports kiln_infer_*.
    auto inferSignature = buildSignature(*inferModule);
    if (failed(inferSignature) || failed(runOn(*inferModule, [&](OpPassManager &pm) {
          buildKilnGraphPipeline(pm);
          buildKilnToLinalgPipeline(pm, true, cpu);
          buildCPULinalgToLLVMPipeline(pm, cpu);
        })))
      return 1;
    embedWeights(*inferModule); // small: the parameters are inputs here
    collectKernelTable(*inferModule);
    *inferSignature += memoryPlanLines(*inferModule);
    inferObject.emplace(opts.output + ".infer.o");
    if (inferObject->path().empty())
      return fail(inferObject->error());
    if (failed(writeNative(*inferModule, *inferSignature, opts.cpu, "kiln_infer_",
                           inferObject->path(), error)))
      return fail(error);
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

int reportSupport(const CompileOptions &opts) {
  ImportOptions importOptions;
  importOptions.shapes = opts.shapes;
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
               << "shapes must be static (`--shape` pins dynamic input dimensions).\n\n"
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

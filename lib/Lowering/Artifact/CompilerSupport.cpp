//===- CompilerSupport.cpp - the compile driver's messages and files ------===//

#include "CompilerSupport.h"
#include "Artifact.h"

#include "kiln/Lowering/Artifact/Compiler.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <unistd.h>

using namespace mlir;

namespace kiln {

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
[[noreturn]] static void fatalCompileError(const char *what, const char *reason) {
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

/// Object code for `module` into the file at `path`.
LogicalResult writeNative(ModuleOp module, const std::string &signature, const std::string &cpu,
                          const std::string &prefix, const std::string &path, std::string &error) {
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
      "alignas",  "alignof", "auto",      "bool",     "break",     "case",    "catch",     "char",
      "class",    "const",   "constexpr", "continue", "default",   "delete",  "do",        "double",
      "else",     "enum",    "explicit",  "extern",   "false",     "float",   "for",       "friend",
      "goto",     "if",      "inline",    "int",      "long",      "mutable", "namespace", "new",
      "noexcept", "nullptr", "operator",  "private",  "protected", "public",  "register",  "return",
      "short",    "signed",  "sizeof",    "static",   "struct",    "switch",  "template",  "this",
      "throw",    "true",    "try",       "typedef",  "typename",  "union",   "unsigned",  "using",
      "virtual",  "void",    "volatile",  "while"};
  if (derived && llvm::is_contained(keywords, name))
    name += "_model";
  bool ok = !name.empty() && !llvm::isDigit(name[0]) && !llvm::is_contained(keywords, name) &&
            llvm::all_of(name, [](char c) { return llvm::isAlnum(c) || c == '_'; });
  return ok ? name : "";
}

bool parseShapeFlag(const std::string &flag, std::map<std::string, std::vector<DimRange>> &shapes,
                    std::string &error) {
  auto eq = flag.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == flag.size()) {
    error = "--shape expects NAME=D0xD1... (each D a size or MIN..MAX), got '" + flag + "'";
    return false;
  }
  std::vector<DimRange> dims;
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(flag).substr(eq + 1).split(parts, 'x');
  for (auto p : parts) {
    DimRange d;
    if (!DimRange::parse(p.str(), d)) {
      error = "--shape " + flag + ": '" + p.str() +
              "' is not a dimension (a size, or a range MIN..MAX or MIN..)";
      return false;
    }
    dims.push_back(d);
  }
  shapes[flag.substr(0, eq)] = dims;
  return true;
}

bool parseDimFlag(const std::string &flag, std::map<std::string, DimRange> &dims,
                  std::string &error) {
  auto eq = flag.rfind('=');
  DimRange d;
  if (eq == std::string::npos || eq == 0 || !DimRange::parse(flag.substr(eq + 1), d)) {
    error = "--dim expects SYMBOL=MIN..MAX (or MIN.., or a size), got '" + flag + "'";
    return false;
  }
  dims[flag.substr(0, eq)] = d;
  return true;
}

} // namespace kiln

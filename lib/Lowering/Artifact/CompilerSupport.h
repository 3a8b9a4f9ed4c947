//===- CompilerSupport.h - the compile driver's messages and files -*- C++ -*-===//

#ifndef KILN_LIB_LOWERING_ARTIFACT_COMPILERSUPPORT_H
#define KILN_LIB_LOWERING_ARTIFACT_COMPILERSUPPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir {
class Diagnostic;
} // namespace mlir

namespace kiln {

struct CompileOptions;

/// `error: model.onnx: node 'fc1' (Gemm): message`, from the importer's
/// NameLoc(node, FileLineColLoc(file)) locations.
void printDiagnostic(mlir::Diagnostic &diag);

/// Out of memory or a fatal LLVM error mid-compile: say so, remove the
/// temporary outputs, exit 1 -- never abort with a signal.
void installCompileErrorHandlers();

/// Prints `error: msg`; returns 1, the exit code.
int fail(const std::string &msg);

/// Writes a text stage to `output` ("-" = stdout), atomically: when `print`
/// fails, nothing is left at `output`. The exit code.
int writeText(const std::string &output, llvm::function_ref<bool(llvm::raw_fd_ostream &)> print);

/// The fusion plan as DOT at opts.graph, and as SVG beside it when `dot`
/// (Graphviz) is on PATH. The exit code.
int drawGraph(const CompileOptions &opts, const std::string &kernelTable);

/// Object code for `module` into the file at `path`.
mlir::LogicalResult writeNative(mlir::ModuleOp module, const std::string &signature,
                                const std::string &cpu, const std::string &prefix,
                                const std::string &path, std::string &error);

/// The model's C identifier: --name, else the output file's stem; empty
/// when --name is not an identifier (or is a C++ keyword).
std::string modelName(const CompileOptions &opts);

} // namespace kiln

#endif // KILN_LIB_LOWERING_ARTIFACT_COMPILERSUPPORT_H

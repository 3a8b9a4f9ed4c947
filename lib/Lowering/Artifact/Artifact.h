//===- Artifact.h - pieces of the artifact writer ---------------*- C++ -*-===//

#ifndef KILN_LIB_LOWERING_ARTIFACT_ARTIFACT_H
#define KILN_LIB_LOWERING_ARTIFACT_ARTIFACT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace kiln {

/// The signature text (ArtifactFormat.h) of `@main` in a kiln-level module.
mlir::FailureOr<std::string> buildSignature(mlir::ModuleOp module);

/// The signature's `arena`/`weights` lines, from the attributes that
/// kiln-plan-memory leaves on the lowered module.
std::string memoryPlanLines(mlir::ModuleOp module);

/// Translates an LLVM-dialect module to LLVM IR, adds the artifact globals,
/// optimizes for the host (or `cpu`), and writes LLVM IR text (`emitIR`) or
/// an object file to `os`.
mlir::LogicalResult emitNative(mlir::ModuleOp module, const std::string &signature,
                               const std::string &cpu, bool emitIR,
                               llvm::raw_pwrite_stream &os, std::string &error);

/// Links an object file into a shared library with the system C compiler.
mlir::LogicalResult linkSharedLibrary(const std::string &object, const std::string &output,
                                      std::string &error);

/// A file written under a temporary name and renamed into place on commit;
/// destroyed uncommitted, it leaves nothing behind.
class AtomicOutput {
public:
  explicit AtomicOutput(std::string target);
  ~AtomicOutput();
  /// The temporary path to write (empty if it could not be created).
  const std::string &path() const { return tmp; }
  mlir::LogicalResult commit(std::string &error);

private:
  std::string target, tmp;
  bool committed = false;
};

} // namespace kiln

#endif // KILN_LIB_LOWERING_ARTIFACT_ARTIFACT_H

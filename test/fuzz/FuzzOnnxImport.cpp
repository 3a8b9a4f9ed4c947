//===- FuzzOnnxImport.cpp - libFuzzer: bytes -> ModelProto -> kiln -------===//
//
// Any byte string must import to a verified module or to diagnostics: never
// a crash, an assertion, a hang or a huge allocation. The graph pipeline
// (canonicalization, i.e. every folder) runs on what imports, since folders
// see the model's constants. External data resolves against a folder that
// does not exist, so the fuzzer never reads files.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/OnnxToKiln/OnnxImporter.h"
#include "kiln/Lowering/Pipelines/Pipelines.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mlir::DialectRegistry *registry = [] {
    auto *r = new mlir::DialectRegistry();
    kiln::registerKilnDialects(*r);
    return r;
  }();
  // A fresh context per input: uniqued attributes would otherwise grow.
  mlir::MLIRContext context(*registry, mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) {});
  std::string bytes(reinterpret_cast<const char *>(data), size);
  auto module = kiln::importOnnxModelFromBytes(context, bytes, "/nonexistent-kiln-fuzz/model.onnx",
                                               kiln::ImportOptions());
  if (!module)
    return 0;
  if (mlir::failed(mlir::verify(*module)))
    __builtin_trap(); // the importer must only produce valid IR
  mlir::PassManager pm(&context);
  kiln::buildKilnGraphPipeline(pm);
  (void)pm.run(*module);
  return 0;
}

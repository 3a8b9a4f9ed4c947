//===- Pipelines.h - Kiln's named compilation pipelines ---------*- C++ -*-===//
//
// The stages of DESIGN.md as pass pipelines, each registered under a name so
// kiln-opt and the lit tests run exactly what `kiln compile` runs.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_PIPELINES_PIPELINES_H
#define KILN_LOWERING_PIPELINES_PIPELINES_H

namespace mlir {
class DialectRegistry;
class OpPassManager;
} // namespace mlir

namespace kiln {

/// `kiln-graph-opt`: canonicalize and CSE on the kiln dialect.
void buildKilnGraphPipeline(mlir::OpPassManager &pm);

/// `kiln-lower-to-linalg`: kiln => linalg on tensors with elementwise fusion.
void buildKilnToLinalgPipeline(mlir::OpPassManager &pm);

/// `kiln-cpu-lower-to-llvm`: linalg on tensors => bufferized loops => LLVM
/// dialect; results become caller-owned out-params, pointers are bare.
void buildCPULinalgToLLVMPipeline(mlir::OpPassManager &pm);

/// Registers the pipelines above with the pass registry.
void registerKilnPipelines();

/// Every dialect, interface model and translation the compiler driver needs.
void registerKilnDialects(mlir::DialectRegistry &registry);

} // namespace kiln

#endif // KILN_LOWERING_PIPELINES_PIPELINES_H

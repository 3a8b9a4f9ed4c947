//===- Passes.h - Kiln's lowering passes ------------------------*- C++ -*-===//

#ifndef KILN_LOWERING_PASSES_H
#define KILN_LOWERING_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace func { class FuncOp; class FuncDialect; }
namespace linalg { class LinalgDialect; }
namespace tensor { class TensorDialect; }
namespace arith { class ArithDialect; }
namespace math { class MathDialect; }
namespace vector { class VectorDialect; }
namespace scf { class SCFDialect; }
namespace affine { class AffineDialect; }
namespace LLVM { class LLVMDialect; }
namespace memref { class MemRefDialect; }
namespace gpu { class GPUDialect; }
namespace NVVM { class NVVMDialect; }
namespace nvgpu { class NVGPUDialect; }
namespace amx { class AMXDialect; }
} // namespace mlir

namespace kiln {
#define GEN_PASS_DECL
#include "kiln/Lowering/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Lowering/Passes.h.inc"

/// `kiln.spread`, a unit attribute on a loop (a linalg op, then the
/// scf.forall and scf.parallel kernel formation makes of it):
/// kiln-outline-kernels splits it over the threads by its first loop
/// however little work it has, as they split the kernels around it (one
/// image's rows or channels at batch 1), rather than run it on one thread
/// that reads what the other wrote.
inline constexpr llvm::StringLiteral kSpreadAttr = "kiln.spread";
} // namespace kiln

#endif // KILN_LOWERING_PASSES_H

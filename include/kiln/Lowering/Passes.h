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
} // namespace mlir

namespace kiln {
#define GEN_PASS_DECL
#include "kiln/Lowering/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Lowering/Passes.h.inc"

/// A unit attribute on a loop (a linalg.generic, then the scf.forall and
/// scf.parallel kernel formation makes of it): kiln-outline-kernels splits
/// it over the threads by its first loop however little work it has, as
/// they split the kernel that wrote its input (one image's rows).
inline constexpr llvm::StringLiteral kSplitRowsAttr = "kiln.split_rows";
} // namespace kiln

#endif // KILN_LOWERING_PASSES_H

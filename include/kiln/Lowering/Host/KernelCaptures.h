//===- KernelCaptures.h - what an outlined kernel takes from its caller -*- C++ -*-===//
//
// Shared by the CPU (kiln-outline-kernels) and CUDA (kiln-outline-gpu-kernels)
// outliners: a kernel receives only identity-layout root buffers (bare
// pointers) and recomputes the views and constants it uses.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_KERNELCAPTURES_H
#define KILN_LOWERING_KERNELCAPTURES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/SetVector.h"

namespace kiln {

/// The value of an `arith.constant` index, if `v` is one.
std::optional<int64_t> constIndex(mlir::Value v);

/// Ops recomputed inside a kernel instead of crossing the boundary
/// (constants, memref views, get_global), but for views marked
/// `kArgumentAttr`.
bool isRecomputable(mlir::Operation *op);

/// A unit attribute on an identity-layout view that kernels take as a
/// buffer of its own rather than recompute: a dynamic [batch, seq, d]
/// buffer collapsed into its rows reaches the kernel as [rows, d], its
/// row stride a constant (recomputed, it would be batch's stride, a
/// product of run-time sizes, which the tensor-core lowering refuses).
inline constexpr llvm::StringLiteral kArgumentAttr = "kiln.kernel_argument";

/// Values defined above `ops` that they use: buffers to pass (`args`) and
/// ops to recompute (`clones`, in dominance order). False when some value
/// can't cross (a buffer with a layout; a computed scalar, unless
/// `scalars`: then it is passed too, but for i1).
bool collectCaptures(llvm::ArrayRef<mlir::Operation *> ops, llvm::SetVector<mlir::Value> &args,
                     llvm::SetVector<mlir::Operation *> &clones, bool scalars = false);

/// Inside a new kernel: maps each captured value of `args` to the matching
/// kernel parameter in `params` and clones the ops to recompute (`clones`,
/// from collectCaptures) at `b`'s insertion point, through `map`.
void materializeCaptures(mlir::OpBuilder &b, llvm::ArrayRef<mlir::Value> args,
                         mlir::ValueRange params, llvm::ArrayRef<mlir::Operation *> clones,
                         mlir::IRMapping &map);

/// Records on `fn` as `kiln.ops` the ONNX nodes ("node 'fc1' (Gemm)") whose
/// code is under `body`, in order of first appearance, from the importer's
/// locations that fusion merges: for `kiln inspect` and profiles.
void recordNodes(mlir::Operation *fn, mlir::Operation *body);

} // namespace kiln

#endif // KILN_LOWERING_KERNELCAPTURES_H

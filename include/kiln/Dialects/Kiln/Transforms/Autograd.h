//===- Autograd.h - reverse-mode differentiation over kiln ops --*- C++ -*-===//
//
// The core of kiln-autograd, also used by the importer for ONNX's Gradient
// op: walks `ops` (in program order) backwards from `y` and asks each op
// between `wrt` and `y` for its operands' gradients (GradientOpInterface).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECTS_KILN_TRANSFORMS_AUTOGRAD_H
#define KILN_DIALECTS_KILN_TRANSFORMS_AUTOGRAD_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"

namespace kiln {

/// Builds, at `b`'s insertion point (after every op of `ops`), the gradient
/// of sum(y) * seed... precisely: the vector-Jacobian product of `y` with
/// `seed` (y's type; ones when null) for each value of `wrt`; zeros for a
/// value `y` does not depend on. Fails with a diagnostic at the op whose
/// rule is missing or fails. Every op built is added to `built` when given.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
buildReverseGradients(mlir::OpBuilder &b, mlir::Location loc, llvm::ArrayRef<mlir::Operation *> ops,
                      mlir::Value y, mlir::Value seed, mlir::ValueRange wrt);

} // namespace kiln

#endif // KILN_DIALECTS_KILN_TRANSFORMS_AUTOGRAD_H

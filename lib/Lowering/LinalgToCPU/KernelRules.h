//===- KernelRules.h - what kiln-form-kernels asks of an op -----*- C++ -*-===//
//
// The questions kernel formation asks of a producer before it joins a
// kernel: which of its loops a tile slices, how much of a linear layer's
// weights every tile reads, whether a consumer reads it across its rows.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_LINALGTOCPU_KERNELRULES_H
#define KILN_LIB_LOWERING_LINALGTOCPU_KERNELRULES_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>

namespace kiln {

/// The loops of `op` that are tiled when the result `result` is sliced
/// along the result dimensions `dims`; empty optional if some dimension is
/// not one plain loop of the output map.
std::optional<llvm::SmallDenseSet<unsigned>>
loopsForResultDims(mlir::linalg::LinalgOp op, mlir::OpResult result,
                   const llvm::SmallDenseSet<unsigned> &dims);

/// The bytes of a row matmul's B when every tile of the rows reads all of
/// it (a linear layer's weights: B indexed by k and n alone), else 0.
int64_t sharedMatmulOperandBytes(mlir::Operation *op);

/// An elementwise `consumer` whose innermost loop walks another dimension
/// of `operand` than its last (contiguous) one.
bool readsAcrossRows(mlir::linalg::LinalgOp consumer, mlir::OpOperand &operand);

/// A register-tiled product (a row matmul or a convolution), or an
/// elementwise op on one's result (its bias).
bool isProductOrEpilogue(mlir::linalg::LinalgOp op);

} // namespace kiln

#endif // KILN_LIB_LOWERING_LINALGTOCPU_KERNELRULES_H

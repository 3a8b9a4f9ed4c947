//===- PackWeights.h - kiln-pack-matmul-weights' parts ----------*- C++ -*-===//
//
// What PackInt8Weights.cpp shares with PackMatmulWeights.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_LINALGTOCPU_PACKWEIGHTS_H
#define KILN_LIB_LOWERING_LINALGTOCPU_PACKWEIGHTS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "llvm/ADT/DenseMap.h"

namespace kiln {

/// `op` again with input `i` replaced by `v`, read at `at`.
void replaceInput(mlir::linalg::GenericOp op, unsigned i, mlir::Value v,
                  llvm::ArrayRef<mlir::AffineExpr> at);

/// An 8-bit product C(..m.., n) += zext(A(..m.., k)) * sext(W(k, n)) in
/// i32 (kiln.matmul_integer), W a constant [K, N], K a multiple of 4, A's
/// rows contiguous in k: W packed as [ceil(N/P), K/G, P, G], each column's
/// G consecutive k side by side (G = 4 for vpdpbusd, 2 for vpmaddwd:
/// Int8Reductions.h), the last panel's columns past N zero.
/// On AVX2 (G = 2 asked), weights no pair of which vpmaddubsw can sum past
/// i16 go in fours (G = 4) for its tile: 7-bit ones. `packed` holds the
/// copies made so far, by the weights they pack.
bool packInt8Weights(mlir::linalg::GenericOp op, int64_t lanes, int64_t group,
                     llvm::DenseMap<mlir::Value, mlir::Value> &packed);

} // namespace kiln

#endif // KILN_LIB_LOWERING_LINALGTOCPU_PACKWEIGHTS_H

//===- VecmatAsRowMatmul.h - vector-matrix products as row matmuls -*- C++ -*-===//

#ifndef KILN_LIB_LOWERING_LINALGTOCPU_VECMATASROWMATMUL_H
#define KILN_LIB_LOWERING_LINALGTOCPU_VECMATASROWMATMUL_H

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace kiln {

/// out(n) += x(k) * B(k, n) on buffers (a classifier at batch 1) rewritten
/// as the one-row matmul it was, for kiln-vectorize-matmul's tile.
void populateVecmatAsRowMatmulPatterns(mlir::RewritePatternSet &patterns);

} // namespace kiln

#endif // KILN_LIB_LOWERING_LINALGTOCPU_VECMATASROWMATMUL_H

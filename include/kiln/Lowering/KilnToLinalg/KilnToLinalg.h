//===- KilnToLinalg.h - kiln to linalg patterns -----------------*- C++ -*-===//
//
// Pattern groups of the kiln-to-linalg conversion, one per op family.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_KILNTOLINALG_KILNTOLINALG_H
#define KILN_LOWERING_KILNTOLINALG_KILNTOLINALG_H

namespace mlir {
class RewritePatternSet;
}

namespace kiln {
/// Unary, binary, compare, select, clip and cast ops => linalg.generic.
void populateKilnElementwiseToLinalgPatterns(mlir::RewritePatternSet &patterns);
/// matmul, gemm, conv => contractions.
void populateKilnContractionToLinalgPatterns(mlir::RewritePatternSet &patterns);
/// Reductions, softmax, normalizations and pooling.
void populateKilnReductionToLinalgPatterns(mlir::RewritePatternSet &patterns);
/// Reshapes, transpose, concat, split, slice, pad, trilu, constants.
void populateKilnDataMovementToLinalgPatterns(mlir::RewritePatternSet &patterns);
/// Gathers and scatters.
void populateKilnIndexingToLinalgPatterns(mlir::RewritePatternSet &patterns);
/// kiln.random_uniform (counter-based) as an index-hashing linalg.generic.
void populateKilnRandomToLinalgPatterns(mlir::RewritePatternSet &patterns);
} // namespace kiln

#endif // KILN_LOWERING_KILNTOLINALG_KILNTOLINALG_H

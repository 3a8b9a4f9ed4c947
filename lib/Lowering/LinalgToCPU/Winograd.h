//===- Winograd.h - F(mxm, 3x3) convolution pieces on the CPU ---*- C++ -*-===//
//
// kiln-winograd-conv rewrites a 3x3 convolution into an input transform,
// (m+2)^2 products and an output transform, m = 2 or 4;
// kiln-vectorize-winograd lowers the two transforms (generics marked
// `kiln.winograd`) on memrefs. Both build the transforms' arithmetic with
// the functions here, on scalars in the generics' bodies and on vectors
// of tiles in the lowering.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_LINALGTOCPU_WINOGRAD_H
#define KILN_LOWERING_LINALGTOCPU_WINOGRAD_H

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringRef.h"

namespace kiln::winograd {

/// The marker of the transforms' generics: "input" or "output".
inline constexpr llvm::StringLiteral kAttr = "kiln.winograd";
/// On the output transform's op yielding a tile's output (before any
/// epilogue): where kiln-vectorize-winograd takes over from the body.
inline constexpr llvm::StringLiteral kValueAttr = "kiln.winograd.value";

/// The output tile sides taken: F(2x2, 3x3) and F(4x4, 3x3).
inline constexpr int64_t kOutputTiles[] = {2, 4};

/// The side m whose (m+2)^2 transform points are `points`, or 0.
inline int64_t outputTileOf(int64_t points) {
  for (int64_t m : kOutputTiles)
    if (points == (m + 2) * (m + 2))
      return m;
  return 0;
}

/// B^T d B for an (m+2)x(m+2) input tile d (row-major: d[(m+2) a + b]),
/// as (m+2)^2 values in the same order: the products' operands.
llvm::SmallVector<mlir::Value, 36> inputTile(mlir::OpBuilder &b, mlir::Location loc,
                                             llvm::ArrayRef<mlir::Value> d, int64_t m);

/// A^T p A for the (m+2)^2 products p: the mxm outputs, row-major.
llvm::SmallVector<mlir::Value, 16> outputTile(mlir::OpBuilder &b, mlir::Location loc,
                                              llvm::ArrayRef<mlir::Value> p, int64_t m);

/// G, (m+2) x 3, row-major: the filter transform u = G g G^T.
llvm::ArrayRef<double> filterMatrix(int64_t m);

} // namespace kiln::winograd

#endif // KILN_LOWERING_LINALGTOCPU_WINOGRAD_H

//===- Winograd.h - F(2x2, 3x3) convolution pieces on the CPU ---*- C++ -*-===//
//
// kiln-winograd-conv rewrites a 3x3 convolution into an input transform,
// 16 products and an output transform; kiln-vectorize-winograd lowers the
// two transforms (generics marked `kiln.winograd`) on memrefs. Both build
// the transforms' arithmetic with the functions here, on scalars in the
// generics' bodies and on vectors of tiles in the lowering.
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

/// B^T d B for a 4x4 input tile d (row-major: d[4 * a + b]), as 16 values
/// in the same order: the products' 16 operands.
llvm::SmallVector<mlir::Value, 16> inputTile(mlir::OpBuilder &b, mlir::Location loc,
                                             llvm::ArrayRef<mlir::Value> d);

/// A^T m A for the 16 products m: the 2x2 outputs, row-major.
llvm::SmallVector<mlir::Value, 4> outputTile(mlir::OpBuilder &b, mlir::Location loc,
                                             llvm::ArrayRef<mlir::Value> m);

} // namespace kiln::winograd

#endif // KILN_LOWERING_LINALGTOCPU_WINOGRAD_H

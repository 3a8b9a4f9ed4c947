//===- AmxMatmul.h - 8-bit row matmul blocks on AMX tiles -------*- C++ -*-===//
//
// Sapphire Rapids' tile unit multiplies a 16 x 64 byte tile of A by a
// 16 x 64 byte tile of B (16 groups of 4 k for 16 columns: exactly a VNNI
// packed panel's rows) into a 16 x 16 i32 tile in one `tdpbusd`: 16384
// multiply-adds, 16x a vpdpbusd's 1024 (measured here: 6.1 TOP/s a core
// against 0.46). kiln-vectorize-matmul hands it the blocks of an 8-bit
// product whose A rows are a fixed stride apart; the accumulators come
// back as the vectors the VNNI tile would have held, for the same
// epilogue. Numerics: the same i32 sums, bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_LINALGTOCPU_AMXMATMUL_H
#define KILN_LIB_LOWERING_LINALGTOCPU_AMXMATMUL_H

#include "mlir/IR/Builders.h"

#include <optional>

namespace kiln {

/// A block's operands: A (bytes, a row's k contiguous), the distance in
/// elements between its rows, and B's panels as [N/16, K/4, 64] rows.
struct AmxOperands {
  mlir::Value a;
  int64_t aRowStride = 0;
  mlir::Value panelRows;
  int64_t K = 0; // a multiple of 4
};

/// Accumulator tiles at once: with one tile of A and one of B per column
/// tile, five of the eight tile registers. (2 x 2, all eight, ran LLVM's
/// tile register allocation out of registers in a function of several
/// blocks, and was no faster on ResNet-50.)
constexpr int64_t kAmxColumnTiles = 2;

/// The product of `rows` rows (r0 + i) and the 16-column vectors starting
/// at `columns` (whole panels), K long: per 16 rows (the last maybe fewer)
/// and two vectors, 16 x 16 i32 accumulator tiles over k in steps of 64,
/// then the rest in one shorter step; A's tile loaded once for both B
/// tiles. Each tile goes to a stack buffer and `finish(i, j, acc)` gets
/// row i's vector j of it.
void emitAmxBlock(mlir::OpBuilder &b, mlir::Location loc, const AmxOperands &ops, int64_t rows,
                  int64_t columns, llvm::function_ref<mlir::Value(int64_t)> panelOf,
                  llvm::function_ref<llvm::SmallVector<mlir::Value>(int64_t, mlir::Value)> aAt,
                  llvm::function_ref<void(int64_t, int64_t, mlir::Value)> finish);

} // namespace kiln

#endif // KILN_LIB_LOWERING_LINALGTOCPU_AMXMATMUL_H

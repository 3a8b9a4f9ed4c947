//===- Int8Reductions.h - the 8-bit register tiles' reductions --*- C++ -*-===//
//
// kiln-vectorize-matmul's 8-bit products (uint8 A times int8 B summed in
// i32, exact) on B packed by kiln-pack-matmul-weights: the loop over k in
// groups of 4 for one block of rows and column vectors, the accumulators
// in and out. vpdpbusd's (AVX512-VNNI) on [N/P, K/4, P, 4] panels, or
// vpmaddwd's (AVX2) on [N/P, K/2, P, 2] ones.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_LINALGTOCPU_INT8REDUCTIONS_H
#define KILN_LIB_LOWERING_LINALGTOCPU_INT8REDUCTIONS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace kiln {

/// What a block's reduction reads: A (bytes, or i16 for vpmaddwd; row
/// i's k..k+3 contiguous at aAt(i, k)), B's packed panels as rows ([N/P,
/// K/G, P*G]), K (a multiple of 4), and the accumulators' type (P lanes
/// of i32).
struct Int8Reduction {
  mlir::Value a, panelRows, kSize;
  mlir::VectorType acc;
  int64_t width = 0; // P
  llvm::function_ref<llvm::SmallVector<mlir::Value>(int64_t row, mlir::Value k)> aAt;
};

/// vpdpbusd: per group of 4 k, per column vector (its panel in `panels`)
/// the panel's P x 4 bytes, per row A's 4 bytes broadcast as one 32-bit
/// word; each lane's 4 byte products summed into its i32 accumulator.
/// With 8 lanes (AVX2: 7-bit weights, or --int8-arith=saturate):
/// vpmaddubsw then vpmaddwd by ones, each lane's products k, k+1 and
/// k+2, k+3 summed in i16 first, saturated (onnxruntime's arithmetic
/// there; exact on 7-bit weights). `init` holds rows x vectors accumulators (row-major); the results too.
llvm::SmallVector<mlir::Value> emitVnniReduction(mlir::OpBuilder &b, mlir::Location loc,
                                                 const Int8Reduction &r, int64_t rows,
                                                 llvm::ArrayRef<mlir::Value> panels,
                                                 mlir::ValueRange init);

/// vpmaddwd (AVX2, no VNNI): per pair of k, each panel's 16 bytes widened
/// to i16, A's pair zero-extended to i16 in every lane (A's bytes
/// shuffled, or A already i16: kiln-widen-int8-rows); each lane's two
/// products summed into i32 and added to its accumulator.
llvm::SmallVector<mlir::Value> emitPairReduction(mlir::OpBuilder &b, mlir::Location loc,
                                                 const Int8Reduction &r, int64_t rows,
                                                 llvm::ArrayRef<mlir::Value> panels,
                                                 mlir::ValueRange init);

} // namespace kiln

#endif // KILN_LIB_LOWERING_LINALGTOCPU_INT8REDUCTIONS_H

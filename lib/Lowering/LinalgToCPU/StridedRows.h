//===- StridedRows.h - rows read at a stride, as vectors --------*- C++ -*-===//
//
// The CPU lowerings of windows that step by 2 or 4 along a row
// (Winograd's tiles, a strided pool) read 2 or 4 contiguous vectors and
// keep every other (or fourth) lane, and write 2- or 4-wide blocks back
// by interleaving as many vectors. These helpers emit those loops, loads
// and shuffles.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_LINALGTOCPU_STRIDEDROWS_H
#define KILN_LOWERING_LINALGTOCPU_STRIDEDROWS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

namespace kiln {

struct StridedRows {
  mlir::OpBuilder &b;
  mlir::Location loc;
  int64_t lanes;

  /// The widest vector of f32 (at least 4 lanes) that a row of `count`
  /// elements fills more than half of.
  static int64_t lanesFor(int64_t count, unsigned vectorBits);

  mlir::Value index(int64_t v);
  mlir::Value add(mlir::Value x, int64_t k);
  mlir::Value times(mlir::Value x, int64_t k);
  mlir::Value twice(mlir::Value x) { return times(x, 2); }

  /// One parallel loop over `sizes` (the batch's may be known at run
  /// time only); a static size of 1 is no loop (a single image's rows and
  /// channels then split over the threads, not the one image).
  void parallel(llvm::ArrayRef<mlir::OpFoldResult> sizes,
                llvm::function_ref<void(llvm::ArrayRef<mlir::Value>)> body);

  /// Chunks of `lanes` elements along a row of `count`: body(start, valid).
  void chunks(int64_t count, llvm::function_ref<void(mlir::Value, int64_t)> body);

  /// 2 * lanes elements of `base` at `idx` (last index contiguous) as two
  /// vectors, only the first `valid` read (zeros after).
  std::pair<mlir::Value, mlir::Value> loadPair(mlir::Value base,
                                               llvm::SmallVector<mlir::Value> idx, int64_t valid);

  /// `vectors` x lanes elements of `base` at `idx` (last index
  /// contiguous), only the first `valid` read (zeros after).
  llvm::SmallVector<mlir::Value> loadRun(mlir::Value base, llvm::SmallVector<mlir::Value> idx,
                                         int64_t vectors, int64_t valid);

  /// Lanes first + n * k of the n vectors `run` taken as one (n a power of
  /// two): pairs of vectors halve it level by level.
  mlir::Value gather(llvm::ArrayRef<mlir::Value> run, int64_t first);

  /// The inverse: vector `q` of the n vectors whose lanes alternate among
  /// `columns` (lane k of column j at n * k + j of the whole).
  mlir::Value spread(llvm::ArrayRef<mlir::Value> columns, int64_t q);

  /// Lanes first + step * k of the pair (lo, hi).
  mlir::Value pick(mlir::Value lo, mlir::Value hi, int64_t first, int64_t step);

  /// The lanes of half `half` of x and y alternately.
  mlir::Value interleave(mlir::Value x, mlir::Value y, int64_t half);
};

} // namespace kiln

#endif // KILN_LOWERING_LINALGTOCPU_STRIDEDROWS_H

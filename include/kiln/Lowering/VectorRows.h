//===- VectorRows.h - contiguous rows as vectors on the CPU -----*- C++ -*-===//
//
// The CPU's vectorizing passes (kiln-vectorize-conv, -elementwise) read and
// write rows of contiguous elements as 1-D vectors, the row's end under a
// mask, and apply a linalg body lane-wise to them.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_VECTORROWS_H
#define KILN_LOWERING_VECTORROWS_H

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir {
class RewritePatternSet;
}

namespace kiln::rows {

/// for (i = 0; i < extent; i += step) body(i): nothing for an empty
/// range, the body inline (i = 0) for a single trip.
void forRange(mlir::OpBuilder &b, mlir::Location loc, int64_t extent, int64_t step,
              llvm::function_ref<void(mlir::Value)> body);

/// One scf.parallel over the dimensions of `extents` stepped by `steps`
/// whose range holds more than one step; body(ivs) gets every dimension's
/// index (constant 0 for the others). Independent iterations: the outliner
/// may split the loop over the thread pool.
void forParallel(mlir::OpBuilder &b, mlir::Location loc, llvm::ArrayRef<int64_t> extents,
                 llvm::ArrayRef<int64_t> steps,
                 llvm::function_ref<void(llvm::ArrayRef<mlir::Value>)> body);

/// Each of `op`'s loops' extent as an index value (memref.dim where it is
/// known at run time).
llvm::SmallVector<mlir::Value> loopSizes(mlir::OpBuilder &b, mlir::Location loc,
                                         mlir::linalg::LinalgOp op);

/// One scf.parallel from 0 to `sizes` (known at run time) in steps of 1;
/// body(ivs) inside it (directly when there are no sizes).
void forParallelTo(mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange sizes,
                   llvm::function_ref<void(llvm::ArrayRef<mlir::Value>)> body);

/// `lanes` elements of the memref `base` from `idx` (the last index the
/// contiguous one); only the first `valid` when fewer (zeros after).
mlir::Value load(mlir::OpBuilder &b, mlir::Location loc, mlir::Value base,
                 mlir::ValueRange idx, int64_t lanes, int64_t valid);

/// Stores the first `valid` lanes of `v` to `base` at `idx`.
void store(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v, mlir::Value base,
           mlir::ValueRange idx, int64_t valid);

/// As load and store, the lanes a mask (vector.create_mask of a count
/// known at run time) selects.
mlir::Value maskedLoad(mlir::OpBuilder &b, mlir::Location loc, mlir::Value base,
                       mlir::ValueRange idx, mlir::Value mask);
void maskedStore(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v, mlir::Value base,
                 mlir::ValueRange idx, mlir::Value mask);

/// True when every op of `body` (but its terminator) is pure and
/// elementwise-mappable: applyBody can run it on vectors.
bool isElementwiseBody(mlir::Block &body);

/// The values `body` yields, computed lane-wise on vectors of `lanes`:
/// `args` stand for its block arguments, values defined outside the body
/// are broadcast.
llvm::SmallVector<mlir::Value> applyBody(mlir::OpBuilder &b, mlir::Location loc,
                                         mlir::Block &body, mlir::ArrayRef<mlir::Value> args,
                                         int64_t lanes);

/// `ops` (of a body whose arguments `map` holds, and any of its values
/// already computed) applied lane-wise on vectors of `lanes`, their
/// results added to `map`.
void applyOps(mlir::OpBuilder &b, mlir::Location loc,
              llvm::iterator_range<mlir::Block::iterator> ops, mlir::IRMapping &map,
              int64_t lanes);

/// `v` on vectors of `lanes`: its value in `map`, or (defined outside the
/// body) broadcast.
mlir::Value lookupLanes(mlir::OpBuilder &b, mlir::Location loc, mlir::IRMapping &map,
                        mlir::Value v, int64_t lanes);

/// Row reductions along the innermost loop (sums, maxima) into vector
/// accumulators (VectorizeReductions.cpp).
void populateRowReductionPatterns(mlir::RewritePatternSet &patterns, unsigned vectorBits);

} // namespace kiln::rows

#endif // KILN_LOWERING_VECTORROWS_H

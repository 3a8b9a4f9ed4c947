//===- ConvEpilogue.h - shared pieces of the conv register tiles -*- C++ -*-===//
//
// Both register tiles of kiln-vectorize-conv (NCHW direct and packed
// channels) apply the elementwise op after a convolution to their
// accumulators instead of storing them to a temporary first.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_LINALGTOCPU_CONVEPILOGUE_H
#define KILN_LIB_LOWERING_LINALGTOCPU_CONVEPILOGUE_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace kiln {

/// An elementwise linalg.generic right after the convolution (or the
/// matmul) that reads its result (input `accInput`) where it writes, and
/// other inputs either at the same place or broadcast along the last
/// dimension (a bias per channel).
struct Epilogue {
  mlir::linalg::GenericOp op;
  unsigned accInput = 0;
  std::optional<double> fill; // the convolution's zero fill, when dropped
};

/// The buffer `v` is a view of (through subviews, reshapes and casts).
mlir::Value viewRoot(mlir::Value v);

/// The epilogue of `conv` (on memrefs), when its output is a temporary
/// written only by its fill and `conv` and read only by the epilogue. With
/// `columnVectors` (a matmul's tile), other inputs may also be read along
/// the columns as their own last, contiguous dimension (a linear layer's
/// bias per column), a vector loaded per accumulator.
std::optional<Epilogue> matchEpilogue(mlir::linalg::LinalgOp conv, bool columnVectors = false);

/// The epilogue's body on `acc`, the vector of outputs at `idx` (the
/// temporary's indices; the last one contiguous, `valid` lanes of it
/// real): other inputs loaded at the same place, or one element broadcast
/// when they do not vary along the last dimension (a bias per channel).
mlir::Value applyEpilogue(mlir::OpBuilder &b, mlir::Location loc, const Epilogue &epilogue,
                          mlir::Value acc, llvm::ArrayRef<mlir::Value> idx, int64_t valid);

/// The same with each other input's vector from `input` (the packed
/// convolution's rows cross row ends: it reads flattened views).
mlir::Value applyEpilogue(mlir::OpBuilder &b, mlir::Location loc, const Epilogue &epilogue,
                          mlir::Value acc,
                          llvm::function_ref<mlir::Value(mlir::OpOperand *)> input);

/// Erases the epilogue and `conv` once their work is emitted, with the
/// temporary's fill.
void eraseWithEpilogue(mlir::RewriterBase &rewriter, mlir::linalg::LinalgOp conv,
                       const std::optional<Epilogue> &epilogue);

/// The accumulators `inits` carried through loops over input channels
/// c0 .. c0+count and kernel rows 0 .. KH (static bounds: the profiler
/// counts FLOPs from trip counts); `tap(c, kh, acc)` returns them updated
/// by one (c, kh) step, its kw taps unrolled.
llvm::SmallVector<mlir::Value>
reduceOverChannelRows(mlir::OpBuilder &b, mlir::Location loc, mlir::Value c0, int64_t count,
                      int64_t KH, mlir::ValueRange inits,
                      llvm::function_ref<llvm::SmallVector<mlir::Value>(
                          mlir::Value c, mlir::Value kh, llvm::ArrayRef<mlir::Value> acc)>
                          step);

/// A convolution's or a pool's input read from the image a pad was made
/// of (kiln-implicit-padding): the tile's input is the view at `offsets`
/// (image, channel, row; its column offset 0) of `source` padded by
/// `lowRows` rows and `lowColumns` columns before, as many or fewer after;
/// reads outside `source` are `value` (rows outside it read `padRow`, a
/// row of it): 0 for convolutions and sums, -inf for maxima.
struct ImplicitPad {
  mlir::Value source; // [N, C, H, W]
  llvm::SmallVector<mlir::Value, 3> offsets;
  int64_t lowRows = 0, lowColumns = 0;
  mlir::Value padRow; // [W] of `value`
  float value = 0.0f;
};

/// Row `row` (of the padded image, the tile's offsets not yet added) of
/// channel `c` of image `n` as a 1-D view of `pad.source`, or `pad.padRow`
/// for a row outside it: a select of two pointers, the loads unchanged
/// (masking every load, or branching per row block, cost a depthwise 5x5
/// at 14x14 40%).
mlir::Value implicitRow(mlir::OpBuilder &b, mlir::Location loc, const ImplicitPad &pad,
                        mlir::Value n, mlir::Value c, mlir::Value row);

/// Emits the register tile of `op` (an NCHW convolution that
/// isRegisterTiledConv takes, on memrefs) and its epilogue in their place;
/// with `pad`, reading the image `pad` describes instead of its input.
void emitConvRegisterTile(mlir::RewriterBase &rewriter, mlir::linalg::LinalgOp op,
                          unsigned vectorBits, const ImplicitPad *pad);

/// Whether kiln-vectorize-pool vectorizes `op` (an NCHW max or sum pool).
bool isVectorizedPool(mlir::linalg::LinalgOp op);

/// Emits `op` (a max or sum pool that kiln-vectorize-pool takes, on
/// memrefs) in its place, reading the image `pad` describes.
void emitPaddedPool(mlir::linalg::LinalgOp op, unsigned vectorBits, const ImplicitPad &pad);

/// Register tiles of packed convolutions (VectorizePackedConv.cpp).
void populatePackedConvPatterns(mlir::RewritePatternSet &patterns, unsigned vectorBits);

/// Whether `op` (a packed convolution on memrefs) gets its register tile
/// at `vectorBits`; then emits it and its epilogue in their place, with
/// `pad` reading the image `pad` describes (tiles at its border test each
/// element, the others read it directly).
bool takesPackedConv(mlir::linalg::LinalgOp op, unsigned vectorBits);
void emitPackedConvRegisterTile(mlir::RewriterBase &rewriter, mlir::linalg::LinalgOp op,
                                unsigned vectorBits, const ImplicitPad *pad);

/// Emits `op` (a channels-last depthwise convolution that
/// isChannelsLastDepthwise takes, on memrefs) and its epilogue in their
/// place; with `pad`, reading the image `pad` describes (its offsets:
/// image, row, channel; no padRow: rows outside it are skipped).
void emitChannelsLastDepthwise(mlir::RewriterBase &rewriter, mlir::linalg::LinalgOp op,
                               unsigned vectorBits, const ImplicitPad *pad);

/// Register tiles of channels-last depthwise convolutions
/// (VectorizeDepthwiseNhwc.cpp).
void populateChannelsLastDepthwisePatterns(mlir::RewritePatternSet &patterns,
                                           unsigned vectorBits);

} // namespace kiln

#endif // KILN_LIB_LOWERING_LINALGTOCPU_CONVEPILOGUE_H

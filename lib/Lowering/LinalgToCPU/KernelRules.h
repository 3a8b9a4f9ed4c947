//===- KernelRules.h - what kiln-form-kernels asks of an op -----*- C++ -*-===//
//
// The questions kernel formation asks of a producer before it joins a
// kernel: which of its loops a tile slices, how much of a linear layer's
// weights every tile reads, whether a consumer reads it across its rows.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_LINALGTOCPU_KERNELRULES_H
#define KILN_LIB_LOWERING_LINALGTOCPU_KERNELRULES_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>

namespace kiln {

/// The loops of `op` that are tiled when the result `result` is sliced
/// along the result dimensions `dims`; empty optional if some dimension is
/// not one plain loop of the output map.
std::optional<llvm::SmallDenseSet<unsigned>>
loopsForResultDims(mlir::linalg::LinalgOp op, mlir::OpResult result,
                   const llvm::SmallDenseSet<unsigned> &dims);

/// The bytes of a row matmul's B when every tile of the rows reads all of
/// it (a linear layer's weights: B indexed by k and n alone), else 0.
int64_t sharedMatmulOperandBytes(mlir::Operation *op);

/// The bytes of a register-tiled convolution's filters when its tiles,
/// along `tiledLoops`, do not split the output channels (loop 1): every
/// tile (one image of a batch) then reads all of them. Else 0.
int64_t sharedFilterBytes(mlir::Operation *op, const llvm::SmallDenseSet<unsigned> &tiledLoops);

/// An elementwise `consumer` whose innermost loop walks another dimension
/// of `operand` than its last (contiguous) one.
bool readsAcrossRows(mlir::linalg::LinalgOp consumer, mlir::OpOperand &operand);

/// A register-tiled product (a row matmul or a convolution) or a pooling,
/// or an elementwise op on one's result (its bias).
bool isProductOrEpilogue(mlir::linalg::LinalgOp op);

/// The tiling loops' order of a register-tiled depthwise convolution's
/// kernel rooted at `root` (the convolution, (n, oh, ow, c, ..), or its
/// 4-D epilogue, (n, c, h, w)); none for the root's own order.
///
/// On images of 56x56 and more: rows, then channels, (n, oh, c). The
/// pool hands each thread a contiguous share of the tiles, so its share is
/// then the top or bottom of every channel, as the 1x1 convolutions around
/// it split their pixel columns, and each thread reads what it wrote. By
/// channels, half of each thread's input came from the other core:
/// MobileNetV3's 16 -> 64 1x1 convolution at 112x112 and the stride-2
/// depthwise after it took 385 + 190 us on 2 Zen 2 cores (one thread: 319
/// + 180), 162 + 103 by rows; the model 6.55 -> 6.28 ms.
/// On smaller images: each channel's rows in turn, (n, c, oh), one plane
/// after another, a thread's next tile starting where its last ended. A
/// squeeze-excite block reads them by channels (its pooling and scaling):
/// by rows MobileNetV3's 14x14 and 7x7 depthwise kernels ran 1.5-2.5x
/// slower.
std::optional<llvm::SmallVector<int64_t>> depthwiseTileOrder(mlir::linalg::LinalgOp root);

/// The channels-last depthwise convolution (isChannelsLastDepthwise)
/// whose epilogue `op` is: a 4-D elementwise op reading its result where
/// it writes (a bias per channel). Null when it is none.
mlir::linalg::LinalgOp channelsLastDepthwiseEpilogue(mlir::linalg::LinalgOp op);

/// The channels per kernel tile of the channels-last depthwise convolution
/// that `root` is or is the epilogue of (its rows one per tile, each
/// whole; chooseChannelsLastDepthwiseBlock); 0 when there is none or no
/// vector width.
int64_t channelsLastDepthwiseBlock(mlir::linalg::LinalgOp root, unsigned vectorBits);

/// Whether the kernel of `root` and its `group` is split over the threads
/// however small (kiln.spread on its loop): `root` is marked so, or the
/// group holds a depthwise convolution of one image (a static batch of 1),
/// split in the order above as the 1x1 convolutions around it are.
/// MobileNetV3's 14x14 and 7x7 ones ran on one thread, reading the
/// channels the other core's half of the expansion wrote: the model at
/// batch 1 6.08 -> 5.93 ms split, on 2 Zen 2 vCPUs apart.
bool splitsLikeNeighbours(mlir::Operation *root, llvm::ArrayRef<mlir::Operation *> group);

} // namespace kiln

#endif // KILN_LIB_LOWERING_LINALGTOCPU_KERNELRULES_H

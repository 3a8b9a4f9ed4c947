//===- KernelGroup.h - a kernel's ops, grown from its root ------*- C++ -*-===//
//
// What kiln-form-kernels fuses into one tile: a root and the producers
// whose slices shrink with its tiling (FormKernels.cpp decides the tiles).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_LINALGTOCPU_KERNELGROUP_H
#define KILN_LIB_LOWERING_LINALGTOCPU_KERNELGROUP_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <optional>

namespace kiln {

/// A root linalg op and the producers that join its tiles.
class KernelGroup {
public:
  KernelGroup(mlir::linalg::LinalgOp root, mlir::Block *block, int64_t maxSharedBytes)
      : root(root), block(block), maxSharedBytes(maxSharedBytes) {}

  /// Tiles of `width` (a whole number of packed panels) along the loops
  /// that read a prepacked B through (n floordiv P, k, n mod P): its
  /// producer, the run-time pack, then joins with a slice of whole panels
  /// of at most `maxBytes` (a stack temporary per tile).
  void allowPanelSlices(int64_t width, int64_t maxBytes) {
    panelWidth = width;
    maxPanelBytes = maxBytes;
  }

  /// The root's tiled loops: its parallel loops but the innermost (which
  /// the tile keeps whole, so a row is computed by one iteration). Whether a
  /// producer can follow the tile is decided per producer in grow().
  mlir::SmallVector<unsigned> tiledLoops();

  /// Grows the group to a fixpoint: a mlir::linalg producer in the same block
  /// joins when all its users are members and its slice shrinks with the
  /// tile.
  void grow(const llvm::SmallDenseSet<unsigned> &rootLoops);

  /// The root's loop that tiles `op`'s loop `loop`, when it is one.
  std::optional<unsigned> rootLoop(mlir::Operation *op, unsigned loop) const;

  /// Keeps `op` out of the group (grow() again after).
  void exclude(mlir::Operation *op);

  bool contains(mlir::Operation *op) const { return members.contains(op); }
  size_t size() const { return members.size(); }
  mlir::ArrayRef<mlir::Operation *> ops() const { return members.getArrayRef(); }

private:
  /// The loops of the producer of `operand` that the consumer's tiling
  /// slices; none when some tiled consumer loop is missing from the
  /// operand's map or appears other than as a plain dimension.
  std::optional<llvm::SmallDenseSet<unsigned>> producerLoops(mlir::linalg::LinalgOp consumer,
                                                             mlir::OpOperand &operand);

  /// Whether `e` is `loop floordiv P` (true) or `loop mod P` (false) for a
  /// P dividing the panel tiles' width; none otherwise.
  std::optional<bool> panelIndex(mlir::AffineExpr e, unsigned loop) const;

  /// Records which root loop tiles each tiled loop of the producer of
  /// `operand` (read by `consumer`): through the dimension of the
  /// operand the consumer's loop indexes, and the producer's loop that
  /// writes that dimension.
  void traceRootLoops(mlir::linalg::LinalgOp consumer, mlir::OpOperand &operand);

  mlir::linalg::LinalgOp root;
  mlir::Block *block;
  int64_t maxSharedBytes; // of B operands every tile reads whole
  int64_t panelWidth = 0, maxPanelBytes = 0;
  int64_t sharedBytes = 0;
  llvm::SetVector<mlir::Operation *> members;
  llvm::SmallPtrSet<mlir::Operation *, 2> excluded;
  llvm::DenseMap<mlir::Operation *, llvm::SmallDenseSet<unsigned>> tiled;
  llvm::DenseMap<mlir::Operation *, llvm::DenseMap<unsigned, unsigned>> rootLoopOf;
};

} // namespace kiln

#endif // KILN_LIB_LOWERING_LINALGTOCPU_KERNELGROUP_H

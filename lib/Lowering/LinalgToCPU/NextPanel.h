//===- NextPanel.h - prefetching a matmul's next weight panels --*- C++ -*-===//
//
// A column tile of a linear layer reads its slice of the weights, packed
// at compile time as [N/16, K, 16] panels. Its first row block reads them
// from memory (DRAM, in a model whose weights the cache does not hold) as
// fast as the FMAs consume them, stalled, and the blocks after it from
// L2. So kiln-vectorize-matmul has the tile's blocks request the next
// tile's panels while they compute (the pool gives each thread a
// contiguous run of tiles): `memref.prefetch` to L2, a line every few k
// steps, spread over all of the tile's blocks. On 2 SPR cores: twelve 768
// -> 3072 -> 768 layers at 128 rows 56.5 -> 53.0 ms, GPT-2 at batch 1
// 97.3 -> 91.2, BERT-base 93.8 -> 88.9, ViT-B/16 147.7 -> 143.1; one such
// layer (weights in L3) and batch 8 the same.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_LINALGTOCPU_NEXTPANEL_H
#define KILN_LIB_LOWERING_LINALGTOCPU_NEXTPANEL_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace kiln {

/// The panels after a tile's slice B = [P, K, VW] of packed weights.
struct NextPanel {
  mlir::Value source;                    // the packed weights
  mlir::Value after;                     // the panel after the tile's last
  llvm::SmallVector<mlir::Value> inner;  // a line's indices after k
  int64_t panels = 0, last = 0;          // P; the weights' last panel
  int64_t chunks = 1, chunk = 1;         // column chunks per tile, their width
  int64_t spread = 1;                    // k steps per prefetched line

  /// Which lines the block of rows from `r0` (blocks of `blockRows`) and
  /// columns from `n0` requests: block q (row block, then chunk) takes
  /// panel q / spread, from its line (q % spread) * K / spread, while
  /// `mine` (the blocks past P * spread take none).
  struct Share {
    mlir::Value panel, firstLine, mine;
  };
  Share shareOf(mlir::OpBuilder &b, mlir::Location loc, mlir::Value r0, int64_t blockRows,
                mlir::Value n0, mlir::Value kSize) const;

  /// A prefetch of the share's line for reduction step `k`.
  void prefetch(mlir::OpBuilder &b, mlir::Location loc, const Share &share, mlir::Value k) const;
};

/// The next panels of `op`'s B (operand 1) when it is a slice [P, K, VW]
/// of a larger packed buffer that is a view (the weights, or a buffer in
/// the arena: packed at compile time or by an earlier kernel) or a global;
/// not a stack temporary, which a tile packs for itself. `blocks` register
/// blocks per tile share the lines. Built at the builder's insertion
/// point.
std::optional<NextPanel> findNextPanel(mlir::OpBuilder &b, mlir::Location loc,
                                       mlir::linalg::LinalgOp op, int64_t blocks, int64_t chunk,
                                       int64_t columns);

} // namespace kiln

#endif // KILN_LIB_LOWERING_LINALGTOCPU_NEXTPANEL_H

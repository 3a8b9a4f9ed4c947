//===- MatmulTiles.h - register tiles of CPU matmuls ------------*- C++ -*-===//
//
// A matmul whose right operand is a row-major [K, N] matrix (a linear
// layer's weights) computes a block of rows times a run of columns in
// vector registers: per k step, one load per column vector and one
// broadcast per row feed rows x vectors FMAs (kiln-vectorize-matmul). Kernel
// formation tiles the rows by the same block (kiln-form-kernels).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_MATMULTILES_H
#define KILN_LOWERING_MATMULTILES_H

#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <cstdint>
#include <optional>

namespace mlir {
class Block;
class Operation;
} // namespace mlir

namespace kiln {

/// The loops of a row matmul C(..b.., ..m.., n) += A(..b.., ..m.., k) *
/// B(..b.., k, n): static f32 operands, B indexed by its batch loops (if
/// any: attention's probabilities times values; or loops of B and C alone,
/// a 1x1 convolution's images) then exactly (k, n), C's last index n.
/// `outer` are C's other loops but the innermost m loop, `rows` (the
/// register tile's rows).
struct RowMatmul {
  llvm::SmallVector<unsigned> outer;
  unsigned rows = 0, n = 0, k = 0;
  // B prepacked by kiln-pack-matmul-weights: [N/packed, K, packed], read
  // at (n floordiv packed, k, n mod packed), a vector's columns each k
  // step next to the next k's. 0: B is (.., k, n) as it is.
  int64_t packed = 0;
  // A prepacked by rows (kiln-pack-matmul-weights, with B packed): [M/R,
  // K, R] read at (m floordiv R, k, m mod R), R = packedRows, a block's
  // rows side by side at each k. 0: A as it is.
  int64_t packedRows = 0;
  // 8-bit operands (A's bytes unsigned, B's signed) summed in i32: B
  // packed as [N/packed, K/G, packed, G], read at (n floordiv packed, k
  // floordiv G, n mod packed, k mod G), each column's G consecutive k
  // side by side. G = `group`: 4 for AVX512-VNNI's vpdpbusd (a 32-bit
  // lane's 4 bytes; AVX2's saturating vpmaddubsw too), 2 for AVX2's
  // vpmaddwd (widened to a lane's two i16).
  // Matched only packed.
  bool int8 = false;
  int64_t group = 0;
};

/// The k groups of the 8-bit tiles' packed B: 4 (vpdpbusd), 2 (vpmaddwd).
inline bool isInt8Group(int64_t g) { return g == 4 || g == 2; }
/// The k group of B packed for `vectorBits`: vpdpbusd's 4 on AVX-512
/// (with VNNI), vpmaddwd's 2 on AVX2; with `saturate` (--int8-arith=
/// saturate) 4 on AVX2 too, for vpmaddubsw (two products a 16-bit lane,
/// saturated) then vpmaddwd by ones.
inline int64_t int8Group(unsigned vectorBits, bool saturate = false) {
  return vectorBits >= 512 || saturate ? 4 : 2;
}
std::optional<RowMatmul> matchRowMatmul(mlir::Operation *op);

/// The reduction length of row matmul `op` as chooseMatmulRegisterTile
/// takes it: K when static and f32, 0 for 8-bit products and a K known at
/// run time (the tile then does not depend on it).
int64_t registerTileDepth(mlir::Operation *op, const RowMatmul &mm);

/// A vector-matrix product out(n) += x(k) * B(k, n) of f32 operands (a
/// classifier at batch 1, its unit row folded away), on tensors or
/// buffers: its loops, and B's panel width where kiln-pack-matmul-weights
/// packed it to (n floordiv packed, k, n mod packed) (0: B as it is).
/// kiln-vectorize-matmul takes it as a one-row matmul. With `int8`, an
/// 8-bit product (isU8S8ProductBody) whose B kiln-pack-matmul-weights
/// packed for vpdpbusd or vpmaddwd: (n floordiv packed, k floordiv G, n
/// mod packed, k mod G), G = `group`.
struct Vecmat {
  unsigned n = 0, k = 0;
  int64_t packed = 0;
  bool int8 = false;
  int64_t group = 0;
};
std::optional<Vecmat> matchVecmat(mlir::Operation *op);

/// A linalg body `out + zext(a) * sext(b)` of i8 operands into i32
/// (kiln.matmul_integer's).
bool isU8S8ProductBody(mlir::Block &body);

/// The most bytes of B's packed panels a column tile of kernel formation
/// packs for itself (a stack temporary within kiln-stack-temporaries' 64
/// KiB): a B packed at run time (a 1x1 convolution's image) then goes
/// through memory once instead of three times. kiln-pack-matmul-weights
/// packs images for column tiles only where two vectors' panel fits.
constexpr int64_t kMaxTilePanelBytes = 64 * 1024;

struct MatmulRegisterTile {
  int64_t rows = 1;    // rows of C per block
  int64_t width = 1;   // lanes per vector (a power of two)
  int64_t vectors = 1; // vectors of columns per row
};

/// Vectors as wide as N allows, up to four per row with AVX-512 and three
/// with AVX2 (eight for a single row, which needs the independent
/// accumulators to hide FMA latency), and as many rows as keep the
/// accumulators within 16 registers (12 on AVX2, of its 16). AVX2's 4x3
/// (not 3x4) keeps a power-of-two row block, which kernel formation tiles
/// by (3 rows made it tile by 2: 2x4, B's loaded row feeding 2 FMAs, not
/// 4); on a Zen 3 core 64x1024x1024 went 4.7 -> 2.8 ms, 512x256x1024
/// 9.9 -> 5.4 ms.
/// With AVX-512 and a reduction `K` (f32; 0: not known) past
/// kMaxL1DepthFourVectors, two vectors and 8 rows: four vectors' columns
/// of B over such a K pass L1 (K x 256 bytes), so every row block reads
/// them from L2, 4 lines a k step against 2 FMA pipes; 8 x 2 halves that.
/// On 2 SPR cores: twelve 1024 -> 256 -> 1024 1x1 convolution pairs at
/// 14x14 10.5 -> 9.7 ms; GPT-2, BERT-base, ViT-B/16 at batch 1 1.5-2.5%
/// faster. Short reductions (MobileNetV3's 1x1 convolutions of 16-120
/// channels) kept 4 x 4: 1% slower at 8 x 2.
constexpr int64_t kMaxL1DepthFourVectors = 128;
/// With `amx` (an 8-bit product on AMX tiles, 7 rows or more): blocks
/// of 32 rows x 32 columns, 16 rows x two column tiles at a time on the
/// tile unit (AmxMatmul.h).
constexpr int64_t kAmxBlockRows = 32, kAmxMinRows = 7;
inline MatmulRegisterTile chooseMatmulRegisterTile(int64_t rows, int64_t N, unsigned vectorBits,
                                                   int64_t K = 0, bool amx = false) {
  MatmulRegisterTile t;
  if (amx && vectorBits >= 512 && rows >= kAmxMinRows) {
    t.width = 16;
    t.vectors = std::min<int64_t>((N + 15) / 16, 2);
    t.rows = std::min(rows, kAmxBlockRows);
    return t;
  }
  int64_t lanes = std::max<int64_t>(vectorBits / 32, 1);
  while (t.width < lanes && t.width < N)
    t.width *= 2;
  int64_t budget = vectorBits >= 512 ? 16 : 12;
  int64_t columns = (N + t.width - 1) / t.width;
  int64_t wide = vectorBits >= 512 ? (K > kMaxL1DepthFourVectors ? 2 : 4) : 3;
  t.vectors = std::min<int64_t>(columns, rows == 1 ? 8 : wide);
  t.rows = std::max<int64_t>(1, std::min<int64_t>({budget / t.vectors, 8, rows}));
  return t;
}

/// AVX2's 8-bit tiles hold a product before its add beside their
/// accumulators, and vpmaddwd's two B vectors a column vector (a pair
/// each) or vpmaddubsw's vector of ones: 4 x 2 accumulators fit the 16
/// registers (4 x 3 spilled), one row 4 vectors. Kernel formation sizes
/// column panels by the same blocks.
inline void fitInt8Tile(MatmulRegisterTile &t, bool int8, unsigned vectorBits) {
  if (int8 && vectorBits == 256)
    t.vectors = std::min<int64_t>(t.vectors, t.rows == 1 ? 4 : 2);
}

/// Rows per block for the last chunk of N columns when it holds fewer
/// vectors than the tile (the 8 columns after 24 of a 32-column panel, on
/// AVX2): as many accumulators as the full tile's, up to 16 rows. In the
/// tile's rows, 4 accumulators against 2 FMA pipes of 5 cycles ran that
/// chunk at half speed. t.rows when the last chunk is whole.
inline int64_t matmulTailRows(const MatmulRegisterTile &t, int64_t N) {
  int64_t chunk = t.width * t.vectors, tail = N - (N - 1) / chunk * chunk;
  int64_t tailVectors = (tail + t.width - 1) / t.width;
  if (tailVectors >= t.vectors)
    return t.rows;
  return std::max<int64_t>(t.rows, std::min<int64_t>(t.rows * t.vectors / tailVectors, 16));
}

} // namespace kiln

#endif // KILN_LOWERING_MATMULTILES_H

//===- WarpgroupKernel.h - the parts of a wgmma matmul kernel ----*- C++ -*-===//
//
// What the two main loops of Hopper's matmul kernel share
// (WarpgroupMatmul.cpp: every thread loads and multiplies, a barrier per k
// step; WarpgroupSpecialized.cpp: a warpgroup loads, two multiply, mbarriers
// between them): the swizzled shared-memory stages, the copies of a tile
// into them, and one k step of wgmma on a stage.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_LINALGTOGPU_WARPGROUPKERNEL_H
#define KILN_LIB_LOWERING_LINALGTOGPU_WARPGROUPKERNEL_H

#include "TensorCorePlan.h"

#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Builders.h"

namespace kiln {

/// The driver's CUtensorMapDataType and CUtensorMapSwizzle values (cuda.h)
/// for the tensor maps of TMA kernels.
constexpr int64_t kTensorMapF16 = 6, kTensorMapF32 = 7, kTensorMapBF16 = 9;
constexpr int64_t kTensorMapSwizzle128B = 3;

struct WarpgroupKernel {
  WarpgroupKernel(mlir::OpBuilder &b, mlir::Location loc, const Plan &p) : b(b), loc(loc), p(p) {}

  mlir::OpBuilder &b;
  mlir::Location loc;
  const Plan &p;
  int64_t S = 0, BK = 0, vec = 0, KT = 0; // stages, k per tile, elements per 16 bytes, k tiles
  int64_t bBytes = 0;                     // one stage of B
  // C and B per batch index (block z); A too, except for a pointwise
  // convolution's weights.
  bool batched = false, batchedA = false, tf32 = false;
  // B stays N-major in shared memory (128-byte rows of n per k, copied as
  // A is): 16-bit data, and f32 in the specialized kernel, whose products
  // are transposed instead (C^T = B^T A^T, B^T's fragments from registers).
  bool nMajorB = false;
  mlir::Value base;            // the first stage's shared address (1024-aligned)
  mlir::Value smA, smB;        // [stage, m, k]; B [stage, n/64, k, 64] or [stage, n, k]
  mlir::Value A, B;            // [batch,] m, k / k, n
  mlir::Value bn, bm, bb;      // block ids
  // TMA tensor maps of A and B (device addresses, i64 kernel arguments),
  // when one thread of the loading warpgroup copies each tile with
  // cp.async.bulk.tensor (loads=tma); null for the cp.async copies.
  mlir::Value mapA, mapB;
  bool tma() const { return mapA != nullptr; }
  // Blocks a cluster (TMA): 2 along M share B's tiles, each copying half
  // of each into both blocks' stages (Plan::cluster).
  int64_t cluster = 1;
  mlir::Type accType;          // the m64 x tileN f32 accumulators of a warpgroup

  /// Bytes of one stage of A: 128 rows of 128 bytes.
  static constexpr int64_t kTileBytes = 128 * 128;
  /// Matrix-descriptor fields above the start address (PTX "matrix
  /// descriptor"): bits 16-29 leading-dimension byte offset >> 4, 32-45
  /// stride-dimension byte offset >> 4, 62-63 the swizzle (1: 128 bytes).
  /// K-major: 8-row groups 1024 bytes apart (the leading offset unused).
  static constexpr uint64_t kDescKMajor = (1ull << 16) | (64ull << 32) | (1ull << 62);
  /// 16-bit N-major B: 64-wide column blocks 8192 bytes apart (leading),
  /// 8-row groups of k 1024 bytes apart (stride).
  static constexpr uint64_t kDescNMajor = (512ull << 16) | (64ull << 32) | (1ull << 62);
  /// The 64-bit descriptor of the tile at shared address `addr`.
  mlir::Value descriptor(uint64_t fields, mlir::Value addr);
  /// The stages end here (the specialized kernel's mbarriers follow).
  int64_t stageBytes() const { return S * (kTileBytes + bBytes); }

  /// Whether (`row`, `col`) of C lies inside it when the tiles overhang
  /// M or N; null when they do not (every element is inside).
  mlir::Value insideC(mlir::Value row, mlir::Value col);
  mlir::Value apply(mlir::AffineExpr e, mlir::ValueRange operands);
  mlir::Value cst(int64_t v);

  /// Tile `t`'s A (and for 16-bit data B) into stage `slot` by 16-byte
  /// cp.async copies, `threads` threads sharing them by `thread` (0..):
  /// the copies' tokens.
  llvm::SmallVector<mlir::Value> copyTiles(mlir::Value t, mlir::Value slot, mlir::Value thread,
                                           int64_t threads);
  /// f32 B goes K-major: 4x4 blocks of tile `t` into registers, then their
  /// columns into stage `slot` as k chunks (256 threads).
  llvm::SmallVector<mlir::Value> loadB(mlir::Value t, mlir::Value thread);
  void storeB(llvm::ArrayRef<mlir::Value> rows, mlir::Value slot, mlir::Value thread);
  /// One k tile of products on stage `slot` for warpgroup `warpgroup` (its
  /// 64 rows): wgmma.fence, the wgmmas, commit; the new accumulators.
  mlir::Value multiply(mlir::Value acc, mlir::Value slot, mlir::Value warpgroup);
};

/// The specialized main loop (WarpgroupSpecialized.cpp): on return `b` is
/// inside the multiplying warpgroups' branch, the accumulators complete
/// (one m64 x tileN struct; f32: tileN/128 transposed m64n128 ones);
/// `thread` is the thread's index among those 256.
llvm::SmallVector<mlir::Value> emitSpecializedLoop(WarpgroupKernel &k, mlir::Value tid,
                                                   mlir::Value &thread);
/// f32's transposed accumulators into C (plus C's old value unless
/// `zeroInit`), one element per store.
void storeTransposed(WarpgroupKernel &k, llvm::ArrayRef<mlir::Value> accs, mlir::Value thread,
                     mlir::Value C, bool zeroInit);

} // namespace kiln

#endif // KILN_LIB_LOWERING_LINALGTOGPU_WARPGROUPKERNEL_H

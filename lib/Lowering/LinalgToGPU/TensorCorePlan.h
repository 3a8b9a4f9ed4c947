//===- TensorCorePlan.h - a tensor-core matmul's shape and tiles -*- C++ -*-===//
//
// What TensorCoreMatmul.cpp emits from: the matmul's form and sizes, the
// element types, and the block/warp tiles and pipeline depth chosen for it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_LINALGTOGPU_TENSORCOREPLAN_H
#define KILN_LIB_LOWERING_LINALGTOGPU_TENSORCOREPLAN_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/IRMapping.h"
#include "kiln/Lowering/GpuTuning.h"

#include <optional>

namespace kiln {

inline constexpr int64_t kMmaM = 16, kMmaN = 8;

/// One matmul's shape and the kernel's tiling of it.
struct Plan {
  enum Form { Plain, Batched, SharedB, Conv } form = Plain;
  int64_t batch = 1, M = 0, N = 0, K = 0;
  // Conv (implicit GEMM per image): M = F, N = OH*OW, K = C*KH*KW.
  int64_t kh = 0, kw = 0, ow = 0, strideH = 1, strideW = 1, dilH = 1, dilW = 1;
  int64_t tileM = 0, tileN = 0, warpM = 0, warpN = 0;
  int64_t stages = 2; // shared-memory tiles in flight (cp.async ring)
  int64_t kTile = 0;  // mma.sync's k step when not the default (GpuTuning::mma)
  // f32 (tf32 mma.sync m16n8k8), f16 or bf16 (m16n8k16, f32 accumulators).
  mlir::Type elt;
  // C's type: elt, or f32 for 16-bit operands whose products the body
  // widens (Kiln's own lowering of a 16-bit MatMul accumulates in f32).
  mlir::Type cElt;
  // Hopper (sm_90a): two warpgroups issue wgmma on 128x128 tiles whose
  // operands stay in shared memory (WarpgroupMatmul.cpp); `specialized`:
  // a third warpgroup only loads the tiles (WarpgroupSpecialized.cpp).
  // `tma`: that warpgroup's tiles come by TMA (cp.async.bulk.tensor, one
  // thread), not 16-byte cp.async (GpuTuning::loads tma).
  bool warpgroups = false, specialized = false, tma = false;
  // TMA: blocks in clusters of 2 along M (GpuTuning::cluster), the pair
  // sharing B's tile: each loads half of it into both (multicast), so B
  // crosses from L2 once for two blocks.
  int64_t cluster = 1;
  // The specialized f32 kernel waits for each k tile's wgmmas before the
  // next (GpuTuning::tf32Drain, to measure against one tile in flight).
  bool tf32Drain = false;
  // Sizes known only at run time (attention over a dynamic sequence):
  // M, N, K and batch above are their largest, which the tiles are chosen
  // for; the kernel reads the run's from its buffers, masks M, N and K's
  // tails, and gathers a row whose stride is a run-time size element by
  // element (its 16-byte alignment unknown).
  bool dynM = false, dynN = false, dynK = false, dynBatch = false;
  bool dynamic() const { return dynM || dynN || dynK || dynBatch; }
  int64_t threads() const {
    return warpgroups ? (specialized ? 384 : 256) : 32 * (tileM / warpM) * (tileN / warpN);
  }
  /// The threads that sweep the block's tile of C in an epilogue (a
  /// specialized kernel's loading warpgroup takes no part).
  int64_t tileThreads() const { return warpgroups ? 256 : threads(); }
  bool halves() const { return !elt.isF32(); }
  /// C is 16-bit: the f32 accumulators are narrowed into it.
  bool narrows() const { return halves() && !cElt.isF32(); }
  /// The tiles overhang M or N (a 7x7 image's 49 pixels in 64-wide tiles):
  /// what lies past reads as zeros, and only what lies inside is stored.
  bool raggedM() const { return tileM && (dynM || M % tileM); }
  bool raggedN() const { return tileN && (dynN || N % tileN); }
  /// The accumulators live in an f32 shared-memory tile, not in C (whose
  /// elements are narrowed or bounds-checked from there).
  bool staged() const { return narrows() || raggedM() || raggedN() || dynamic(); }
  /// One mma's k, the k of a block's tiles per step, elements per 16 bytes.
  int64_t mmaK() const { return halves() ? 16 : 8; }
  int64_t tileK() const {
    if (warpgroups) // one 128-byte (swizzle-wide) row of A per k step
      return halves() ? 64 : 32;
    if (kTile)
      return kTile;
    return halves() ? 32 : 16;
  }
  int64_t vec() const { return halves() ? 8 : 4; }
  /// The k the main loop runs to: K, or for a convolution K rounded up to
  /// whole k steps (a 3-channel stem's 27), its tail read as zeros.
  int64_t loopK() const {
    return form == Conv ? (K + tileK() - 1) / tileK() * tileK() : K;
  }
  /// A's rows are read element by element (not in 16-byte pieces): a
  /// convolution whose K is no whole number of k steps.
  bool gatheredA() const { return loopK() != K || dynK; }
  /// B's rows are read element by element: their stride (N) is a run-time
  /// size.
  bool gatheredB() const { return dynN; }
};

/// True when `op`'s body is `out + a * b` on floats, in either operand
/// order, or `out + extf(a) * extf(b)` (16-bit operands, f32 out).
bool isMulAdd(mlir::linalg::LinalgOp op);

/// The loops of a matmul with `loops` loops (at least 3) named as the
/// tensor-core kernels read them: (lead..., m, n, k).
struct MatmulLoops {
  MatmulLoops(mlir::MLIRContext *ctx, unsigned loops);
  /// The map to `front` then x, y (A's (lead, m, k), a shared B's (k, n)).
  mlir::AffineMap with(llvm::ArrayRef<mlir::AffineExpr> front, mlir::AffineExpr x,
                       mlir::AffineExpr y) const;
  mlir::MLIRContext *ctx;
  unsigned loops;
  llvm::SmallVector<mlir::AffineExpr> lead;
  mlir::AffineExpr m, n, k;
};

/// The plan for `op` when it is a matmul (or convolution) the
/// tensor-core kernel handles. `tuning.mma` changes its k step and depth,
/// never whether it qualifies.
std::optional<Plan> planMatmul(mlir::linalg::LinalgOp op, const GpuTuning &tuning = {});

/// The plan for a matmul (or batched one) whose M, N, K or batch are
/// run-time sizes, each with a largest (the inputs' declared maxima,
/// `inputMax`): mma.sync tiles of up to 64x64 chosen for the largest.
std::optional<Plan> planDynamicMatmul(mlir::linalg::LinalgOp op, mlir::ArrayAttr inputMax,
                                      const GpuTuning &tuning = {});

/// The plan for `op` on Hopper's warpgroup MMA: a (batched) matmul, or a
/// 1x1 stride-1 convolution (a matmul per image, the weights shared),
/// whose M and N are multiples of 128 (or overhang their tiles by at most
/// a third) and K whole 16-byte pieces.
std::optional<Plan> planWarpgroupMatmul(mlir::linalg::LinalgOp op, const GpuTuning &tuning);

class KernelFactory;

/// `v` (identity layout) with its leading dimensions folded into one so
/// that `keep` remain: [lead..., x, y] as [L, x, y] (keep 3) or [L * x, y]
/// (keep 2); a view of the same bytes.
mlir::Value foldLeading(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v, unsigned keep);

/// The epilogue chain's ops in turn at one element of C (its indices `ivs`
/// in C's shape): each element's values flow only through that element.
void emitEpilogueAt(mlir::OpBuilder &b, mlir::Location loc,
                    llvm::ArrayRef<mlir::linalg::GenericOp> epilogue,
                    llvm::ArrayRef<int64_t> cShape, llvm::ArrayRef<mlir::Value> ivs,
                    mlir::IRMapping &map);

/// `op` (planned by planWarpgroupMatmul) as a kernel of two warpgroups
/// issuing wgmma (WarpgroupMatmul.cpp); the arguments and result are
/// outlineTensorCoreMatmul's.
mlir::FailureOr<bool> outlineWarpgroupMatmul(KernelFactory &kernels, mlir::func::FuncOp fn,
                                             mlir::linalg::LinalgOp op, const Plan &p,
                                             bool zeroInit,
                                             llvm::ArrayRef<mlir::linalg::GenericOp> epilogue);

/// A device function (TileFunctions.cpp) of the kernel's module called
/// from the kernel (its scalar code out of reach of the vector-to-nvgpu
/// conversion) that loops over the block's tile of C, calling `body` per
/// element with its indices in C (shape `cShape`) and its row and column
/// in the tile. The captures
/// of `fused` (with their recomputed ops) are passed in after the ids
/// (thread, block x, y, z) and the `extra` values.
void emitTileFunction(
    KernelFactory &kernels, mlir::OpBuilder &b, mlir::Location loc, llvm::StringRef name,
    const Plan &p, llvm::ArrayRef<int64_t> cShape, mlir::ValueRange ids, mlir::ValueRange extra,
    llvm::ArrayRef<mlir::Operation *> fused, mlir::IRMapping &map,
    llvm::function_ref<void(mlir::OpBuilder &, llvm::ArrayRef<mlir::Value> ivs, mlir::Value row,
                            mlir::Value col, mlir::ValueRange extra, mlir::IRMapping &)>
        body);

/// A device function storing the block's f32 `tile` (shared memory) into
/// C (`c`: [batch, M, N] or [M, N], sizes known at run time, `rows` and
/// `cols` the run's M and N), narrowed to C's type, only what lies inside;
/// with `load`, the other way (C widened into the tile).
void emitRunTileCopy(KernelFactory &kernels, mlir::OpBuilder &b, mlir::Location loc,
                     llvm::StringRef name, const Plan &p, mlir::ValueRange ids, mlir::Value tile,
                     mlir::Value c, mlir::Value rows, mlir::Value cols, bool load);

} // namespace kiln

#endif // KILN_LIB_LOWERING_LINALGTOGPU_TENSORCOREPLAN_H

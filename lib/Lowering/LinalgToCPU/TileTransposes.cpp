//===- TileTransposes.cpp - kiln-tile-transposes ---------------------------===//
//
// linalg.transpose ins(%x : memref<2048x2048xf32>) outs(%y) permutation = [1, 0]
//   =>
// scf.parallel (%i, %j) = (0, 0) to (2048, 2048) step (32, 32) {
//   linalg.transpose ins(subview %x[%j, %i] [32, 32]) outs(subview %y[%i, %j] [32, 32])
// }
//
// A loop nest along y's rows reads x down a column: each element of a row
// from another cache line, 8 KiB apart, and another 4 KiB page, so at
// these sizes nearly every element is a TLB miss (2048^2 f32 took 72 ms
// on 2 cores, 0.5 GB/s). In 32x32 tiles both sides of a tile sit in L1
// (4 KiB each, 32 lines and pages), so the strided reads hit what the
// tile's first column brought in. The tiles are the op's outer parallel
// loop, which kiln-outline-kernels splits over the thread pool; the
// other loops are tiled by 1 (the tile's loop nest stays 2-D). Slices
// that fit in L1 as they are stay untiled.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace kiln {
#define GEN_PASS_DEF_KILNTILETRANSPOSES
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

constexpr int64_t kTile = 32, kL1Bytes = 48 * 1024;
// Runs of at most this many bytes are moved in tiles of kRunTile x kRunTile.
constexpr int64_t kRunBytes = 256, kRunTile = 8;

/// The widest element `op` reads or writes, in bytes.
int64_t elementBytes(linalg::LinalgOp op) {
  int64_t bytes = 1;
  for (Value v : op->getOperands())
    if (auto t = dyn_cast<MemRefType>(v.getType()))
      bytes = std::max<int64_t>(bytes, (t.getElementTypeBitWidth() + 7) / 8);
  return bytes;
}

/// The loop along which some input of `op` is contiguous while the op's
/// innermost loop strides through it; nullopt when there is none (or `op`
/// is no elementwise op on buffers writing along its innermost loop).
std::optional<unsigned> acrossLoop(linalg::LinalgOp op) {
  unsigned loops = op.getNumLoops();
  if (!op.hasPureBufferSemantics() || loops < 2 || op.getNumParallelLoops() != loops ||
      op.getNumDpsInits() != 1)
    return std::nullopt;
  unsigned inner = loops - 1;
  auto innermostDim = [](AffineMap m) -> std::optional<unsigned> {
    if (m.getNumResults() == 0)
      return std::nullopt;
    if (auto d = dyn_cast<AffineDimExpr>(m.getResults().back()))
      return d.getPosition();
    return std::nullopt;
  };
  OpOperand *init = op.getDpsInitOperand(0);
  if (innermostDim(op.getMatchingIndexingMap(init)) != inner)
    return std::nullopt;
  for (OpOperand *in : op.getDpsInputOperands()) {
    AffineMap m = op.getMatchingIndexingMap(in);
    if (!isa<MemRefType>(in->get().getType()) || !m.isProjectedPermutation())
      continue;
    std::optional<unsigned> d = innermostDim(m);
    if (d && *d != inner && m.isFunctionOfDim(inner))
      return d;
  }
  return std::nullopt;
}

/// A transpose of short contiguous runs, x[K, P, R] -> y[P, K, R] with R
/// elements whole (a matmul's B packed into panels at run time: runs of
/// one vector): (the op's loop of y's next-to-last dimension, the loop of
/// x's), when the runs are short. Along y's rows, each run is read from
/// another row of x, a row of P runs apart, another page for each.
std::optional<std::pair<unsigned, unsigned>> acrossRuns(linalg::LinalgOp op) {
  unsigned loops = op.getNumLoops();
  if (!op.hasPureBufferSemantics() || loops < 3 || op.getNumParallelLoops() != loops ||
      op.getNumDpsInits() != 1 || op.getNumDpsInputs() != 1)
    return std::nullopt;
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  AffineMap in = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
  if (!out.isPermutation() || !in.isPermutation())
    return std::nullopt;
  unsigned n = out.getNumResults();
  auto dim = [](AffineMap m, unsigned i) { return cast<AffineDimExpr>(m.getResult(i)).getPosition(); };
  unsigned run = dim(out, n - 1);
  int64_t runBytes = op.getStaticLoopRanges()[run] * elementBytes(op);
  if (dim(in, n - 1) != run || dim(out, n - 2) == dim(in, n - 2) || ShapedType::isDynamic(runBytes) ||
      runBytes > kRunBytes)
    return std::nullopt;
  return std::make_pair(dim(out, n - 2), dim(in, n - 2));
}

struct KilnTileTransposesPass final : impl::KilnTileTransposesBase<KilnTileTransposesPass> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    // Only top-level ops: one inside a kernel's loops is a tile already.
    SmallVector<linalg::LinalgOp> ops;
    for (Operation &op : fn.getBody().getOps())
      if (auto l = dyn_cast<linalg::LinalgOp>(&op))
        ops.push_back(l);
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops) {
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      std::optional<unsigned> across = acrossLoop(op);
      if (auto runs = acrossRuns(op)) {
        // Each tile reads kRunTile rows of x, kRunTile runs each, and
        // writes as many rows of y (156 -> 99 us for a 3.2 MB [256, 196,
        // 16] on 2 cores). Whole tiles (divisors): the pool splits loops
        // of known trips only.
        auto divisor = [](int64_t n) {
          int64_t d = std::min(n, kRunTile);
          while (n % d)
            --d;
          return d;
        };
        SmallVector<int64_t> sizes(op.getNumLoops(), 1);
        sizes[runs->first] = divisor(ranges[runs->first]);
        sizes[runs->second] = divisor(ranges[runs->second]);
        sizes[op.getNumLoops() - 1] = 0;
        if (failed(tile(rewriter, op, sizes, op->hasAttr(kSpreadAttr))))
          return signalPassFailure();
        continue;
      }
      if (!across)
        continue;
      unsigned inner = op.getNumLoops() - 1;
      // A slice that fits in L1 (a head's 128x64 f32, 32 KiB) is read
      // faster whole, along rows four times as long ([32, 8, 128, 64]:
      // 0.4-0.6 ms whole, 0.7-1.1 ms tiled, over runs on a noisy VM); one
      // of 64 KiB already gains 2.4x tiled.
      if (ShapedType::isDynamic(ranges[inner]) || ShapedType::isDynamic(ranges[*across]) ||
          ranges[inner] < kTile || ranges[*across] < kTile ||
          ranges[inner] * ranges[*across] * elementBytes(op) <= kL1Bytes)
        continue;
      SmallVector<int64_t> sizes(op.getNumLoops(), 1);
      sizes[inner] = sizes[*across] = kTile;
      if (failed(tile(rewriter, op, sizes)))
        return signalPassFailure();
    }
  }

  /// `spread`: the loop keeps the op's kiln.spread mark (one image's
  /// panels, from kiln-pack-matmul-weights).
  LogicalResult tile(IRRewriter &rewriter, linalg::LinalgOp op, ArrayRef<int64_t> sizes,
                     bool spread = false) {
    linalg::LinalgTilingOptions options;
    options.setTileSizes(sizes).setLoopType(linalg::LinalgTilingLoopType::ParallelLoops);
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::TiledLinalgOp> tiled = linalg::tileLinalgOp(rewriter, op, options);
    if (failed(tiled))
      return op.emitError("kiln-tile-transposes: tiling failed");
    if (spread && !tiled->loops.empty())
      tiled->loops.front()->setAttr(kSpreadAttr, rewriter.getUnitAttr());
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace
} // namespace kiln

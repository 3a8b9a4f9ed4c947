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
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

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

/// A copy of its one input (linalg.transpose, or a generic yielding it).
bool isCopy(linalg::LinalgOp op) {
  Block *body = op.getBlock();
  if (!body || op.getNumDpsInputs() != 1 || !llvm::hasSingleElement(*body))
    return false;
  auto yield = dyn_cast<linalg::YieldOp>(body->getTerminator());
  return yield && yield->getNumOperands() == 1 && yield->getOperand(0) == body->getArgument(0);
}

/// Whether `v` is a memref whose innermost elements are adjacent.
bool unitInnerStride(Value v) {
  auto t = dyn_cast<MemRefType>(v.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  return t && t.getRank() > 0 && succeeded(t.getStridesAndOffset(strides, offset)) &&
         strides.back() == 1;
}

/// A transposing copy of f32 small enough for L1 whose two loops (the
/// output's innermost `inner`, the input's `across`) are multiples of 8,
/// as 8 x 8 blocks: 8 rows of the input loaded as vectors, transposed in
/// registers (one shuffle), stored as 8 rows of the output. Moved element
/// by element, an attention head's K^T (64 x 128 out of a [128, 2304]
/// projection) ran at 5 GB/s: GPT-2's 12 took 1.8 ms of a 166 ms run.
LogicalResult transposeInBlocks(IRRewriter &rewriter, linalg::LinalgOp op, unsigned inner,
                                unsigned across) {
  constexpr int64_t kBlock = 8;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  Value in = op.getDpsInputOperand(0)->get(), out = op.getDpsInitOperand(0)->get();
  AffineMap inMap = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (!isCopy(op) || !cast<MemRefType>(in.getType()).getElementType().isF32() ||
      !cast<MemRefType>(out.getType()).getElementType().isF32() || !inMap.isPermutation() ||
      !outMap.isPermutation() || !unitInnerStride(in) || !unitInnerStride(out) ||
      llvm::any_of(ranges, ShapedType::isDynamic) || ranges[inner] % kBlock ||
      ranges[across] % kBlock)
    return failure();
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(rewriter, loc, v).getResult(); };
  SmallVector<Value> lbs, ubs, steps;
  for (auto [l, n] : llvm::enumerate(ranges)) {
    lbs.push_back(c(0));
    ubs.push_back(c(n));
    steps.push_back(c(l == inner || l == across ? kBlock : 1));
  }
  auto loop = scf::ParallelOp::create(rewriter, loc, lbs, ubs, steps);
  OpBuilder b = OpBuilder::atBlockBegin(loop.getBody());
  SmallVector<Value> ivs(loop.getInductionVars());
  // Indices of `map`'s operand with loop `l` at `ivs[l] + k`.
  auto indices = [&](AffineMap map, unsigned l, int64_t k) {
    SmallVector<Value> idx;
    for (AffineExpr e : map.getResults()) {
      unsigned d = cast<AffineDimExpr>(e).getPosition();
      idx.push_back(d == l && k ? arith::AddIOp::create(b, loc, ivs[d],
                                                        arith::ConstantIndexOp::create(b, loc, k))
                                      .getResult()
                                : ivs[d]);
    }
    return idx;
  };
  auto rowType = VectorType::get({kBlock}, b.getF32Type());
  auto blockType = VectorType::get({kBlock, kBlock}, b.getF32Type());
  Value block = arith::ConstantOp::create(b, loc, blockType, b.getZeroAttr(blockType));
  for (int64_t k = 0; k < kBlock; ++k) // the input's rows: `inner` = k, `across` contiguous
    block = vector::InsertOp::create(
        b, loc, vector::LoadOp::create(b, loc, rowType, in, indices(inMap, inner, k)), block, k);
  Value t = vector::TransposeOp::create(b, loc, blockType, block, ArrayRef<int64_t>{1, 0});
  for (int64_t k = 0; k < kBlock; ++k) // the output's rows: `across` = k, `inner` contiguous
    vector::StoreOp::create(b, loc, vector::ExtractOp::create(b, loc, t, k), out,
                            indices(outMap, across, k));
  rewriter.eraseOp(op);
  return success();
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
    bool blocked = false; // some copy moved in 8x8 blocks
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
          ranges[inner] * ranges[*across] * elementBytes(op) <= kL1Bytes) {
        blocked |= succeeded(transposeInBlocks(rewriter, op, inner, *across));
        continue;
      }
      SmallVector<int64_t> sizes(op.getNumLoops(), 1);
      sizes[inner] = sizes[*across] = kTile;
      if (failed(tile(rewriter, op, sizes)))
        return signalPassFailure();
    }
    if (!blocked)
      return;
    // The blocks' transposes, one shuffle each.
    RewritePatternSet transposes(&getContext());
    vector::populateVectorTransposeLoweringPatterns(transposes,
                                                    vector::VectorTransposeLowering::Shuffle1D);
    if (failed(applyPatternsGreedily(fn, std::move(transposes))))
      return signalPassFailure();
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

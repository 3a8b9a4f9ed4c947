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
// that fit in L1 as they are stay untiled. Copies of f32 whose output rows
// are short enough move in 8x8 register blocks instead (transposeInBlocks).
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
// Transposing copies of f32 move in kBlock x kBlock blocks.
constexpr int64_t kBlock = 8;

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

/// One 8 x 8 block at `ivs` (steps of 8 along `inner` and `across`). With
/// counts, only `innerCount` x `acrossCount` of it is in bounds: rows past
/// the end are masked off whole (their indices clamped to the last row),
/// the rest masked to their count.
void emitBlock(OpBuilder &b, Location loc, Value in, Value out, AffineMap inMap, AffineMap outMap,
               ArrayRef<Value> ivs, unsigned inner, unsigned across, ArrayRef<int64_t> ranges,
               Value innerCount = {}, Value acrossCount = {}) {
  bool masked = bool(innerCount);
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  // Indices of `map`'s operand with loop `l` at `ivs[l] + k` (clamped when
  // masked).
  auto indices = [&](AffineMap map, unsigned l, int64_t k) {
    SmallVector<Value> idx;
    for (AffineExpr e : map.getResults()) {
      unsigned d = cast<AffineDimExpr>(e).getPosition();
      Value i = ivs[d];
      if (d == l && k) {
        i = arith::AddIOp::create(b, loc, i, c(k));
        if (masked)
          i = arith::MinSIOp::create(b, loc, i, c(ranges[l] - 1));
      }
      idx.push_back(i);
    }
    return idx;
  };
  auto rowType = VectorType::get({kBlock}, b.getF32Type());
  auto maskType = VectorType::get({kBlock}, b.getI1Type());
  // Row k's mask: `count` lanes where k < `rows`, none past them.
  auto rowMask = [&](int64_t k, Value rows, Value count) {
    Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, c(k), rows);
    Value lanes = arith::SelectOp::create(b, loc, inside, count, c(0));
    return vector::CreateMaskOp::create(b, loc, maskType, ValueRange{lanes}).getResult();
  };
  auto blockType = VectorType::get({kBlock, kBlock}, b.getF32Type());
  Value zero = arith::ConstantOp::create(b, loc, rowType, b.getZeroAttr(rowType));
  Value block = arith::ConstantOp::create(b, loc, blockType, b.getZeroAttr(blockType));
  for (int64_t k = 0; k < kBlock; ++k) { // the input's rows: `inner` = k, `across` contiguous
    SmallVector<Value> at = indices(inMap, inner, k);
    Value row = masked ? vector::MaskedLoadOp::create(b, loc, rowType, in, at,
                                                     rowMask(k, innerCount, acrossCount), zero)
                             .getResult()
                       : vector::LoadOp::create(b, loc, rowType, in, at).getResult();
    block = vector::InsertOp::create(b, loc, row, block, k);
  }
  Value t = vector::TransposeOp::create(b, loc, blockType, block, ArrayRef<int64_t>{1, 0});
  for (int64_t k = 0; k < kBlock; ++k) { // the output's rows: `across` = k, `inner` contiguous
    Value row = vector::ExtractOp::create(b, loc, t, k);
    SmallVector<Value> at = indices(outMap, across, k);
    if (masked)
      vector::MaskedStoreOp::create(b, loc, out, at, rowMask(k, acrossCount, innerCount), row);
    else
      vector::StoreOp::create(b, loc, row, out, at);
  }
}

/// A transposing copy of f32 whose two loops (the output's innermost
/// `inner`, the input's `across`) are 8 or more, as 8 x 8 blocks: 8 rows
/// of the input loaded as vectors, transposed in registers (one shuffle),
/// stored as 8 rows of the output. Moved element by element, an attention
/// head's K^T (64 x 128 out of a [128, 2304] projection) ran at 5 GB/s:
/// GPT-2's 12 took 1.8 ms of a 166 ms run. Where a loop is no multiple
/// of 8 (ViT's 197 tokens), its last block takes masked loads and stores.
LogicalResult transposeInBlocks(IRRewriter &rewriter, linalg::LinalgOp op, unsigned inner,
                                unsigned across) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  Value in = op.getDpsInputOperand(0)->get(), out = op.getDpsInitOperand(0)->get();
  AffineMap inMap = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (!isCopy(op) || !cast<MemRefType>(in.getType()).getElementType().isF32() ||
      !cast<MemRefType>(out.getType()).getElementType().isF32() || !inMap.isPermutation() ||
      !outMap.isPermutation() || !unitInnerStride(in) || !unitInnerStride(out) ||
      llvm::any_of(ranges, ShapedType::isDynamic) || ranges[inner] < kBlock ||
      ranges[across] < kBlock)
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
  SmallVector<Value> ivs(loop.getInductionVars());
  OpBuilder b = OpBuilder::atBlockBegin(loop.getBody());
  if (ranges[inner] % kBlock == 0 && ranges[across] % kBlock == 0) {
    emitBlock(b, loc, in, out, inMap, outMap, ivs, inner, across, ranges);
  } else {
    // Whole blocks as above; the last of a loop with fewer left masked.
    auto left = [&](unsigned l) {
      Value rest = arith::SubIOp::create(b, loc, ubs[l], ivs[l]);
      return arith::MinSIOp::create(b, loc, rest, steps[l]).getResult();
    };
    Value innerCount = left(inner), acrossCount = left(across);
    Value blockSize = steps[inner]; // kBlock, as steps[across]
    auto full = [&](Value n) {
      return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, n, blockSize);
    };
    Value whole = arith::AndIOp::create(b, loc, full(innerCount), full(acrossCount));
    auto branch = scf::IfOp::create(b, loc, whole, /*withElseRegion=*/true);
    OpBuilder thenB = branch.getThenBodyBuilder(), elseB = branch.getElseBodyBuilder();
    emitBlock(thenB, loc, in, out, inMap, outMap, ivs, inner, across, ranges);
    emitBlock(elseB, loc, in, out, inMap, outMap, ivs, inner, across, ranges, innerCount,
              acrossCount);
  }
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
      bool dynamic = ShapedType::isDynamic(ranges[inner]) || ShapedType::isDynamic(ranges[*across]);
      bool inL1 = !dynamic && ranges[inner] * ranges[*across] * elementBytes(op) <= kL1Bytes;
      // 8x8 blocks (f32 copies) where a pass along the output's rows stays
      // in L1: per element of a row, the input line its block reads (64
      // bytes, half of it used again at the next pass) and the block's 8
      // output rows. ViT's K^T, a head's 197 x 64 (50 KiB), qualifies.
      if (!dynamic && (inL1 || ranges[inner] * (64 + kBlock * elementBytes(op)) <= kL1Bytes) &&
          succeeded(transposeInBlocks(rewriter, op, inner, *across))) {
        blocked = true;
        continue;
      }
      // A slice that fits in L1 (a head's 128x64 of integers, 32 KiB) is
      // read faster whole, along rows four times as long ([32, 8, 128,
      // 64]: 0.4-0.6 ms whole, 0.7-1.1 ms tiled, over runs on a noisy VM);
      // one of 64 KiB already gains 2.4x tiled.
      if (dynamic || ranges[inner] < kTile || ranges[*across] < kTile || inL1)
        continue;
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

//===- FormKernels.cpp - kiln-form-kernels: tile a consumer, fuse a group -===//
//
//   %m = reduce(x)  %c = x - m  %v = reduce(c*c)  %y = c * rsqrt(v) * g + b
// =>
//   %y = scf.forall (%r) in (rows) {          one kernel: per row, the mean,
//     mean, c, var of row %r; y[%r] = ...     the variance and the output
//   }
//
// Kernel formation after elementwise fusion. Going from the last op of the
// function up, each op not yet in a kernel is a root: its group is the
// linalg producers all of whose users are already in the group (a value
// used outside would have to be computed twice; fills excepted, they cost
// nothing to redo). The root is tiled by 1
// along its parallel loops except the innermost, in an scf.forall, and the
// group's producers are fused into the tile, computed only for the slice
// it needs. A producer joins only when every tiled loop reaches it as a
// plain dimension of the operand it feeds: otherwise its slice would not
// shrink with the tile and it would be recomputed for every tile (a
// broadcast operand, a convolution window); such producers stay kernels of
// their own. Softmax, layer-norm, and a matmul with its bias, activation
// and the row-wise ops before it become one loop nest each.
//
//===----------------------------------------------------------------------===//

#include "KernelGroup.h"
#include "KernelRules.h"
#include "Winograd.h"

#include "kiln/Lowering/ConvTiles.h"
#include "kiln/Lowering/MatmulTiles.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallVectorExtras.h"

namespace kiln {
#define GEN_PASS_DEF_KILNFORMKERNELS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct KilnFormKernelsPass final : impl::KilnFormKernelsBase<KilnFormKernelsPass> {
  using Base::Base;
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn.isExternal())
      return;
    if (convVectorBits && failed(expandConvEpilogues(fn))) {
      fn.emitError("kiln-form-kernels: expanding convolution epilogues did not converge");
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    Block &block = fn.getBody().front();
    llvm::DenseSet<Operation *> done;
    // Roots from the end: a consumer gathers its producers first.
    SmallVector<linalg::LinalgOp> candidates;
    for (Operation &op : llvm::reverse(block))
      if (auto l = dyn_cast<linalg::LinalgOp>(&op); l && l.hasPureTensorSemantics())
        candidates.push_back(l);
    for (linalg::LinalgOp root : candidates) {
      // Winograd's transforms are lowered whole (kiln-vectorize-winograd).
      if (done.contains(root) || root->hasAttr(winograd::kAttr))
        continue;
      if (wholeLinearLayer(root))
        continue;
      KernelGroup group(root, &block, maxSharedBytes);
      SmallVector<unsigned> loops = group.tiledLoops();
      if (loops.empty())
        continue;
      group.grow(llvm::SmallDenseSet<unsigned>(loops.begin(), loops.end()));
      SmallVector<Operation *> whole = llvm::filter_to_vector(group.ops(), [&](Operation *op) {
        return op != root.getOperation() && wholeLinearLayer(cast<linalg::LinalgOp>(op));
      });
      if (!whole.empty()) {
        for (Operation *op : whole)
          group.exclude(op);
        group.grow(llvm::SmallDenseSet<unsigned>(loops.begin(), loops.end()));
      }
      // Nothing to fuse: the op is a kernel already; unless a tiled loop
      // is dynamic (a batch), which the tiles make static for the register
      // tiles (one image per tile).
      SmallVector<int64_t> extents = root.getStaticLoopRanges();
      bool dynamicTiles =
          llvm::any_of(loops, [&](unsigned l) { return ShapedType::isDynamic(extents[l]); });
      if (group.size() < 2 && !dynamicTiles)
        continue;
      if (std::optional<ColumnBlock> columns = matmulColumnBlock(root, loops, group)) {
        // The same group, tiled along the product's columns instead of its
        // rows, when every matmul still follows that tile. Elementwise
        // producers of A that stay behind (a GELU before the second linear
        // layer of a feed-forward block: each column tile would recompute
        // all of it) become kernels of their own, one pass over A.
        KernelGroup byColumns(root, &block, maxSharedBytes);
        byColumns.allowPanelSlices(columns->size, kMaxTilePanelBytes);
        byColumns.grow(llvm::SmallDenseSet<unsigned>(columns->loops.begin(), columns->loops.end()));
        bool matmulsFollow = llvm::all_of(group.ops(), [&](Operation *op) {
          return byColumns.contains(op) || !matchRowMatmul(op);
        });
        if (matmulsFollow && byColumns.size() >= 2 &&
            byColumns.rootLoop(columns->matmul, columns->n) == columns->loop) {
          if (failed(formKernel(rewriter, root, columns->loops, byColumns, done, columns)))
            return signalPassFailure();
          continue;
        }
        // The root needs whole rows of the product (a layer-norm after a
        // linear layer): the matmul is left to be a root itself, tiled by
        // columns, and this group reads its result from memory.
        group.exclude(columns->matmul);
        group.grow(llvm::SmallDenseSet<unsigned>(loops.begin(), loops.end()));
        if (group.size() < 2)
          continue;
      }
      if (failed(formKernel(rewriter, root, loops, group, done)))
        return signalPassFailure();
    }
    // A fused producer's destination may be a slice of a whole-tensor
    // tensor.empty (a convolution's fill under its epilogue): a tile-sized
    // empty instead, else it bufferizes to a whole-tensor buffer per tile.
    RewritePatternSet patterns(&getContext());
    tensor::populateFoldTensorEmptyPatterns(patterns);
    if (failed(applyPatternsGreedily(fn, std::move(patterns)))) {
      fn.emitError("kiln-form-kernels: folding tile-sized empties did not converge");
      return signalPassFailure();
    }
  }

  /// A linear layer on rows known at run time whose weights pass
  /// `max-shared-bytes`, with no loops but its rows and columns, which are
  /// not whole vectors (a classifier's 1000 after pooling; column blocks
  /// take whole vectors, matmulColumnBlock): left whole, not a kernel of a
  /// tile per row with its producers, for kiln-vectorize-matmul, which
  /// splits its columns over the pool when the rows are few. One image's
  /// tile ran on one thread, and every row's tile read all of the weights
  /// (ResNet-50's classifier and pooling, 8 MB of weights, on 2 SPR cores:
  /// 0.32 -> 0.17 ms at batch 1, static 0.19).
  bool wholeLinearLayer(linalg::LinalgOp root) {
    std::optional<RowMatmul> mm = matchRowMatmul(root);
    if (!mm || !mm->outer.empty() || mm->int8 || root.getNumLoops() != 3)
      return false;
    SmallVector<int64_t> ranges = root.getStaticLoopRanges();
    int64_t lanes = std::max<int64_t>(convVectorBits / 32, 1);
    return ShapedType::isDynamic(ranges[mm->rows]) && !ShapedType::isDynamic(ranges[mm->n]) &&
           ranges[mm->n] % lanes != 0 && sharedMatmulOperandBytes(root) > maxSharedBytes;
  }

  /// Unit-dim folding leaves a convolution's epilogue (batch-norm, ReLU)
  /// on the collapsed [C, H, W] view of its [1, C, H, W] result; the reshape
  /// between them keeps the epilogue out of the convolution's kernel. Such
  /// an epilogue is expanded back to the convolution's shape (upstream's
  /// fold-by-expansion, only for collapses of a register-tiled
  /// convolution's result), so it can be the kernel's root.
  LogicalResult expandConvEpilogues(func::FuncOp fn) {
    RewritePatternSet patterns(&getContext());
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, [](OpOperand *operand) {
      auto collapse = operand->get().getDefiningOp<tensor::CollapseShapeOp>();
      return collapse && (isRegisterTiledConv(collapse.getSrc().getDefiningOp()) ||
                          isChannelsLastDepthwise(collapse.getSrc().getDefiningOp()));
    });
    return applyPatternsGreedily(fn, std::move(patterns));
  }

  /// The output-channel and row block of a register-tiled convolution in
  /// the group (kiln-vectorize-conv computes that many per tile), when the
  /// root's loops 1 and 2 are the convolution's output channels and rows:
  /// the convolution itself, or an epilogue of the same 4-D shape written
  /// through an identity map. `rowsOutside`: an image's rows are the
  /// tiles' outer loop, its channel blocks the inner one.
  struct ConvBlock {
    ConvRegisterTile tile;
    bool rowsOutside = false;
  };
  std::optional<ConvBlock> convBlock(linalg::LinalgOp root, const KernelGroup &group) {
    if (!convVectorBits)
      return std::nullopt;
    for (Operation *op : group.ops()) {
      if (!isRegisterTiledConv(op))
        continue;
      auto conv = cast<linalg::LinalgOp>(op);
      auto shape = cast<ShapedType>(conv.getDpsInits()[0].getType()).getShape();
      bool channelLoop = op == root.getOperation();
      if (!channelLoop && root.getNumDpsInits() == 1 && root.getNumLoops() == 4) {
        auto rootShape = cast<ShapedType>(root.getDpsInits()[0].getType()).getShape();
        channelLoop = rootShape == shape &&
                      root.getMatchingIndexingMap(root.getDpsInitOperand(0)).isIdentity() &&
                      root.getNumParallelLoops() == 4;
      }
      if (!channelLoop)
        continue;
      // The pool gives each thread a contiguous run of tiles. Channel
      // blocks outside, each thread reads its share of the filters and the
      // whole image; rows outside, its share of the image and all the
      // filters: the smaller of the two is the one read whole. ResNet-50's
      // 128-channel stride-2 3x3 (a 1.7 MB padded image, 0.6 MB of
      // filters) had each of 2 threads read the whole image past its L2:
      // 1.41 -> 0.86 ms on 2 SPR cores (onnxruntime 0.83).
      bool depthwise = isa<linalg::DepthwiseConv2DNchwChwOp>(op);
      auto bytes = [](Value v, unsigned from) { // of dims from..rank, 0 if any is dynamic
        auto type = cast<ShapedType>(v.getType());
        int64_t n = type.getElementTypeBitWidth() / 8;
        for (int64_t d : type.getShape().drop_front(from))
          n = ShapedType::isDynamic(d) ? 0 : n * d;
        return n;
      };
      bool rowsOutside = !depthwise && bytes(conv.getDpsInputs()[0], 1) >
                                           bytes(conv.getDpsInputs()[1], 0);
      if (matchPackedConv(op)) {
        PackedConvTile p = choosePackedConvTile(shape[1], shape[2], shape[3], convVectorBits);
        ConvRegisterTile t;
        t.channels = p.lanes * p.vectors;
        t.rows = p.rows;
        return ConvBlock{t, rowsOutside};
      }
      // A long epilogue: a consumer in the kernel with a transcendental or
      // a division per element.
      bool longEpilogue = llvm::any_of(op->getUsers(), [&](Operation *member) {
        auto g = dyn_cast<linalg::GenericOp>(member);
        if (!g || !group.contains(member))
          return false;
        return llvm::any_of(g.getRegion().front(), [](Operation &body) {
                 return isa<arith::DivFOp>(body) ||
                        body.getDialect()->getNamespace() == "math";
               });
      });
      return ConvBlock{chooseConvRegisterTile(shape[1], shape[2], shape[3], convVectorBits,
                                              depthwise, longEpilogue),
                       rowsOutside};
    }
    return std::nullopt;
  }

  /// The row block of a register-tiled matmul in the group (a linear layer:
  /// kiln-vectorize-matmul keeps that many rows in registers), and the
  /// root's loop that tiles the matmul's rows: a power of two dividing the
  /// loop's extent that leaves at least two tiles (one would fold away with
  /// the kernel's loop and leave no parallelism). The rows are the root's
  /// innermost tiled loop for a linear layer and its epilogue, another one
  /// where the root permutes the product (attention's probabilities times
  /// values written seq-first, [T, B, H, D]: the query rows are loop 0).
  /// More rows per tile are always legal; this only sizes them.
  std::optional<std::pair<unsigned, int64_t>>
  matmulRowBlock(linalg::LinalgOp root, ArrayRef<unsigned> loops, const KernelGroup &group) {
    if (!convVectorBits)
      return std::nullopt;
    for (Operation *op : group.ops()) {
      std::optional<RowMatmul> mm = matchRowMatmul(op);
      if (!mm)
        continue;
      unsigned loop = group.rootLoop(op, mm->rows).value_or(loops.back());
      int64_t extent = root.getStaticLoopRanges()[loop];
      int64_t N = cast<linalg::LinalgOp>(op).getStaticLoopRanges()[mm->n];
      if (ShapedType::isDynamic(N)) // a sequence's columns: tiles for many
        N = 1 << 20;
      bool dynamic = ShapedType::isDynamic(extent); // known at run time: partial tiles
      // ... which a convolution in the group can't take: it is register
      // tiled one image per tile (ResNet's last block and its classifier).
      if (dynamic && llvm::any_of(group.ops(), isRegisterTiledConv))
        return std::nullopt;
      // On AMX tiles, all the rows up to 64 (a channels-last image's row of
      // pixels: 56, 28, 14), else the most up to 64 that divide the extent
      // in two or more, whole tiles of 16 first: kiln-vectorize-matmul
      // blocks them by 32 and 16, the rest in one shorter tile.
      if (amx && mm->int8 && !dynamic && extent >= kAmxMinRows) {
        int64_t best = extent <= 64 ? extent : 0;
        for (int64_t d = 16; d <= 64 && d * 2 <= extent; ++d)
          if (extent % d == 0 && (d % 16 == 0 || best % 16 != 0))
            best = d;
        if (best)
          return std::make_pair(loop, best);
      }
      int64_t K = registerTileDepth(op, *mm);
      int64_t rows =
          chooseMatmulRegisterTile(dynamic ? int64_t(1) << 20 : extent, N, convVectorBits, K).rows;
      int64_t block = 1;
      while (block * 2 <= rows &&
             (dynamic || (extent % (block * 2) == 0 && extent / (block * 2) >= 2)))
        block *= 2;
      // A static extent no block divides (ViT's 197 tokens): the last tile
      // partial, its rows known at run time as under a dynamic batch. One
      // row per tile, each re-read all of B (ViT-B/16's attention at 96
      // GFLOP/s).
      if (block == 1 && !llvm::any_of(group.ops(), isRegisterTiledConv))
        while (block * 2 <= rows && extent / (block * 2) >= 2)
          block *= 2;
      // Rows for two of a narrow last chunk's taller blocks (matmulTailRows)
      // while 8 tiles are left: ResNet-50's 7x7 1x1 convolutions' 49 = 48
      // + 1 columns, whose last in 4-row blocks cost as much as 24.
      if (!dynamic) {
        MatmulRegisterTile t = chooseMatmulRegisterTile(extent, N, convVectorBits, K);
        fitInt8Tile(t, mm->int8, convVectorBits);
        int64_t tailRows = matmulTailRows(t, N), tall = block;
        while (tall < 2 * tailRows)
          tall *= 2;
        if (tailRows > t.rows && extent % tall == 0 && extent / tall >= 8)
          block = tall;
      }
      if (block == 1)
        return std::nullopt;
      return std::make_pair(loop, block);
    }
    return std::nullopt;
  }

  /// A row matmul in the group whose B (K x N, a 1x1 convolution's image
  /// or a linear layer's weights) is past `column-block-bytes`: tiled by
  /// rows, every tile streams all of B from memory (ResNet-50's 256 ->
  /// 64 channel 1x1 convolution at 56x56: a 3.2 MB image read 16 times).
  /// Tiled by columns instead, a tile reads its K x Nb panel of B once and
  /// keeps it in cache (L1, or part of L2 for a long K) while its rows go
  /// by in register blocks; A, the smaller operand, is what every tile
  /// reads whole. Nb divides N, a whole number of vectors (and of packed
  /// panels), two tiles or more. On 2 Sapphire Rapids cores: that 1x1
  /// convolution 130 -> 300-356 GFLOP/s; BERT-base's 768 x 3072 linear
  /// layers 133 -> 300-350.
  struct ColumnBlock {
    SmallVector<unsigned> loops; // the root's tiled loops
    Operation *matmul;
    unsigned n, loop; // the matmul's column loop, the root's loop tiling it
    int64_t size;     // Nb
    unsigned rowLoop = 0;
    int64_t rowSize = 0; // rows per tile (0: all)
  };
  // BERT-base's 3072 x 768 layer: 16 columns (196 KiB) 285-310 GFLOP/s, 32 (384 KiB) 340-380.
  static constexpr int64_t kL1PanelBytes = 32 * 1024, kL2PanelBytes = 512 * 1024;
  static constexpr int64_t kFewTiles = 8;

  /// Whether a product of one image whose B (its activations) fit
  /// `column-block-bytes` is still tiled by columns: where A (rows x K) is
  /// constant and fits L1 (a 1x1 convolution's weights) and B (K x N, its
  /// image) is wider than A is tall. By rows, each thread of the pool
  /// reads the whole image, which the kernels before it wrote half in the
  /// other core's cache, and writes half of every pixel's channels; by
  /// columns, its share of the pixels, as the depthwise convolutions and
  /// pixel-tiled products around it do (MobileNetV3's 1x1 convolutions of
  /// 16-120 channels at one image, 2 SPR cores: the model 3.83-3.92 ->
  /// 3.39-3.40 ms, EfficientNet-B0 7.2-7.6 -> 6.9). Not with a batch,
  /// whose images the threads already split (MobileNetV3 at batch 8 1-4%
  /// slower so), nor for A past L1, read again for every column tile
  /// (ResNet-50's 64 -> 256 channels at 56x56, 64 KB: 10-20% slower).
  bool splitsImage(linalg::LinalgOp root, ArrayRef<unsigned> loops, unsigned rowLoop,
                   Operation *product, int64_t rows, int64_t N, int64_t K) {
    SmallVector<int64_t> extents = root.getStaticLoopRanges();
    if (llvm::any_of(loops, [&](unsigned l) { return l != rowLoop && extents[l] != 1; }))
      return false;
    auto mm = cast<linalg::LinalgOp>(product);
    // Through the collapse of a 1x1 convolution's [F, C, 1, 1] filters (as
    // kiln-pack-matmul-weights finds them).
    auto constant = [](Value v) {
      if (auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>())
        v = collapse.getSrc();
      return matchPattern(v, m_Constant());
    };
    return N > rows && rows * K * 4 <= kL1PanelBytes && constant(mm.getDpsInputs()[0]) &&
           !constant(mm.getDpsInputs()[1]);
  }

  std::optional<ColumnBlock> matmulColumnBlock(linalg::LinalgOp root, ArrayRef<unsigned> loops,
                                               const KernelGroup &group) {
    if (!convVectorBits || columnBlockBytes <= 0)
      return std::nullopt;
    SmallVector<unsigned> parallel;
    root.getParallelDims(parallel);
    if (parallel.empty())
      return std::nullopt;
    // Every row matmul of the group (a residual block's two 1x1
    // convolutions) must tile its rows by the same root loop; their B
    // panels share L2.
    std::optional<ColumnBlock> c;
    std::optional<unsigned> rowLoop;
    int64_t N = 0, sumK = 0, rows = 0;
    bool int8 = false;
    for (Operation *op : group.ops()) {
      std::optional<RowMatmul> mm = matchRowMatmul(op);
      if (!mm)
        continue;
      std::optional<unsigned> r = group.rootLoop(op, mm->rows);
      SmallVector<int64_t> ranges = cast<linalg::LinalgOp>(op).getStaticLoopRanges();
      // Panels are sized from static columns and depth (attention's
      // products with a dynamic n or k are not blocked).
      if (!r || (rowLoop && (*r != *rowLoop || ranges[mm->n] != N)) ||
          ShapedType::isDynamic(ranges[mm->n]) || ShapedType::isDynamic(ranges[mm->k]))
        return std::nullopt;
      rowLoop = r;
      N = ranges[mm->n];
      sumK += ranges[mm->k];
      int8 |= mm->int8;
      rows = ShapedType::isDynamic(ranges[mm->rows]) ? int64_t(1) << 20 : ranges[mm->rows];
      if (!c)
        c = ColumnBlock{{}, op, mm->n, parallel.back(), 0};
    }
    int64_t lanes = convVectorBits / 32;
    // B's bytes an element: AVX2's 8-bit panels hold 1 (BERT-base's 3072
    // -> 768 layer quantized at 8 x 128 tokens took panels of 24 columns
    // sized as f32, a third of them in one-vector blocks, and each read
    // all of A again).
    int64_t bBytes = int8 && convVectorBits == 256 ? 1 : 4;
    if (!c || N % lanes ||
        (sumK * N * bBytes <= columnBlockBytes &&
         !splitsImage(root, loops, *rowLoop, c->matmul, rows, N, sumK)))
      return std::nullopt;
    // The widest panel within L1 when that is two vectors or more, else
    // the widest within part of L2, else one vector. Whole register
    // blocks of columns first: a panel of 32 columns under AVX2's 24-wide
    // blocks ran its last 8 in a one-vector block, 4 accumulators for 5
    // cycles of FMA latency (ViT's 3072 -> 768 layer on 2 Zen 2 cores: 130
    // GFLOP/s at 32 columns).
    int64_t depth = registerTileDepth(c->matmul, *matchRowMatmul(c->matmul));
    MatmulRegisterTile tile = chooseMatmulRegisterTile(rows, N, convVectorBits, depth);
    fitInt8Tile(tile, int8, convVectorBits);
    auto widest = [&](int64_t bytes, int64_t least, int64_t step) {
      int64_t best = 0;
      for (int64_t nb = step; nb * 2 <= N; nb += step)
        if (N % nb == 0 && (sumK * nb * bBytes <= bytes || (!best && nb == least)))
          best = nb;
      return best;
    };
    int64_t block = tile.width * tile.vectors;
    c->size = widest(kL1PanelBytes, 0, lanes);
    if (c->size < 2 * lanes)
      c->size = widest(kL2PanelBytes, 0, block);
    if (c->size < 2 * lanes)
      c->size = widest(kL2PanelBytes, lanes, lanes);
    if (!c->size)
      return std::nullopt;
    for (unsigned loop : loops)
      if (loop != *rowLoop)
        c->loops.push_back(loop);
    c->loops.push_back(c->loop);
    // An odd count of tiles, and few: the rows split in halves too, so the
    // pool's threads take as many each. ResNet-50's 512 -> 128 1x1
    // convolutions at 28x28 made 7 column tiles of 112 pixels, 4 on one
    // thread and 3 on the other.
    SmallVector<int64_t> extents = root.getStaticLoopRanges();
    int64_t tiles = N / c->size, rootRows = extents[*rowLoop];
    for (unsigned l : c->loops)
      if (l != c->loop)
        tiles = ShapedType::isDynamic(extents[l]) ? 0 : tiles * extents[l];
    if (tiles % 2 && tiles < kFewTiles && !ShapedType::isDynamic(rootRows) &&
        rootRows % (2 * tile.rows) == 0) {
      c->rowLoop = *rowLoop;
      c->rowSize = rootRows / 2;
      c->loops.push_back(*rowLoop);
    }
    return c;
  }

  /// Rows of a few elements (an image's 3 or 4 channels last: its
  /// quantization and NHWC transpose, its zero-point pad) in a group of
  /// elementwise ops and copies alone (no reduction: products, pools and
  /// their epilogues keep their tiles), tiled one row per tile, cost more
  /// to schedule than to compute: the tile takes as
  /// many of the next loop's rows as make up to kNarrowTileElements
  /// (a divisor of that loop). MobileNetV2's quantized input at batch 8
  /// (8 x 64 x 64 pixels of 3 channels) ran 32768 tiles in 105 us. 0: as
  /// it is.
  static constexpr int64_t kNarrowRow = 8, kNarrowTileElements = 256;
  int64_t narrowRowsTile(linalg::LinalgOp root, ArrayRef<unsigned> loops,
                         const KernelGroup &group) {
    unsigned inner = root.getNumLoops() - 1;
    if (loops.empty() || loops.back() + 1 != inner ||
        llvm::any_of(group.ops(), [](Operation *op) {
          auto l = dyn_cast<linalg::LinalgOp>(op);
          return !l || !l.isAllParallelLoops();
        }))
      return 0;
    SmallVector<int64_t> extents = root.getStaticLoopRanges();
    int64_t row = extents[inner], next = extents[loops.back()];
    if (ShapedType::isDynamic(row) || ShapedType::isDynamic(next) || row > kNarrowRow)
      return 0;
    int64_t best = 0;
    for (int64_t d = 2; d <= next && d * row <= kNarrowTileElements; ++d)
      if (next % d == 0)
        best = d;
    return best;
  }

  LogicalResult formKernel(IRRewriter &rewriter, linalg::LinalgOp root,
                           ArrayRef<unsigned> loops, const KernelGroup &group,
                           llvm::DenseSet<Operation *> &done,
                           std::optional<ColumnBlock> columns = std::nullopt) {
    SmallVector<OpFoldResult> sizes(root.getNumLoops(), rewriter.getIndexAttr(0));
    for (unsigned l : loops)
      sizes[l] = rewriter.getIndexAttr(1);
    SmallVector<int64_t> order; // the tiles' loop order, when not the root's
    // The root's loops in order but `loop`, first or last.
    auto moved = [&](unsigned loop, bool first) {
      if (first)
        order.push_back(loop);
      for (unsigned l = 0; l < root.getNumLoops(); ++l)
        if (l != loop)
          order.push_back(l);
      if (!first)
        order.push_back(loop);
    };
    if (columns) {
      sizes[columns->loop] = rewriter.getIndexAttr(columns->size);
      if (columns->rowSize)
        sizes[columns->rowLoop] = rewriter.getIndexAttr(columns->rowSize);
      // Panels of a constant B (weights, the same for every leading
      // index) outermost: the pool gives each thread a contiguous run of
      // tiles, so a thread's tiles share a panel (in L2) rather than each
      // index reading every panel. Leading indices first, a product with
      // few rows per index (ViT's in-projection after its [seq, batch]
      // transpose: 8 rows a tile) read all of B from L3 for every 8 rows
      // (ViT-B/16's QKV at batch 8 on 2 SPR cores: 37 -> 21 ms; the model
      // 1.46-1.49 -> 1.25-1.30 s). A 1x1 convolution's B is its image.
      auto product = cast<linalg::LinalgOp>(columns->matmul);
      // Rows split too: a thread's run of tiles shares the panels.
      if (matchPattern(product.getDpsInputs()[1], m_Constant()) || columns->rowSize)
        moved(columns->loop, /*first=*/true);
    } else if (int64_t channels = channelsLastDepthwiseBlock(root, convVectorBits)) {
      sizes[3] = rewriter.getIndexAttr(channels); // (n, oh, ow, c): one row's pixels
    } else if (std::optional<ConvBlock> block = convBlock(root, group)) {
      // (n, f, oh, ..) of an NCHW convolution or its epilogue; (n, oh, ow,
      // c, ..) of a depthwise one.
      bool depthwise = isa<linalg::DepthwiseConv2DNchwChwOp>(root.getOperation());
      sizes[depthwise ? 3 : 1] = rewriter.getIndexAttr(block->tile.channels);
      sizes[depthwise ? 1 : 2] = rewriter.getIndexAttr(block->tile.rows);
      if (block->rowsOutside) { // (n, oh, f, ..)
        order = {0, 2, 1};
        for (unsigned l = 3; l < root.getNumLoops(); ++l)
          order.push_back(l);
      }
    } else if (auto block = matmulRowBlock(root, loops, group)) {
      sizes[block->first] = rewriter.getIndexAttr(block->second);
      // The row blocks innermost: a thread's contiguous run of tiles then
      // shares B (a head's keys and values) instead of each tile reading
      // another's. Where the root writes the product seq-first ([T, B, H,
      // D]: torchvision's attention) the rows were outermost, every tile
      // of 4 query rows reading another head's K^T and V.
      if (block->first != loops.back())
        moved(block->first, /*first=*/false);
    } else if (int64_t width = narrowRowsTile(root, loops, group)) {
      sizes[loops.back()] = rewriter.getIndexAttr(width);
    }
    scf::SCFTileAndFuseOptions options;
    options.tilingOptions.setTileSizes(sizes).setLoopType(
        scf::SCFTilingOptions::LoopType::ForallOp);
    if (!order.empty())
      options.tilingOptions.setInterchange(order);
    if (!columns && (isa<linalg::DepthwiseConv2DNchwChwOp>(root.getOperation()) ||
                     (root.getNumLoops() == 4 && convBlock(root, group))) &&
        llvm::any_of(group.ops(), [](Operation *op) {
          return isa<linalg::DepthwiseConv2DNchwChwOp>(op) && isRegisterTiledConv(op);
        }))
      if (std::optional<SmallVector<int64_t>> order = depthwiseTileOrder(root))
        options.tilingOptions.setInterchange(*order);
    options.setFusionControlFn(
        [&](tensor::ExtractSliceOp, OpResult producer,
            bool) -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
          if (!group.contains(producer.getOwner()))
            return std::nullopt;
          return scf::SCFTileAndFuseOptions::ControlFnResult{};
        });
    rewriter.setInsertionPoint(root);
    FailureOr<scf::SCFTileAndFuseResult> result = scf::tileConsumerAndFuseProducersUsingSCF(
        rewriter, cast<TilingInterface>(root.getOperation()), options);
    if (failed(result))
      return root.emitError("kiln-form-kernels: tiling failed");
    if (splitsLikeNeighbours(root, group.ops()) && !result->loops.empty())
      result->loops.front()->setAttr(kSpreadAttr, rewriter.getUnitAttr());
    done.insert(result->fusedProducers.begin(), result->fusedProducers.end());
    done.insert(root);
    for (OpResult r : root->getResults())
      rewriter.replaceAllUsesWith(r, result->replacements.lookup(r));
    // Producers that only fed the kernel are dead now.
    SmallVector<Operation *> dead(result->fusedProducers.begin(), result->fusedProducers.end());
    dead.push_back(root);
    for (bool erased = true; erased;) {
      erased = false;
      for (Operation *&op : dead)
        if (op && op->use_empty()) {
          rewriter.eraseOp(op);
          op = nullptr;
          erased = true;
        }
    }
    return success();
  }
};

} // namespace
} // namespace kiln

//===- KernelGroup.cpp - a kernel's ops, grown from its root --------------===//
//
// A producer joins its consumer's group when all its users are members and
// the tile's slice of its result is a plain slice along the loops the root
// tiles (or whole packed panels of a column tile).
//
//===----------------------------------------------------------------------===//

#include "KernelGroup.h"
#include "KernelRules.h"
#include "Winograd.h"
#include "kiln/Lowering/ConvTiles.h"

using namespace mlir;

namespace kiln {

SmallVector<unsigned> KernelGroup::tiledLoops() {
  SmallVector<unsigned> parallel;
  root.getParallelDims(parallel);
  // A depthwise convolution's loops are (n, oh, ow, c, ..): its tile
  // keeps the output rows whole (ow), as the NCHW one's does, and tiles
  // the channels; by the rule below it kept c whole and tiled ow (tiles
  // of 96 channels x 8 columns: ConvNeXt's 7x7 at 45 GFLOP/s).
  if (isa<linalg::DepthwiseConv2DNchwChwOp>(root.getOperation()))
    return {0, 1, 3};
  // Channels last, the same loops: (n, oh, c) of the convolution or of its
  // epilogue (n, h, w, c), an output row's pixels whole.
  if (isChannelsLastDepthwise(root) || channelsLastDepthwiseEpilogue(root))
    return {0, 1, 3};
  if (parallel.size() < 2)
    return {};
  parallel.pop_back();
  return parallel;
}

void KernelGroup::grow(const llvm::SmallDenseSet<unsigned> &rootLoops) {
  members.insert(root);
  sharedBytes = sharedMatmulOperandBytes(root);
  tiled[root] = rootLoops;
  for (unsigned l : rootLoops)
    rootLoopOf[root][l] = l;
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t i = 0; i < members.size(); ++i) {
      auto consumer = cast<linalg::LinalgOp>(members[i]);
      for (OpOperand &operand : consumer->getOpOperands()) {
        auto producer = operand.get().getDefiningOp<linalg::LinalgOp>();
        if (!producer || members.contains(producer) || producer->getBlock() != block ||
            !isa<TilingInterface>(producer.getOperation()) || excluded.contains(producer) ||
            producer->hasAttr(winograd::kAttr))
          continue;
        // A fill is recomputed for free: each kernel takes its own slice of
        // it, even when other kernels use it too (CSE merges them).
        bool free = isa<linalg::FillOp>(producer.getOperation());
        if (!free && !llvm::all_of(producer->getUsers(),
                                   [&](Operation *u) { return members.contains(u); }))
          continue;
        auto loops = producerLoops(consumer, operand);
        if (!loops)
          continue;
        // A product (or its bias) that an elementwise consumer (a
        // transpose) reads across its rows (NHWC -> NCHW after a linear
        // layer) stays out:
        // fused, the tiles of the product feeding it wrote 4 * H * W
        // bytes apart (ConvNeXt-T at batch 8, a block's second linear
        // layer, its bias and permute: 414 ms; apart, 1.3 ms for the
        // product and the transpose by 32x32 tiles at batch 1). So does
        // a convolution: ConvNeXt's depthwise 7x7 under its NCHW -> NHWC
        // permute was computed a pixel's 96 channels per tile, without
        // its register tile (3.5 ms; 8.5 GFLOP/s).
        if (!free && readsAcrossRows(consumer, operand) && isProductOrEpilogue(producer))
          continue;
        // A channels-last depthwise convolution keeps its own tiles (a row
        // of pixels, a block of channels) with its epilogue at most: under
        // a LayerNorm's tiles of a pixel each (ConvNeXt-T at batch 8, its
        // 7x7 and LayerNorm in one kernel) it ran one pixel at a time,
        // 38 GFLOP/s.
        if (isChannelsLastDepthwise(producer) &&
            !(consumer == root && channelsLastDepthwiseEpilogue(root) == producer))
          continue;
        // Every tile streams the whole of each linear layer's weights;
        // two layers' together past the budget run faster as kernels of
        // their own (BERT-base's feed-forward, 2 x 9 MB: 15 -> 12.5 ms
        // for the layer at 128 tokens on a 2-core Zen 3), though the
        // intermediate then goes through memory. So do a convolution's
        // filters under tiles of whole images: ResNet-50's last 1x1
        // convolution (4 MB) in its classifier's kernel, one tile per image
        // of a dynamic batch, ran on one thread at batch 1.
        int64_t bytes = sharedMatmulOperandBytes(producer);
        if (!bytes)
          bytes = sharedFilterBytes(producer, *loops);
        if (bytes && sharedBytes && sharedBytes + bytes > maxSharedBytes)
          continue;
        sharedBytes += bytes;
        members.insert(producer);
        tiled[producer] = *loops;
        traceRootLoops(consumer, operand);
        changed = true;
      }
    }
  }
}

std::optional<unsigned> KernelGroup::rootLoop(Operation *op, unsigned loop) const {
  auto it = rootLoopOf.find(op);
  if (it == rootLoopOf.end())
    return std::nullopt;
  auto l = it->second.find(loop);
  return l == it->second.end() ? std::nullopt : std::optional<unsigned>(l->second);
}

void KernelGroup::exclude(Operation *op) {
  excluded.insert(op);
  members.clear();
  tiled.clear();
  rootLoopOf.clear();
}

std::optional<llvm::SmallDenseSet<unsigned>>
KernelGroup::producerLoops(linalg::LinalgOp consumer, OpOperand &operand) {
  AffineMap map = consumer.getMatchingIndexingMap(&operand);
  const auto &consumerLoops = tiled[consumer];
  llvm::SmallDenseSet<unsigned> dims;
  std::optional<unsigned> panelDim;
  for (unsigned loop : consumerLoops) {
    std::optional<unsigned> found;
    for (unsigned j = 0; j < map.getNumResults(); ++j) {
      AffineExpr e = map.getResult(j);
      if (auto d = dyn_cast<AffineDimExpr>(e); d && d.getPosition() == loop) {
        found = j;
      } else if (std::optional<bool> quotient = panelIndex(e, loop)) {
        // Whole panels per tile: the quotient's slice is exact and the
        // remainder's is every lane.
        if (*quotient)
          found = panelDim = j;
      } else if (e.isFunctionOfDim(loop)) {
        return std::nullopt; // a window or a strided access: slices overlap
      }
    }
    if (!found)
      return std::nullopt; // broadcast along a tiled loop: recomputed per tile
    dims.insert(*found);
  }
  auto producer = operand.get().getDefiningOp<linalg::LinalgOp>();
  if (panelDim) {
    // A tile's slice: panelWidth / P panels, one index along the other
    // tiled dimensions (one image of a batch), the rest whole.
    auto type = cast<ShapedType>(operand.get().getType());
    auto div = cast<AffineBinaryOpExpr>(map.getResult(*panelDim));
    int64_t bytes = panelWidth / cast<AffineConstantExpr>(div.getRHS()).getValue() *
                    type.getElementTypeBitWidth() / 8;
    for (int64_t j = 0; j < type.getRank(); ++j) { // dims holds panelDim
      if (dims.contains(j))
        continue;
      if (type.isDynamicDim(j))
        return std::nullopt; // a whole dimension of unknown size: no bound
      bytes *= type.getDimSize(j);
    }
    if (bytes > maxPanelBytes)
      return std::nullopt;
  }
  return loopsForResultDims(producer, cast<OpResult>(operand.get()), dims);
}

std::optional<bool> KernelGroup::panelIndex(AffineExpr e, unsigned loop) const {
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!panelWidth || !bin ||
      (e.getKind() != AffineExprKind::FloorDiv && e.getKind() != AffineExprKind::Mod))
    return std::nullopt;
  auto d = dyn_cast<AffineDimExpr>(bin.getLHS());
  auto c = dyn_cast<AffineConstantExpr>(bin.getRHS());
  if (!d || d.getPosition() != loop || !c || c.getValue() <= 0 || panelWidth % c.getValue())
    return std::nullopt;
  return e.getKind() == AffineExprKind::FloorDiv;
}

void KernelGroup::traceRootLoops(linalg::LinalgOp consumer, OpOperand &operand) {
  auto producer = operand.get().getDefiningOp<linalg::LinalgOp>();
  AffineMap read = consumer.getMatchingIndexingMap(&operand);
  AffineMap written = producer.getIndexingMapMatchingResult(cast<OpResult>(operand.get()));
  for (auto [loop, rootLoop] : rootLoopOf[consumer])
    for (unsigned j = 0; j < read.getNumResults(); ++j) {
      auto r = dyn_cast<AffineDimExpr>(read.getResult(j));
      auto w = dyn_cast<AffineDimExpr>(written.getResult(j));
      if (r && w && r.getPosition() == loop)
        rootLoopOf[producer.getOperation()][w.getPosition()] = rootLoop;
    }
}

} // namespace kiln

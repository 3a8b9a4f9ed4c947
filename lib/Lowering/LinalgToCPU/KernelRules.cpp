//===- KernelRules.cpp - what kiln-form-kernels asks of an op --------------===//
//
// KernelRules.h.
//
//===----------------------------------------------------------------------===//

#include "KernelRules.h"

#include "kiln/Lowering/ConvTiles.h"
#include "kiln/Lowering/MatmulTiles.h"
#include "kiln/Lowering/Passes.h"

using namespace mlir;

namespace kiln {
namespace {
/// A register-tiled product: a row matmul or a convolution; or a pooling
/// window, whose tiles a transpose after it would shrink to a pixel's
/// channels, each gathered from as many planes (a quantized ResNet-50's
/// max-pool before its channels-last convolutions: at batch 8, 8.7 ms).
bool isTiledProduct(Operation *op) {
  return matchRowMatmul(op) || isRegisterTiledConv(op) || isChannelsLastDepthwise(op) ||
         isa<linalg::PoolingNchwMaxOp, linalg::PoolingNchwSumOp>(op);
}
} // namespace

std::optional<llvm::SmallDenseSet<unsigned>> loopsForResultDims(linalg::LinalgOp op, OpResult result,
                                                                const llvm::SmallDenseSet<unsigned> &dims) {
  AffineMap map = op.getIndexingMapMatchingResult(result);
  llvm::SmallDenseSet<unsigned> loops;
  for (unsigned d : dims) {
    auto e = dyn_cast<AffineDimExpr>(map.getResult(d));
    if (!e)
      return std::nullopt;
    loops.insert(e.getPosition());
  }
  return loops;
}

int64_t sharedMatmulOperandBytes(Operation *op) {
  std::optional<RowMatmul> mm = matchRowMatmul(op);
  if (!mm)
    return 0;
  auto l = cast<linalg::LinalgOp>(op);
  AffineMap map = l.getMatchingIndexingMap(l.getDpsInputOperand(1));
  for (unsigned d = 0; d < l.getNumLoops(); ++d)
    if (d != mm->k && d != mm->n && map.isFunctionOfDim(d))
      return 0;
  auto type = cast<ShapedType>(l.getDpsInputs()[1].getType());
  if (!type.hasStaticShape()) // an activation sized at run time (attention's keys)
    return 0;
  return type.getNumElements() * type.getElementTypeBitWidth() / 8;
}

int64_t sharedFilterBytes(Operation *op, const llvm::SmallDenseSet<unsigned> &tiledLoops) {
  if (tiledLoops.contains(1) || !(isRegisterTiledConv(op) || matchPackedConv(op)))
    return 0;
  auto type = cast<ShapedType>(cast<linalg::LinalgOp>(op).getDpsInputs()[1].getType());
  if (!type.hasStaticShape())
    return 0;
  return type.getNumElements() * type.getElementTypeBitWidth() / 8;
}

bool readsAcrossRows(linalg::LinalgOp consumer, OpOperand &operand) {
  AffineMap map = consumer.getMatchingIndexingMap(&operand);
  if (consumer.getNumReductionLoops() || map.getNumResults() == 0)
    return false;
  auto last = dyn_cast<AffineDimExpr>(map.getResult(map.getNumResults() - 1));
  return !last || last.getPosition() != consumer.getNumLoops() - 1;
}

bool isProductOrEpilogue(linalg::LinalgOp op) {
  if (isTiledProduct(op))
    return true;
  if (op.getNumReductionLoops())
    return false;
  return llvm::any_of(op.getDpsInputs(), [](Value in) {
    auto def = in.getDefiningOp<linalg::LinalgOp>();
    return def && isTiledProduct(def);
  });
}

linalg::LinalgOp channelsLastDepthwiseEpilogue(linalg::LinalgOp op) {
  if (op.getNumLoops() != 4 || !op.isAllParallelLoops() || op.getNumDpsInits() != 1 ||
      !op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity())
    return {};
  for (OpOperand *in : op.getDpsInputOperands()) {
    auto conv = in->get().getDefiningOp<linalg::LinalgOp>();
    if (conv && isChannelsLastDepthwise(conv) && op.getMatchingIndexingMap(in).isIdentity() &&
        in->get().getType() == op.getDpsInits()[0].getType())
      return conv;
  }
  return {};
}

int64_t channelsLastDepthwiseBlock(linalg::LinalgOp root, unsigned vectorBits) {
  if (!vectorBits)
    return 0;
  linalg::LinalgOp conv =
      isChannelsLastDepthwise(root) ? root : channelsLastDepthwiseEpilogue(root);
  if (!conv)
    return 0;
  auto shape = cast<ShapedType>(conv.getDpsInits()[0].getType()).getShape();
  int64_t images = ShapedType::isDynamic(shape[0]) ? 1 : shape[0];
  return chooseChannelsLastDepthwiseBlock(images, shape[1], shape[3], vectorBits);
}

std::optional<SmallVector<int64_t>> depthwiseTileOrder(linalg::LinalgOp root) {
  bool convolution = isa<linalg::DepthwiseConv2DNchwChwOp>(root.getOperation());
  SmallVector<int64_t> extents = root.getStaticLoopRanges();
  unsigned h = convolution ? 1 : 2;
  bool big = !ShapedType::isDynamic(extents[h]) && !ShapedType::isDynamic(extents[h + 1]) &&
             extents[h] * extents[h + 1] >= 56 * 56;
  if (convolution && !big)
    return SmallVector<int64_t>{0, 3, 1, 2, 4, 5};
  if (!convolution && big)
    return SmallVector<int64_t>{0, 2, 1, 3};
  return std::nullopt;
}

bool splitsLikeNeighbours(Operation *root, ArrayRef<Operation *> group) {
  return root->hasAttr(kSpreadAttr) || llvm::any_of(group, [](Operation *op) {
           auto conv = dyn_cast<linalg::DepthwiseConv2DNchwChwOp>(op);
           return conv && cast<ShapedType>(conv.getResult(0).getType()).getDimSize(0) == 1;
         });
}

} // namespace kiln

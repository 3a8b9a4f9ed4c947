//===- CollapseReductionLoops.cpp - kiln-collapse-reduction-loops ---------===//
//
//   linalg.generic {parallel, reduction, reduction}
//       ins(%x : tensor<32x112x112xf32>) outs(%s : tensor<32xf32>)
// =>
//   %r = tensor.collapse_shape %x [[0], [1, 2]] : ... into tensor<32x12544xf32>
//   linalg.generic {parallel, reduction} ins(%r) outs(%s)
//
// EfficientNet-B0's 16 SE means took 1.2 of its 8.7 ms as scalar loops;
// as rows of 12544 in vector accumulators the first one takes 18 us
// instead of 164. Collapsed on tensors, before kernel formation tiles the
// parallel loops: a tile's buffer is then a strided view whose rows are
// still contiguous, which a view of two reduced dimensions is not known
// to be.
//
// One image's sum over its pixels (an SE block's mean at batch 1) is
// first split by rows:
//   %p = linalg.generic (g, c, k) {parallel, parallel, reduction}
//          ins(%x as [C, G, R*W] (c, g, k)) outs([G, C] (g, c)) {kiln.spread}
//   linalg.generic (c, g) {parallel, reduction} ins(%p (g, c)) outs(%s (c))
// The threads split the first kernel by its groups of rows, as they split
// the convolution that wrote the image; the second is tiny. Run by one
// thread over the whole image, the mean read the half the other core had
// written, and then the other core's next writes to it went through this
// one's cache: on two Zen 2 vCPUs apart, an EfficientNet-style block
// (depthwise 3x3 of 96 channels at 56x56, SE, projection) took 0.59 ms on
// two threads against 0.56 on one, and 0.34 with the mean taken off that
// image.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCOLLAPSEREDUCTIONLOOPS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Static rows shorter than this (a vector) stay as they are.
constexpr int64_t kMinCollapsedRow = 16;

/// The trailing loops of `op` as one group, when there are two or more and
/// all are reductions of a generic on tensors; else nothing.
SmallVector<ReassociationIndices> trailingReductions(linalg::LinalgOp op) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic || !generic.hasPureTensorSemantics() || generic.getNumReductionLoops() < 2)
    return {};
  unsigned loops = generic.getNumLoops(), reductions = generic.getNumReductionLoops();
  // Rows of something (channels): a whole tensor's sum (a loss) is left
  // to the loops, as a dynamic artifact's of the same model is.
  if (reductions == loops)
    return {};
  auto iterators = generic.getIteratorTypesArray();
  ReassociationIndices group;
  for (unsigned l = loops - reductions; l < loops; ++l) {
    if (iterators[l] != utils::IteratorType::reduction)
      return {};
    group.push_back(l);
  }
  // Every operand that reads them reads them as its last dimensions, in
  // order (a batch norm's (n, h, w) around its channels does not, nor a
  // pool's window).
  for (AffineMap map : generic.getIndexingMapsArray()) {
    if (!map.isProjectedPermutation())
      return {};
    if (llvm::none_of(group, [&](int64_t l) { return map.isFunctionOfDim(l); }))
      continue;
    if (map.getNumResults() < group.size())
      return {};
    ArrayRef<AffineExpr> tail = map.getResults().take_back(group.size());
    for (auto [expr, l] : llvm::zip(tail, group))
      if (expr != getAffineDimExpr(l, map.getContext()))
        return {};
  }
  // Rows of a vector or more, and rows of a run-time length: both sum in
  // the vectors' order, so a dynamic artifact equals the static ones bit
  // for bit from a vector's row up. Shorter static rows stay loops. As
  // loops, a 7x7 image's mean with the SiLU before it fused in
  // (EfficientNet-B0's head, 1280 channels) ran at 137 us, one exp per
  // element; as vectors 39 (onnxruntime 25).
  SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
  bool dynamic = false;
  int64_t row = 1;
  for (int64_t l : group) {
    dynamic |= ShapedType::isDynamic(ranges[l]);
    row *= dynamic ? 1 : ranges[l];
  }
  if (!dynamic && row < kMinCollapsedRow)
    return {};
  return {group};
}

/// A row group's pixels at least, and groups at least (fewer rows stay
/// one reduction).
constexpr int64_t kMinGroupPixels = 64, kMinGroups = 4;
/// Images smaller than this (floats) stay one reduction.
constexpr int64_t kMinSplitImage = 64 * 1024;

/// Splits one image's pixel sum out[c] += x[c, h, w] by groups of rows
/// (see the file comment); the marked first stage is split by the
/// threads however little work it has.
void splitRowPartials(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      op.getNumLoops() != 3 || op.getNumReductionLoops() != 2 ||
      op.getIteratorTypesArray()[0] != utils::IteratorType::parallel)
    return;
  MLIRContext *ctx = op.getContext();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (!maps[0].isIdentity() || maps[1] != AffineMap::get(3, 0, getAffineDimExpr(0, ctx), ctx))
    return;
  Block &body = op.getRegion().front();
  auto add = dyn_cast<arith::AddFOp>(body.front());
  if (body.getOperations().size() != 2 || !add ||
      body.getTerminator()->getOperand(0) != add.getResult() ||
      !llvm::is_contained(SmallVector<Value>{add.getLhs(), add.getRhs()}, body.getArgument(0)) ||
      !llvm::is_contained(SmallVector<Value>{add.getLhs(), add.getRhs()}, body.getArgument(1)))
    return;
  auto type = dyn_cast<RankedTensorType>(op.getDpsInputs()[0].getType());
  if (!type || !type.hasStaticShape() || !type.getElementType().isF32())
    return;
  int64_t C = type.getDimSize(0), H = type.getDimSize(1), W = type.getDimSize(2);
  if (C * H * W < kMinSplitImage)
    return;
  int64_t R = 1;
  while (R < H && (H % R || R * W < kMinGroupPixels))
    ++R;
  int64_t G = H / R;
  if (G < kMinGroups)
    return;

  OpBuilder b(op);
  Location loc = op.getLoc();
  Type f32 = b.getF32Type();
  Value x = op.getDpsInputs()[0];
  Value groups = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({C, G, R, W}, f32), x,
      SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}});
  groups = tensor::CollapseShapeOp::create(b, loc, groups,
                                           SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(f32));
  Value empty = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{G, C}, f32);
  Value init = linalg::FillOp::create(b, loc, zero, empty).getResult(0);
  AffineExpr d0, d1, d2;
  bindDims(ctx, d0, d1, d2);
  auto sum = [&](OpBuilder &nb, Location nl, ValueRange args) {
    Value v = arith::AddFOp::create(nb, nl, args[0], args[1], add.getFastmathAttr());
    linalg::YieldOp::create(nb, nl, v);
  };
  using utils::IteratorType;
  auto partial = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{groups}, ValueRange{init},
      ArrayRef<AffineMap>{AffineMap::get(3, 0, {d1, d0, d2}, ctx), AffineMap::get(3, 0, {d0, d1}, ctx)},
      ArrayRef<IteratorType>{IteratorType::parallel, IteratorType::parallel, IteratorType::reduction},
      sum);
  partial->setAttr(kSpreadAttr, UnitAttr::get(ctx));
  auto total = linalg::GenericOp::create(
      b, loc, op.getResultTypes(), ValueRange{partial.getResult(0)}, op.getDpsInits(),
      ArrayRef<AffineMap>{AffineMap::get(2, 0, {d1, d0}, ctx), AffineMap::get(2, 0, {d0}, ctx)},
      ArrayRef<IteratorType>{IteratorType::parallel, IteratorType::reduction}, sum);
  op->replaceAllUsesWith(total);
  op->erase();
}

struct KilnCollapseReductionLoopsPass final
    : impl::KilnCollapseReductionLoopsBase<KilnCollapseReductionLoopsPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> sums;
    getOperation().walk([&](linalg::GenericOp op) { sums.push_back(op); });
    for (linalg::GenericOp op : sums)
      splitRowPartials(op);
    RewritePatternSet patterns(&getContext());
    linalg::populateCollapseDimensions(patterns, trailingReductions);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
} // namespace kiln

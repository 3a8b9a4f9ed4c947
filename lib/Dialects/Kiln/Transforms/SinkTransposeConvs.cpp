//===- SinkTransposeConvs.cpp - depthwise convolutions channels last -------===//
//
//   %x = kiln.transpose %y {perm = [0, 3, 1, 2]}       (NHWC -> NCHW)
//   %c = kiln.conv %x, %w {group = C}                  (depthwise, NCHW)
// =>
//   %c' = kiln.conv %y, transpose(%w) {group = C, channels_last}
//   %c  = kiln.transpose %c' {perm = [0, 3, 1, 2]}
//
// and  transpose(conv(%x), [0, 2, 3, 1]) => conv(transpose(%x), channels_last).
//
// ConvNeXt permutes each block's image to NHWC after its depthwise 7x7
// (for the LayerNorm and the linear layers) and back before the layer
// scale and residual add: 2 copies of the image a block, 44 in ConvNeXt-T.
// Channels last, the depthwise convolution moves them: the one after it is
// gone, the one before it sinks (kiln-sink-transposes) past the layer scale
// and the residual add, where it meets the previous block's and cancels.
// The CPU computes a depthwise convolution channels last as fast as in NCHW
// (its register tile runs along the channels), so only the CPU's pipeline
// asks for these patterns. Kept in f32, 2-D, static but for the batch:
// what that tile takes.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/Transforms/Passes.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace kiln {
namespace {

constexpr int64_t kToNchw[] = {0, 3, 1, 2};
constexpr int64_t kToNhwc[] = {0, 2, 3, 1};
constexpr int64_t kToHwio[] = {2, 3, 1, 0}; // [F, 1, KH, KW] -> [KH, KW, 1, F]

/// An NCHW 2-D f32 convolution with one input and one output channel per
/// group, static but for the batch.
bool isDepthwiseNchw(ConvOp op) {
  auto x = cast<RankedTensorType>(op.getInput().getType());
  auto w = cast<RankedTensorType>(op.getWeight().getType());
  int64_t g = op.getGroup();
  return !op.getChannelsLast() && x.getRank() == 4 && x.getElementType().isF32() &&
         w.hasStaticShape() && w.getDimSize(1) == 1 && w.getDimSize(0) == g &&
         x.getDimSize(1) == g && !x.isDynamicDim(2) && !x.isDynamicDim(3);
}

/// `op` channels last on `nhwc`, its input's NHWC form: the weight [C, 1,
/// KH, KW] as HWIO [KH, KW, 1, C] (a constant's folds at compile time).
Value channelsLast(PatternRewriter &rewriter, ConvOp op, Value nhwc) {
  Location loc = op.getLoc();
  // One transpose of a weight several convolutions share (else the
  // constant, read twice, would not fold).
  Value w;
  for (Operation *u : op.getWeight().getUsers())
    if (auto t = dyn_cast<TransposeOp>(u);
        t && t.getPerm() == ArrayRef<int64_t>(kToHwio) && t->getBlock() == op->getBlock() &&
        t->isBeforeInBlock(op))
      w = t.getResult();
  if (!w) { // where the weight is made: the other convolutions see it
    OpBuilder::InsertionGuard g(rewriter);
    rewriter.setInsertionPointAfterValue(op.getWeight());
    w = TransposeOp::create(rewriter, loc, op.getWeight(),
                            rewriter.getDenseI64ArrayAttr(kToHwio));
  }
  auto t = op.getType();
  auto type = RankedTensorType::get(
      {t.getDimSize(0), t.getDimSize(2), t.getDimSize(3), t.getDimSize(1)}, t.getElementType());
  return ConvOp::create(rewriter, loc, type, nhwc, w, op.getBias(), op.getStridesAttr(),
                        op.getPadsAttr(), op.getDilationsAttr(), op.getGroupAttr(),
                        rewriter.getUnitAttr())
      .getResult();
}

bool isTransposeBy(Operation *op, ArrayRef<int64_t> perm) {
  auto t = dyn_cast_or_null<TransposeOp>(op);
  return t && t.getPerm() == perm;
}

/// conv(T(y)), T NHWC -> NCHW => T(conv'(y)): where the transpose was for
/// this convolution alone (it moves on down), or the result is transposed
/// back to NHWC (the two then cancel).
struct ConvOfTranspose : OpRewritePattern<ConvOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvOp op, PatternRewriter &rewriter) const override {
    auto t = op.getInput().getDefiningOp<TransposeOp>();
    if (!t || t.getPerm() != ArrayRef<int64_t>(kToNchw) || !isDepthwiseNchw(op))
      return rewriter.notifyMatchFailure(op, "no depthwise conv of an NHWC image");
    if (!t->hasOneUse() &&
        llvm::none_of(op->getUsers(), [](Operation *u) { return isTransposeBy(u, kToNhwc); }))
      return rewriter.notifyMatchFailure(op, "the transposes would not cancel");
    Value c = channelsLast(rewriter, op, t.getInput());
    rewriter.replaceOpWithNewOp<TransposeOp>(op, op.getType(), c,
                                             rewriter.getDenseI64ArrayAttr(kToNchw));
    return success();
  }
};

/// T(conv(x)), T NCHW -> NHWC => conv'(T(x)) where every user of the
/// convolution is such a transpose, at unit strides (T(x) copies no more
/// than T did). T(x) then sinks or cancels where x is made.
struct TransposeOfConv : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op, PatternRewriter &rewriter) const override {
    auto conv = op.getInput().getDefiningOp<ConvOp>();
    if (op.getPerm() != ArrayRef<int64_t>(kToNhwc) || !conv || !isDepthwiseNchw(conv) ||
        llvm::any_of(conv.getStrides(), [](int64_t s) { return s != 1; }) ||
        !llvm::all_of(conv->getUsers(), [](Operation *u) { return isTransposeBy(u, kToNhwc); }))
      return rewriter.notifyMatchFailure(op, "no NHWC permute of a depthwise conv alone");
    rewriter.setInsertionPoint(conv);
    Value x = TransposeOp::create(rewriter, conv.getLoc(), conv.getInput(),
                                  rewriter.getDenseI64ArrayAttr(kToNhwc));
    Value c = channelsLast(rewriter, conv, x);
    for (Operation *u : llvm::to_vector(conv->getUsers()))
      rewriter.replaceOp(u, c);
    return success();
  }
};

} // namespace

void populateChannelsLastConvPatterns(RewritePatternSet &patterns) {
  patterns.add<ConvOfTranspose, TransposeOfConv>(patterns.getContext());
}

} // namespace kiln

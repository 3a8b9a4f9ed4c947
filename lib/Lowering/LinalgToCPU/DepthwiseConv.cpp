//===- DepthwiseConv.cpp - kiln-depthwise-conv -----------------------------===//
//
//   %y = linalg.conv_2d_ngchw_gfchw ins(%x : [N, G, 1, H, W], %w : [G, 1, 1, KH, KW])
//                                   outs(%init : [N, G, 1, OH, OW])
// =>
//   %y = expand(linalg.depthwise_conv_2d_nchw_chw ins(collapse(%x) : [N, G, H, W],
//                                                     collapse(%w) : [G, KH, KW])
//                                                 outs(collapse(%init) : [N, G, OH, OW]))
//
// A grouped convolution with one input and one output channel per group
// (MobileNet's depthwise layers) is the named depthwise op on plain NCHW
// shapes. The 5-D grouped form ran as loops, one output row per task,
// with its batch-norm and ReLU6 a kernel of their own behind the
// reshape; in 4-D, kiln-vectorize-conv register-tiles it and kernel
// formation keeps the epilogue in its tile. The reshapes fold into the
// ones the grouped form was built from.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNDEPTHWISECONV
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct GroupedToDepthwise : OpRewritePattern<linalg::Conv2DNgchwGfchwOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::Conv2DNgchwGfchwOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics())
      return rewriter.notifyMatchFailure(op, "not on tensors");
    Value x = op.getInputs()[0], w = op.getInputs()[1], init = op.getOutputs()[0];
    auto xt = dyn_cast<RankedTensorType>(x.getType());
    auto wt = dyn_cast<RankedTensorType>(w.getType());
    auto it = dyn_cast<RankedTensorType>(init.getType());
    // Static but for a dynamic batch (dimension 0, a group of its own in
    // the reshapes; kiln-form-kernels tiles it one image per tile).
    auto staticButBatch = [](RankedTensorType t) {
      return t && llvm::none_of(llvm::seq<int64_t>(1, t.getRank()),
                                [&](int64_t d) { return t.isDynamicDim(d); });
    };
    if (!staticButBatch(xt) || !wt || !wt.hasStaticShape() || !staticButBatch(it) ||
        xt.getElementType() != wt.getElementType() || xt.getElementType() != it.getElementType())
      return rewriter.notifyMatchFailure(op, "not static, or widening");
    if (xt.getDimSize(2) != 1 || wt.getDimSize(1) != 1 || wt.getDimSize(2) != 1)
      return rewriter.notifyMatchFailure(op, "more than one channel per group");
    Location loc = op.getLoc();
    SmallVector<ReassociationIndices> groups{{0}, {1, 2}, {3}, {4}};
    Value x4 = tensor::CollapseShapeOp::create(rewriter, loc, x, groups);
    Value w3 = tensor::CollapseShapeOp::create(rewriter, loc, w,
                                               SmallVector<ReassociationIndices>{{0, 1, 2}, {3}, {4}});
    Value init4 = tensor::CollapseShapeOp::create(rewriter, loc, init, groups);
    auto conv = linalg::DepthwiseConv2DNchwChwOp::create(
        rewriter, loc, TypeRange{init4.getType()}, ValueRange{x4, w3}, ValueRange{init4},
        op.getStrides(), op.getDilations());
    rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(op, it, conv.getResult(0), groups);
    return success();
  }
};

struct KilnDepthwiseConvPass final : impl::KilnDepthwiseConvBase<KilnDepthwiseConvPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<GroupedToDepthwise>(&getContext());
    tensor::populateReassociativeReshapeFoldingPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      getOperation().emitError("kiln-depthwise-conv: rewriting did not converge");
      return signalPassFailure();
    }
  }
};

} // namespace
} // namespace kiln

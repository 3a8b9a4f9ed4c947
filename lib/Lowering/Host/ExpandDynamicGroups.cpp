//===- ExpandDynamicGroups.cpp - kiln-expand-dynamic-groups pass ----------===//
//
// %e = memref.expand_shape %m [[0, 1, 2]] output_shape [%b, %s, 16]
//        : memref<?xf32> into memref<?x?x16xf32>
//   => %base, %off, %size, %stride = memref.extract_strided_metadata %m
//      %e = memref.reinterpret_cast %base to offset: [%off],
//             sizes: [%b, %s, 16], strides: [%stride * %s * 16, %stride * 16, %stride]
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNEXPANDDYNAMICGROUPS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct ExpandToReinterpretCast : OpRewritePattern<memref::ExpandShapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(memref::ExpandShapeOp op,
                                PatternRewriter &rewriter) const override {
    MemRefType type = op.getResultType();
    auto groups = op.getReassociationIndices();
    bool twoDynamic = llvm::any_of(groups, [&](const ReassociationIndices &g) {
      return llvm::count_if(g, [&](int64_t d) { return type.isDynamicDim(d); }) > 1;
    });
    if (!twoDynamic)
      return rewriter.notifyMatchFailure(op, "expand-strided-metadata handles it");
    Location loc = op.getLoc();
    auto meta = memref::ExtractStridedMetadataOp::create(rewriter, loc, op.getSrc());
    SmallVector<OpFoldResult> sizes = op.getMixedOutputShape();
    SmallVector<OpFoldResult> strides(type.getRank());
    auto mul = [&](OpFoldResult a, OpFoldResult b) -> OpFoldResult {
      auto ca = getConstantIntValue(a), cb = getConstantIntValue(b);
      if (ca && cb)
        return rewriter.getIndexAttr(*ca * *cb);
      if (ca == 1)
        return b;
      if (cb == 1)
        return a;
      return arith::MulIOp::create(rewriter, loc, getValueOrCreateConstantIndexOp(rewriter, loc, a),
                                   getValueOrCreateConstantIndexOp(rewriter, loc, b))
          .getResult();
    };
    SmallVector<OpFoldResult> srcStrides = meta.getConstifiedMixedStrides();
    for (auto [src, group] : llvm::enumerate(groups)) {
      OpFoldResult stride = srcStrides[src];
      for (int64_t d : llvm::reverse(group)) {
        strides[d] = stride;
        stride = mul(stride, sizes[d]);
      }
    }
    // The result type's static strides are what the layout says; the
    // computed ones agree with them.
    SmallVector<int64_t> typeStrides;
    int64_t typeOffset;
    if (failed(type.getStridesAndOffset(typeStrides, typeOffset)))
      return rewriter.notifyMatchFailure(op, "result layout is not strided");
    for (auto [i, s] : llvm::enumerate(typeStrides))
      if (!ShapedType::isDynamic(s))
        strides[i] = rewriter.getIndexAttr(s);
    OpFoldResult offset = ShapedType::isDynamic(typeOffset)
                              ? meta.getConstifiedMixedOffset()
                              : OpFoldResult(rewriter.getIndexAttr(typeOffset));
    rewriter.replaceOpWithNewOp<memref::ReinterpretCastOp>(op, type, meta.getBaseBuffer(), offset,
                                                           sizes, strides);
    return success();
  }
};

struct KilnExpandDynamicGroupsPass
    : impl::KilnExpandDynamicGroupsBase<KilnExpandDynamicGroupsPass> {
  void runOnOperation() override {
    // Only where there is such an expansion: the rewrite driver folds what
    // it visits, and other code should come out as it went in.
    bool any = false;
    getOperation()->walk([&](memref::ExpandShapeOp op) {
      MemRefType type = op.getResultType();
      for (const ReassociationIndices &g : op.getReassociationIndices())
        any |= llvm::count_if(g, [&](int64_t d) { return type.isDynamicDim(d); }) > 1;
    });
    if (!any)
      return;
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpandToReinterpretCast>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace kiln

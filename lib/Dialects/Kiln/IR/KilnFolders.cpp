//===- KilnFolders.cpp - kiln folders and canonicalization patterns -------===//
//
// Only algebraic identities that are always exact (no float reassociation):
// x+0, x*1, --x, reshape/transpose/cast of the same type, chains of
// reshapes and transposes, and the rank-changing ops as plain reshapes.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/PatternMatch.h"

#include <cstring>

using namespace mlir;
using namespace kiln;

namespace {
/// True when `attr` is a splat constant equal to `value`.
bool isSplatOf(Attribute attr, double value) {
  auto splat = dyn_cast_or_null<SplatElementsAttr>(attr);
  if (!splat)
    return false;
  Type et = splat.getElementType();
  if (isa<FloatType>(et))
    return splat.getSplatValue<APFloat>().convertToDouble() == value;
  if (auto it = dyn_cast<IntegerType>(et); it && it.getWidth() > 1)
    return splat.getSplatValue<APInt>().getSExtValue() == (int64_t)value;
  return false;
}

/// x op c => x when c is the identity element and the type does not change.
OpFoldResult foldRightIdentity(Value lhs, Attribute rhs, Type resultType,
                               double identity) {
  if (lhs.getType() == resultType && isSplatOf(rhs, identity))
    return lhs;
  return {};
}
} // namespace

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult IdentityOp::fold(FoldAdaptor) { return getInput(); }

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

OpFoldResult NegOp::fold(FoldAdaptor) {
  if (auto inner = getInput().getDefiningOp<NegOp>())
    return inner.getInput();
  return {};
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  if (auto r = foldRightIdentity(getLhs(), adaptor.getRhs(), getType(), 0.0))
    return r;
  return foldRightIdentity(getRhs(), adaptor.getLhs(), getType(), 0.0);
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  return foldRightIdentity(getLhs(), adaptor.getRhs(), getType(), 0.0);
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (auto r = foldRightIdentity(getLhs(), adaptor.getRhs(), getType(), 1.0))
    return r;
  return foldRightIdentity(getRhs(), adaptor.getLhs(), getType(), 1.0);
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  return foldRightIdentity(getLhs(), adaptor.getRhs(), getType(), 1.0);
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // Inline (small) constants reshape for free; resource blobs stay as they are.
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(getType());
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  for (auto [i, p] : llvm::enumerate(getPerm()))
    if ((int64_t)i != p)
      return {};
  return getInput();
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1 && getInputs()[0].getType() == getType())
    return getInputs()[0];
  return {};
}

namespace {
/// reshape(reshape(x)) => reshape(x)
struct FoldReshapeChain : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op, PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<ReshapeOp>();
    if (!inner)
      return rewriter.notifyMatchFailure(op, "input is not a reshape");
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), inner.getInput());
    return success();
  }
};

/// flatten/squeeze/unsqueeze(x) => reshape(x): one op for fusion to see.
template <typename OpTy>
struct RankChangeToReshape : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), op.getInput());
    return success();
  }
};

/// transpose(transpose(x, p), q) => transpose(x, p∘q)
struct ComposeTransposes : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op, PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<TransposeOp>();
    if (!inner)
      return rewriter.notifyMatchFailure(op, "input is not a transpose");
    SmallVector<int64_t> perm;
    for (int64_t p : op.getPerm())
      perm.push_back(inner.getPerm()[p]);
    rewriter.replaceOpWithNewOp<TransposeOp>(op, inner.getInput(), perm);
    return success();
  }
};
} // namespace

namespace {
/// gemm(a, W, trans_b) with a constant W [N, K] => gemm(a, W^T) with W^T
/// [K, N] transposed at compile time: the contraction then runs along
/// contiguous rows of the weights (an axpy that vectorizes, see
/// kiln-interchange-loops) instead of dot products LLVM may not reorder.
struct PretransposeGemmWeights : OpRewritePattern<GemmOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GemmOp op, PatternRewriter &rewriter) const override {
    if (!op.getTransB())
      return rewriter.notifyMatchFailure(op, "weights not transposed");
    auto constant = op.getB().getDefiningOp<ConstantOp>();
    if (!constant)
      return rewriter.notifyMatchFailure(op, "weights not constant");
    auto type = cast<RankedTensorType>(constant.getType());
    ArrayRef<char> raw;
    if (auto resource = dyn_cast<DenseResourceElementsAttr>(constant.getValue())) {
      auto *blob = resource.getRawHandle().getBlob();
      if (!blob)
        return rewriter.notifyMatchFailure(op, "resource without data");
      raw = blob->getData();
    } else if (auto dense = dyn_cast<DenseElementsAttr>(constant.getValue())) {
      if (dense.isSplat())
        return rewriter.notifyMatchFailure(op, "splat weights");
      raw = dense.getRawData();
    } else {
      return rewriter.notifyMatchFailure(op, "unknown constant kind");
    }
    int64_t n = type.getDimSize(0), k = type.getDimSize(1);
    size_t elem = type.getElementTypeBitWidth() / 8;
    if (type.getElementTypeBitWidth() % 8 || raw.size() != (size_t)(n * k) * elem)
      return rewriter.notifyMatchFailure(op, "unexpected data size");
    std::vector<char> transposed(raw.size());
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < k; ++j)
        std::memcpy(&transposed[(j * n + i) * elem], &raw[(i * k + j) * elem], elem);
    auto newType = RankedTensorType::get({k, n}, type.getElementType());
    auto blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(transposed, alignof(std::max_align_t));
    Value weights = ConstantOp::create(
        rewriter, constant.getLoc(),
        cast<ElementsAttr>(DenseResourceElementsAttr::get(newType, "pretransposed", std::move(blob))));
    auto newOp = rewriter.replaceOpWithNewOp<GemmOp>(
        op, op.getType(), op.getA(), weights, op.getC(), op.getAlphaAttr(), op.getBetaAttr(),
        op.getTransAAttr(), rewriter.getBoolAttr(false));
    (void)newOp;
    return success();
  }
};
} // namespace

void GemmOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<PretransposeGemmWeights>(ctx);
}

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<FoldReshapeChain>(ctx);
}
void FlattenOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<RankChangeToReshape<FlattenOp>>(ctx);
}
void SqueezeOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<RankChangeToReshape<SqueezeOp>>(ctx);
}
void UnsqueezeOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<RankChangeToReshape<UnsqueezeOp>>(ctx);
}
void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<ComposeTransposes>(ctx);
}

//===- KilnFolders.cpp - kiln folders and canonicalization patterns -------===//
//
// Only algebraic identities that are always exact (no float reassociation):
// x+0, x*1, --x, reshape/transpose/cast of the same type, chains of
// reshapes and transposes, the rank-changing ops and transposes of unit
// dimensions as plain reshapes;
// and data movement of constant weights done at compile time (a transposed
// Gemm weight, a transpose or slice of a constant), which makes them
// constants later passes can pack.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Dialects/Kiln/IR/ConstantData.h"
#include "kiln/Dialects/Kiln/IR/ShapeUtils.h"

#include "mlir/IR/TypeUtilities.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
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
  // An integer of 16 bits or fewer through f32 or f64 and back: every
  // value is exact on the way (a dequantize-requantize pair of identity
  // scale between a quantized model's max-pool and its next convolution,
  // which kept the NHWC <-> NCHW transposes around it apart).
  if (auto inner = getInput().getDefiningOp<CastOp>();
      inner && inner.getInput().getType() == getType()) {
    Type from = mlir::getElementTypeOrSelf(getType());
    Type through = mlir::getElementTypeOrSelf(inner.getType());
    if (from.isInteger() && from.getIntOrFloatBitWidth() <= 16 && (through.isF32() || through.isF64()))
      return inner.getInput();
  }
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
  // With two dynamic dimensions, equal types need not be equal shapes.
  if (getInput().getType() == getType() &&
      (getSizes().empty() || getType().getNumDynamicDims() <= 1))
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
    // Dynamic dimensions kept in place (no sizes) are in place of the
    // inner reshape's result, not necessarily of its input.
    if (op.getSizes().empty() && !op.getType().hasStaticShape() &&
        !(inner.getSizes().empty()))
      return rewriter.notifyMatchFailure(op, "sizes are implied by the inner result");
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), inner.getInput(), op.getSizes());
    return success();
  }
};

/// flatten/squeeze/unsqueeze(x) => reshape(x): one op for fusion to see;
/// likewise a transpose that only moves unit dimensions.
template <typename OpTy>
struct RankChangeToReshape : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    auto in = cast<RankedTensorType>(op.getInput().getType());
    auto out = cast<RankedTensorType>(op.getType());
    // A transpose that only moves unit dimensions ([1, 197, 768] ->
    // [197, 1, 768], torch's MultiheadAttention at batch 1) moves no data.
    // (Static shapes only: as a reshape, a dynamic LSTM's output
    // [seq, 1, B, H] -> [seq, B, 1, H] pulled its whole loop into the
    // function that computes the output's sizes.)
    if constexpr (std::is_same_v<OpTy, TransposeOp>)
      if (!out.hasStaticShape() || !onlyUnitDimsMove(in.getShape(), op.getPerm()))
        return rewriter.notifyMatchFailure(op, "moves dimensions that are not unit");
    if (out.hasStaticShape()) {
      rewriter.replaceOpWithNewOp<ReshapeOp>(op, out, op.getInput());
      return success();
    }
    // Squeeze and unsqueeze keep the dynamic dimensions, in order: the
    // reshape's sizes are the input's.
    if (!isa<SqueezeOp, UnsqueezeOp>(op) || in.getNumDynamicDims() != out.getNumDynamicDims())
      return rewriter.notifyMatchFailure(op, "dynamic dimensions change");
    SmallVector<Value> sizes;
    for (int64_t i = 0; i < in.getRank(); ++i)
      if (in.isDynamicDim(i))
        sizes.push_back(tensor::DimOp::create(rewriter, op.getLoc(), op.getInput(), i));
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, out, op.getInput(), sizes);
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
/// The bytes of `constant` when they are those of `type` (the constant's
/// own type or a reshape of it), with the element size; none otherwise.
std::optional<std::pair<ArrayRef<char>, size_t>> bytesAs(ConstantOp constant, ShapedType type) {
  ArrayRef<char> raw = constantData(constant.getValue());
  size_t elem = type.getElementTypeBitWidth() / 8;
  if (raw.empty() || type.getElementTypeBitWidth() % 8 ||
      raw.size() != (size_t)type.getNumElements() * elem)
    return std::nullopt;
  return std::make_pair(raw, elem);
}

/// A constant of `type` holding `bytes` (a resource blob named `name`).
Value resourceConstant(PatternRewriter &rewriter, Location loc, RankedTensorType type,
                       ArrayRef<char> bytes, StringRef name) {
  return ConstantOp::create(rewriter, loc, bytesAttr(type, name, bytes));
}

/// Row-major strides of `shape`, in elements.
SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = (int64_t)shape.size() - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// Copies the elements of a `shape` tensor in row-major order of its
/// index, each from `src` at sum(index[d] * srcStrides[d]) + offset.
void gatherElements(ArrayRef<char> src, std::vector<char> &dst, ArrayRef<int64_t> shape,
                    ArrayRef<int64_t> srcStrides, int64_t offset, size_t elem) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  dst.resize(n * elem);
  SmallVector<int64_t> index(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t at = offset;
    for (size_t d = 0; d < shape.size(); ++d)
      at += index[d] * srcStrides[d];
    std::memcpy(&dst[i * elem], &src[at * elem], elem);
    for (int64_t d = (int64_t)shape.size() - 1; d >= 0 && ++index[d] == shape[d]; --d)
      index[d] = 0;
  }
}

/// Replaces `op` by a constant of its result's type holding `constant`'s
/// elements (read as `input`'s type) gathered from an offset with a stride
/// per result dimension, which `layout` sets from `input`'s row-major
/// strides.
LogicalResult replaceByGather(
    PatternRewriter &rewriter, Operation *op, ConstantOp constant, Value input, StringRef name,
    llvm::function_ref<void(ArrayRef<int64_t>, int64_t &, SmallVectorImpl<int64_t> &)> layout) {
  auto in = cast<RankedTensorType>(input.getType());
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  auto data = bytesAs(constant, in);
  if (!data)
    return rewriter.notifyMatchFailure(op, "no data of the expected size");
  auto [raw, elem] = *data;
  SmallVector<int64_t> strides;
  int64_t offset = 0;
  layout(stridesOf(in.getShape()), offset, strides);
  std::vector<char> bytes;
  gatherElements(raw, bytes, type.getShape(), strides, offset, elem);
  rewriter.replaceOp(op, resourceConstant(rewriter, constant.getLoc(), type, bytes, name));
  return success();
}

/// transpose(reshape*(constant)) => the constant transposed at compile
/// time, when nothing else reads the constant (it is replaced, not
/// copied). An RNN's W^T and R^T, a Transpose node on a weight.
struct FoldConstantTranspose : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op, PatternRewriter &rewriter) const override {
    Value v = op.getInput();
    while (auto reshape = v.getDefiningOp<ReshapeOp>()) {
      if (!reshape->hasOneUse())
        return rewriter.notifyMatchFailure(op, "a reshape on the way has other users");
      v = reshape.getInput();
    }
    auto constant = v.getDefiningOp<ConstantOp>();
    if (!constant || !constant->hasOneUse())
      return rewriter.notifyMatchFailure(op, "not a constant only this transpose reads");
    return replaceByGather(rewriter, op, constant, op.getInput(), "transposed",
                           [&](ArrayRef<int64_t> inStrides, int64_t &, SmallVectorImpl<int64_t> &strides) {
                             for (int64_t p : op.getPerm())
                               strides.push_back(inStrides[p]);
                           });
  }
};

/// slice(constant) => the slice as its own constant, when only slices read
/// the constant (a bidirectional RNN's weights split by direction) and
/// together they are no bigger than it: the pieces replace it. A slice of
/// a constant that is also read whole, or overlapping slices that would
/// add up to more weights, stay.
struct FoldConstantSlice : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp op, PatternRewriter &rewriter) const override {
    auto constant = op.getInput().getDefiningOp<ConstantOp>();
    if (!constant || !llvm::all_of(constant->getUsers(), [](Operation *u) { return isa<SliceOp>(u); }))
      return rewriter.notifyMatchFailure(op, "not a constant only slices read");
    int64_t pieces = 0;
    for (Operation *u : constant->getUsers())
      pieces += cast<ShapedType>(u->getResult(0).getType()).getNumElements();
    if (pieces > cast<ShapedType>(constant.getType()).getNumElements())
      return rewriter.notifyMatchFailure(op, "the slices together are bigger than the constant");
    auto in = cast<RankedTensorType>(op.getInput().getType());
    auto dims = resolveSlice(in.getShape(), op.getStarts(), op.getEnds(), op.getAxes(), op.getSteps());
    if (!dims)
      return rewriter.notifyMatchFailure(op, "invalid slice");
    return replaceByGather(rewriter, op, constant, op.getInput(), "sliced",
                           [&](ArrayRef<int64_t> inStrides, int64_t &offset,
                               SmallVectorImpl<int64_t> &strides) {
                             for (auto [d, dim] : llvm::enumerate(*dims)) {
                               offset += dim.start * inStrides[d];
                               strides.push_back(dim.step * inStrides[d]);
                             }
                           });
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
    auto data = bytesAs(constant, type);
    if (!data)
      return rewriter.notifyMatchFailure(op, "splat weights or no data");
    auto [raw, elem] = *data;
    int64_t n = type.getDimSize(0), k = type.getDimSize(1);
    std::vector<char> transposed;
    gatherElements(raw, transposed, {k, n}, {1, k}, 0, elem);
    Value weights = resourceConstant(rewriter, constant.getLoc(),
                                     RankedTensorType::get({k, n}, type.getElementType()),
                                     transposed, "pretransposed");
    auto newOp = rewriter.replaceOpWithNewOp<GemmOp>(
        op, op.getType(), op.getA(), weights, op.getC(), op.getAlphaAttr(), op.getBetaAttr(),
        op.getTransAAttr(), rewriter.getBoolAttr(false));
    (void)newOp;
    return success();
  }
};
} // namespace

void SliceOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<FoldConstantSlice>(ctx);
}

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
  results.add<ComposeTransposes, FoldConstantTranspose, RankChangeToReshape<TransposeOp>>(ctx);
}

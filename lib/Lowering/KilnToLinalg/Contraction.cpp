//===- Contraction.cpp - matmul, gemm and conv to linalg ------------------===//
//
// kiln.matmul (batched, broadcasting)  => linalg.generic contraction
// kiln.matmul_integer                  => u8 x s8 contraction in i32
// kiln.gemm                            => contraction + alpha/beta epilogue
// kiln.conv                          => tensor.pad + linalg.conv_2d_nchw_fchw
//                                         (ngchw_gfchw when grouped) + bias
// kiln.conv (3-D)                      => tensor.pad + grouped conv generic + bias
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Lowering/KilnToLinalg/KilnToLinalg.h"

using namespace mlir;

namespace kiln {
namespace {

/// out[batch.., m, n] += a[..] * b[..] with maps given as (dims of a, dims of
/// b) over the loop nest (batch..., m, n, k). 16-bit floats accumulate in
/// f32, narrowed once at the end, as PyTorch and cuBLAS do (summing K
/// products in bf16 loses most of the result's bits).
/// `product`, when given, builds the term from the two elements instead
/// (an 8-bit product's extensions to i32).
Value contract(OpBuilder &b, Location loc, RankedTensorType outType, Value lhs, Value rhs,
               AffineMap lhsMap, AffineMap rhsMap,
               function_ref<Value(OpBuilder &, Location, Value, Value)> product = nullptr) {
  int64_t loops = outType.getRank() + 1;
  Type et = outType.getElementType();
  auto accType = accumulationType(outType);
  bool widen = accType != outType;
  Value zero = scalarConstant(b, loc, accType.getElementType(), 0.0);
  SmallVector<utils::IteratorType> iterators(loops - 1, utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);
  AffineMap outMap = AffineMap::getMultiDimIdentityMap(loops, b.getContext())
                         .getMajorSubMap(outType.getRank());
  Value init = filledTensor(
      b, loc, accType, zero,
      dynamicSizes(b, loc, accType, ValueRange{lhs, rhs}, {lhsMap, rhsMap}, outMap));
  auto generic = linalg::GenericOp::create(
      b, loc, accType, ValueRange{lhs, rhs}, ValueRange{init},
      ArrayRef<AffineMap>{lhsMap, rhsMap, outMap}, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value x = args[0], y = args[1];
        if (widen) {
          x = arith::ExtFOp::create(nb, nloc, nb.getF32Type(), x);
          y = arith::ExtFOp::create(nb, nloc, nb.getF32Type(), y);
        }
        Value prod = product ? product(nb, nloc, x, y) : mulScalar(nb, nloc, x, y);
        linalg::YieldOp::create(nb, nloc, addScalar(nb, nloc, args[2], prod));
      });
  return convertFloat(b, loc, generic.getResult(0), et);
}

/// Map of a matrix operand with leading (broadcast) batch dims over the loop
/// nest (batch..., m, n, k); `rowDim`/`colDim` name the loops of its last two.
AffineMap matrixMap(ArrayRef<int64_t> outBatch, ArrayRef<int64_t> shape,
                    unsigned rowDim, unsigned colDim, MLIRContext *ctx) {
  int64_t nb = outBatch.size(), loops = nb + 3, rank = shape.size();
  SmallVector<AffineExpr> exprs;
  for (int64_t i = 0; i < rank - 2; ++i) {
    int64_t d = nb - (rank - 2) + i;
    exprs.push_back(shape[i] == 1 && outBatch[d] != 1 ? getAffineConstantExpr(0, ctx)
                                                      : getAffineDimExpr(d, ctx));
  }
  exprs.push_back(getAffineDimExpr(rowDim, ctx));
  exprs.push_back(getAffineDimExpr(colDim, ctx));
  return AffineMap::get(loops, 0, exprs, ctx);
}

struct MatmulLowering : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value lhs = op.getLhs(), rhs = op.getRhs();
    auto lt = tensorType(lhs), rt = tensorType(rhs);
    Type et = lt.getElementType();
    // Promote vectors to matrices as numpy does; the result drops them again.
    if (lt.getRank() == 1)
      lhs = reshapeTo(rewriter, loc, lhs, RankedTensorType::get({1, lt.getDimSize(0)}, et));
    if (rt.getRank() == 1)
      rhs = reshapeTo(rewriter, loc, rhs, RankedTensorType::get({rt.getDimSize(0), 1}, et));
    auto ls = tensorType(lhs).getShape(), rs = tensorType(rhs).getShape();
    SmallVector<int64_t> outShape;
    int64_t nb = std::max(ls.size(), rs.size()) - 2;
    for (int64_t i = 0; i < nb; ++i) {
      int64_t la = i - (nb - (int64_t)(ls.size() - 2)), ra = i - (nb - (int64_t)(rs.size() - 2));
      int64_t dl = la >= 0 ? ls[la] : 1, dr = ra >= 0 ? rs[ra] : 1;
      outShape.push_back(dl == 1 ? dr : dl);
    }
    SmallVector<int64_t> batch(outShape);
    outShape.push_back(ls[ls.size() - 2]);
    outShape.push_back(rs.back());
    auto outType = RankedTensorType::get(outShape, et);
    MLIRContext *ctx = rewriter.getContext();
    unsigned m = nb, n = nb + 1, k = nb + 2;
    Value r = contract(rewriter, loc, outType, lhs, rhs,
                       matrixMap(batch, ls, m, k, ctx), matrixMap(batch, rs, k, n, ctx));
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, r, op.getType()));
    return success();
  }
};

/// out[.., m, n] = sum_k zext(a[.., m, k]) * sext(b[k, n]) in i32: the
/// CPU's packing and VNNI tile know this body (kiln-pack-matmul-weights).
struct MatmulIntegerLowering : OpRewritePattern<MatmulIntegerOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulIntegerOp op, PatternRewriter &rewriter) const override {
    auto outType = op.getType();
    auto ls = tensorType(op.getLhs()).getShape(), rs = tensorType(op.getRhs()).getShape();
    SmallVector<int64_t> batch(outType.getShape().drop_back(2));
    unsigned m = batch.size(), n = m + 1, k = m + 2;
    MLIRContext *ctx = rewriter.getContext();
    rewriter.replaceOp(
        op, contract(rewriter, op.getLoc(), outType, op.getLhs(), op.getRhs(),
                     matrixMap(batch, ls, m, k, ctx), matrixMap(batch, rs, k, n, ctx),
                     [](OpBuilder &nb, Location l, Value x, Value y) -> Value {
                       Type i32 = nb.getI32Type();
                       return arith::MulIOp::create(nb, l, arith::ExtUIOp::create(nb, l, i32, x),
                                                    arith::ExtSIOp::create(nb, l, i32, y));
                     }));
    return success();
  }
};

struct GemmLowering : OpRewritePattern<GemmOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GemmOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto outType = op.getType();
    AffineExpr m = getAffineDimExpr(0, ctx), n = getAffineDimExpr(1, ctx),
               k = getAffineDimExpr(2, ctx);
    AffineMap aMap = AffineMap::get(3, 0, op.getTransA() ? ArrayRef{k, m} : ArrayRef{m, k}, ctx);
    AffineMap bMap = AffineMap::get(3, 0, op.getTransB() ? ArrayRef{n, k} : ArrayRef{k, n}, ctx);
    Value r = contract(rewriter, loc, outType, op.getA(), op.getB(), aMap, bMap);
    double alpha = op.getAlpha().convertToDouble(), beta = op.getBeta().convertToDouble();
    Value c = op.getC();
    if (alpha != 1.0 || (c && beta != 0.0)) {
      SmallVector<Value> inputs{r};
      if (c && beta != 0.0)
        inputs.push_back(c);
      r = buildElementwise(rewriter, loc, outType, inputs,
                           [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                             Type t = a[0].getType();
                             Value v = a[0];
                             if (alpha != 1.0)
                               v = arith::MulFOp::create(b, l, v, scalarConstant(b, l, t, alpha));
                             if (a.size() > 1) {
                               Value cv = a[1];
                               if (beta != 1.0)
                                 cv = arith::MulFOp::create(b, l, cv,
                                                            scalarConstant(b, l, t, beta));
                               v = arith::AddFOp::create(b, l, v, cv);
                             }
                             return v;
                           });
    }
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// Any-rank grouped convolution as one generic over (n, g, f, o..., c, k...),
/// with channels split into groups on all three tensors so every indexing
/// map stays affine and invertible.
Value genericGroupedConv(OpBuilder &b, Location loc, Value input, Value weight,
                         RankedTensorType outType, ArrayRef<int64_t> strides,
                         ArrayRef<int64_t> dilations, int64_t g) {
  auto it = tensorType(input), wt = tensorType(weight);
  Type et = it.getElementType(), acc = outType.getElementType();
  int64_t sp = it.getRank() - 2, cg = it.getDimSize(1) / g, fg = wt.getDimSize(0) / g;
  MLIRContext *ctx = b.getContext();
  auto expand = [&](Value v, RankedTensorType t, ArrayRef<int64_t> shape, bool channelsFirst) {
    SmallVector<ReassociationIndices> re;
    if (channelsFirst) { // [F, ...] => [G, F/G, ...]
      re.push_back({0, 1});
      for (int64_t d = 1; d < t.getRank(); ++d)
        re.push_back({d + 1});
    } else { // [N, C, ...] => [N, G, C/G, ...]
      re.push_back({0});
      re.push_back({1, 2});
      for (int64_t d = 2; d < t.getRank(); ++d)
        re.push_back({d + 1});
    }
    return tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get(shape, et), v, re);
  };
  SmallVector<int64_t> inShape{it.getDimSize(0), g, cg}, wShape{g, fg, wt.getDimSize(1)},
      outShape{outType.getDimSize(0), g, fg};
  for (int64_t d = 0; d < sp; ++d) {
    inShape.push_back(it.getDimSize(2 + d));
    wShape.push_back(wt.getDimSize(2 + d));
    outShape.push_back(outType.getDimSize(2 + d));
  }
  Value gin = expand(input, it, inShape, false), gw = expand(weight, wt, wShape, true);
  // Loops: n, g, f, o_0..o_{sp-1}, c, k_0..k_{sp-1}.
  int64_t loops = 4 + 2 * sp;
  auto dim = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineExpr> inE{dim(0), dim(1), dim(3 + sp)}, wE{dim(1), dim(2), dim(3 + sp)},
      outE{dim(0), dim(1), dim(2)};
  for (int64_t d = 0; d < sp; ++d) {
    inE.push_back(dim(3 + d) * strides[d] + dim(4 + sp + d) * dilations[d]);
    wE.push_back(dim(4 + sp + d));
    outE.push_back(dim(3 + d));
  }
  SmallVector<utils::IteratorType> iters(3 + sp, utils::IteratorType::parallel);
  iters.append(1 + sp, utils::IteratorType::reduction);
  auto gOutType = RankedTensorType::get(outShape, acc);
  Value init = filledTensor(b, loc, gOutType, scalarConstant(b, loc, acc, 0.0));
  Value r = linalg::GenericOp::create(
                b, loc, gOutType, ValueRange{gin, gw}, ValueRange{init},
                ArrayRef<AffineMap>{AffineMap::get(loops, 0, inE, ctx),
                                    AffineMap::get(loops, 0, wE, ctx),
                                    AffineMap::get(loops, 0, outE, ctx)},
                iters,
                [&](OpBuilder &nb, Location l, ValueRange a) {
                  Value x = a[0], w = a[1];
                  if (acc != et) {
                    x = arith::ExtFOp::create(nb, l, acc, x);
                    w = arith::ExtFOp::create(nb, l, acc, w);
                  }
                  linalg::YieldOp::create(nb, l, addScalar(nb, l, a[2], mulScalar(nb, l, x, w)));
                })
                .getResult(0);
  SmallVector<ReassociationIndices> collapse{{0}, {1, 2}};
  for (int64_t d = 0; d < sp; ++d)
    collapse.push_back({3 + d});
  return tensor::CollapseShapeOp::create(b, loc, outType, r, collapse);
}

/// A channels-last 2-D convolution (NHWC input `input`, already padded;
/// HWIO weight) into `init`: ungrouped or depthwise.
Value channelsLastConv(OpBuilder &b, Location loc, Value input, Value weight, Value init,
                       ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations, int64_t g) {
  auto s = b.getI64TensorAttr(strides), d = b.getI64TensorAttr(dilations);
  Type type = init.getType();
  if (g == 1)
    return linalg::Conv2DNhwcHwcfOp::create(b, loc, TypeRange{type}, ValueRange{input, weight},
                                            ValueRange{init}, s, d)
        .getResult(0);
  // [KH, KW, 1, C] -> [KH, KW, C]
  Value w = tensor::CollapseShapeOp::create(
      b, loc, weight, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  return linalg::DepthwiseConv2DNhwcHwcOp::create(b, loc, TypeRange{type}, ValueRange{input, w},
                                                  ValueRange{init}, s, d)
      .getResult(0);
}

struct ConvLowering : OpRewritePattern<ConvOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto outType = op.getType();
    Type et = outType.getElementType();
    // 16-bit floats accumulate in f32, the bias added there too, narrowed
    // once at the end (as for matmuls, and as cuDNN does).
    auto accType = accumulationType(outType);
    Type acc = accType.getElementType();
    auto pads = op.getPads();
    size_t sp = pads.size() / 2;
    bool last = op.getChannelsLast();
    Value input = padSpatial(rewriter, loc, op.getInput(), pads.take_front(sp),
                             pads.drop_front(sp), scalarConstant(rewriter, loc, et, 0.0), last);
    Value zero = scalarConstant(rewriter, loc, acc, 0.0);
    // A dynamic batch (the only dynamic dimension a convolution takes): the
    // output's is the input's.
    SmallVector<Value> batch;
    if (outType.isDynamicDim(0))
      batch.push_back(dimOf(rewriter, loc, op.getInput(), 0));
    Value conv;
    int64_t g = op.getGroup();
    if (last) {
      conv = channelsLastConv(rewriter, loc, input, op.getWeight(),
                              filledTensor(rewriter, loc, accType, zero, batch), op.getStrides(),
                              op.getDilations(), g);
    } else if (sp != 2) { // 3-D: the generic form (upstream has no grouped 3-D named op)
      conv = genericGroupedConv(rewriter, loc, input, op.getWeight(), accType, op.getStrides(),
                                op.getDilations(), g);
    } else if (g == 1) {
      Value init = filledTensor(rewriter, loc, accType, zero, batch);
      conv = linalg::Conv2DNchwFchwOp::create(
                 rewriter, loc, TypeRange{accType}, ValueRange{input, op.getWeight()},
                 ValueRange{init}, rewriter.getI64TensorAttr(op.getStrides()),
                 rewriter.getI64TensorAttr(op.getDilations()))
                 .getResult(0);
    } else {
      // Split channels into (group, channels per group) on all three tensors.
      auto it = tensorType(input), wt = tensorType(op.getWeight());
      auto gIn = RankedTensorType::get({it.getDimSize(0), g, it.getDimSize(1) / g,
                                        it.getDimSize(2), it.getDimSize(3)}, et);
      auto gW = RankedTensorType::get({g, wt.getDimSize(0) / g, wt.getDimSize(1),
                                       wt.getDimSize(2), wt.getDimSize(3)}, et);
      auto gOut = RankedTensorType::get({outType.getDimSize(0), g, outType.getDimSize(1) / g,
                                         outType.getDimSize(2), outType.getDimSize(3)}, acc);
      SmallVector<ReassociationIndices> split{{0}, {1, 2}, {3}, {4}};
      SmallVector<ReassociationIndices> splitW{{0, 1}, {2}, {3}, {4}};
      Value gi = tensor::ExpandShapeOp::create(rewriter, loc, gIn, input, split);
      Value gw = tensor::ExpandShapeOp::create(rewriter, loc, gW, op.getWeight(), splitW);
      Value init = filledTensor(rewriter, loc, gOut, zero, batch);
      Value r = linalg::Conv2DNgchwGfchwOp::create(
                    rewriter, loc, TypeRange{gOut}, ValueRange{gi, gw}, ValueRange{init},
                    rewriter.getI64TensorAttr(op.getStrides()),
                    rewriter.getI64TensorAttr(op.getDilations()))
                    .getResult(0);
      conv = tensor::CollapseShapeOp::create(rewriter, loc, accType, r, split);
    }
    if (Value bias = op.getBias()) {
      // bias[f] broadcast over (n, f, spatial...): viewed as 1xFx1...
      // (channels last: 1x...xF)
      SmallVector<int64_t> bshape(outType.getRank(), 1);
      int64_t f = last ? outType.getRank() - 1 : 1;
      bshape[f] = outType.getDimSize(f);
      Value b4 = reshapeTo(rewriter, loc, bias, RankedTensorType::get(bshape, et));
      conv = buildElementwise(rewriter, loc, accType, ValueRange{conv, b4},
                              [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                                Value bv = a[1];
                                if (bv.getType() != acc)
                                  bv = arith::ExtFOp::create(b, l, acc, bv);
                                return arith::AddFOp::create(b, l, a[0], bv);
                              });
    }
    rewriter.replaceOp(op, convertFloat(rewriter, loc, conv, et));
    return success();
  }
};

} // namespace

void populateKilnContractionToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<MatmulLowering, MatmulIntegerLowering, GemmLowering, ConvLowering>(patterns.getContext());
}

} // namespace kiln

//===- Contraction.cpp - matmul, gemm and conv2d to linalg ----------------===//
//
// kiln.matmul (batched, broadcasting)  => linalg.generic contraction
// kiln.gemm                            => contraction + alpha/beta epilogue
// kiln.conv2d                          => tensor.pad + linalg.conv_2d_nchw_fchw
//                                         (ngchw_gfchw when grouped) + bias
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Lowering/KilnToLinalg/KilnToLinalg.h"

using namespace mlir;

namespace kiln {
namespace {

/// out[batch.., m, n] += a[..] * b[..] with maps given as (dims of a, dims of
/// b) over the loop nest (batch..., m, n, k).
Value contract(OpBuilder &b, Location loc, RankedTensorType outType, Value lhs,
               Value rhs, AffineMap lhsMap, AffineMap rhsMap) {
  int64_t loops = outType.getRank() + 1;
  Value zero = scalarConstant(b, loc, outType.getElementType(), 0.0);
  Value init = filledTensor(b, loc, outType, zero);
  SmallVector<utils::IteratorType> iterators(loops - 1, utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);
  AffineMap outMap = AffineMap::getMultiDimIdentityMap(loops, b.getContext())
                         .getMajorSubMap(outType.getRank());
  auto generic = linalg::GenericOp::create(
      b, loc, outType, ValueRange{lhs, rhs}, ValueRange{init},
      ArrayRef<AffineMap>{lhsMap, rhsMap, outMap}, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value prod = mulScalar(nb, nloc, args[0], args[1]);
        linalg::YieldOp::create(nb, nloc, addScalar(nb, nloc, args[2], prod));
      });
  return generic.getResult(0);
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

struct Conv2DLowering : OpRewritePattern<Conv2DOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(Conv2DOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto outType = op.getType();
    Type et = outType.getElementType();
    auto pads = op.getPads();
    Value zero = scalarConstant(rewriter, loc, et, 0.0);
    Value input = padSpatial(rewriter, loc, op.getInput(), {pads[0], pads[1]},
                             {pads[2], pads[3]}, zero);
    auto strides = rewriter.getI64TensorAttr(op.getStrides());
    auto dilations = rewriter.getI64TensorAttr(op.getDilations());
    int64_t g = op.getGroup();
    Value conv;
    if (g == 1) {
      Value init = filledTensor(rewriter, loc, outType, zero);
      conv = linalg::Conv2DNchwFchwOp::create(rewriter, loc, TypeRange{outType},
                                              ValueRange{input, op.getWeight()},
                                              ValueRange{init}, strides, dilations)
                 .getResult(0);
    } else {
      // Split channels into (group, channels per group) on all three tensors.
      auto it = tensorType(input), wt = tensorType(op.getWeight());
      auto gIn = RankedTensorType::get({it.getDimSize(0), g, it.getDimSize(1) / g,
                                        it.getDimSize(2), it.getDimSize(3)}, et);
      auto gW = RankedTensorType::get({g, wt.getDimSize(0) / g, wt.getDimSize(1),
                                       wt.getDimSize(2), wt.getDimSize(3)}, et);
      auto gOut = RankedTensorType::get({outType.getDimSize(0), g, outType.getDimSize(1) / g,
                                         outType.getDimSize(2), outType.getDimSize(3)}, et);
      SmallVector<ReassociationIndices> split{{0}, {1, 2}, {3}, {4}};
      SmallVector<ReassociationIndices> splitW{{0, 1}, {2}, {3}, {4}};
      Value gi = tensor::ExpandShapeOp::create(rewriter, loc, gIn, input, split);
      Value gw = tensor::ExpandShapeOp::create(rewriter, loc, gW, op.getWeight(), splitW);
      Value init = filledTensor(rewriter, loc, gOut, zero);
      Value r = linalg::Conv2DNgchwGfchwOp::create(rewriter, loc, TypeRange{gOut},
                                                   ValueRange{gi, gw}, ValueRange{init},
                                                   strides, dilations)
                    .getResult(0);
      conv = tensor::CollapseShapeOp::create(rewriter, loc, outType, r, split);
    }
    if (Value bias = op.getBias()) {
      // bias[f] broadcast over (n, f, h, w): view it as 1xFx1x1.
      auto bt = RankedTensorType::get({1, outType.getDimSize(1), 1, 1}, et);
      Value b4 = reshapeTo(rewriter, loc, bias, bt);
      conv = buildElementwise(rewriter, loc, outType, ValueRange{conv, b4},
                              [](OpBuilder &b, Location l, ValueRange a) -> Value {
                                return arith::AddFOp::create(b, l, a[0], a[1]);
                              });
    }
    rewriter.replaceOp(op, conv);
    return success();
  }
};

} // namespace

void populateKilnContractionToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<MatmulLowering, GemmLowering, Conv2DLowering>(patterns.getContext());
}

} // namespace kiln

//===- Reduction.cpp - reductions, normalizations and pooling to linalg ---===//
//
// kiln.reduce_{sum,mean,max}  => reduction linalg.generic (+ scale for mean)
// kiln.softmax                => max, exp(x - max), sum, divide
// kiln.layer_norm             => mean, variance, normalize-scale-shift
// kiln.batch_norm             => one per-channel affine generic
// kiln.{max,avg}_pool         => tensor.pad + linalg.pooling_nchw_{max,sum}
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Dialects/Kiln/IR/ShapeUtils.h"
#include "kiln/Lowering/KilnToLinalg/KilnToLinalg.h"

#include <type_traits>

using namespace mlir;

namespace kiln {
namespace {

SmallVector<bool> axesMask(ArrayRef<int64_t> axes, int64_t rank) {
  SmallVector<bool> mask(rank, axes.empty());
  for (int64_t a : axes)
    mask[*normalizeAxis(a, rank)] = true;
  return mask;
}

SmallVector<bool> trailingMask(int64_t from, int64_t rank) {
  SmallVector<bool> mask(rank, false);
  for (int64_t d = from; d < rank; ++d)
    mask[d] = true;
  return mask;
}

/// The elements a reduction over `mask` combines; nullopt when one of
/// those dimensions is dynamic (divideByCount reads them at run time).
std::optional<int64_t> reducedCount(RankedTensorType t, ArrayRef<bool> mask) {
  int64_t n = 1;
  for (int64_t d = 0; d < t.getRank(); ++d) {
    if (!mask[d])
      continue;
    if (t.isDynamicDim(d))
      return std::nullopt;
    n *= t.getDimSize(d);
  }
  return n;
}

/// x * (1/count) for floats, x / count for integers.
Value divideBy(OpBuilder &b, Location loc, Value x, int64_t count) {
  auto t = tensorType(x);
  return buildElementwise(b, loc, t, ValueRange{x},
                          [count](OpBuilder &nb, Location l, ValueRange a) -> Value {
                            Type et = a[0].getType();
                            Value c = scalarConstant(nb, l, et, (double)count);
                            if (isa<FloatType>(et))
                              return arith::DivFOp::create(nb, l, a[0], c);
                            return arith::DivSIOp::create(nb, l, a[0], c);
                          });
}

/// x divided by the count of `source`'s dimensions under `mask`: a
/// constant when they are static, else read at run time (a mean over a
/// sequence or an image size known only then).
Value divideByCount(OpBuilder &b, Location loc, Value x, Value source, ArrayRef<bool> mask) {
  auto t = tensorType(source);
  if (std::optional<int64_t> count = reducedCount(t, mask))
    return divideBy(b, loc, x, *count);
  Value n;
  for (int64_t d = 0; d < t.getRank(); ++d) {
    if (!mask[d])
      continue;
    Value size = t.isDynamicDim(d) ? tensor::DimOp::create(b, loc, source, d).getResult()
                                   : arith::ConstantIndexOp::create(b, loc, t.getDimSize(d)).getResult();
    n = n ? arith::MulIOp::create(b, loc, n, size).getResult() : size;
  }
  Type et = tensorType(x).getElementType();
  Value count;
  if (isa<FloatType>(et))
    count = arith::UIToFPOp::create(
        b, loc, et, arith::IndexCastUIOp::create(b, loc, b.getI64Type(), n));
  else
    count = arith::IndexCastUIOp::create(b, loc, et, n);
  return buildElementwise(b, loc, tensorType(x), ValueRange{x},
                          [count](OpBuilder &nb, Location l, ValueRange a) -> Value {
                            if (isa<FloatType>(a[0].getType()))
                              return arith::DivFOp::create(nb, l, a[0], count);
                            return arith::DivSIOp::create(nb, l, a[0], count);
                          });
}

template <typename OpTy, ReduceKind kind, bool mean>
struct ReduceLowering : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inType = tensorType(op.getInput());
    auto mask = axesMask(op.getAxes(), inType.getRank());
    Type et = inType.getElementType();
    bool widen = kind == ReduceKind::Sum && isHalfFloat(et);
    Value x = widen ? convertFloat(rewriter, loc, op.getInput(), rewriter.getF32Type())
                    : op.getInput();
    Value r = reduceKeepDims(rewriter, loc, x, mask, kind,
                             op->hasAttr(KilnDialect::getUnsignedAttrName()));
    if (mean)
      r = divideByCount(rewriter, loc, r, op.getInput(), mask);
    r = convertFloat(rewriter, loc, r, et);
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, r, op.getType()));
    return success();
  }
};

/// argmax/argmin: one reduction generic carrying (best value, its index).
template <typename OpTy>
struct ArgReduceLowering : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    constexpr bool isMax = std::is_same_v<OpTy, ArgMaxOp>;
    Location loc = op.getLoc();
    auto inType = tensorType(op.getInput());
    int64_t rank = inType.getRank();
    int64_t axis = *normalizeAxis(op.getAxis(), rank);
    MLIRContext *ctx = rewriter.getContext();
    SmallVector<int64_t> outShape;
    SmallVector<AffineExpr> outExprs;
    SmallVector<utils::IteratorType> iterators;
    for (int64_t d = 0; d < rank; ++d) {
      bool r = d == axis;
      outShape.push_back(r ? 1 : inType.getDimSize(d));
      outExprs.push_back(r ? getAffineConstantExpr(0, ctx) : getAffineDimExpr(d, ctx));
      iterators.push_back(r ? utils::IteratorType::reduction : utils::IteratorType::parallel);
    }
    Type et = inType.getElementType(), i64 = rewriter.getI64Type();
    auto valType = RankedTensorType::get(outShape, et);
    auto idxType = RankedTensorType::get(outShape, i64);
    Value valInit = filledTensor(rewriter, loc, valType,
                                 isMax ? lowestValue(rewriter, loc, et) : highestValue(rewriter, loc, et));
    Value idxInit = filledTensor(rewriter, loc, idxType, scalarConstant(rewriter, loc, i64, 0));
    AffineMap outMap = AffineMap::get(rank, 0, outExprs, ctx);
    bool last = op.getSelectLastIndex();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{valType, idxType}, ValueRange{op.getInput()},
        ValueRange{valInit, idxInit},
        ArrayRef<AffineMap>{rewriter.getMultiDimIdentityMap(rank), outMap, outMap}, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value v = args[0], best = args[1], bestIdx = args[2];
          Value idx = arith::IndexCastOp::create(b, l, b.getI64Type(),
                                                 linalg::IndexOp::create(b, l, axis));
          Value better, equal;
          if (isa<FloatType>(et)) {
            better = arith::CmpFOp::create(b, l, isMax ? arith::CmpFPredicate::OGT
                                                       : arith::CmpFPredicate::OLT, v, best);
            equal = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, v, best);
          } else {
            better = arith::CmpIOp::create(b, l, isMax ? arith::CmpIPredicate::sgt
                                                       : arith::CmpIPredicate::slt, v, best);
            equal = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, v, best);
          }
          // The first element always wins, so an all-(-inf) row picks index 0.
          Value first = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, idx,
                                              scalarConstant(b, l, b.getI64Type(), 0));
          Value take = arith::OrIOp::create(b, l, better, first);
          if (last)
            take = arith::OrIOp::create(b, l, take, equal);
          linalg::YieldOp::create(b, l, ValueRange{arith::SelectOp::create(b, l, take, v, best),
                                                  arith::SelectOp::create(b, l, take, idx, bestIdx)});
        });
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, generic.getResult(1), op.getType()));
    return success();
  }
};

/// out[.., i, ..] = sum over j of x[.., j, ..] where j <= i (j >= i reversed;
/// strictly when exclusive): one generic with the extra loop j. Quadratic
/// along the axis, which is short in the models that use it.
struct CumSumLowering : OpRewritePattern<CumSumOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CumSumOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = op.getType();
    int64_t rank = type.getRank(), axis = *normalizeAxis(op.getAxis(), rank);
    MLIRContext *ctx = rewriter.getContext();
    SmallVector<AffineExpr> inExprs;
    for (int64_t d = 0; d < rank; ++d)
      inExprs.push_back(getAffineDimExpr(d == axis ? rank : d, ctx));
    AffineMap inMap = AffineMap::get(rank + 1, 0, inExprs, ctx);
    AffineMap outMap = AffineMap::getMultiDimIdentityMap(rank + 1, ctx).getMajorSubMap(rank);
    SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
    iters.push_back(utils::IteratorType::reduction);
    // 16-bit running sums are kept in f32, narrowed after.
    Type outEt = type.getElementType();
    auto accType = accumulationType(type);
    Type et = accType.getElementType();
    Value input = convertFloat(rewriter, loc, op.getInput(), et);
    Value init = filledTensor(rewriter, loc, accType, scalarConstant(rewriter, loc, et, 0.0));
    bool reverse = op.getReverse(), exclusive = op.getExclusive();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, accType, ValueRange{input}, ValueRange{init},
        ArrayRef<AffineMap>{inMap, outMap}, iters,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value i = linalg::IndexOp::create(b, l, axis), j = linalg::IndexOp::create(b, l, rank);
          auto pred = reverse ? (exclusive ? arith::CmpIPredicate::sgt : arith::CmpIPredicate::sge)
                              : (exclusive ? arith::CmpIPredicate::slt : arith::CmpIPredicate::sle);
          Value take = arith::CmpIOp::create(b, l, pred, j, i);
          Value v = arith::SelectOp::create(b, l, take, args[0], scalarConstant(b, l, et, 0.0));
          linalg::YieldOp::create(b, l, addScalar(b, l, args[1], v));
        });
    rewriter.replaceOp(op, convertFloat(rewriter, loc, generic.getResult(0), outEt));
    return success();
  }
};

struct SoftmaxLowering : OpRewritePattern<SoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftmaxOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type et = tensorType(op.getInput()).getElementType();
    Value x = isHalfFloat(et) ? convertFloat(rewriter, loc, op.getInput(), rewriter.getF32Type())
                         : op.getInput();
    auto type = tensorType(x);
    SmallVector<bool> mask(type.getRank(), false);
    mask[*normalizeAxis(op.getAxis(), type.getRank())] = true;
    Value max = reduceKeepDims(rewriter, loc, x, mask, ReduceKind::Max);
    Value e = buildElementwise(rewriter, loc, type, ValueRange{x, max},
                               [](OpBuilder &b, Location l, ValueRange a) -> Value {
                                 return math::ExpOp::create(
                                     b, l, arith::SubFOp::create(b, l, a[0], a[1]));
                               });
    Value sum = reduceKeepDims(rewriter, loc, e, mask, ReduceKind::Sum);
    // e * (1 / sum), as PyTorch and onnxruntime compute it: the reciprocal
    // depends on the row only, so LLVM hoists it out of the row's loop and
    // each element costs a multiplication, not a division.
    Value r = buildElementwise(rewriter, loc, type, ValueRange{e, sum},
                               [](OpBuilder &b, Location l, ValueRange a) -> Value {
                                 Value one = scalarConstant(b, l, a[1].getType(), 1.0);
                                 return arith::MulFOp::create(
                                     b, l, a[0], arith::DivFOp::create(b, l, one, a[1]));
                               });
    rewriter.replaceOp(op, convertFloat(rewriter, loc, r, et));
    return success();
  }
};

struct LayerNormLowering : OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type et = tensorType(op.getInput()).getElementType();
    Type ct = isHalfFloat(et) ? rewriter.getF32Type() : et; // computed in
    Value x = convertFloat(rewriter, loc, op.getInput(), ct);
    auto type = tensorType(x);
    int64_t axis = *normalizeAxis(op.getAxis(), type.getRank());
    auto mask = trailingMask(axis, type.getRank());
    std::optional<int64_t> count = reducedCount(type, mask);
    if (!count)
      return op.emitOpError("normalizes over a dynamic dimension, which is not supported yet");
    Value mean = divideBy(rewriter, loc,
                          reduceKeepDims(rewriter, loc, x, mask, ReduceKind::Sum), *count);
    Value centered = buildElementwise(rewriter, loc, type, ValueRange{x, mean},
                                      [](OpBuilder &b, Location l, ValueRange a) -> Value {
                                        return arith::SubFOp::create(b, l, a[0], a[1]);
                                      });
    Value sq = buildElementwise(rewriter, loc, type, ValueRange{centered},
                                [](OpBuilder &b, Location l, ValueRange a) -> Value {
                                  return arith::MulFOp::create(b, l, a[0], a[0]);
                                });
    Value var = divideBy(rewriter, loc,
                         reduceKeepDims(rewriter, loc, sq, mask, ReduceKind::Sum), *count);
    double eps = op.getEpsilon().convertToDouble();
    SmallVector<Value> inputs{centered, var, convertFloat(rewriter, loc, op.getScale(), ct)};
    if (op.getBias())
      inputs.push_back(convertFloat(rewriter, loc, op.getBias(), ct));
    Value r = buildElementwise(
        rewriter, loc, type, inputs, [eps](OpBuilder &b, Location l, ValueRange a) -> Value {
          // (x - mean) * (1 / sqrt(var + eps)), as PyTorch computes it: the
          // reciprocal depends on the row only, so LLVM hoists it out of
          // the row's loop (no square root and division per element).
          Type t = a[0].getType();
          Value rstd = arith::DivFOp::create(
              b, l, scalarConstant(b, l, t, 1.0),
              math::SqrtOp::create(
                  b, l, arith::AddFOp::create(b, l, a[1], scalarConstant(b, l, t, eps))));
          Value v = arith::MulFOp::create(b, l, arith::MulFOp::create(b, l, a[0], rstd), a[2]);
          return a.size() > 3 ? (Value)arith::AddFOp::create(b, l, v, a[3]) : v;
        });
    rewriter.replaceOp(op, convertFloat(rewriter, loc, r, et));
    return success();
  }
};

struct BatchNormLowering : OpRewritePattern<BatchNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BatchNormOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = op.getType();
    // View each per-channel vector as 1xCx1x..x1 so it broadcasts along dim 1.
    // The parameters keep their own type (ONNX lets them differ from X's:
    // f32 statistics for f16 data).
    SmallVector<int64_t> pshape(type.getRank(), 1);
    pshape[1] = type.getDimSize(1);
    SmallVector<Value> inputs{op.getInput()};
    for (Value v : {op.getScale(), op.getBias(), op.getMean(), op.getVariance()})
      inputs.push_back(reshapeTo(
          rewriter, loc, v, RankedTensorType::get(pshape, tensorType(v).getElementType())));
    double eps = op.getEpsilon().convertToDouble();
    // 16-bit data is normalized in f32 (as cuDNN does), each element read
    // and written in its own type.
    Type et = type.getElementType();
    Type ct = accumulationType(type).getElementType();
    Value r = buildElementwise(
        rewriter, loc, type, inputs, [eps, ct, et](OpBuilder &b, Location l, ValueRange in) -> Value {
          SmallVector<Value> a;
          for (Value v : in) { // ct is f32 or wider: no two types of one width meet here
            unsigned bits = v.getType().getIntOrFloatBitWidth(), want = ct.getIntOrFloatBitWidth();
            a.push_back(bits < want   ? (Value)arith::ExtFOp::create(b, l, ct, v)
                        : bits > want ? (Value)arith::TruncFOp::create(b, l, ct, v)
                                      : v);
          }
          Value denom = math::SqrtOp::create(
              b, l, arith::AddFOp::create(b, l, a[4], scalarConstant(b, l, ct, eps)));
          Value norm = arith::DivFOp::create(b, l, arith::SubFOp::create(b, l, a[0], a[3]), denom);
          Value y = arith::AddFOp::create(b, l, arith::MulFOp::create(b, l, norm, a[1]), a[2]);
          return ct == et ? y : (Value)arith::TruncFOp::create(b, l, et, y);
        });
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// Pooling of any spatial rank as one generic over (n, c, o..., k...); used
/// where upstream has no NC-layout named op (3-D).
Value genericPool(OpBuilder &b, Location loc, Value input, Value init,
                  ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                  ArrayRef<int64_t> dilations, bool isMax) {
  MLIRContext *ctx = b.getContext();
  int64_t sp = kernel.size(), loops = 2 + 2 * sp;
  Value window = tensor::EmptyOp::create(b, loc, kernel, tensorType(input).getElementType());
  auto dim = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineExpr> inE{dim(0), dim(1)}, winE, outE{dim(0), dim(1)};
  for (int64_t d = 0; d < sp; ++d) {
    inE.push_back(dim(2 + d) * strides[d] + dim(2 + sp + d) * dilations[d]);
    winE.push_back(dim(2 + sp + d));
    outE.push_back(dim(2 + d));
  }
  SmallVector<utils::IteratorType> iters(2 + sp, utils::IteratorType::parallel);
  iters.append(sp, utils::IteratorType::reduction);
  return linalg::GenericOp::create(
             b, loc, tensorType(init), ValueRange{input, window}, ValueRange{init},
             ArrayRef<AffineMap>{AffineMap::get(loops, 0, inE, ctx),
                                 AffineMap::get(loops, 0, winE, ctx),
                                 AffineMap::get(loops, 0, outE, ctx)},
             iters,
             [&](OpBuilder &nb, Location l, ValueRange a) {
               Value x = a[0];
               if (x.getType() != a[2].getType()) // a 16-bit sum kept in f32
                 x = arith::ExtFOp::create(nb, l, a[2].getType(), x);
               Value r = isMax ? maxScalar(nb, l, a[2], x) : addScalar(nb, l, a[2], x);
               linalg::YieldOp::create(nb, l, r);
             })
      .getResult(0);
}

/// Extra end padding so that ceil-mode windows stay inside the padded input.
SmallVector<int64_t> endPads(RankedTensorType in, RankedTensorType out,
                             ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                             ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations) {
  SmallVector<int64_t> ends;
  size_t n = kernel.size();
  for (size_t i = 0; i < n; ++i) {
    int64_t dil = dilations.empty() ? 1 : dilations[i];
    int64_t need = (out.getDimSize(2 + i) - 1) * strides[i] + dil * (kernel[i] - 1) + 1;
    int64_t have = in.getDimSize(2 + i) + pads[i];
    ends.push_back(std::max(pads[i + n], need - have));
  }
  return ends;
}

struct MaxPoolLowering : OpRewritePattern<MaxPoolOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MaxPoolOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto outType = op.getType();
    Type et = outType.getElementType();
    auto pads = op.getPads();
    Value lowest = lowestValue(rewriter, loc, et);
    auto ends = endPads(tensorType(op.getInput()), outType, op.getKernelShape(),
                        op.getStrides(), pads, op.getDilations());
    size_t n = op.getKernelShape().size();
    Value input = padSpatial(rewriter, loc, op.getInput(), pads.take_front(n), ends, lowest);
    Value window = tensor::EmptyOp::create(rewriter, loc, op.getKernelShape(), et);
    Value init = filledTensor(rewriter, loc, outType, lowest,
                              sameDynamicSizes(rewriter, loc, outType, op.getInput()));
    auto strides = rewriter.getI64TensorAttr(op.getStrides());
    auto dilations = rewriter.getI64TensorAttr(op.getDilations());
    Value r = n == 2 ? linalg::PoolingNchwMaxOp::create(rewriter, loc, TypeRange{outType},
                                                        ValueRange{input, window},
                                                        ValueRange{init}, strides, dilations)
                           .getResult(0)
                     : genericPool(rewriter, loc, input, init, op.getKernelShape(),
                                   op.getStrides(), op.getDilations(), true);
    rewriter.replaceOp(op, r);
    return success();
  }
};

struct AvgPoolLowering : OpRewritePattern<AvgPoolOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AvgPoolOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inType = tensorType(op.getInput());
    auto outType = op.getType();
    Type et = outType.getElementType();
    auto pads = op.getPads(), kernel = op.getKernelShape(), strides = op.getStrides();
    // 16-bit windows are summed and divided in f32, narrowed once.
    auto sumType = accumulationType(outType);
    Value zero = scalarConstant(rewriter, loc, et, 0.0);
    auto ends = endPads(inType, outType, kernel, strides, pads, {});
    size_t n = kernel.size();
    Value input = padSpatial(rewriter, loc, op.getInput(), pads.take_front(n), ends, zero);
    Value window = tensor::EmptyOp::create(rewriter, loc, kernel, et);
    Value init = filledTensor(rewriter, loc, sumType,
                              scalarConstant(rewriter, loc, sumType.getElementType(), 0.0),
                              sameDynamicSizes(rewriter, loc, sumType, op.getInput()));
    auto stridesAttr = rewriter.getI64TensorAttr(strides);
    auto ones = rewriter.getI64TensorAttr(SmallVector<int64_t>(n, 1));
    Value sum = n == 2 ? linalg::PoolingNchwSumOp::create(rewriter, loc, TypeRange{sumType},
                                                          ValueRange{input, window},
                                                          ValueRange{init}, stridesAttr, ones)
                             .getResult(0)
                       : genericPool(rewriter, loc, input, init, kernel, strides,
                                     SmallVector<int64_t>(n, 1), false);
    // The divisor per output position: elements of the window inside the
    // input (or inside the explicitly padded input with count_include_pad).
    SmallVector<int64_t> outSpatial(outType.getShape().drop_front(2));
    SmallVector<float> divisor;
    for (int64_t d : avgPoolDivisors(inType.getShape().drop_front(2), outSpatial, kernel, strides,
                                     pads, op.getCountIncludePad()))
      divisor.push_back((float)d);
    auto divType = RankedTensorType::get(outSpatial, rewriter.getF32Type());
    Value div = arith::ConstantOp::create(
        rewriter, loc, DenseElementsAttr::get(divType, ArrayRef<float>(divisor)));
    Value r = buildElementwise(rewriter, loc, sumType, ValueRange{sum, div},
                               [](OpBuilder &b, Location l, ValueRange a) -> Value {
                                 Value d = a[1];
                                 if (d.getType() != a[0].getType()) // f64
                                   d = arith::ExtFOp::create(b, l, a[0].getType(), d);
                                 return arith::DivFOp::create(b, l, a[0], d);
                               });
    rewriter.replaceOp(op, convertFloat(rewriter, loc, r, et));
    return success();
  }
};

struct GlobalAvgPoolLowering : OpRewritePattern<GlobalAvgPoolOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GlobalAvgPoolOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = tensorType(op.getInput());
    auto mask = trailingMask(2, type.getRank());
    // 16-bit images are summed in f32: f16's 11 bits lose the small terms
    // of a 56x56 sum (the ulp at 2048 is 2).
    Type et = type.getElementType();
    Value x = convertFloat(rewriter, loc, op.getInput(), accumulationType(type).getElementType());
    Value sum = reduceKeepDims(rewriter, loc, x, mask, ReduceKind::Sum);
    Value mean = divideByCount(rewriter, loc, sum, op.getInput(), mask);
    rewriter.replaceOp(op, convertFloat(rewriter, loc, mean, et));
    return success();
  }
};

} // namespace

void populateKilnReductionToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<ReduceLowering<ReduceSumOp, ReduceKind::Sum, false>,
               ReduceLowering<ReduceMeanOp, ReduceKind::Sum, true>,
               ReduceLowering<ReduceMaxOp, ReduceKind::Max, false>,
               ReduceLowering<ReduceMinOp, ReduceKind::Min, false>,
               ReduceLowering<ReduceProdOp, ReduceKind::Prod, false>, ArgReduceLowering<ArgMaxOp>,
               ArgReduceLowering<ArgMinOp>, CumSumLowering, SoftmaxLowering,
               LayerNormLowering, BatchNormLowering, MaxPoolLowering, AvgPoolLowering,
               GlobalAvgPoolLowering>(patterns.getContext());
}

} // namespace kiln

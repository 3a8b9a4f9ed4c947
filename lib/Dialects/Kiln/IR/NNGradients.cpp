//===- NNGradients.cpp - gradient rules of contractions, norms, pooling ---===//
//
// Matmul and Gemm: products with the other operand transposed. Convolution:
// the input gradient is a convolution of the (stride-dilated, padded)
// output gradient with the flipped kernel, channels swapped per group; the
// weight gradient a convolution of the input with the output gradient as
// kernel (batch and channels exchanged, stride and dilation exchanged).
// Pooling routes the gradient through every kernel offset in turn.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Dialects/Kiln/IR/ShapeUtils.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace kiln;

using Grads = SmallVectorImpl<Value>;

namespace {
RankedTensorType withShape(Value like, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, cast<RankedTensorType>(like.getType()).getElementType());
}

SmallVector<int64_t> iota(int64_t begin, int64_t end) {
  SmallVector<int64_t> v;
  for (int64_t i = begin; i < end; ++i)
    v.push_back(i);
  return v;
}

/// The kernel offsets of a pooling window, row-major (the order in which
/// the forward pass scans it).
SmallVector<SmallVector<int64_t>> windowOffsets(ArrayRef<int64_t> kernel) {
  SmallVector<SmallVector<int64_t>> out{{}};
  for (int64_t k : kernel) {
    SmallVector<SmallVector<int64_t>> next;
    for (auto &prefix : out)
      for (int64_t r = 0; r < k; ++r) {
        next.push_back(prefix);
        next.back().push_back(r);
      }
    out = std::move(next);
  }
  return out;
}

/// Pooling geometry for routing gradients back: the input padded at the
/// begin by `pads` and at the end to exactly what the windows read.
struct Window {
  SmallVector<int64_t> kernel, strides, dilations, begin, end, outSpatial;
  size_t n;
  Window(ArrayRef<int64_t> inShape, ArrayRef<int64_t> outShape, ArrayRef<int64_t> kernel,
         ArrayRef<int64_t> strides, ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations)
      : kernel(kernel), strides(strides), n(kernel.size()) {
    this->dilations.assign(dilations.begin(), dilations.end());
    if (this->dilations.empty())
      this->dilations.assign(n, 1);
    for (size_t i = 0; i < n; ++i) {
      int64_t read = (outShape[2 + i] - 1) * strides[i] + (kernel[i] - 1) * this->dilations[i] + 1;
      begin.push_back(pads[i]);
      end.push_back(read - inShape[2 + i] - pads[i]);
      outSpatial.push_back(outShape[2 + i]);
    }
  }
  /// Pads of every dimension (N and C untouched), ONNX order.
  SmallVector<int64_t> padAmounts(int64_t sign) const {
    SmallVector<int64_t> p{0, 0};
    for (int64_t b : begin)
      p.push_back(sign * b);
    p.append({0, 0});
    for (int64_t e : end)
      p.push_back(sign * e);
    return p;
  }
  /// The input elements kernel offset `r` reads for every output position.
  Value gather(GradBuilder &g, Value padded, ArrayRef<int64_t> r) const {
    SmallVector<int64_t> starts, ends, axes;
    for (size_t i = 0; i < n; ++i) {
      starts.push_back(r[i] * dilations[i]);
      ends.push_back(r[i] * dilations[i] + (outSpatial[i] - 1) * strides[i] + 1);
      axes.push_back(2 + i);
    }
    return g.slice(padded, starts, ends, axes, strides);
  }
  /// The inverse of gather: `v` (output-shaped) placed where offset `r`
  /// read it, zeros elsewhere, in the padded input's shape.
  Value scatter(GradBuilder &g, Value v, ArrayRef<int64_t> r, ArrayRef<int64_t> paddedShape) const {
    SmallVector<int64_t> pads(2 * (n + 2), 0);
    for (size_t i = 0; i < n; ++i) {
      v = g.dilate(v, 2 + i, strides[i]);
      int64_t first = r[i] * dilations[i], len = (outSpatial[i] - 1) * strides[i] + 1;
      pads[2 + i] = first;
      pads[(n + 2) + 2 + i] = paddedShape[2 + i] - first - len;
    }
    return g.pad(v, pads);
  }
};
} // namespace

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                       Grads &operandGrads) {
  Value dy = resultGrads[0], a = getLhs(), b = getRhs();
  if (!isFloatTensor(a)) {
    operandGrads.append(2, Value());
    return success();
  }
  // Numpy's promotion of 1-D operands, then batched products.
  SmallVector<int64_t> as(shapeOf(a)), bs(shapeOf(b));
  if (as.size() == 1)
    as.insert(as.begin(), 1);
  if (bs.size() == 1)
    bs.push_back(1);
  auto batch = broadcastShapes(ArrayRef<int64_t>(as).drop_back(2),
                               ArrayRef<int64_t>(bs).drop_back(2));
  SmallVector<int64_t> ys(*batch);
  ys.append({as[as.size() - 2], bs.back()});
  Value a2 = g.reshape(a, as), b2 = g.reshape(b, bs), dy2 = g.reshape(dy, ys);
  Value da = g.op<MatmulOp>({dy2, g.transposeLast2(b2)});
  operandGrads.push_back(g.reshape(g.sumTo(da, withShape(a, as)), shapeOf(a)));
  // B shared by every batch of A (a layer's weights applied to a batch of
  // sequences): the batch folds into the contraction, dB = A^T dY over all
  // B*M rows at once, instead of a product per batch summed afterwards (a
  // batch-sized intermediate, and many small products).
  bool shared = ys.size() > 2 && llvm::all_of(ArrayRef<int64_t>(bs).drop_back(2),
                                                [](int64_t d) { return d == 1; });
  if (shared) {
    // (Rows of a dynamic batch and sequence: their count read at run time.)
    Value aRows = g.flattenRows(a2), dyRows = g.flattenRows(dy2);
    Value db = g.op<GemmOp>({aRows, dyRows}, {g.attr("trans_a", true)});
    operandGrads.push_back(g.reshape(db, shapeOf(b)));
    return success();
  }
  Value db = g.op<MatmulOp>({g.transposeLast2(a2), dy2});
  operandGrads.push_back(g.reshape(g.sumTo(db, withShape(b, bs)), shapeOf(b)));
  return success();
}

LogicalResult GemmOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                     Grads &operandGrads) {
  Value dy = resultGrads[0], a = getA(), b = getB();
  bool ta = getTransA(), tb = getTransB();
  auto gemm = [&](Value x, Value w, bool transX, bool transW) {
    return g.op<GemmOp>({x, w}, {g.attr("alpha", g.b.getF32FloatAttr(getAlpha().convertToFloat())),
                                 g.attr("trans_a", transX), g.attr("trans_b", transW)});
  };
  // Y = alpha op(A) op(B) + beta C; each case a Gemm, no transposes built.
  operandGrads.push_back(ta ? gemm(b, dy, tb, true) : gemm(dy, b, false, !tb));
  operandGrads.push_back(tb ? gemm(dy, a, true, ta) : gemm(a, dy, !ta, false));
  if (Value c = getC()) {
    double beta = getBeta().convertToFloat();
    operandGrads.push_back(g.sumTo(beta == 1.0 ? dy : g.mul(dy, beta), c.getType()));
  }
  return success();
}

namespace {
Value convWeightGradConv(GradBuilder &g, Value x, Value dy, ArrayRef<int64_t> ws,
                         ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                         ArrayRef<int64_t> dilations, int64_t groups);
Value convWeightGradRows(GradBuilder &g, Value x, Value dy, ArrayRef<int64_t> ws,
                         ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                         ArrayRef<int64_t> dilations, int64_t groups);
} // namespace

LogicalResult ConvOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                     Grads &operandGrads) {
  // Only kiln-sink-transposes makes one, after the gradients are built.
  if (getChannelsLast())
    return emitOpError("gradients of a channels-last conv are not supported");
  Value dy = resultGrads[0], x = getInput(), w = getWeight();
  ArrayRef<int64_t> xs = shapeOf(x), ws = shapeOf(w), ys = shapeOf(dy);
  ArrayRef<int64_t> strides = getStrides(), pads = getPads(), dilations = getDilations();
  int64_t groups = getGroup(), n = xs.size() - 2;
  int64_t C = xs[1], F = ws[0], Cg = C / groups, Fg = F / groups;
  SmallVector<int64_t> spatialAxes = iota(2, 2 + n);

  // dX: full correlation of the stride-dilated dy with the flipped kernel.
  Value v = dy;
  SmallVector<int64_t> padAmounts(2 * (n + 2), 0);
  for (int64_t i = 0; i < n; ++i) {
    v = g.dilate(v, 2 + i, strides[i]);
    int64_t k = ws[2 + i], d = dilations[i], pb = pads[i];
    padAmounts[2 + i] = (k - 1) * d - pb;
    padAmounts[(n + 2) + 2 + i] = xs[2 + i] + pb - (ys[2 + i] - 1) * strides[i] - 1;
  }
  v = g.pad(v, padAmounts);
  int64_t big = std::numeric_limits<int64_t>::min() / 2;
  Value flipped = g.slice(w, SmallVector<int64_t>(n, -1), SmallVector<int64_t>(n, big),
                          spatialAxes, SmallVector<int64_t>(n, -1));
  SmallVector<int64_t> grouped{groups, Fg, Cg};
  grouped.append(ws.begin() + 2, ws.end());
  SmallVector<int64_t> swap{0, 2, 1};
  swap.append(iota(3, 3 + n));
  SmallVector<int64_t> swappedShape{C, Fg};
  swappedShape.append(ws.begin() + 2, ws.end());
  Value kernel = g.reshape(g.transpose(g.reshape(flipped, grouped), swap), swappedShape);
  operandGrads.push_back(g.op<ConvOp>(
      {v, kernel}, {g.attr("strides", SmallVector<int64_t>(n, 1)),
                    g.attr("pads", SmallVector<int64_t>(2 * n, 0)),
                    g.attr("dilations", dilations), g.attr("group", groups)}));

  auto weightGrad = ShapedType::isDynamic(xs[0]) ? convWeightGradRows : convWeightGradConv;
  operandGrads.push_back(weightGrad(g, x, dy, ws, strides, pads, dilations, groups));
  if (getBias()) {
    SmallVector<int64_t> axes{0};
    axes.append(spatialAxes);
    operandGrads.push_back(g.reduceSum(dy, axes, /*keepdims=*/false));
  }
  return success();
}

namespace {
/// dW as a convolution: x as [Cg, G*N, S...] convolved with dy as
/// [F, N, O...] (G groups), stride and dilation exchanged; the extra
/// trailing positions cut off.
Value convWeightGradConv(GradBuilder &g, Value x, Value dy, ArrayRef<int64_t> ws,
                         ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                         ArrayRef<int64_t> dilations, int64_t groups) {
  ArrayRef<int64_t> xs = shapeOf(x);
  int64_t n = xs.size() - 2, N = xs[0], Cg = xs[1] / groups;
  SmallVector<int64_t> spatialAxes = iota(2, 2 + n);
  SmallVector<int64_t> xg{N, groups, Cg};
  xg.append(xs.begin() + 2, xs.end());
  SmallVector<int64_t> toCg{2, 1, 0};
  toCg.append(iota(3, 3 + n));
  SmallVector<int64_t> xtShape{Cg, groups * N};
  xtShape.append(xs.begin() + 2, xs.end());
  Value xt = g.reshape(g.transpose(g.reshape(x, xg), toCg), xtShape);
  SmallVector<int64_t> nc{1, 0};
  nc.append(iota(2, 2 + n));
  Value dyt = g.transpose(dy, nc);
  Value dw = g.op<ConvOp>({xt, dyt}, {g.attr("strides", dilations), g.attr("pads", pads),
                                      g.attr("dilations", strides), g.attr("group", groups)});
  dw = g.slice(dw, SmallVector<int64_t>(n, 0), SmallVector<int64_t>(ws.begin() + 2, ws.end()),
               spatialAxes, SmallVector<int64_t>(n, 1));
  return g.transpose(dw, nc);
}

/// dW under a dynamic batch, which can't become a convolution's channels
/// (convolutions take static weights): the columns every kernel offset
/// reads, [G, Cg*K, N*P] (P output positions), contracted with dy as
/// [G, Fg, N*P] over the run-time N*P.
Value convWeightGradRows(GradBuilder &g, Value x, Value dy, ArrayRef<int64_t> ws,
                         ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                         ArrayRef<int64_t> dilations, int64_t groups) {
  ArrayRef<int64_t> xs = shapeOf(x), ys = shapeOf(dy);
  int64_t C = xs[1], F = ws[0], Cg = C / groups, Fg = F / groups;
  int64_t K = numElements(ws.drop_front(2)), P = numElements(ys.drop_front(2));
  Window win(xs, ys, ws.drop_front(2), strides, pads, dilations);
  Value padded = g.pad(x, win.padAmounts(1));
  SmallVector<Value> pieces;
  for (auto &r : windowOffsets(win.kernel)) {
    SmallVector<int64_t> one{xs[0], C, 1};
    one.append(ys.begin() + 2, ys.end());
    pieces.push_back(g.reshape(win.gather(g, padded, r), one));
  }
  Value cols =
      pieces.size() == 1 ? pieces[0] : g.op<ConcatOp>(pieces, {g.attr("axis", (int64_t)2)});
  // [N, G, X, P] -> [G, X, N, P] -> [G, X, N*P]
  auto byGroup = [&](Value v, int64_t rows) {
    Value split = g.reshape(v, {xs[0], groups, rows, P});
    return g.collapse(g.transpose(split, {1, 2, 0, 3}), {0, 1, 2});
  };
  Value a = byGroup(dy, Fg), b = byGroup(cols, Cg * K);
  Value dw;
  if (groups == 1) {
    Value a2 = g.collapse(a, {0, 2}), b2 = g.collapse(b, {0, 2});
    dw = g.op<GemmOp>({a2, b2}, {g.attr("trans_b", true)});
  } else {
    dw = g.op<MatmulOp>({a, g.transposeLast2(b)});
  }
  return g.reshape(dw, ws);
}
} // namespace

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

LogicalResult BatchNormOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                          Grads &operandGrads) {
  // Inference form: mean and variance are inputs, not batch statistics
  // (training mode is decomposed before autograd runs).
  Value dy = resultGrads[0], x = getInput();
  int64_t rank = shapeOf(x).size(), C = shapeOf(x)[1];
  SmallVector<int64_t> bshape(rank, 1);
  bshape[1] = C;
  SmallVector<int64_t> axes{0};
  axes.append(iota(2, rank));
  auto perChannel = [&](Value v) { return g.reshape(v, bshape); };
  Value inv = g.unary("kiln.reciprocal",
                      g.unary("kiln.sqrt", g.add(getVariance(), getEpsilon().convertToFloat())));
  Value centered = g.sub(x, perChannel(getMean()));
  Value scaleInv = g.mul(getScale(), inv);
  Value sumDy = g.reduceSum(dy, axes, false);
  Value sumDyXc = g.reduceSum(g.mul(dy, centered), axes, false);
  operandGrads.push_back(g.mul(dy, perChannel(scaleInv)));
  operandGrads.push_back(g.mul(sumDyXc, inv));
  operandGrads.push_back(sumDy);
  operandGrads.push_back(g.neg(g.mul(sumDy, scaleInv)));
  operandGrads.push_back(
      g.mul(g.mul(sumDyXc, scaleInv), g.mul(g.square(inv), -0.5)));
  return success();
}

LogicalResult LayerNormOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                          Grads &operandGrads) {
  Value dy = resultGrads[0], x = getInput(), scale = getScale();
  int64_t rank = shapeOf(x).size();
  int64_t axis = *normalizeAxis(getAxis(), rank);
  SmallVector<int64_t> axes = iota(axis, rank);
  Value mean = g.reduceMean(x, axes, true);
  Value centered = g.sub(x, mean);
  Value var = g.reduceMean(g.square(centered), axes, true);
  Value rstd = g.unary("kiln.reciprocal",
                       g.unary("kiln.sqrt", g.add(var, getEpsilon().convertToFloat())));
  Value xhat = g.mul(centered, rstd);
  Value dxhat = g.mul(dy, scale);
  // rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
  Value dx = g.mul(rstd, g.sub(g.sub(dxhat, g.reduceMean(dxhat, axes, true)),
                               g.mul(xhat, g.reduceMean(g.mul(dxhat, xhat), axes, true))));
  operandGrads.push_back(dx);
  operandGrads.push_back(g.sumTo(g.mul(dy, xhat), scale.getType()));
  if (Value bias = getBias())
    operandGrads.push_back(g.sumTo(dy, bias.getType()));
  return success();
}

LogicalResult SoftmaxOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                        Grads &operandGrads) {
  Value dy = resultGrads[0], y = getResult();
  int64_t axis = *normalizeAxis(getAxis(), shapeOf(y).size());
  Value dot = g.reduceSum(g.mul(dy, y), {axis}, true);
  operandGrads.push_back(g.mul(y, g.sub(dy, dot)));
  return success();
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

LogicalResult MaxPoolOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                        Grads &operandGrads) {
  Value dy = resultGrads[0], x = getInput(), y = getResult();
  Window win(shapeOf(x), shapeOf(y), getKernelShape(), getStrides(), getPads(), getDilations());
  Value padded = g.pad(x, win.padAmounts(1), -std::numeric_limits<double>::infinity());
  SmallVector<int64_t> paddedShape(shapeOf(padded));
  // The first maximum of each window in scan order takes the gradient, as
  // PyTorch's max_pool2d (whose indices point at the first).
  Value taken, acc;
  Value zero = g.scalar(0, dy);
  for (auto &r : windowOffsets(win.kernel)) {
    Value hit = g.op<EqualOp>({win.gather(g, padded, r), y});
    Value first = taken ? g.op<AndOp>({hit, g.op<NotOp>({taken})}) : hit;
    taken = taken ? g.op<OrOp>({taken, hit}) : hit;
    Value part = win.scatter(g, g.where(first, dy, zero), r, paddedShape);
    acc = acc ? g.add(acc, part) : part;
  }
  operandGrads.push_back(g.pad(acc, win.padAmounts(-1)));
  return success();
}

LogicalResult AvgPoolOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                        Grads &operandGrads) {
  Value dy = resultGrads[0], x = getInput();
  ArrayRef<int64_t> xs = shapeOf(x), ys = shapeOf(dy);
  Window win(xs, ys, getKernelShape(), getStrides(), getPads(), {});
  auto divisors = avgPoolDivisors(xs.drop_front(2), ys.drop_front(2), getKernelShape(),
                                  getStrides(), getPads(), getCountIncludePad());
  SmallVector<double> inv;
  for (int64_t d : divisors)
    inv.push_back(1.0 / d);
  auto et = cast<FloatType>(cast<RankedTensorType>(x.getType()).getElementType());
  auto invType = RankedTensorType::get(ys.drop_front(2), et);
  SmallVector<APFloat> values;
  for (double v : inv) {
    APFloat f(v);
    bool lost;
    f.convert(et.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    values.push_back(f);
  }
  Value scaled = g.mul(dy, ConstantOp::create(g.b, g.loc, DenseElementsAttr::get(invType, values)));
  SmallVector<int64_t> paddedShape(xs);
  for (size_t i = 0; i < win.n; ++i)
    paddedShape[2 + i] += win.begin[i] + win.end[i];
  Value acc;
  for (auto &r : windowOffsets(win.kernel)) {
    Value part = win.scatter(g, scaled, r, paddedShape);
    acc = acc ? g.add(acc, part) : part;
  }
  operandGrads.push_back(g.pad(acc, win.padAmounts(-1)));
  return success();
}

LogicalResult GlobalAvgPoolOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                              Grads &operandGrads) {
  Value dy = resultGrads[0], x = getInput();
  int64_t count = numElements(shapeOf(x).drop_front(2));
  operandGrads.push_back(g.broadcastLike(g.mul(dy, 1.0 / count), x));
  return success();
}

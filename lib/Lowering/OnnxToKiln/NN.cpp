//===- NN.cpp - ONNX contractions and normalization => kiln ---------------===//

#include "Expr.h"
#include "NodeContext.h"
#include "Quantize.h"
#include "RuntimeShapes.h"

#include <algorithm>
#include <limits>

#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Dialects/Kiln/IR/ShapeUtils.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;

namespace kiln {
namespace {

NamedAttribute i64s(NodeContext &nc, StringRef name, ArrayRef<int64_t> v) {
  return nc.b.getNamedAttr(name, nc.b.getDenseI64ArrayAttr(v));
}

LogicalResult matmul(NodeContext &nc) {
  auto a = nc.input(0), b = nc.input(1);
  if (failed(a) || failed(b))
    return failure();
  if (Value y = dequantizedProduct(nc, /*gemm=*/false))
    return nc.setOutput(0, y);
  return nc.emit<MatmulOp>({*a, *b});
}

LogicalResult gemm(NodeContext &nc) {
  auto operands = nc.presentInputs(3, /*required=*/2);
  if (failed(operands))
    return failure();
  auto &b = nc.b;
  if (Value y = dequantizedProduct(nc, /*gemm=*/true))
    return nc.setOutput(0, y);
  return nc.emit<GemmOp>(*operands,
                         {b.getNamedAttr("alpha", b.getF32FloatAttr(nc.attrFloat("alpha", 1.0))),
                          b.getNamedAttr("beta", b.getF32FloatAttr(nc.attrFloat("beta", 1.0))),
                          b.getNamedAttr("trans_a", b.getBoolAttr(nc.attrInt("transA", 0))),
                          b.getNamedAttr("trans_b", b.getBoolAttr(nc.attrInt("transB", 0)))});
}

} // namespace

/// Explicit pads from auto_pad (SAME_UPPER/SAME_LOWER/VALID) or `pads`, in
/// kiln's [begin..., end...] order.
FailureOr<SmallVector<int64_t>> resolvePads(NodeContext &nc, ArrayRef<int64_t> in,
                                            ArrayRef<int64_t> kernel,
                                            ArrayRef<int64_t> strides,
                                            ArrayRef<int64_t> dilations) {
  size_t n = kernel.size();
  // SAME padding divides by the strides (a fuzzed stride of 0 did).
  for (auto [name, values] : {std::pair{"strides", strides}, std::pair{"dilations", dilations}})
    for (int64_t v : values)
      if (v < 1)
        return nc.error(Twine(name) + " must be positive, got " + Twine(v));
  std::string autoPad = nc.attrString("auto_pad", "NOTSET");
  if (autoPad == "NOTSET") {
    auto pads = nc.attrInts("pads", std::vector<int64_t>(2 * n, 0));
    if (pads.size() != 2 * n)
      return nc.error("pads has " + Twine(pads.size()) + " values, expected " + Twine(2 * n));
    for (int64_t p : pads)
      if (p < 0)
        return nc.error("negative pads are not supported");
    return SmallVector<int64_t>(pads.begin(), pads.end());
  }
  SmallVector<int64_t> pads(2 * n, 0);
  if (autoPad == "VALID")
    return pads;
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER")
    return nc.error("unknown auto_pad '" + autoPad + "'");
  for (size_t i = 0; i < n; ++i) {
    // SAME pads depend on the input size: a dynamic spatial dim would need
    // run-time pads, which the padded ops do not take.
    if (ShapedType::isDynamic(in[i]))
      return nc.error("auto_pad " + autoPad + " needs a static spatial size (axis " +
                      Twine(i + 2) + " is dynamic); export with explicit pads");
    // Fuzzed strides, dilations or kernels can overflow the pad arithmetic.
    if (kernel[i] < 1)
      return nc.error("kernel size " + Twine(kernel[i]) + " on axis " + Twine(i + 2) +
                      " must be positive and static");
    std::optional<int64_t> out = llvm::checkedAdd(in[i], strides[i] - 1);
    std::optional<int64_t> reach = llvm::checkedMul(dilations[i], kernel[i] - 1);
    std::optional<int64_t> span =
        out && reach ? llvm::checkedMul(*out / strides[i] - 1, strides[i]) : std::nullopt;
    std::optional<int64_t> end = span ? llvm::checkedAdd(*span, *reach) : std::nullopt;
    if (!end)
      return nc.error("kernel " + Twine(kernel[i]) + ", stride " + Twine(strides[i]) +
                      " and dilation " + Twine(dilations[i]) + " on axis " + Twine(i + 2) +
                      " are out of range");
    int64_t total = std::max<int64_t>(0, *end + 1 - in[i]);
    int64_t small = total / 2, large = total - small;
    pads[i] = autoPad == "SAME_UPPER" ? small : large;
    pads[i + n] = autoPad == "SAME_UPPER" ? large : small;
  }
  return pads;
}

/// 1-D convolution/pooling run as 2-D with a unit height.
Value addUnitHeight(NodeContext &nc, Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  auto s = t.getShape();
  auto type = RankedTensorType::get({s[0], s[1], 1, s[2]}, t.getElementType());
  return ReshapeOp::create(nc.b, nc.loc, type, v);
}

/// The 2-D result of a 1-D convolution/pooling back to 1-D.
Value dropUnitHeight(NodeContext &nc, Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  auto s = t.getShape();
  return ReshapeOp::create(nc.b, nc.loc,
                           RankedTensorType::get({s[0], s[1], s[3]}, t.getElementType()), v);
}

FailureOr<Value> buildConv(NodeContext &nc, Value x, Value w, Value bias) {
  auto xt = cast<RankedTensorType>(x.getType()), wt = cast<RankedTensorType>(w.getType());
  if (xt.getRank() != wt.getRank() || xt.getRank() < 3 || xt.getRank() > 5)
    return nc.error("only 1-D, 2-D and 3-D convolutions are supported (input rank " +
                    Twine(xt.getRank()) + ", weight rank " + Twine(wt.getRank()) + ")");
  bool is1d = xt.getRank() == 3;
  size_t n = xt.getRank() - 2;
  auto kernel = wt.getShape().drop_front(2);
  auto strides = nc.attrInts("strides", std::vector<int64_t>(n, 1));
  auto dilations = nc.attrInts("dilations", std::vector<int64_t>(n, 1));
  if (strides.size() != n || dilations.size() != n)
    return nc.error("strides/dilations must have " + Twine(n) + " values");
  auto pads = resolvePads(nc, xt.getShape().drop_front(2), kernel, strides, dilations);
  if (failed(pads))
    return failure();
  Value input = x, weight = w;
  if (is1d) {
    input = addUnitHeight(nc, input);
    weight = addUnitHeight(nc, weight);
    strides.insert(strides.begin(), 1);
    dilations.insert(dilations.begin(), 1);
    *pads = {0, (*pads)[0], 0, (*pads)[1]};
  }
  SmallVector<Value> operands{input, weight};
  if (bias)
    operands.push_back(bias);
  auto op = nc.build<ConvOp>(operands, {i64s(nc, "strides", strides), i64s(nc, "pads", *pads),
                                          i64s(nc, "dilations", dilations),
                                          nc.b.getNamedAttr("group", nc.b.getI64IntegerAttr(
                                                                         nc.attrInt("group", 1)))});
  if (failed(op))
    return failure();
  Value r = (*op)->getResult(0);
  return is1d ? dropUnitHeight(nc, r) : r;
}

namespace {

LogicalResult conv(NodeContext &nc) {
  auto x = nc.input(0), w = nc.input(1);
  if (failed(x) || failed(w))
    return failure();
  Value bias;
  if (nc.has(2)) {
    auto b = nc.input(2);
    if (failed(b))
      return failure();
    bias = *b;
  }
  if (Value y = dequantizedConv(nc, bias))
    return nc.setOutput(0, y);
  auto r = buildConv(nc, *x, *w, bias);
  return failed(r) ? failure() : nc.setOutput(0, *r);
}

/// ConvTranspose as a convolution: spread the input with (stride - 1) zeros
/// between elements, pad by dilation * (kernel - 1) - pad (negative crops),
/// then convolve (stride 1) with the spatially flipped kernel whose in/out
/// channels are swapped per group.
LogicalResult convTranspose(NodeContext &nc) {
  auto x = nc.input(0), w = nc.input(1);
  if (failed(x) || failed(w))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType()), wt = cast<RankedTensorType>(w->getType());
  if (xt.getRank() != wt.getRank() || xt.getRank() < 3 || xt.getRank() > 5)
    return nc.error("only 1-D, 2-D and 3-D transposed convolutions are supported (input rank " +
                    Twine(xt.getRank()) + ", weight rank " + Twine(wt.getRank()) + ")");
  bool is1d = xt.getRank() == 3;
  size_t n = xt.getRank() - 2;
  int64_t g = nc.attrInt("group", 1);
  int64_t cin = xt.getDimSize(1), fPerGroup = wt.getDimSize(1);
  if (g < 1 || cin != wt.getDimSize(0) || cin % g)
    return nc.error("weight must be [C, F/group, k...] with C = " + Twine(cin));
  auto strides = nc.attrInts("strides", std::vector<int64_t>(n, 1));
  auto dilations = nc.attrInts("dilations", std::vector<int64_t>(n, 1));
  auto outPad = nc.attrInts("output_padding", std::vector<int64_t>(n, 0));
  auto pads = nc.attrInts("pads", std::vector<int64_t>(2 * n, 0));
  auto outShape = nc.attrInts("output_shape");
  std::string autoPad = nc.attrString("auto_pad", "NOTSET");
  if (strides.size() != n || dilations.size() != n || outPad.size() != n || pads.size() != 2 * n)
    return nc.error("strides, dilations, output_padding and pads must match the rank");
  if (!outShape.empty() && outShape.size() < n)
    return nc.error("output_shape has " + Twine(outShape.size()) + " sizes; the " + Twine(n) +
                    " spatial ones are needed");
  if (!outShape.empty() || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      int64_t in = xt.getDimSize(2 + i), k = wt.getDimSize(2 + i);
      int64_t out = outShape.empty() ? in * strides[i] : outShape[outShape.size() - n + i];
      int64_t total = strides[i] * (in - 1) + outPad[i] + (k - 1) * dilations[i] + 1 - out;
      // Floor division, as ONNX's reference: a negative total extends the end.
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      bool upper = autoPad == "SAME_UPPER";
      pads[i] = upper ? half : total - half;
      pads[i + n] = upper ? total - half : half;
    }
  }
  Expr e(nc, *x);
  Value in = *x, kernel = *w;
  if (is1d) {
    in = addUnitHeight(nc, in);
    kernel = addUnitHeight(nc, kernel);
    strides.insert(strides.begin(), 1);
    dilations.insert(dilations.begin(), 1);
    outPad.insert(outPad.begin(), 0);
    pads = {0, pads[0], 0, pads[1]};
  }
  auto it = cast<RankedTensorType>(in.getType());
  auto kt = cast<RankedTensorType>(kernel.getType());
  size_t sp = it.getRank() - 2; // spatial dimensions: 2 or 3
  int64_t N = it.getDimSize(0);
  SmallVector<int64_t> dims(it.getShape().drop_front(2)), ks(kt.getShape().drop_front(2));
  // 1. Zeros between elements: [N, C, d, 1, ...] padded to [N, C, d, s, ...].
  if (llvm::any_of(strides, [](int64_t st) { return st > 1; })) {
    SmallVector<int64_t> split{N, cin}, spread{N, cin}, padSpec(2 * (2 + 2 * sp), 0), ends;
    SmallVector<int64_t> axes, ones;
    for (size_t i = 0; i < sp; ++i) {
      split.append({dims[i], 1});
      spread.push_back(dims[i] * strides[i]);
      padSpec[(2 + 2 * sp) + 2 + 2 * i + 1] = strides[i] - 1;
      ends.push_back((dims[i] - 1) * strides[i] + 1);
      axes.push_back(2 + i);
      ones.push_back(1);
    }
    Value v = e.op<PadOp>({e.reshape(in, split)}, {i64s(nc, "pads", padSpec)});
    in = e.op<SliceOp>({e.reshape(v, spread)},
                       {i64s(nc, "starts", SmallVector<int64_t>(sp, 0)), i64s(nc, "ends", ends),
                        i64s(nc, "axes", axes), i64s(nc, "steps", ones)});
  }
  // 2. Full padding minus the requested pads (+ output_padding at the end).
  SmallVector<int64_t> full(2 * (2 + sp), 0);
  for (size_t i = 0; i < sp; ++i) {
    full[2 + i] = dilations[i] * (ks[i] - 1) - pads[i];
    full[2 + sp + 2 + i] = dilations[i] * (ks[i] - 1) - pads[sp + i] + outPad[i];
  }
  in = e.op<PadOp>({in}, {i64s(nc, "pads", full)});
  // 3. Flip the kernel spatially and swap channels within each group.
  int64_t big = std::numeric_limits<int64_t>::min() / 2;
  SmallVector<int64_t> spatialAxes, minusOnes(sp, -1), bigs(sp, big);
  for (size_t i = 0; i < sp; ++i)
    spatialAxes.push_back(2 + i);
  kernel = e.op<SliceOp>({kernel}, {i64s(nc, "starts", minusOnes), i64s(nc, "ends", bigs),
                                    i64s(nc, "axes", spatialAxes), i64s(nc, "steps", minusOnes)});
  SmallVector<int64_t> grouped{g, cin / g, fPerGroup}, perm{0, 2, 1}, swapped{g * fPerGroup, cin / g};
  for (size_t i = 0; i < sp; ++i) {
    grouped.push_back(ks[i]);
    perm.push_back(3 + i);
    swapped.push_back(ks[i]);
  }
  kernel = e.reshape(kernel, grouped);
  kernel = e.op<TransposeOp>({kernel}, {i64s(nc, "perm", perm)});
  kernel = e.reshape(kernel, swapped);
  SmallVector<Value> operands{in, kernel};
  if (nc.has(2)) {
    auto bias = nc.input(2);
    if (failed(bias))
      return failure();
    operands.push_back(*bias);
  }
  auto conv = nc.build<ConvOp>(
      operands, {i64s(nc, "strides", SmallVector<int64_t>(sp, 1)),
                 i64s(nc, "pads", SmallVector<int64_t>(2 * sp, 0)),
                 i64s(nc, "dilations", dilations),
                 nc.b.getNamedAttr("group", nc.b.getI64IntegerAttr(g))});
  if (failed(conv))
    return failure();
  Value r = (*conv)->getResult(0);
  return nc.setOutput(0, is1d ? dropUnitHeight(nc, r) : r);
}

/// training_mode=1: normalized with the batch's mean and (biased) variance
/// over every dimension but 1; outputs 1 and 2 are the running statistics,
/// input * momentum + batch * (1 - momentum), as ONNX's reference computes.
LogicalResult batchNormTraining(NodeContext &nc, SmallVector<Value> operands) {
  Value x = operands[0];
  auto xt = cast<RankedTensorType>(x.getType());
  if (xt.getRank() < 2)
    return nc.error("expects X of rank >= 2");
  Expr e(nc, x);
  SmallVector<int64_t> axes{0}, perChannel(xt.getRank(), 1);
  for (int64_t d = 2; d < xt.getRank(); ++d)
    axes.push_back(d);
  perChannel[1] = xt.getDimSize(1);
  auto meanOver = [&](Value v) {
    return e.op<ReduceMeanOp>({v}, {i64s(nc, "axes", axes),
                                    nc.b.getNamedAttr("keepdims", nc.b.getBoolAttr(false))});
  };
  Value mean = meanOver(x);
  Value centered = e.sub(x, e.reshape(mean, perChannel));
  Value var = meanOver(e.mul(centered, centered));
  double momentum = nc.attrFloat("momentum", 0.9);
  auto y = nc.build<BatchNormOp>(
      {x, operands[1], operands[2], mean, var},
      {nc.b.getNamedAttr("epsilon", nc.b.getF32FloatAttr(nc.attrFloat("epsilon", 1e-5)))});
  if (failed(y) || failed(nc.setOutput(0, (*y)->getResult(0))))
    return failure();
  Value runMean = e.add(e.mul(operands[3], e.c(momentum)), e.mul(mean, e.c(1 - momentum)));
  Value runVar = e.add(e.mul(operands[4], e.c(momentum)), e.mul(var, e.c(1 - momentum)));
  if (nc.hasOutput(1) && failed(nc.setOutput(1, runMean)))
    return failure();
  if (nc.hasOutput(2) && failed(nc.setOutput(2, runVar)))
    return failure();
  return success();
}

LogicalResult batchNorm(NodeContext &nc) {
  auto operands = nc.presentInputs(5, /*required=*/5);
  if (failed(operands))
    return failure();
  if (nc.attrInt("training_mode", 0))
    return batchNormTraining(nc, *operands);
  return nc.emit<BatchNormOp>(
      *operands,
      {nc.b.getNamedAttr("epsilon", nc.b.getF32FloatAttr(nc.attrFloat("epsilon", 1e-5))),
       nc.b.getNamedAttr("momentum", nc.b.getF32FloatAttr(nc.attrFloat("momentum", 0.9)))});
}

LogicalResult softmax(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  int64_t axis = nc.attrInt("axis", nc.opset >= 13 ? -1 : 1);
  auto axisAttr = [&](int64_t a) { return nc.b.getNamedAttr("axis", nc.b.getI64IntegerAttr(a)); };
  if (nc.opset >= 13)
    return nc.emit<SoftmaxOp>({*x}, {axisAttr(axis)});
  // Before opset 13 the input is viewed as 2-D at `axis`.
  auto flat = nc.build<FlattenOp>({*x}, {axisAttr(axis)});
  if (failed(flat))
    return failure();
  auto sm = SoftmaxOp::create(nc.b, nc.loc, (*flat)->getResult(0), 1);
  return nc.setOutput(0, ReshapeOp::create(nc.b, nc.loc, xt, sm));
}

LogicalResult layerNorm(NodeContext &nc) {
  auto operands = nc.presentInputs(3, /*required=*/2); // X, Scale
  if (failed(operands))
    return failure();
  if (nc.attrInt("stash_type", 1) != 1)
    return nc.error("only stash_type=1 (float32 statistics) is supported");
  auto &b = nc.b;
  int64_t axis = nc.attrInt("axis", -1);
  double eps = nc.attrFloat("epsilon", 1e-5);
  if (failed(nc.emit<LayerNormOp>(
          *operands, {b.getNamedAttr("axis", b.getI64IntegerAttr(axis)),
                      b.getNamedAttr("epsilon", b.getF32FloatAttr(eps))})))
    return failure();
  if (!nc.hasOutput(1) && !nc.hasOutput(2))
    return success();
  // The optional statistics outputs: mean and 1/sqrt(var + eps) over the
  // normalized dimensions, kept as size 1.
  Value x = (*operands)[0];
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  SmallVector<int64_t> axes;
  for (int64_t d = axis < 0 ? axis + rank : axis; d < rank; ++d)
    axes.push_back(d);
  Expr e(nc, x);
  Value mean = e.reduce<ReduceMeanOp>(x, axes);
  Value centered = e.sub(x, mean);
  Value var = e.reduce<ReduceMeanOp>(e.mul(centered, centered), axes);
  (void)nc.setOutput(1, mean);
  return nc.setOutput(2, e.div(e.c(1), e.sqrt(e.add(var, e.c(eps)))));
}

LogicalResult logSoftmax(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  int64_t axis = nc.attrInt("axis", nc.opset >= 13 ? -1 : 1);
  if (axis < 0)
    axis += xt.getRank();
  if (axis < 0 || axis >= xt.getRank())
    return nc.error("axis out of range");
  Expr e(nc, *x);
  Value in = *x;
  SmallVector<int64_t> axes{axis};
  if (nc.opset < 13) { // over the input flattened to 2-D at `axis`
    auto flat = nc.build<FlattenOp>({in}, {nc.b.getNamedAttr("axis", nc.b.getI64IntegerAttr(axis))});
    if (failed(flat))
      return failure();
    in = (*flat)->getResult(0);
    axes = {1};
  }
  // x - max - log(sum(exp(x - max))): stable for large inputs.
  Value shifted = e.sub(in, e.reduce<ReduceMaxOp>(in, axes));
  Value r = e.sub(shifted, e.log(e.reduce<ReduceSumOp>(e.exp(shifted), axes)));
  if (nc.opset < 13)
    r = ReshapeOp::create(nc.b, nc.loc, xt, r);
  return nc.setOutput(0, r);
}

LogicalResult instanceNorm(NodeContext &nc) {
  auto x = nc.input(0), scale = nc.input(1), bias = nc.input(2);
  if (failed(x) || failed(scale) || failed(bias))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  if (xt.getRank() < 3)
    return nc.error("expects an input of rank >= 3 (N, C, spatial...)");
  SmallVector<int64_t> axes, paramShape{xt.getDimSize(1)};
  for (int64_t d = 2; d < xt.getRank(); ++d) {
    axes.push_back(d);
    paramShape.push_back(1);
  }
  Expr e(nc, *x);
  Value centered = e.sub(*x, e.reduce<ReduceMeanOp>(*x, axes));
  Value var = e.reduce<ReduceMeanOp>(e.mul(centered, centered), axes);
  Value norm = e.div(centered, e.sqrt(e.add(var, e.c(nc.attrFloat("epsilon", 1e-5)))));
  return nc.setOutput(0, e.add(e.mul(norm, e.reshape(*scale, paramShape)),
                               e.reshape(*bias, paramShape)));
}

/// GroupNormalization: statistics over each group of channels and all
/// spatial positions; scale and bias are per channel (opset 21) or per
/// group (opset 18).
LogicalResult groupNorm(NodeContext &nc) {
  auto x = nc.input(0), scale = nc.input(1), bias = nc.input(2);
  if (failed(x) || failed(scale) || failed(bias))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  int64_t groups = nc.attrInt("num_groups", 0), c = xt.getRank() >= 2 ? xt.getDimSize(1) : 0;
  if (xt.getRank() < 3 || groups < 1 || c % groups)
    return nc.error("expects (N, C, spatial...) with C divisible by num_groups");
  int64_t n = xt.getDimSize(0), spatial = xt.getNumElements() / (n * c);
  Expr e(nc, *x);
  Value g = e.reshape(*x, {n, groups, (c / groups) * spatial});
  Value centered = e.sub(g, e.reduce<ReduceMeanOp>(g, {2}));
  Value var = e.reduce<ReduceMeanOp>(e.mul(centered, centered), {2});
  Value norm = e.div(centered, e.sqrt(e.add(var, e.c(nc.attrFloat("epsilon", 1e-5)))));
  auto st = cast<RankedTensorType>(scale->getType());
  Value out;
  if (st.getNumElements() == groups && groups != c) { // per group (opset 18)
    out = e.add(e.mul(norm, e.reshape(*scale, {1, groups, 1})), e.reshape(*bias, {1, groups, 1}));
    out = e.reshape(out, xt.getShape());
  } else {
    SmallVector<int64_t> pshape(xt.getRank(), 1);
    pshape[1] = c;
    out = e.reshape(norm, xt.getShape());
    out = e.add(e.mul(out, e.reshape(*scale, pshape)), e.reshape(*bias, pshape));
  }
  return nc.setOutput(0, out);
}

LogicalResult lpNorm(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  int64_t p = nc.attrInt("p", 2), axis = nc.attrInt("axis", -1);
  if (p != 1 && p != 2)
    return nc.error("p must be 1 or 2, got " + Twine(p));
  Expr e(nc, *x);
  SmallVector<int64_t> axes{axis};
  Value norm = p == 1 ? e.reduce<ReduceSumOp>(e.abs(*x), axes)
                      : e.sqrt(e.reduce<ReduceSumOp>(e.mul(*x, *x), axes));
  return nc.setOutput(0, e.div(*x, norm));
}

/// A training-mode Dropout whose ratio is data (a compiled model, not a
/// --train step): kiln-decompose-dropout's masks, from counter 0, kept
/// where u >= ratio and scaled by 1 / (1 - ratio); `mode`, when given,
/// chooses between that and the identity at run time.
LogicalResult dropoutByRuntimeRatio(NodeContext &nc, Value x, Value mode) {
  auto ratio = nc.input(1);
  if (failed(ratio))
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  auto rt = cast<RankedTensorType>(ratio->getType());
  if (rt.getRank() != 0 || rt.getElementType() != xt.getElementType())
    return nc.error("ratio must be a scalar of the data's type");
  if (!xt.hasStaticShape())
    return nc.error("a ratio given as data needs the data's shape known at compile time");
  int64_t seed = nc.attrInt("seed", (int64_t)(llvm::hash_value(nc.node.output(0)) & 0x7fffffff));
  KnownTensor zero;
  zero.elementType = nc.b.getI64Type();
  zero.values = {0};
  Value u = RandomUniformOp::create(nc.b, nc.loc, xt, nc.constant(zero), seed);
  Expr e(nc, x);
  Value keep = e.op<GreaterEqualOp>({u, *ratio});
  Value y = e.where(keep, e.div(x, e.sub(e.c(1), *ratio)), e.c(0));
  Value mask = keep;
  if (mode) {
    y = arith::SelectOp::create(nc.b, nc.loc, mode, y, x);
    mask = arith::SelectOp::create(nc.b, nc.loc, mode, keep, e.op<GreaterEqualOp>({x, x}));
  }
  if (nc.hasFailed() || failed(nc.setOutput(0, y)))
    return failure();
  return nc.hasOutput(1) ? nc.setOutput(1, mask) : success();
}

/// Inference: the identity (mask all true). Training-mode (training_mode
/// true, or any Dropout when compiling with --train): kiln.dropout, whose
/// mask is counter-based random (kiln-decompose-dropout). A training_mode
/// known only at run time selects between the two.
LogicalResult dropout(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  bool training = nc.training;
  // A training_mode given as data: both results, chosen at run time.
  Value runtimeMode;
  if (nc.has(2)) {
    const KnownTensor *mode = nc.known(2);
    if (!mode) {
      auto flag = runtimeScalar(nc, 2, "training_mode");
      if (failed(flag))
        return failure();
      runtimeMode = arith::CmpIOp::create(
          nc.b, nc.loc, arith::CmpIPredicate::ne, *flag,
          arith::ConstantOp::create(nc.b, nc.loc, nc.b.getZeroAttr(flag->getType())));
    } else if (mode->numElements() != 1) {
      return nc.error("training_mode must hold one boolean");
    }
    training = runtimeMode || mode->values[0] != 0;
  }
  auto allTrue = [&]() {
    KnownTensor ones;
    ones.elementType = nc.b.getI1Type();
    ones.shape.assign(cast<RankedTensorType>(x->getType()).getShape().begin(),
                      cast<RankedTensorType>(x->getType()).getShape().end());
    ones.values.assign(kiln::numElements(ones.shape), 1);
    return nc.constant(ones);
  };
  if (!training) {
    if (nc.hasOutput(1) && failed(nc.setOutput(1, allTrue())))
      return failure();
    return nc.setOutput(0, *x);
  }
  double ratio = nc.attrFloat("ratio", 0.5);
  if (nc.has(1)) {
    const KnownTensor *r = nc.known(1);
    if (!r && !nc.training)
      return dropoutByRuntimeRatio(nc, *x, runtimeMode);
    if (!r || r->numElements() != 1)
      return nc.error("ratio must be known at compile time for training-mode dropout");
    ratio = r->values[0];
  }
  if (!(ratio >= 0 && ratio <= 1))
    return nc.error("ratio must be in [0, 1], not " + std::to_string(ratio));
  // Each Dropout its own stream: the seed attribute, else its output's name.
  int64_t seed = nc.attrInt("seed", (int64_t)(llvm::hash_value(nc.node.output(0)) & 0x7fffffff));
  auto op = nc.build<DropoutOp>({*x}, {nc.b.getNamedAttr("ratio", nc.b.getF64FloatAttr(ratio)),
                                       nc.b.getNamedAttr("seed", nc.b.getI64IntegerAttr(seed))},
                                2);
  if (failed(op))
    return failure();
  Value y = (*op)->getResult(0), mask = (*op)->getResult(1);
  if (runtimeMode) {
    y = arith::SelectOp::create(nc.b, nc.loc, runtimeMode, y, *x);
    if (nc.hasOutput(1))
      mask = arith::SelectOp::create(nc.b, nc.loc, runtimeMode, mask, allTrue());
  }
  if (failed(nc.setOutput(0, y)))
    return failure();
  return nc.hasOutput(1) ? nc.setOutput(1, mask) : success();
}

} // namespace

void registerNNHandlers(HandlerTable &t) {
  t["MatMul"] = matmul;
  t["Gemm"] = gemm;
  t["Conv"] = conv;
  t["ConvTranspose"] = convTranspose;
  t["BatchNormalization"] = batchNorm;
  t["Softmax"] = softmax;
  t["LayerNormalization"] = layerNorm;
  t["Dropout"] = dropout;
  t["LogSoftmax"] = logSoftmax;
  t["InstanceNormalization"] = instanceNorm;
  t["LpNormalization"] = lpNorm;
  t["GroupNormalization"] = groupNorm;
}

} // namespace kiln

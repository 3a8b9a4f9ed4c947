//===- QLinearContrib.cpp - onnxruntime's com.microsoft QLinear* ops -------===//
//
// The ops onnxruntime's static quantization writes in its QOperator format
// besides QLinearConv and QLinearMatMul: each is its float op between a
// dequantization of its inputs and a quantization of its result,
//   y = saturate(round_half_even(f((x - x_zero_point) * x_scale) / y_scale) + y_zero_point),
// with per-tensor scales and zero points (a missing zero point is 0).
// The quantized type is the zero point's, else the first input's.
//
//===----------------------------------------------------------------------===//

#include "Expr.h"
#include "Quantize.h"

using namespace mlir;

namespace kiln {
namespace {

/// A per-tensor scale or zero point at input `i` as a scalar; null when
/// the input is optional and absent.
FailureOr<Value> scalarInput(NodeContext &nc, int i, StringRef what, bool optional) {
  if (optional && !nc.has(i))
    return Value();
  auto v = nc.input(i);
  if (failed(v))
    return failure();
  auto t = cast<RankedTensorType>(v->getType());
  if (t.getNumElements() != 1)
    return nc.error(what + " must be one value (per-tensor quantization), not " +
                    Twine(t.getNumElements()));
  return Expr(nc, *v).reshape(*v, {});
}

/// Input `i` dequantized with the scale at `i + 1` and the optional zero
/// point at `i + 2`.
FailureOr<Value> dequantizedInput(NodeContext &nc, int i) {
  auto q = nc.input(i);
  auto scale = scalarInput(nc, i + 1, "input " + std::to_string(i) + "'s scale", false);
  auto zero = scalarInput(nc, i + 2, "input " + std::to_string(i) + "'s zero point", true);
  if (failed(q) || failed(scale) || failed(zero))
    return failure();
  if (!isa<IntegerType>(cast<RankedTensorType>(q->getType()).getElementType()))
    return nc.error("input " + Twine(i) + " must be quantized (8-bit integers)");
  return dequantizeValue(nc, *q, *scale, *zero);
}

/// Output 0 as `y` quantized with the scale at input `i` and the optional
/// zero point at `i + 1`, in the zero point's type or else `like`'s.
LogicalResult setQuantized(NodeContext &nc, Value y, int i, Value like) {
  auto scale = scalarInput(nc, i, "the output's scale", false);
  auto zero = scalarInput(nc, i + 1, "the output's zero point", true);
  if (failed(scale) || failed(zero))
    return failure();
  Type qt = cast<RankedTensorType>((*zero ? *zero : like).getType()).getElementType();
  return nc.setOutput(0, quantizeValue(nc, y, *scale, *zero, qt));
}

LogicalResult noChannelsLast(NodeContext &nc) {
  if (nc.attrInt("channels_last", 0))
    return nc.error("channels_last=1 (NHWC) is not supported");
  return success();
}

template <typename OpTy>
LogicalResult binary(NodeContext &nc) {
  auto a = dequantizedInput(nc, 0), b = dequantizedInput(nc, 3);
  if (failed(a) || failed(b))
    return failure();
  auto r = nc.build<OpTy>({*a, *b});
  if (failed(r))
    return failure();
  return setQuantized(nc, (*r)->getResult(0), 6, *nc.input(0));
}

/// A unary float op `f(expr, x)` between (de)quantizations.
template <typename Fn>
Handler unary(Fn f) {
  return [f](NodeContext &nc) -> LogicalResult {
    auto x = dequantizedInput(nc, 0);
    if (failed(x))
      return failure();
    Expr e(nc, *x);
    return setQuantized(nc, f(nc, e, *x), 3, *nc.input(0));
  };
}

LogicalResult globalAveragePool(NodeContext &nc) {
  if (failed(noChannelsLast(nc)))
    return failure();
  auto x = dequantizedInput(nc, 0);
  if (failed(x))
    return failure();
  auto r = nc.build<GlobalAvgPoolOp>({*x});
  if (failed(r))
    return failure();
  return setQuantized(nc, (*r)->getResult(0), 3, *nc.input(0));
}

LogicalResult averagePool(NodeContext &nc) {
  if (failed(noChannelsLast(nc)))
    return failure();
  auto x = dequantizedInput(nc, 0);
  if (failed(x))
    return failure();
  auto r = buildAvgPool(nc, *x);
  if (failed(r))
    return failure();
  return setQuantized(nc, *r, 3, *nc.input(0));
}

/// Inputs: Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per
/// operand.
LogicalResult concat(NodeContext &nc) {
  int n = nc.node.input_size();
  if (n < 5 || (n - 2) % 3)
    return nc.error("expects Y_scale, Y_zero_point and triples (X, X_scale, X_zero_point), "
                    "not " + Twine(n) + " inputs");
  SmallVector<Value> parts;
  for (int i = 2; i < n; i += 3) {
    auto x = dequantizedInput(nc, i);
    if (failed(x))
      return failure();
    parts.push_back(*x);
  }
  auto r = nc.build<ConcatOp>(parts, {nc.b.getNamedAttr("axis", nc.b.getI64IntegerAttr(
                                                                    nc.attrInt("axis", 0)))});
  if (failed(r))
    return failure();
  return setQuantized(nc, (*r)->getResult(0), 0, *nc.input(2));
}

/// The `opset` attribute names the Softmax semantics: before 13, the
/// input is coerced to 2-D at `axis`, the same as a softmax over the last
/// axis only when `axis` is the last one.
LogicalResult softmax(NodeContext &nc) {
  auto x = dequantizedInput(nc, 0);
  if (failed(x))
    return failure();
  int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  int64_t axis = nc.attrInt("axis", -1);
  if (axis < -rank || axis >= rank)
    return nc.error("axis " + Twine(axis) + " is out of range for rank " + Twine(rank));
  if (axis < 0)
    axis += rank;
  if (nc.attrInt("opset", 13) < 13 && axis != rank - 1)
    return nc.error("opset < 13 softmax over more than the last axis is not supported");
  auto r = nc.build<SoftmaxOp>({*x}, {nc.b.getNamedAttr("axis", nc.b.getI64IntegerAttr(axis))});
  if (failed(r))
    return failure();
  return setQuantized(nc, (*r)->getResult(0), 3, *nc.input(0));
}

} // namespace

void registerQLinearContribHandlers(HandlerTable &t) {
  t["com.microsoft::QLinearSoftmax"] = softmax;
  t["com.microsoft::QLinearAdd"] = binary<AddOp>;
  t["com.microsoft::QLinearMul"] = binary<MulOp>;
  t["com.microsoft::QLinearGlobalAveragePool"] = globalAveragePool;
  t["com.microsoft::QLinearAveragePool"] = averagePool;
  t["com.microsoft::QLinearConcat"] = concat;
  t["com.microsoft::QLinearSigmoid"] = unary([](NodeContext &, Expr &e, Value x) {
    return e.op<SigmoidOp>({x});
  });
  t["com.microsoft::QLinearLeakyRelu"] = unary([](NodeContext &nc, Expr &e, Value x) {
    return e.where(e.less(x, e.c(0)), e.mul(e.c(nc.attrFloat("alpha", 0.01)), x), x);
  });
}

} // namespace kiln

//===- LocalNorm.cpp - LRN and MeanVarianceNormalization -------------------===//
//
// Both as kiln compositions, following the ONNX definitions:
//   LRN:  y = x / (bias + alpha / size * sum of x^2 over a window of
//         `size` channels centred on c)^beta   (AlexNet, GoogLeNet)
//   MVN:  y = (x - mean) / (sqrt(variance) + 1e-9) over `axes`
//
//===----------------------------------------------------------------------===//

#include "Expr.h"

#include "kiln/Dialects/Kiln/IR/ShapeUtils.h"

using namespace mlir;

namespace kiln {
namespace {

/// The channel window's sum is an average pool over the squares, seen as
/// [N, 1, C, spatial] with a [size, 1] window: zero padding counted, so
/// the pool's mean is the window's sum / size, which is the term LRN
/// scales by alpha.
LogicalResult lrn(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  if (!isa<FloatType>(xt.getElementType()))
    return nc.error("expects a floating-point input");
  if (xt.getRank() < 3)
    return nc.error("expects an input of rank >= 3 (N, C, spatial...), not rank " +
                    Twine(xt.getRank()));
  int64_t size = nc.attrInt("size", 0);
  if (size < 1)
    return nc.error("size must be a positive number of channels, not " + Twine(size));
  double alpha = nc.attrFloat("alpha", 1e-4), beta = nc.attrFloat("beta", 0.75),
         bias = nc.attrFloat("bias", 1.0);
  if (xt.getNumElements() == 0)
    return nc.error("expects a non-empty input");
  int64_t n = xt.getDimSize(0), c = xt.getDimSize(1), spatial = xt.getNumElements() / (n * c);
  Expr e(nc, *x);
  Value squares = e.reshape(e.mul(*x, *x), {n, 1, c, spatial});
  auto &b = nc.b;
  auto i64s = [&](StringRef name, ArrayRef<int64_t> v) {
    return b.getNamedAttr(name, b.getDenseI64ArrayAttr(v));
  };
  // Channels c - floor((size-1)/2) .. c + ceil((size-1)/2).
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  Value mean = e.op<AvgPoolOp>(
      {squares}, {i64s("kernel_shape", {size, 1}), i64s("strides", {1, 1}),
                  i64s("pads", {before, 0, after, 0}),
                  b.getNamedAttr("count_include_pad", b.getBoolAttr(true))});
  Value scale = e.add(e.c(bias), e.mul(e.c(alpha), e.reshape(mean, xt.getShape())));
  return nc.setOutput(0, e.div(*x, e.pow(scale, e.c(beta))));
}

LogicalResult meanVarianceNorm(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  if (!isa<FloatType>(xt.getElementType()))
    return nc.error("expects a floating-point input");
  SmallVector<int64_t> axes;
  for (int64_t a : nc.attrInts("axes", {0, 2, 3})) {
    auto axis = normalizeAxis(a, xt.getRank());
    if (!axis)
      return nc.error("axis " + Twine(a) + " is out of range for an input of rank " +
                      Twine(xt.getRank()));
    axes.push_back(*axis);
  }
  Expr e(nc, *x);
  Value centered = e.sub(*x, e.reduce<ReduceMeanOp>(*x, axes));
  Value variance = e.reduce<ReduceMeanOp>(e.mul(centered, centered), axes);
  return nc.setOutput(0, e.div(centered, e.add(e.sqrt(variance), e.c(1e-9))));
}

} // namespace

void registerLocalNormHandlers(HandlerTable &t) {
  t["LRN"] = lrn;
  t["MeanVarianceNormalization"] = meanVarianceNorm;
}

} // namespace kiln

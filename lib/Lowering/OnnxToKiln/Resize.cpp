//===- Resize.cpp - ONNX Resize and Upsample as separable gathers ---------===//
//
// Resizing is separable: along each resized axis, every output index reads
// a few input indices (1 nearest, 2 linear, 4 cubic) with fixed weights.
// Those taps are computed here at compile time, following the ONNX
// reference coordinate transforms, and applied as kiln.gather + weighted
// sums, one axis after another; scales or sizes known only at run time
// have the model compute them (ResizeRuntime.cpp).
//
//===----------------------------------------------------------------------===//

#include "Expr.h"
#include "Resize.h"

#include <cmath>

using namespace mlir;

namespace kiln {
namespace {

struct Taps {
  std::vector<std::vector<int64_t>> index; // [tap][output index]
  std::vector<std::vector<double>> weight;
};

/// ONNX's get_original_coordinate; `out` is the resized length before
/// flooring (in * scale when scales were given).
double originalCoordinate(const std::string &transform, double x, double scale, int64_t in,
                          double out) {
  if (transform == "half_pixel")
    return (x + 0.5) / scale - 0.5;
  if (transform == "pytorch_half_pixel")
    return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (transform == "align_corners")
    return out == 1 ? 0.0 : x * (in - 1) / (out - 1);
  if (transform == "tf_half_pixel_for_nn")
    return (x + 0.5) / scale;
  return x / scale; // asymmetric
}

int64_t roundNearest(const std::string &mode, double x) {
  double f = std::floor(x);
  bool half = x - f == 0.5;
  if (mode == "floor")
    return (int64_t)f;
  if (mode == "ceil")
    return (int64_t)std::ceil(x);
  if (half)
    return (int64_t)(mode == "round_prefer_ceil" ? f + 1 : f);
  return (int64_t)std::round(x);
}

std::vector<double> cubicCoeffs(double t, double a) {
  auto w = [a](double x) {
    x = std::fabs(x);
    if (x <= 1)
      return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2)
      return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    return 0.0;
  };
  return {w(t + 1), w(t), w(1 - t), w(2 - t)};
}

Taps computeTaps(const ResizeParams &p, int64_t in, int64_t out, double scale,
                 double resizedLength) {
  Taps taps;
  int64_t n = p.mode == "nearest" ? 1 : p.mode == "linear" ? 2 : 4;
  taps.index.assign(n, std::vector<int64_t>(out));
  taps.weight.assign(n, std::vector<double>(out));
  auto clamp = [in](int64_t i) { return std::max<int64_t>(0, std::min(in - 1, i)); };
  for (int64_t k = 0; k < out; ++k) {
    double x = originalCoordinate(p.transform, k, scale, in, resizedLength);
    if (n == 1) {
      taps.index[0][k] = clamp(roundNearest(p.nearestMode, x));
      taps.weight[0][k] = 1;
      continue;
    }
    double base = std::floor(x), t = x - base;
    std::vector<double> w =
        n == 2 ? std::vector<double>{1 - t, t} : cubicCoeffs(t, p.cubicA);
    int64_t first = (int64_t)base - (n == 2 ? 0 : 1);
    double kept = 0;
    for (int64_t j = 0; j < n; ++j) {
      int64_t i = first + j;
      if (p.excludeOutside && (i < 0 || i >= in))
        w[j] = 0;
      kept += w[j];
      taps.index[j][k] = clamp(i);
    }
    for (int64_t j = 0; j < n; ++j)
      taps.weight[j][k] = p.excludeOutside && kept != 0 ? w[j] / kept : w[j];
  }
  return taps;
}

/// Applies the taps along `axis` of `v`.
Value resizeAxis(NodeContext &nc, Value v, int64_t axis, const Taps &taps) {
  auto vt = cast<RankedTensorType>(v.getType());
  int64_t out = taps.index[0].size(), rank = vt.getRank();
  Expr e(nc, v);
  Value sum;
  for (size_t j = 0; j < taps.index.size(); ++j) {
    auto idxType = RankedTensorType::get({out}, nc.b.getI64Type());
    Value idx = ConstantOp::create(nc.b, nc.loc,
                                   DenseElementsAttr::get(idxType, ArrayRef<int64_t>(taps.index[j])));
    Value g = e.op<GatherOp>({v, idx}, {nc.b.getNamedAttr("axis", nc.b.getI64IntegerAttr(axis))});
    if (taps.index.size() == 1)
      return g;
    SmallVector<int64_t> wshape(rank, 1);
    wshape[axis] = out;
    SmallVector<Attribute> ws;
    Type et = vt.getElementType();
    for (double w : taps.weight[j])
      ws.push_back(FloatAttr::get(et, w));
    Value weight = ConstantOp::create(
        nc.b, nc.loc, DenseElementsAttr::get(RankedTensorType::get(wshape, et), ws));
    Value term = e.mul(g, weight);
    sum = sum ? e.add(sum, term) : term;
  }
  return sum;
}

LogicalResult resize(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  if (!isa<FloatType>(xt.getElementType()))
    return nc.error("expects a floating-point input");
  int64_t rank = xt.getRank();
  ResizeParams p;
  p.mode = nc.attrString("mode", "nearest");
  bool legacy = nc.node.op_type() == "Upsample" || nc.opset < 11;
  p.transform = legacy ? "asymmetric"
                       : nc.attrString("coordinate_transformation_mode", "half_pixel");
  p.nearestMode = legacy ? "floor" : nc.attrString("nearest_mode", "round_prefer_floor");
  p.cubicA = nc.attrFloat("cubic_coeff_a", -0.75);
  p.excludeOutside = nc.attrInt("exclude_outside", 0);
  if (p.mode != "nearest" && p.mode != "linear" && p.mode != "cubic")
    return nc.error("unknown mode '" + p.mode + "'");
  static const char *transforms[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                     "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  if (!llvm::is_contained(transforms, p.transform))
    return nc.error("coordinate_transformation_mode '" + p.transform + "' is not supported");
  p.extrapolation = nc.attrFloat("extrapolation_value", 0.0);
  // The region of interest is data: its taps are computed by the model.
  bool crop = p.transform == "tf_crop_and_resize";
  if (nc.attrInt("antialias", 0))
    return nc.error("antialias is not supported");
  if (nc.attrString("keep_aspect_ratio_policy", "stretch") != "stretch")
    return nc.error("keep_aspect_ratio_policy other than 'stretch' is not supported");

  // Scales or sizes, per axis (opset 18 may name a subset of axes).
  std::vector<int64_t> axes = nc.attrInts("axes");
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  std::vector<double> scales(rank, 1.0);
  std::vector<int64_t> sizes(xt.getShape().begin(), xt.getShape().end());
  size_t scalesInput = nc.node.op_type() == "Upsample" || nc.opset < 11 ? 1 : 2;
  bool haveSizes = nc.opset >= 11 && nc.node.op_type() == "Resize" && nc.has(3);
  if (nc.node.op_type() == "Upsample" && nc.opset < 9) {
    auto s = nc.attr("scales");
    if (!s || s->floats_size() != rank)
      return nc.error("needs one scale per dimension");
    for (int64_t d = 0; d < rank; ++d)
      scales[d] = s->floats(d);
  } else if (crop || haveSizes || !nc.known(scalesInput)) {
    if (crop || !haveSizes || !nc.known(3)) {
      for (int64_t &a : axes)
        a = a < 0 ? a + rank : a;
      return resizeRuntime(nc, *x, p, axes, haveSizes ? 3 : scalesInput, haveSizes);
    }
    auto sz = nc.constInts(3, "sizes");
    if (failed(sz))
      return failure();
    if (sz->size() != axes.size())
      return nc.error("sizes must have one value per resized axis");
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t d = axes[i] < 0 ? axes[i] + rank : axes[i];
      sizes[d] = (*sz)[i];
      scales[d] = double(sizes[d]) / xt.getDimSize(d);
    }
  } else {
    const KnownTensor *k = nc.known(scalesInput);
    if (!k)
      return nc.error("scales (input " + Twine(scalesInput) +
                      ") must be a constant known at compile time");
    if (k->numElements() != (int64_t)axes.size())
      return nc.error("scales must have one value per resized axis");
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t d = axes[i] < 0 ? axes[i] + rank : axes[i];
      scales[d] = k->values[i];
      sizes[d] = (int64_t)std::floor(xt.getDimSize(d) * scales[d]);
    }
  }
  Value v = *x;
  for (int64_t d = 0; d < rank; ++d) {
    if (sizes[d] < 1 || scales[d] <= 0)
      return nc.error("resized dimension " + Twine(d) + " would be empty");
    if (sizes[d] == xt.getDimSize(d) && scales[d] == 1.0)
      continue;
    double resized = haveSizes ? (double)sizes[d] : xt.getDimSize(d) * scales[d];
    v = resizeAxis(nc, v, d, computeTaps(p, xt.getDimSize(d), sizes[d], scales[d], resized));
  }
  return nc.setOutput(0, v);
}

} // namespace

void registerResizeHandlers(HandlerTable &t) {
  t["Resize"] = resize;
  t["Upsample"] = resize;
}

} // namespace kiln

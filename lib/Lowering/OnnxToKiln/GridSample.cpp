//===- GridSample.cpp - ONNX GridSample (2-D) as gathers -------------------===//
//
// Y[n, c, ho, wo] samples X[n, c] at the grid's normalized point (x, y):
//   1. to pixel coordinates (align_corners: -1 and 1 are the corner pixels'
//      centres, else their outer edges);
//   2. nearest rounds them (half to even); a point outside the image is
//      clamped (border; not for cubic, as PyTorch) or reflected
//      (reflection) into it;
//   3. the 1 (nearest), 2 x 2 (linear) or 4 x 4 (cubic, Keys a = -0.75)
//      neighbouring pixels are gathered from X viewed as [N, C, H*W], each
//      weighted by its x and y coefficients; a neighbour outside the image
//      reads 0 (zeros), the nearest edge (border) or its reflection.
// This follows the ONNX reference implementation step for step, but for
// cubic border padding, where it follows PyTorch and onnxruntime.
//
//===----------------------------------------------------------------------===//

#include "Expr.h"

using namespace mlir;

namespace kiln {
namespace {

struct GridSampler {
  NodeContext &nc;
  Expr &e;
  std::string padding;
  bool alignCorners;

  /// A point's pixel coordinate along a dimension of `size` pixels.
  Value denormalize(Value g, int64_t size) {
    if (alignCorners) // (g + 1) / 2 * (size - 1)
      return e.mul(e.add(g, e.c(1)), e.c((size - 1) / 2.0));
    return e.div(e.sub(e.mul(e.add(g, e.c(1)), e.c(size)), e.c(1)), e.c(2)); // ((g+1) size - 1) / 2
  }

  Value trunc(Value v) { // toward zero, as int() does
    return e.where(e.less(v, e.c(0)), e.op<CeilOp>({v}), e.op<FloorOp>({v}));
  }

  /// `x` reflected by the near border until within [lo, hi].
  Value reflect(Value x, double lo, double hi) {
    double range = hi - lo;
    if (range <= 0)
      return e.add(e.mul(x, e.c(0)), e.c(lo));
    auto fold = [&](Value dx, double from, double to) {
      Value n = trunc(e.div(dx, e.c(range)));
      Value r = e.sub(dx, e.mul(n, e.c(range)));
      Value odd = e.sub(n, e.mul(e.c(2), e.op<FloorOp>({e.div(n, e.c(2))})));
      // Even: from + r toward the inside; odd: from the other border.
      Value even = from < to ? e.add(e.c(from), r) : e.sub(e.c(from), r);
      Value other = from < to ? e.sub(e.c(to), r) : e.add(e.c(to), r);
      return e.where(e.greater(odd, e.c(0.5)), other, even);
    };
    Value below = fold(e.sub(e.c(lo), x), lo, hi);
    Value above = fold(e.sub(x, e.c(hi)), hi, lo);
    return e.where(e.less(x, e.c(lo)), below, e.where(e.greater(x, e.c(hi)), above, x));
  }

  /// The borders of the reflection and of the point's padding.
  std::pair<double, double> borders(int64_t size) {
    return alignCorners ? std::pair<double, double>{0, size - 1.0}
                        : std::pair<double, double>{-0.5, size - 0.5};
  }

  /// A point's coordinate padded into the image (border, reflection).
  Value padPoint(Value x, int64_t size) {
    auto [lo, hi] = borders(size);
    if (padding == "border")
      return e.where(e.less(x, e.c(lo)), e.max(e.min(x, e.c(size - 1.0)), e.c(0)),
                     e.where(e.greater(x, e.c(hi)), e.max(e.min(x, e.c(size - 1.0)), e.c(0)), x));
    if (padding == "reflection")
      return reflect(x, lo, hi);
    return x;
  }

  /// A neighbour's integral coordinate `i` as an index into the image, and
  /// 1 where it reads the image (0 where zeros padding reads 0).
  std::pair<Value, Value> pixel(Value i, int64_t size) {
    Value inside = e.c(1);
    if (padding == "zeros")
      inside = e.where(e.less(i, e.c(0)), e.c(0),
                       e.where(e.greater(i, e.c(size - 1.0)), e.c(0), e.c(1)));
    else if (padding == "reflection") {
      auto [lo, hi] = borders(size);
      i = trunc(reflect(i, lo, hi));
    }
    Value index = e.max(e.min(i, e.c(size - 1.0)), e.c(0));
    return {index, inside};
  }

  /// Keys' cubic coefficients for the 4 neighbours at fraction t.
  SmallVector<Value> cubic(Value t) {
    const double a = -0.75;
    auto far = [&](Value d) { // ((a d - 5a) d + 8a) d - 4a, for 1 <= d <= 2
      return e.sub(e.mul(e.add(e.mul(e.sub(e.mul(e.c(a), d), e.c(5 * a)), d), e.c(8 * a)), d),
                   e.c(4 * a));
    };
    auto near = [&](Value d) { // ((a + 2) d - (a + 3)) d d + 1, for d <= 1
      return e.add(e.mul(e.mul(e.sub(e.mul(e.c(a + 2), d), e.c(a + 3)), d), d), e.c(1));
    };
    Value oneMinus = e.sub(e.c(1), t);
    return {far(e.add(t, e.c(1))), near(t), near(oneMinus), far(e.sub(e.c(2), t))};
  }

  /// The neighbours (integral coordinates) of x and their coefficients.
  std::pair<SmallVector<Value>, SmallVector<Value>> taps(Value x, StringRef mode) {
    if (mode == "nearest") // already rounded; int() as the reference does
      return {{trunc(x)}, {e.c(1)}};
    Value x0 = e.op<FloorOp>({x});
    Value t = e.sub(x, x0);
    if (mode == "linear")
      return {{x0, e.add(x0, e.c(1))}, {e.sub(e.c(1), t), t}};
    return {{e.sub(x0, e.c(1)), x0, e.add(x0, e.c(1)), e.add(x0, e.c(2))}, cubic(t)};
  }
};

LogicalResult gridSample(NodeContext &nc) {
  auto x = nc.input(0), grid = nc.input(1);
  if (failed(x) || failed(grid))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType()), gt = cast<RankedTensorType>(grid->getType());
  if (!isa<FloatType>(xt.getElementType()) || gt.getElementType() != xt.getElementType())
    return nc.error("expects floating-point X and grid of the same type");
  if (xt.getRank() != 4 || gt.getRank() != 4 || gt.getDimSize(3) != 2 ||
      gt.getDimSize(0) != xt.getDimSize(0))
    return nc.error("only 2-D sampling is supported: X [N, C, H, W] and grid [N, Hout, Wout, 2] "
                    "(X of rank " + Twine(xt.getRank()) + ", grid of rank " + Twine(gt.getRank()) +
                    ")");
  std::string mode = nc.attrString("mode", nc.opset < 20 ? "bilinear" : "linear");
  if (mode == "bilinear")
    mode = "linear";
  if (mode == "bicubic")
    mode = "cubic";
  std::string padding = nc.attrString("padding_mode", "zeros");
  if (mode != "linear" && mode != "nearest" && mode != "cubic")
    return nc.error("unknown mode '" + mode + "'");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    return nc.error("unknown padding_mode '" + padding + "'");
  if (xt.getNumElements() == 0 || gt.getNumElements() == 0)
    return nc.error("expects a non-empty X and grid");
  int64_t N = xt.getDimSize(0), C = xt.getDimSize(1), H = xt.getDimSize(2),
          W = xt.getDimSize(3), HO = gt.getDimSize(1), WO = gt.getDimSize(2);
  Expr e(nc, *x);
  GridSampler s{nc, e, padding, nc.attrInt("align_corners", 0) != 0};
  auto i64s = [&](StringRef name, int64_t v) {
    return nc.b.getNamedAttr(name, nc.b.getDenseI64ArrayAttr({v}));
  };
  auto coordinate = [&](int64_t k, int64_t size) { // grid[..., k] as [N, 1, HO*WO]
    Value g = e.op<SliceOp>({*grid}, {i64s("starts", k), i64s("ends", k + 1), i64s("axes", 3),
                                      i64s("steps", 1)});
    Value v = s.denormalize(e.reshape(g, {N, 1, HO * WO}), size);
    if (mode == "nearest")
      v = e.op<RoundOp>({v});
    // Cubic border padding clamps each tap, not the point, as PyTorch and
    // onnxruntime do (the ONNX reference clamps the point too: a different
    // result near the edges, and no backend test covers the case).
    if (mode == "cubic" && padding == "border")
      return v;
    return s.padPoint(v, size);
  };
  Value px = coordinate(0, W), py = coordinate(1, H);
  auto [xs, wxs] = s.taps(px, mode);
  auto [ys, wys] = s.taps(py, mode);
  Value image = e.reshape(*x, {N, C, H * W});
  Type i64 = nc.b.getI64Type();
  Value sum;
  for (size_t j = 0; j < ys.size(); ++j) {
    auto [row, rowInside] = s.pixel(ys[j], H);
    for (size_t i = 0; i < xs.size(); ++i) {
      auto [col, colInside] = s.pixel(xs[i], W);
      Value index = nc.castTo(e.add(e.mul(row, e.c(W)), col), i64);
      Value value = e.op<GatherElementsOp>(
          {image, e.broadcastTo(index, {N, C, HO * WO})}, {nc.b.getNamedAttr("axis", nc.b.getI64IntegerAttr(2))});
      Value weight = e.mul(e.mul(wys[j], wxs[i]), e.mul(rowInside, colInside));
      Value term = e.mul(value, weight);
      sum = sum ? e.add(sum, term) : term;
    }
  }
  return nc.setOutput(0, e.reshape(sum, {N, C, HO, WO}));
}

} // namespace

void registerGridSampleHandlers(HandlerTable &t) { t["GridSample"] = gridSample; }

} // namespace kiln

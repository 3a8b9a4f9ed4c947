//===- ResizeRuntime.cpp - Resize by scales or sizes known at run time ----===//
//
// Along each resized axis the taps Resize.cpp computes at compile time
// (computeTaps) are computed by the model: tensor.generate over the output
// indices, in f64, with the same coordinate transforms, rounding and cubic
// weights, then applied as there: a gather per tap and a weighted sum.
//
//===----------------------------------------------------------------------===//

#include "Expr.h"
#include "Resize.h"
#include "RuntimeShapes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;

namespace kiln {
namespace {


/// One axis: its input length and the run-time scale, output length and
/// resized length (before flooring), all f64 but `out` (index); for
/// tf_crop_and_resize, the region of interest's start and end (f64).
struct AxisSizes {
  Value in, scale, resized, out;
  Value roiStart, roiEnd;
};

/// ONNX's get_original_coordinate (Resize.cpp's originalCoordinate).
Value coordinate(F64 &f, const std::string &transform, Value x, const AxisSizes &s) {
  using P = arith::CmpFPredicate;
  Value half = f.c(0.5);
  if (transform == "half_pixel")
    return f.sub(f.div(f.add(x, half), s.scale), half);
  if (transform == "pytorch_half_pixel")
    return f.sel(f.cmp(P::OGT, s.resized, f.c(1)), f.sub(f.div(f.add(x, half), s.scale), half),
                 f.c(0));
  if (transform == "align_corners")
    return f.sel(f.cmp(P::OEQ, s.resized, f.c(1)), f.c(0),
                 f.div(f.mul(x, f.sub(s.in, f.c(1))), f.sub(s.resized, f.c(1))));
  if (transform == "tf_half_pixel_for_nn")
    return f.div(f.add(x, half), s.scale);
  if (transform == "tf_crop_and_resize") { // over the region of interest
    Value last = f.sub(s.in, f.c(1)), span = f.mul(f.sub(s.roiEnd, s.roiStart), last);
    Value along = f.sel(f.cmp(P::OGT, s.resized, f.c(1)),
                        f.div(f.mul(x, span), f.sub(s.resized, f.c(1))), f.mul(span, half));
    return f.add(along, f.mul(s.roiStart, last));
  }
  return f.div(x, s.scale); // asymmetric
}

/// tf_crop_and_resize: whether output index `k`'s coordinate is outside
/// the input (its value is then the extrapolation value).
Value outsideInput(F64 &f, const ResizeParams &p, Value k, const AxisSizes &s) {
  using P = arith::CmpFPredicate;
  Value x = coordinate(f, p.transform, k, s);
  return arith::OrIOp::create(f.b, f.loc, f.cmp(P::OLT, x, f.c(0)),
                              f.cmp(P::OGT, x, f.sub(s.in, f.c(1))));
}

/// Keys' cubic convolution weight of distance x (Resize.cpp's cubicCoeffs).
Value cubicWeight(F64 &f, Value x, double a) {
  using P = arith::CmpFPredicate;
  x = math::AbsFOp::create(f.b, f.loc, x);
  Value near = f.add(f.mul(f.mul(f.sub(f.mul(f.c(a + 2), x), f.c(a + 3)), x), x), f.c(1));
  Value far = f.sub(
      f.mul(f.add(f.mul(f.sub(f.mul(f.c(a), x), f.c(5 * a)), x), f.c(8 * a)), x), f.c(4 * a));
  return f.sel(f.cmp(P::OLE, x, f.c(1)), near, f.sel(f.cmp(P::OLT, x, f.c(2)), far, f.c(0)));
}

/// The taps of output index `k` (f64): their input indices (clamped, i64)
/// and weights.
void taps(F64 &f, const ResizeParams &p, Value k, const AxisSizes &s,
          SmallVector<Value> &index, SmallVector<Value> &weight) {
  using P = arith::CmpFPredicate;
  Value x = coordinate(f, p.transform, k, s);
  Value last = f.sub(s.in, f.c(1));
  auto clamp = [&](Value i) {
    return f.toI64(arith::MinimumFOp::create(f.b, f.loc,
                                             arith::MaximumFOp::create(f.b, f.loc, i, f.c(0)),
                                             last));
  };
  if (p.mode == "nearest") {
    Value fl = f.floor(x);
    Value isHalf = f.cmp(P::OEQ, f.sub(x, fl), f.c(0.5));
    Value r;
    if (p.nearestMode == "floor")
      r = fl;
    else if (p.nearestMode == "ceil")
      r = math::CeilOp::create(f.b, f.loc, x);
    else
      r = f.sel(isHalf, p.nearestMode == "round_prefer_ceil" ? f.add(fl, f.c(1)) : fl,
                math::RoundOp::create(f.b, f.loc, x));
    index.push_back(clamp(r));
    weight.push_back(f.c(1));
    return;
  }
  Value base = f.floor(x), t = f.sub(x, base);
  bool linear = p.mode == "linear";
  SmallVector<Value> w;
  if (linear)
    w = {f.sub(f.c(1), t), t};
  else
    w = {cubicWeight(f, f.add(t, f.c(1)), p.cubicA), cubicWeight(f, t, p.cubicA),
         cubicWeight(f, f.sub(f.c(1), t), p.cubicA), cubicWeight(f, f.sub(f.c(2), t), p.cubicA)};
  Value first = f.sub(base, f.c(linear ? 0 : 1));
  Value kept = f.c(0);
  for (size_t j = 0; j < w.size(); ++j) {
    Value i = f.add(first, f.c(j));
    if (p.excludeOutside) {
      Value outside = arith::OrIOp::create(f.b, f.loc, f.cmp(P::OLT, i, f.c(0)),
                                           f.cmp(P::OGT, i, last));
      w[j] = f.sel(outside, f.c(0), w[j]);
    }
    kept = f.add(kept, w[j]);
    index.push_back(clamp(i));
  }
  for (Value wj : w)
    weight.push_back(p.excludeOutside
                         ? f.sel(f.cmp(P::ONE, kept, f.c(0)), f.div(wj, kept), wj)
                         : wj);
}

/// Tap `j`'s indices (i64, [out]) or weights (`et`, shaped 1 but `out`
/// along `axis` of a rank-`rank` tensor) along one axis; for
/// tf_crop_and_resize, weights are 0 outside the input, and tap j = the
/// number of taps is the extrapolation value there (0 inside).
Value tapTensor(NodeContext &nc, const ResizeParams &p, const AxisSizes &s, size_t j,
                bool weights, Type et, int64_t axis, int64_t rank) {
  SmallVector<int64_t> shape(weights ? rank : 1, 1);
  shape[weights ? axis : 0] = ShapedType::kDynamic;
  auto type = RankedTensorType::get(shape, weights ? et : nc.b.getI64Type());
  return tensor::GenerateOp::create(
      nc.b, nc.loc, type, ValueRange{s.out}, [&](OpBuilder &b, Location l, ValueRange idx) {
        F64 f{b, l};
        Value k = f.fromI64(arith::IndexCastOp::create(b, l, b.getI64Type(),
                                                       idx[weights ? axis : 0]));
        SmallVector<Value> index, weight;
        taps(f, p, k, s, index, weight);
        Value r = j < weight.size() ? (weights ? weight[j] : index[j]) : f.c(p.extrapolation);
        if (s.roiStart && weights)
          r = f.sel(outsideInput(f, p, k, s), j < weight.size() ? f.c(0) : r,
                    j < weight.size() ? r : f.c(0));
        if (weights && !et.isF64())
          r = arith::TruncFOp::create(b, l, et, r);
        tensor::YieldOp::create(b, l, r);
      });
}

/// tf_crop_and_resize's region of interest along `axis`, the `i`-th of
/// `count` resized axes: input 1 holds [starts..., ends...], for every
/// axis or for the resized ones.
FailureOr<std::pair<Value, Value>> roiOf(NodeContext &nc, int64_t axis, size_t i, int64_t rank,
                                         size_t count) {
  auto roi = nc.has(1) ? nc.input(1) : FailureOr<Value>(failure());
  if (!nc.has(1) || failed(roi))
    return nc.error("tf_crop_and_resize needs its region of interest (input 1)");
  auto rt = cast<RankedTensorType>(roi->getType());
  int64_t n = rt.hasStaticShape() && rt.getRank() == 1 ? rt.getNumElements() : -1;
  if (n != 2 * rank && n != 2 * (int64_t)count)
    return nc.error("the region of interest (input 1) must hold a start and an end per axis");
  int64_t at = n == 2 * rank ? axis : (int64_t)i;
  F64 f{nc.b, nc.loc};
  auto element = [&](int64_t k) {
    Value v = tensor::ExtractOp::create(nc.b, nc.loc, *roi,
                                        ValueRange{arith::ConstantIndexOp::create(nc.b, nc.loc, k)});
    return v.getType().isF64() ? v : arith::ExtFOp::create(nc.b, nc.loc, f.b.getF64Type(), v).getResult();
  };
  return std::make_pair(element(at), element(at + n / 2));
}

} // namespace

LogicalResult resizeRuntime(NodeContext &nc, Value x, const ResizeParams &p,
                            ArrayRef<int64_t> axes, size_t input, bool sizes) {
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t rank = xt.getRank();
  auto in = nc.input(input);
  if (failed(in))
    return failure();
  auto it = cast<RankedTensorType>(in->getType());
  if (!it.hasStaticShape() || it.getRank() != 1 || it.getNumElements() != (int64_t)axes.size())
    return nc.error(Twine(sizes ? "sizes" : "scales") + " (input " + Twine(input) +
                    ") must have one value per resized axis");
  nc.ctx()->getOrLoadDialect<math::MathDialect>();
  F64 f{nc.b, nc.loc};
  Type et = xt.getElementType();
  Value v = x;
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (axis < 0 || axis >= rank)
      return nc.error("axis " + Twine(axis) + " out of range");
    Value at = arith::ConstantIndexOp::create(nc.b, nc.loc, i);
    Value given = tensor::ExtractOp::create(nc.b, nc.loc, *in, at);
    AxisSizes s;
    s.in = f.fromI64(arith::IndexCastOp::create(nc.b, nc.loc, nc.b.getI64Type(),
                                                tensor::DimOp::create(nc.b, nc.loc, x, axis)));
    Value n;
    if (sizes) {
      n = given;
      s.resized = f.fromI64(given);
      s.scale = f.div(s.resized, s.in);
    } else {
      s.scale = arith::ExtFOp::create(nc.b, nc.loc, nc.b.getF64Type(), given);
      s.resized = f.mul(s.in, s.scale);
      n = f.toI64(f.floor(s.resized));
    }
    // An empty or negative result is refused at run time (size -1).
    Value valid = arith::AndIOp::create(
        nc.b, nc.loc,
        arith::CmpIOp::create(nc.b, nc.loc, arith::CmpIPredicate::sge, n,
                              arith::ConstantIntOp::create(nc.b, nc.loc, 1, 64)),
        f.cmp(arith::CmpFPredicate::OGT, s.scale, f.c(0)));
    n = arith::SelectOp::create(nc.b, nc.loc, valid, n,
                                arith::ConstantIntOp::create(nc.b, nc.loc, -1, 64));
    s.out = arith::IndexCastOp::create(nc.b, nc.loc, nc.b.getIndexType(), n);
    if (p.transform == "tf_crop_and_resize") {
      auto roi = roiOf(nc, axis, i, rank, axes.size());
      if (failed(roi))
        return failure();
      std::tie(s.roiStart, s.roiEnd) = *roi;
    }
    size_t numTaps = p.mode == "nearest" ? 1 : p.mode == "linear" ? 2 : 4;
    Expr e(nc, v);
    Value sum;
    for (size_t j = 0; j < numTaps; ++j) {
      Value idx = tapTensor(nc, p, s, j, /*weights=*/false, et, axis, rank);
      Value g =
          e.op<GatherOp>({v, idx}, {nc.b.getNamedAttr("axis", nc.b.getI64IntegerAttr(axis))});
      if (numTaps == 1 && !s.roiStart) {
        sum = g;
        break;
      }
      Value term = e.mul(g, tapTensor(nc, p, s, j, /*weights=*/true, et, axis, rank));
      sum = sum ? e.add(sum, term) : term;
    }
    if (s.roiStart) // the extrapolation value outside the input
      sum = e.add(sum, tapTensor(nc, p, s, numTaps, /*weights=*/true, et, axis, rank));
    if (nc.hasFailed())
      return failure();
    v = sum;
  }
  return nc.setOutput(0, v);
}

} // namespace kiln

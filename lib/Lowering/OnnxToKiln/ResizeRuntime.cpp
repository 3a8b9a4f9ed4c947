//===- ResizeRuntime.cpp - Resize and STFT by arguments known at run time -===//
//
// Along each resized axis the taps Resize.cpp computes at compile time
// (computeTaps) are computed by the model: tensor.generate over the output
// indices, in f64, with the same coordinate transforms, rounding and cubic
// weights, then applied as there: a gather per tap and a weighted sum.
// An STFT whose frame step or length is known only at run time sums each
// output's DFT over its frame in a loop (quadratic in the frame length).
//
//===----------------------------------------------------------------------===//

#include "Expr.h"
#include "Resize.h"
#include "RuntimeShapes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;

namespace kiln {
namespace {

/// f64 arithmetic at a builder's point.
struct F64 {
  OpBuilder &b;
  Location loc;
  Value c(double v) { return arith::ConstantOp::create(b, loc, b.getF64FloatAttr(v)); }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value cmp(arith::CmpFPredicate p, Value x, Value y) {
    return arith::CmpFOp::create(b, loc, p, x, y);
  }
  Value sel(Value cond, Value x, Value y) { return arith::SelectOp::create(b, loc, cond, x, y); }
  Value floor(Value x) { return math::FloorOp::create(b, loc, x); }
  Value toI64(Value x) { return arith::FPToSIOp::create(b, loc, b.getI64Type(), x); }
  Value fromI64(Value x) { return arith::SIToFPOp::create(b, loc, b.getF64Type(), x); }
};

/// One axis: its input length and the run-time scale, output length and
/// resized length (before flooring), all f64 but `out` (index).
struct AxisSizes {
  Value in, scale, resized, out;
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
  return f.div(x, s.scale); // asymmetric
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
/// along `axis` of a rank-`rank` tensor) along one axis.
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
        Value r = weights ? weight[j] : index[j];
        if (weights && !et.isF64())
          r = arith::TruncFOp::create(b, l, et, r);
        tensor::YieldOp::create(b, l, r);
      });
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
    size_t numTaps = p.mode == "nearest" ? 1 : p.mode == "linear" ? 2 : 4;
    Expr e(nc, v);
    Value sum;
    for (size_t j = 0; j < numTaps; ++j) {
      Value idx = tapTensor(nc, p, s, j, /*weights=*/false, et, axis, rank);
      Value g =
          e.op<GatherOp>({v, idx}, {nc.b.getNamedAttr("axis", nc.b.getI64IntegerAttr(axis))});
      if (numTaps == 1) {
        sum = g;
        break;
      }
      Value term = e.mul(g, tapTensor(nc, p, s, j, /*weights=*/true, et, axis, rank));
      sum = sum ? e.add(sum, term) : term;
    }
    if (nc.hasFailed())
      return failure();
    v = sum;
  }
  return nc.setOutput(0, v);
}

} // namespace kiln

namespace kiln {

LogicalResult stftRuntime(NodeContext &nc) {
  auto signal = nc.input(0);
  auto hopValue = runtimeScalar(nc, 1, "frame_step");
  if (failed(signal) || failed(hopValue))
    return failure();
  auto st = cast<RankedTensorType>(signal->getType());
  if (st.getRank() != 3 || !st.getElementType().isF32() || st.isDynamicDim(2))
    return nc.error("expects an f32 signal [batch, length, 1 or 2]");
  Value window;
  if (nc.has(2)) {
    auto w = nc.input(2);
    if (failed(w))
      return failure();
    window = *w;
  }
  nc.ctx()->getOrLoadDialect<scf::SCFDialect>();
  nc.ctx()->getOrLoadDialect<math::MathDialect>();
  OpBuilder &b = nc.b;
  Location loc = nc.loc;
  IndexMath m{b, loc};
  Value samples = tensor::DimOp::create(b, loc, *signal, 1);
  Value length = window ? tensor::DimOp::create(b, loc, window, 0).getResult() : samples;
  if (nc.has(3)) {
    auto l = runtimeScalar(nc, 3, "frame_length");
    if (failed(l))
      return failure();
    length = arith::IndexCastOp::create(b, loc, b.getIndexType(), *l);
  }
  Value hop = arith::IndexCastOp::create(b, loc, b.getIndexType(), *hopValue);
  // Valid: a step of 1 or more, 1 <= frame_length <= the samples, and a
  // window of that length; else the frame count is -1 (refused).
  using P = arith::CmpIPredicate;
  Value valid = m.both(m.cmp(P::sge, hop, m.c(1)),
                       m.both(m.cmp(P::sge, length, m.c(1)), m.cmp(P::sle, length, samples)));
  if (window)
    valid = m.both(valid, m.eq(tensor::DimOp::create(b, loc, window, 0), length));
  Value safeHop = m.sel(valid, hop, m.c(1));
  Value frames = m.sel(valid,
                       m.add(arith::DivUIOp::create(b, loc, m.sub(samples, length), safeHop),
                             m.c(1)),
                       m.c(-1));
  bool onesided = nc.attrInt("onesided", 1);
  Value bins = onesided ? m.add(arith::DivUIOp::create(b, loc, length, m.c(2)), m.c(1)) : length;
  SmallVector<int64_t> shape{st.getDimSize(0), ShapedType::kDynamic, ShapedType::kDynamic, 2};
  SmallVector<Value> sizes;
  if (st.isDynamicDim(0))
    sizes.push_back(tensor::DimOp::create(b, loc, *signal, 0));
  sizes.append({frames, bins});
  bool complex = st.getDimSize(2) == 2;
  // Each output the DFT sum over its frame, e^(-2 pi i k n / L), in f64.
  auto gen = tensor::GenerateOp::create(
      b, loc, RankedTensorType::get(shape, st.getElementType()), sizes,
      [&](OpBuilder &gb, Location l, ValueRange idx) {
        F64 g{gb, l};
        IndexMath h{gb, l};
        auto asF64 = [&](Value i) {
          return g.fromI64(arith::IndexCastOp::create(gb, l, gb.getI64Type(), i));
        };
        Value k = asF64(idx[2]), len = asF64(length);
        Value start = arith::MulIOp::create(gb, l, idx[1], hop);
        auto sum = scf::ForOp::create(
            gb, l, h.c(0), length, h.c(1), ValueRange{g.c(0), g.c(0)},
            [&](OpBuilder &sb, Location sl, Value n, ValueRange acc) {
              F64 s{sb, sl};
              Value at = arith::AddIOp::create(sb, sl, start, n);
              auto sample = [&](int64_t part) {
                Value v = tensor::ExtractOp::create(
                    sb, sl, *signal,
                    ValueRange{idx[0], at, arith::ConstantIndexOp::create(sb, sl, part)});
                return arith::ExtFOp::create(sb, sl, sb.getF64Type(), v).getResult();
              };
              Value w = window ? arith::ExtFOp::create(
                                     sb, sl, sb.getF64Type(),
                                     tensor::ExtractOp::create(sb, sl, window, ValueRange{n})
                                         .getResult())
                                     .getResult()
                               : s.c(1);
              Value re = s.mul(sample(0), w), im = complex ? s.mul(sample(1), w) : s.c(0);
              Value nf = s.fromI64(arith::IndexCastOp::create(sb, sl, sb.getI64Type(), n));
              Value angle = s.div(s.mul(s.c(-2 * M_PI), s.mul(k, nf)), len);
              Value c = math::CosOp::create(sb, sl, angle), sn = math::SinOp::create(sb, sl, angle);
              scf::YieldOp::create(
                  sb, sl,
                  ValueRange{s.add(acc[0], s.sub(s.mul(re, c), s.mul(im, sn))),
                             s.add(acc[1], s.add(s.mul(re, sn), s.mul(im, c)))});
            });
        Value part = arith::SelectOp::create(gb, l, h.eq(idx[3], h.c(0)), sum.getResult(0),
                                             sum.getResult(1));
        tensor::YieldOp::create(gb, l,
                                arith::TruncFOp::create(gb, l, gb.getF32Type(), part).getResult());
      });
  return nc.setOutput(0, gen);
}

} // namespace kiln

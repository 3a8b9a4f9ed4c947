//===- Spectral.cpp - DFT, STFT, MelWeightMatrix ---------------------------===//
//
// Signal processing front ends (a speech model's log-mel spectrogram):
//   DFT  as two products with constant cosine and sine tables,
//        Y[k] = sum_n x[n] e^(-+ 2 pi i k n / L): for the lengths of model
//        inputs (hundreds of points) a vectorized product, no FFT needed;
//   STFT as a gather of the frames, the window, then the DFT;
//   MelWeightMatrix as a constant, computed as the ONNX reference does.
// Tables are computed in double (angles from k n mod L), rounded once.
//
//===----------------------------------------------------------------------===//

#include "Expr.h"
#include "RuntimeShapes.h"

#include "kiln/Dialects/Kiln/IR/ShapeUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;

namespace kiln {
namespace {

/// A [rows, cols] constant of `type` from `at(r, c)`.
template <typename Fn>
Value table(NodeContext &nc, Type type, int64_t rows, int64_t cols, Fn at) {
  KnownTensor t;
  t.shape = {rows, cols};
  t.elementType = type;
  t.values.reserve(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      t.values.push_back(at(r, c));
  return nc.constant(t);
}

/// The DFT along dimension `axis` of `x` [..., c] (c = 1: real, 2: complex)
/// of length `length` (the signal zero-padded or cut to it), `bins` of
/// the result kept (all of them, or the one-sided half).
FailureOr<Value> dft(NodeContext &nc, Value x, int64_t axis, int64_t length, int64_t bins,
                     bool inverse) {
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t rank = xt.getRank(), c = xt.getDimSize(rank - 1);
  if (c != 1 && c != 2)
    return nc.error("the last dimension must be 1 (real) or 2 (complex), not " + Twine(c));
  if (axis < 0 || axis >= rank - 1)
    return nc.error("axis " + Twine(axis) + " is not a signal dimension of a rank-" +
                    Twine(rank) + " input");
  Expr e(nc, x);
  Type ft = xt.getElementType();
  // The signal axis next to the complex one: [P, N, c].
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < rank - 1; ++d)
    if (d != axis)
      perm.push_back(d);
  perm.push_back(axis);
  perm.push_back(rank - 1);
  auto permAttr = [&](ArrayRef<int64_t> p) {
    return nc.b.getNamedAttr("perm", nc.b.getDenseI64ArrayAttr(p));
  };
  Value v = axis == rank - 2 ? x : e.op<TransposeOp>({x}, {permAttr(perm)});
  if (xt.getNumElements() == 0)
    return nc.error("expects a non-empty signal");
  int64_t N = xt.getDimSize(axis), P = xt.getNumElements() / (N * c);
  int64_t used = std::min(N, length); // samples past `length` are cut
  if (used * bins > (int64_t(1) << 26))
    return nc.error("a " + Twine(used) + "-point DFT's tables are past what a constant may hold "
                    "here (2^26 values)");
  auto part = [&](int64_t k) {        // real (0) or imaginary (1) part, [P, used]
    auto i64s = [&](StringRef name, ArrayRef<int64_t> a) {
      return nc.b.getNamedAttr(name, nc.b.getDenseI64ArrayAttr(a));
    };
    Value s = e.op<SliceOp>({e.reshape(v, {P, N, c})},
                            {i64s("starts", {0, k}), i64s("ends", {used, k + 1}),
                             i64s("axes", {1, 2}), i64s("steps", {1, 1})});
    return e.reshape(s, {P, used});
  };
  // cos and sin of 2 pi k n / L, the angle's integer part reduced mod L.
  auto angle = [&](int64_t n, int64_t k) {
    return 2 * M_PI * (double)((n * k) % length) / (double)length;
  };
  Value cosT = table(nc, ft, used, bins, [&](int64_t n, int64_t k) { return std::cos(angle(n, k)); });
  Value sinT = table(nc, ft, used, bins, [&](int64_t n, int64_t k) { return std::sin(angle(n, k)); });
  Value re = part(0);
  Value rc = e.op<MatmulOp>({re, cosT}), rs = e.op<MatmulOp>({re, sinT});
  // Forward: (a + ib)(cos - i sin); inverse: (a + ib)(cos + i sin) / L.
  Value outRe, outIm;
  if (c == 1) {
    outRe = rc;
    outIm = inverse ? rs : e.sub(e.c(0), rs);
  } else {
    Value im = part(1);
    Value ic = e.op<MatmulOp>({im, cosT}), is = e.op<MatmulOp>({im, sinT});
    outRe = inverse ? e.sub(rc, is) : e.add(rc, is);
    outIm = inverse ? e.add(ic, rs) : e.sub(ic, rs);
  }
  if (inverse) {
    outRe = e.div(outRe, e.c(length));
    outIm = e.div(outIm, e.c(length));
  }
  Value y = e.op<ConcatOp>({e.reshape(outRe, {P, bins, 1}), e.reshape(outIm, {P, bins, 1})},
                           {nc.b.getNamedAttr("axis", nc.b.getI64IntegerAttr(2))});
  // Back to x's dimension order, the axis now `bins` long.
  SmallVector<int64_t> shape;
  for (int64_t d : perm)
    shape.push_back(d == axis ? bins : d == rank - 1 ? 2 : xt.getDimSize(d));
  y = e.reshape(y, shape);
  if (axis == rank - 2)
    return y;
  SmallVector<int64_t> inversePerm(rank);
  for (int64_t i = 0; i < rank; ++i)
    inversePerm[perm[i]] = i;
  return e.op<TransposeOp>({y}, {permAttr(inversePerm)});
}

/// An optional constant integer input, `dflt` when absent.
FailureOr<int64_t> constOptional(NodeContext &nc, size_t i, StringRef what, int64_t dflt) {
  if (!nc.has(i))
    return dflt;
  auto v = nc.constInts(i, what);
  if (failed(v))
    return failure();
  if (v->size() != 1)
    return nc.error(what + " must be one integer");
  return (*v)[0];
}

LogicalResult dftOp(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  if (!isa<FloatType>(xt.getElementType()))
    return nc.error("expects a floating-point input");
  int64_t rank = xt.getRank();
  // Opset 20 made the axis an input (default -2); before, an attribute
  // (default 1).
  FailureOr<int64_t> axis = nc.opset >= 20 ? constOptional(nc, 2, "axis", -2)
                                           : FailureOr<int64_t>(nc.attrInt("axis", 1));
  if (failed(axis))
    return failure();
  if (*axis < 0)
    *axis += rank;
  bool inverse = nc.attrInt("inverse", 0), onesided = nc.attrInt("onesided", 0);
  if (inverse && onesided)
    return nc.error("an inverse one-sided DFT (irfft) is not supported");
  if (*axis < 0 || *axis >= rank - 1)
    return nc.error("axis must name a signal dimension (not the last, complex one) of a rank-" +
                    Twine(rank) + " input");
  auto length = constOptional(nc, 1, "dft_length", xt.getDimSize(*axis));
  if (failed(length))
    return failure();
  if (*length < 1)
    return nc.error("dft_length must be positive, not " + Twine(*length));
  auto y = dft(nc, *x, *axis, *length, onesided ? *length / 2 + 1 : *length, inverse);
  return failed(y) ? failure() : nc.setOutput(0, *y);
}

/// STFT's window (input 2), or a null value without one.
FailureOr<Value> optionalWindow(NodeContext &nc) {
  if (!nc.has(2))
    return Value();
  return nc.input(2);
}

/// STFT with frame_step or frame_length known only at run time: each
/// output's DFT summed over its frame in a loop, in f64 (quadratic in the
/// frame length; the frame count a value symbol at the output).
LogicalResult stftRuntime(NodeContext &nc) {
  auto signal = nc.input(0);
  auto hopValue = runtimeScalar(nc, 1, "frame_step");
  if (failed(signal) || failed(hopValue))
    return failure();
  auto st = cast<RankedTensorType>(signal->getType());
  if (st.getRank() != 3 || !st.getElementType().isF32() || st.isDynamicDim(2))
    return nc.error("expects an f32 signal [batch, length, 1 or 2]");
  auto windowOr = optionalWindow(nc);
  if (failed(windowOr))
    return failure();
  Value window = *windowOr;
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

LogicalResult stftOp(NodeContext &nc) {
  auto signal = nc.input(0);
  if (failed(signal))
    return failure();
  auto st = cast<RankedTensorType>(signal->getType());
  if (st.getRank() != 3 || !isa<FloatType>(st.getElementType()))
    return nc.error("expects a floating-point signal [batch, length, 1 or 2]");
  if (!nc.known(1) || (nc.has(3) && !nc.known(3)))
    return stftRuntime(nc);
  auto step = nc.constInts(1, "frame_step");
  if (failed(step))
    return failure();
  auto windowOr = optionalWindow(nc);
  if (failed(windowOr))
    return failure();
  Value window = *windowOr;
  int64_t samples = st.getDimSize(1);
  int64_t dflt = window ? cast<RankedTensorType>(window.getType()).getDimSize(0) : samples;
  auto frameLength = constOptional(nc, 3, "frame_length", dflt);
  if (failed(frameLength))
    return failure();
  int64_t L = *frameLength, hop = step->size() == 1 ? (*step)[0] : 0;
  if (hop < 1 || L < 1 || L > samples)
    return nc.error("needs frame_step >= 1 and 1 <= frame_length <= the signal's " +
                    Twine(samples) + " samples");
  if (window && cast<RankedTensorType>(window.getType()).getDimSize(0) != L)
    return nc.error("the window must have frame_length (" + Twine(L) + ") values");
  int64_t frames = 1 + (samples - L) / hop;
  if (frames * L > (int64_t(1) << 26))
    return nc.error("its " + Twine(frames) + " frames of " + Twine(L) +
                    " samples are past what a constant index may hold here (2^26 values)");
  bool onesided = nc.attrInt("onesided", 1);
  // The frames, [batch, frames, L, c], gathered by a constant index.
  KnownTensor index;
  index.shape = {frames, L};
  index.elementType = nc.b.getI64Type();
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t i = 0; i < L; ++i)
      index.values.push_back(f * hop + i);
  Expr e(nc, *signal);
  Value framed = e.op<GatherOp>({*signal, nc.constant(index)},
                                {nc.b.getNamedAttr("axis", nc.b.getI64IntegerAttr(1))});
  if (window)
    framed = e.mul(framed, e.reshape(window, {L, 1}));
  auto y = dft(nc, framed, 2, L, onesided ? L / 2 + 1 : L, /*inverse=*/false);
  return failed(y) ? failure() : nc.setOutput(0, *y);
}

/// MelWeightMatrix with inputs given as data: each weight computed from
/// its band's three edges, as melWeightMatrix computes them; the
/// [dft_length / 2 + 1, num_mel_bins] size is read at run time.
LogicalResult melWeightMatrixRuntime(NodeContext &nc, Type type) {
  static const char *names[] = {"num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz",
                                "upper_edge_hertz"};
  SmallVector<Value> in;
  for (size_t i = 0; i < 5; ++i) {
    auto v = runtimeScalar(nc, i, names[i]);
    if (failed(v))
      return failure();
    if ((i < 3) != isa<IntegerType>(v->getType()))
      return nc.error(Twine(names[i]) + (i < 3 ? " must be an integer" : " must be a float"));
    in.push_back(*v);
  }
  nc.ctx()->getOrLoadDialect<math::MathDialect>();
  OpBuilder &b = nc.b;
  Location loc = nc.loc;
  F64 f{b, loc};
  IndexMath m{b, loc};
  auto i64 = [&](Value v) -> Value {
    return v.getType().isInteger(64) ? v : arith::ExtSIOp::create(b, loc, b.getI64Type(), v);
  };
  auto real = [&](Value v) -> Value {
    if (isa<IntegerType>(v.getType()))
      return f.fromI64(i64(v));
    return v.getType().isF64() ? v : arith::ExtFOp::create(b, loc, b.getF64Type(), v);
  };
  Value bins = real(in[0]), length = real(in[1]), rate = real(in[2]);
  Value lower = real(in[3]), upper = real(in[4]);
  // Sizes -1 (refused before the run) for a count or length below 1.
  auto size = [&](Value n) {
    Value idx = arith::IndexCastOp::create(b, loc, b.getIndexType(), n);
    return m.sel(m.cmp(arith::CmpIPredicate::sge, idx, m.c(1)), idx, m.c(-1));
  };
  Value numBins = size(i64(in[0]));
  Value half = arith::DivSIOp::create(b, loc, i64(in[1]),
                                      arith::ConstantIntOp::create(b, loc, b.getI64Type(), 2));
  // As at compile time: a positive sample rate and 0 <= lower < upper
  // (NaN fails every comparison), else the matrix is refused (size -1).
  using FP = arith::CmpFPredicate;
  Value valid = m.both(m.both(f.cmp(FP::OGE, lower, f.c(0)), f.cmp(FP::OGT, upper, lower)),
                       f.cmp(FP::OGE, rate, f.c(1)));
  Value spectrum = m.sel(m.either(m.cmp(arith::CmpIPredicate::slt, size(i64(in[1])), m.c(0)),
                                  m.eq(valid, m.falseValue())),
                         m.c(-1),
                         m.add(arith::IndexCastOp::create(b, loc, b.getIndexType(), half), m.c(1)));
  auto mel = [&](Value hz) {
    return f.div(f.mul(f.c(2595), math::Log1pOp::create(b, loc, f.div(hz, f.c(700)))),
                 f.c(std::log(10.0)));
  };
  Value low = mel(lower), step = f.div(f.sub(mel(upper), low), f.add(bins, f.c(2)));
  auto out = tensor::GenerateOp::create(
      b, loc, RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic}, type),
      ValueRange{spectrum, numBins}, [&](OpBuilder &gb, Location gl, ValueRange ji) {
        F64 g{gb, gl};
        auto toF = [&](Value idx) {
          return g.fromI64(arith::IndexCastOp::create(gb, gl, gb.getI64Type(), idx));
        };
        Value j = toF(ji[0]), i = toF(ji[1]);
        auto edge = [&](double k) { // the k-th band edge after band i's first
          Value at = g.add(g.mul(g.add(i, g.c(k)), step), low);
          Value hz = g.mul(g.c(700), math::ExpM1Op::create(
                                         gb, gl, g.mul(g.div(at, g.c(2595)), g.c(std::log(10.0)))));
          return g.floor(g.div(g.mul(g.add(length, g.c(1)), hz), rate));
        };
        Value left = edge(0), centre = edge(1), right = edge(2);
        using P = arith::CmpFPredicate;
        Value rising = g.sel(g.cmp(P::OEQ, centre, left), g.c(1),
                             g.div(g.sub(j, left), g.sub(centre, left)));
        Value falling = g.div(g.sub(right, j), g.sub(right, centre));
        Value w = g.sel(g.cmp(P::OLT, j, left), g.c(0),
                        g.sel(g.cmp(P::OLE, j, centre), rising,
                              g.sel(g.cmp(P::OLT, j, right), falling, g.c(0))));
        if (!type.isF64())
          w = arith::TruncFOp::create(gb, gl, type, w);
        tensor::YieldOp::create(gb, gl, w);
      });
  return nc.setOutput(0, out);
}

LogicalResult melWeightMatrix(NodeContext &nc) {
  int32_t dataType = nc.attrInt("output_datatype", 1);
  Type type = onnxElementType(nc.ctx(), dataType);
  if (!type || !isa<FloatType>(type))
    return nc.error("unsupported output_datatype " + onnxTypeName(dataType));
  for (size_t i = 0; i < 5; ++i)
    if (nc.has(i) && !nc.known(i))
      return melWeightMatrixRuntime(nc, type);
  auto bins = nc.constInts(0, "num_mel_bins"), length = nc.constInts(1, "dft_length"),
       rate = nc.constInts(2, "sample_rate");
  auto lower = nc.constScalar(3, "lower_edge_hertz"), upper = nc.constScalar(4, "upper_edge_hertz");
  if (failed(bins) || failed(length) || failed(rate) || failed(lower) || failed(upper))
    return failure();
  if (bins->size() != 1 || length->size() != 1 || rate->size() != 1 || (*bins)[0] < 1 ||
      (*length)[0] < 1 || (*rate)[0] < 1)
    return nc.error("num_mel_bins, dft_length and sample_rate must be positive integers");
  int64_t M = (*bins)[0], L = (*length)[0], R = (*rate)[0], spectrum = L / 2 + 1;
  if (M > (int64_t(1) << 16) || L > (int64_t(1) << 24) || spectrum * M > (int64_t(1) << 26))
    return nc.error("a " + Twine(spectrum) + " x " + Twine(M) +
                    " matrix is past what a constant may hold here");
  if (!std::isfinite(*lower) || !std::isfinite(*upper) || *lower < 0 || *upper <= *lower)
    return nc.error("needs 0 <= lower_edge_hertz < upper_edge_hertz");
  // M + 2 points evenly spaced in mel, back to Hz, to spectrum bins.
  auto mel = [](double hz) { return 2595 * std::log1p(hz / 700) / std::log(10.0); };
  double low = mel(*lower), high = mel(*upper), step = (high - low) / (M + 2);
  SmallVector<int64_t> edges;
  for (int64_t i = 0; i < M + 2; ++i) {
    double hz = 700 * std::expm1((i * step + low) / 2595 * std::log(10.0));
    double bin = std::floor((L + 1) * hz / R);
    if (!std::isfinite(bin) || bin < 0 || bin > spectrum)
      return nc.error("the mel bands reach past the spectrum's " + Twine(spectrum) +
                      " bins (edge frequencies beyond the sample rate's half?)");
    edges.push_back((int64_t)bin);
  }
  SmallVector<double> w(spectrum * M, 0.0);
  auto at = [&](int64_t j, int64_t i) -> double & { return w[j * M + i]; };
  for (int64_t i = 0; i < M; ++i) {
    int64_t left = edges[i], centre = edges[i + 1], right = edges[i + 2];
    if (left < 0 || right >= spectrum + 1 || centre >= spectrum)
      return nc.error("the mel bands reach past the spectrum's " + Twine(spectrum) +
                      " bins (edge frequencies beyond the sample rate's half?)");
    if (centre == left)
      at(centre, i) = 1;
    else
      for (int64_t j = left; j <= centre; ++j)
        at(j, i) = double(j - left) / double(centre - left);
    for (int64_t j = centre; j < right; ++j)
      at(j, i) = double(right - j) / double(right - centre);
  }
  KnownTensor t;
  t.shape = {spectrum, M};
  t.elementType = type;
  t.values.assign(w.begin(), w.end());
  return nc.setOutput(0, nc.constant(t));
}

} // namespace

void registerSpectralHandlers(HandlerTable &t) {
  t["DFT"] = dftOp;
  t["STFT"] = stftOp;
  t["MelWeightMatrix"] = melWeightMatrix;
}

} // namespace kiln

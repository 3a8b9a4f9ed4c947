//===- QuantizedConv.cpp - 8-bit convolutions as channels-last integer products
//
// ConvInteger, QLinearConv and a QDQ model's Conv of uint8 activations and
// constant int8 weights, where the target has an 8-bit tile, VNNI's or
// AVX2's (NodeContext::integerConvs; depthwise ones with VNNI's only):
//
//   xt   = transpose(x) [N, H, W, C]            (channels last)
//   xp   = pad(xt) with x's zero point         (so padding adds nothing)
//   cols = kiln.im2col(xp): its windows, a row per pixel [N, OH, OW, KH*KW*C]
//   acc  = kiln.matmul_integer(cols [N, OH*OW, K], W' [K, F])  (exact, i32)
//
// with W' the weights reordered to (kh, kw, c) rows at compile time, the
// zero points applied around the product (integerMatmul), and the result
// transposed back to NCHW after the epilogue. Channels last, a pixel's
// channels are contiguous: the product's rows read 4 of them as one word,
// as vpdpbusd takes its unsigned operand, and the weights are the
// compile-time packed panels of a linear layer. The transposes between
// consecutive convolutions cancel (kiln-sink-transposes moves them past
// the requantization and residual adds between). In f32 this ran as a
// floating-point convolution of the dequantized image, at a quarter of
// vpdpbusd's multiply-adds an instruction.
//
//===----------------------------------------------------------------------===//

#include "Expr.h"
#include "Quantize.h"

using namespace mlir;

namespace kiln {
namespace {

NamedAttribute i64s(NodeContext &nc, StringRef name, ArrayRef<int64_t> v) {
  return nc.b.getNamedAttr(name, nc.b.getDenseI64ArrayAttr(v));
}

/// The node's 2-D window geometry when it is plainly valid (otherwise the
/// floating-point path reports what is wrong): strides, dilations and
/// pads [top, left, bottom, right].
struct Windows {
  SmallVector<int64_t> strides, dilations, pads;
};
std::optional<Windows> windows(NodeContext &nc, ArrayRef<int64_t> in, ArrayRef<int64_t> kernel) {
  Windows g;
  auto strides = nc.attrInts("strides", {1, 1}), dilations = nc.attrInts("dilations", {1, 1});
  auto positive = [](ArrayRef<int64_t> v) {
    return v.size() == 2 && llvm::all_of(v, [](int64_t x) { return x >= 1 && x <= 4096; });
  };
  std::string autoPad = nc.attrString("auto_pad", "NOTSET");
  auto pads = nc.attrInts("pads", {0, 0, 0, 0});
  if (!positive(strides) || !positive(dilations) ||
      (autoPad == "NOTSET" &&
       (pads.size() != 4 || llvm::any_of(pads, [](int64_t p) { return p < 0 || p > 4096; }))) ||
      (autoPad != "NOTSET" && autoPad != "VALID" && autoPad != "SAME_UPPER" &&
       autoPad != "SAME_LOWER"))
    return std::nullopt;
  auto resolved = resolvePads(nc, in, kernel, strides, dilations);
  if (failed(resolved))
    return std::nullopt;
  g.strides.assign(strides.begin(), strides.end());
  g.dilations.assign(dilations.begin(), dilations.end());
  g.pads = *resolved;
  return g;
}

/// A depthwise convolution's windows over a padded NHWC image `xp`: sizes
/// and steps of its taps, and the output's.
struct Taps {
  int64_t kh, kw, sh, sw, dh, dw, oh, ow;
};

/// sum over taps t of xp's strided slice t times (w_t - zw) per channel,
/// minus zx times each channel's sum of those: (x - zx)(w - zw) summed in
/// i32, exactly, as elementwise ops on channels-last slices that kernel
/// formation fuses into one kernel, vectorized along the channels (no
/// transposes around it, which an NCHW depthwise convolution between two
/// channels-last ones needed). Null when zw is not a constant of one or C
/// values.
Value depthwiseTaps(NodeContext &nc, Value xp, ArrayRef<int64_t> weights, Value wZero,
                    int64_t zx, const Taps &t) {
  int64_t C = cast<RankedTensorType>(xp.getType()).getDimSize(3), T = t.kh * t.kw;
  SmallVector<int64_t> zw(C, 0);
  if (wZero) {
    auto z = constantInts(wZero);
    if (!z || (z->size() != 1 && (int64_t)z->size() != C))
      return {};
    for (int64_t c = 0; c < C; ++c)
      zw[c] = (*z)[z->size() == 1 ? 0 : c];
  }
  Type i32 = nc.b.getI32Type();
  Expr e(nc, xp);
  auto perChannel = [&](ArrayRef<double> v) {
    KnownTensor k;
    k.shape = {C};
    k.elementType = i32;
    k.values.assign(v.begin(), v.end());
    return nc.constant(k);
  };
  SmallVector<double> sums(C, 0.0);
  Value acc;
  for (int64_t kh = 0; kh < t.kh; ++kh)
    for (int64_t kw = 0; kw < t.kw; ++kw) {
      SmallVector<double> tap(C);
      for (int64_t c = 0; c < C; ++c) {
        tap[c] = double(weights[c * T + kh * t.kw + kw] - zw[c]);
        sums[c] += tap[c];
      }
      Value slice = e.op<SliceOp>(
          {xp}, {i64s(nc, "starts", {kh * t.dh, kw * t.dw}),
                 i64s(nc, "ends", {kh * t.dh + (t.oh - 1) * t.sh + 1, kw * t.dw + (t.ow - 1) * t.sw + 1}),
                 i64s(nc, "axes", {1, 2}), i64s(nc, "steps", {t.sh, t.sw})});
      Value term = e.mul(nc.castTo(slice, i32), perChannel(tap));
      acc = acc ? e.add(acc, term) : term;
    }
  for (double &s : sums)
    s *= double(zx);
  return e.sub(acc, perChannel(sums));
}

} // namespace

FailureOr<Value> ChannelsLastConv::perChannel(NodeContext &nc, Value param,
                                              const Twine &what) const {
  auto pt = cast<RankedTensorType>(param.getType());
  if (pt.getNumElements() == 1)
    return Expr(nc, param).reshape(param, {});
  if (pt.getRank() != 1 || pt.getDimSize(0) != f)
    return nc.error(what + " must be a scalar or have " + Twine(f) +
                    " values (one per output channel), not " + Twine(pt.getNumElements()));
  return param;
}

Value ChannelsLastConv::toNchw(NodeContext &nc, Value v) const {
  Expr e(nc, v);
  Value image = e.reshape(v, {n, oh, ow, f});
  return e.op<TransposeOp>({image}, {i64s(nc, "perm", {0, 3, 1, 2})});
}

std::optional<ChannelsLastConv> integerConv(NodeContext &nc, Value x, Value xZero, Value w,
                                            Value wZero) {
  auto xt = cast<RankedTensorType>(x.getType()), wt = cast<RankedTensorType>(w.getType());
  // A batch known only at run time is fine (the rows' count); the rest
  // must be static.
  auto staticButBatch = [](RankedTensorType t) {
    return llvm::none_of(t.getShape().drop_front(), ShapedType::isDynamic);
  };
  if (!nc.integerConvs || xt.getRank() != 4 || wt.getRank() != 4 || !staticButBatch(xt) ||
      !wt.hasStaticShape() || !wt.getElementType().isSignlessInteger(8) ||
      !(xt.getElementType().isUnsignedInteger(8) || xt.getElementType().isSignlessInteger(8)))
    return std::nullopt;
  bool signedX = xt.getElementType().isSignlessInteger(8);
  int64_t N = xt.getDimSize(0), C = xt.getDimSize(1), H = xt.getDimSize(2), W = xt.getDimSize(3);
  int64_t F = wt.getDimSize(0), KH = wt.getDimSize(2), KW = wt.getDimSize(3), K = C * KH * KW;
  int64_t group = nc.attrInt("group", 1);
  // Depthwise (MobileNet's): a channel's own window, one weight per tap.
  bool depthwise = group > 1 && group == C && F == C && wt.getDimSize(1) == 1;
  if ((group != 1 && !depthwise) || (depthwise && !nc.integerDepthwise) ||
      (!depthwise && wt.getDimSize(1) != C) || K == 0 || F == 0 || N == 0)
    return std::nullopt;
  if (depthwise)
    K = KH * KW;
  // vpdpbusd takes k in 4s: where C x KH x KW is not a multiple of 4 (an
  // RGB stem's 3 x 7 x 7), the image gets channels up to a multiple of 4
  // holding x's zero point and the weights zeros there, so they add
  // nothing (4 x 7 x 7 = 196).
  int64_t Cp = K % 4 && !depthwise ? (C + 3) / 4 * 4 : C;
  if (!depthwise)
    K = Cp * KH * KW;
  std::optional<int64_t> zero = scalarZeroPoint(xZero);
  if (!zero)
    return std::nullopt;
  int64_t zx = *zero;
  auto weights = constantInts(w);
  auto g = windows(nc, {H, W}, {KH, KW});
  int64_t perFilter = (depthwise ? 1 : C) * KH * KW;
  if (!weights || (int64_t)weights->size() != F * perFilter || !g)
    return std::nullopt;
  auto extent = [&](int64_t in, int64_t before, int64_t after, int64_t k, int64_t s, int64_t d) {
    int64_t span = in + before + after - d * (k - 1) - 1;
    return span < 0 ? int64_t(0) : span / s + 1;
  };
  int64_t OH = extent(H, g->pads[0], g->pads[2], KH, g->strides[0], g->dilations[0]);
  int64_t OW = extent(W, g->pads[1], g->pads[3], KW, g->strides[1], g->dilations[1]);
  if (OH == 0 || OW == 0)
    return std::nullopt;

  Expr e(nc, x);
  Value cols = e.op<TransposeOp>({x}, {i64s(nc, "perm", {0, 2, 3, 1})});
  // int8 activations (onnxruntime's quantize_static default) shifted to
  // uint8, their zero point with them; after the transpose, which then
  // still composes with the previous convolution's.
  if (signedX) {
    auto u = unsignedActivations(nc, cols, xZero);
    if (!u)
      return std::nullopt;
    std::tie(cols, xZero) = *u;
    zx += 128;
  }
  if (Cp != C || llvm::any_of(g->pads, [](int64_t p) { return p != 0; })) {
    auto &p = g->pads;
    cols = e.op<PadOp>({cols}, {i64s(nc, "pads", {0, p[0], p[1], 0, 0, p[2], p[3], Cp - C}),
                                nc.b.getNamedAttr("value", nc.b.getF64FloatAttr((double)zx))});
  }
  int64_t sh = g->strides[0], sw = g->strides[1], dh = g->dilations[0], dw = g->dilations[1];
  if (depthwise) {
    Value acc = depthwiseTaps(nc, cols, *weights, wZero, zx, {KH, KW, sh, sw, dh, dw, OH, OW});
    if (!acc)
      return std::nullopt;
    return ChannelsLastConv{e.reshape(acc, {N, OH * OW, C}), N, OH, OW, C};
  }
  // W' [K, F]: row (kh, kw, c) holds w[:, c, kh, kw], the order of the
  // channels-last columns.
  KnownTensor wk;
  wk.shape = {K, F};
  wk.elementType = wt.getElementType();
  wk.values.assign(K * F, 0.0);
  for (int64_t f = 0; f < F; ++f)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw)
          wk.values[((kh * KW + kw) * Cp + c) * F + f] =
              (double)(*weights)[((f * C + c) * KH + kh) * KW + kw];

  bool whole = KH == 1 && KW == 1 && sh == 1 && sw == 1 && OH == H && OW == W && Cp == C;
  if (!whole)
    cols = e.op<Im2ColOp>({cols}, {i64s(nc, "kernel_shape", {KH, KW}), i64s(nc, "strides", {sh, sw}),
                                   i64s(nc, "dilations", {dh, dw})});
  Value rows = e.reshape(cols, {N, OH * OW, K});
  Value acc = integerMatmul(nc, rows, xZero, nc.constant(wk), wZero);
  if (!acc)
    return std::nullopt;
  return ChannelsLastConv{acc, N, OH, OW, F};
}

Value dequantizedConv(NodeContext &nc, Value bias) {
  const Dequantized *dx = nc.dequantizedInput(0), *dw = nc.dequantizedInput(1);
  if (!nc.integerConvs || !dx || !dw)
    return {};
  auto isF32 = [](Value v) { return cast<RankedTensorType>(v.getType()).getElementType().isF32(); };
  auto elements = [](Value v) { return cast<RankedTensorType>(v.getType()).getNumElements(); };
  auto wt = dyn_cast<RankedTensorType>(dw->q.getType());
  if (!wt || wt.getRank() != 4 || !wt.hasStaticShape() || !isF32(dx->scale) ||
      !isF32(dw->scale) || elements(dx->scale) != 1 ||
      (elements(dw->scale) != 1 && (elements(dw->scale) != wt.getDimSize(0) || dw->axis != 0)))
    return {};
  if (bias) {
    auto bt = cast<RankedTensorType>(bias.getType());
    if (!isF32(bias) || bt.getRank() != 1 || bt.getDimSize(0) != wt.getDimSize(0))
      return {};
  }
  auto conv = integerConv(nc, dx->q, dx->zero, dw->q, dw->zero);
  if (!conv)
    return {};
  auto ws = conv->perChannel(nc, dw->scale, "the weights' scale");
  if (failed(ws))
    return {};
  Expr e(nc, dx->scale);
  Value y = e.mul(nc.castTo(conv->acc, nc.b.getF32Type()), e.mul(e.reshape(dx->scale, {}), *ws));
  if (bias)
    y = e.add(y, bias);
  return conv->toNchw(nc, y);
}

} // namespace kiln

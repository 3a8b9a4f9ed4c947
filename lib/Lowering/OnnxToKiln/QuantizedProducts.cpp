//===- QuantizedProducts.cpp - MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv
//
// The products of onnxruntime's quantized models (dynamic quantization's
// MatMulInteger, static quantization's QOperator format):
//   acc = (a - a_zero_point) x (b - b_zero_point)
//   y   = saturate(round_half_even(acc * a_scale * b_scale / y_scale) + y_zero_point)
// (and com.microsoft's QGemm, the same with a bias and alpha).
// Matrix products are exact on the vectorized f32 path: K is cut into
// chunks in which the operands' ranges, or a constant B's column sums,
// keep every partial sum below 2^24, and the chunks are summed in int32. Convolutions accumulate in f32 (kiln's
// convolutions are floating-point): exact while every partial sum stays
// below 2^24 in magnitude, which (255 x 128 per term for uint8 activations
// and int8 weights) holds for up to 514 terms whatever the data, and for
// far more with real activations.
//
//===----------------------------------------------------------------------===//

#include "Expr.h"
#include "Quantize.h"
#include "SymbolicShape.h"

#include "kiln/Dialects/Kiln/IR/ConstantData.h"

#include <algorithm>

using namespace mlir;

namespace kiln {
namespace {
/// B's matrix before a transB transpose (a 2-D swap, `transposed`), else
/// B itself: a constant B is shifted there, so that both fold at compile
/// time. Any other transpose (attention's keys, [B, H, D, T]) is B's own.
Value transBSource(Value b) {
  auto t = b.getDefiningOp<TransposeOp>();
  return t && t.getPerm() == ArrayRef<int64_t>{1, 0} ? t.getInput() : b;
}

/// An optional input, null when absent.
FailureOr<Value> optionalInput(NodeContext &nc, int i) {
  if (!nc.has(i))
    return Value();
  return nc.input(i);
}

/// A per-tensor parameter (a scalar or one element) as it is; one with an
/// element per index of dimension `dim` of `like` (a row's zero point or
/// scale, an output channel's) reshaped to broadcast along it.
FailureOr<Value> alongDim(NodeContext &nc, Value param, Value like, int64_t dim,
                          const Twine &what) {
  auto pt = cast<RankedTensorType>(param.getType());
  auto lt = cast<RankedTensorType>(like.getType());
  if (pt.getNumElements() == 1)
    return Expr(nc, param).reshape(param, {});
  if (pt.getRank() != 1 || pt.getDimSize(0) != lt.getDimSize(dim))
    return nc.error(what + " must be a scalar or have " + Twine(lt.getDimSize(dim)) +
                    " values (one per index of dimension " + Twine(dim) + "), not " +
                    Twine(pt.getNumElements()));
  SmallVector<int64_t> shape(lt.getRank() - dim, 1);
  shape[0] = pt.getDimSize(0);
  return Expr(nc, param).reshape(param, shape);
}

/// `q` - `zeroPoint` (broadcast along `dim` of `q`) in `type`.
FailureOr<Value> shifted(NodeContext &nc, Value q, Value zeroPoint, int64_t dim, Type type,
                         StringRef what) {
  if (!cast<RankedTensorType>(q.getType()).getElementType().isInteger(8))
    return nc.error(what + "'s data must be 8-bit integers");
  // Constant weights shift now: f32 weights the product packs at compile
  // time.
  if (type.isF32())
    if (Value folded = foldDequantized(nc, q, zeroPoint, Value(), dim))
      return folded;
  Value v = nc.castTo(q, type);
  if (!zeroPoint)
    return v;
  auto z = alongDim(nc, zeroPoint, q, dim, what + "'s zero point");
  if (failed(z))
    return failure();
  return Expr(nc, v).sub(v, nc.castTo(*z, type));
}

/// The smallest and largest values `v` may hold: its constant's, else its
/// integer type's range.
std::pair<int64_t, int64_t> valueRange(Value v) {
  if (auto values = constantInts(v); values && !values->empty()) {
    auto [lo, hi] = std::minmax_element(values->begin(), values->end());
    return {*lo, *hi};
  }
  auto it = cast<IntegerType>(cast<RankedTensorType>(v.getType()).getElementType());
  unsigned w = it.getWidth();
  if (it.isUnsigned())
    return {0, (int64_t)((1ull << w) - 1)};
  return {-(int64_t)(1ull << (w - 1)), (int64_t)((1ull << (w - 1)) - 1)};
}

/// The largest |q - zero| can be.
int64_t largestShift(Value q, Value zero) {
  auto [qlo, qhi] = valueRange(q);
  auto [zlo, zhi] = zero ? valueRange(zero) : std::pair<int64_t, int64_t>{0, 0};
  return std::max(std::abs(qhi - zlo), std::abs(qlo - zhi));
}

/// For a constant matrix B [K, N] (or the transpose of a constant [N, K]),
/// |B[k, n] - zero[n]| row by row; none when B is not one.
std::optional<SmallVector<int64_t>> constantShifts(Value b, Value zero) {
  bool transposed = false;
  if (auto t = b.getDefiningOp<TransposeOp>()) {
    b = t.getInput();
    transposed = true;
  }
  auto bt = cast<RankedTensorType>(b.getType());
  auto values = constantInts(b);
  if (!values || bt.getRank() != 2)
    return std::nullopt;
  int64_t rows = bt.getDimSize(0), cols = bt.getDimSize(1);
  int64_t K = transposed ? cols : rows, N = transposed ? rows : cols;
  SmallVector<int64_t> zeros(N, 0);
  if (zero) {
    auto z = constantInts(zero);
    if (!z || (z->size() != 1 && (int64_t)z->size() != N))
      return std::nullopt;
    for (int64_t n = 0; n < N; ++n)
      zeros[n] = (*z)[z->size() == 1 ? 0 : n];
  }
  SmallVector<int64_t> shifts(K * N);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n)
      shifts[k * N + n] =
          std::abs((*values)[transposed ? n * cols + k : k * cols + n] - zeros[n]);
  return shifts;
}

/// Where to cut K so that no partial sum of a chunk can reach 2^24: by a
/// constant B's column sums when it is one, else by the operands' ranges.
/// [0, ..., K]; one chunk for short products and most linear layers.
SmallVector<int64_t> exactChunks(Value a, Value aZero, Value b, Value bZero, int64_t K) {
  constexpr int64_t kExact = int64_t(1) << 24;
  int64_t shiftA = std::max<int64_t>(largestShift(a, aZero), 1);
  SmallVector<int64_t> cuts{0};
  if (auto shifts = constantShifts(b, bZero)) {
    int64_t N = (int64_t)shifts->size() / K;
    SmallVector<int64_t> sums(N, 0);
    for (int64_t k = 0; k < K; ++k) {
      bool over = false;
      for (int64_t n = 0; n < N; ++n)
        over |= (sums[n] + (*shifts)[k * N + n]) * shiftA >= kExact;
      if (over) {
        cuts.push_back(k);
        std::fill(sums.begin(), sums.end(), 0);
      }
      for (int64_t n = 0; n < N; ++n)
        sums[n] += (*shifts)[k * N + n];
    }
  } else {
    Value bSource = transBSource(b);
    int64_t step = std::max<int64_t>(1, (kExact - 1) / (shiftA * std::max<int64_t>(
                                                                    largestShift(bSource, bZero), 1)));
    for (int64_t k = step; k < K; k += step)
      cuts.push_back(k);
  }
  cuts.push_back(K);
  return cuts;
}

/// `v` sliced to [from, to) along `axis`.
Value sliceAlong(NodeContext &nc, Value v, int64_t axis, int64_t from, int64_t to) {
  auto i64s = [&](StringRef name, int64_t x) {
    return nc.b.getNamedAttr(name, nc.b.getDenseI64ArrayAttr({x}));
  };
  return Expr(nc, v).op<SliceOp>({v}, {i64s("starts", from), i64s("ends", to), i64s("axes", axis),
                                       i64s("steps", 1)});
}

/// An i32 constant of `shape` holding `values`.
Value i32Constant(NodeContext &nc, ArrayRef<int64_t> shape, ArrayRef<int64_t> values) {
  KnownTensor k;
  k.shape.assign(shape.begin(), shape.end());
  k.elementType = nc.b.getI32Type();
  for (int64_t v : values)
    k.values.push_back((double)v);
  return nc.constant(k);
}

/// A constant matrix [N, K] as the [K, N] constant the VNNI tile packs;
/// null when `q` holds no constant of that size.
Value transposedConstant(NodeContext &nc, Value q, int64_t N, int64_t K) {
  auto values = constantInts(q);
  if (!values || (int64_t)values->size() != K * N)
    return {};
  KnownTensor k;
  k.shape = {K, N};
  k.elementType = cast<RankedTensorType>(q.getType()).getElementType();
  k.values.resize(K * N);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t j = 0; j < K; ++j)
      k.values[j * N + n] = (double)(*values)[n * K + j];
  return nc.constant(k);
}

} // namespace

std::optional<int64_t> scalarZeroPoint(Value zero) {
  if (!zero)
    return 0;
  auto v = constantInts(zero);
  if (!v || v->size() != 1)
    return std::nullopt;
  return (*v)[0];
}

std::optional<std::pair<Value, Value>> unsignedActivations(NodeContext &nc, Value x,
                                                          Value zero) {
  std::optional<int64_t> z = scalarZeroPoint(zero);
  if (!z)
    return std::nullopt;
  Type ui8 = IntegerType::get(nc.b.getContext(), 8, IntegerType::Unsigned);
  Value wide = nc.castTo(x, nc.b.getI32Type());
  Expr e(nc, wide);
  Value shifted = nc.castTo(e.add(wide, e.c(128)), ui8);
  KnownTensor k;
  k.elementType = ui8;
  k.values = {double(*z + 128)};
  return std::make_pair(shifted, nc.constant(k));
}

/// (a - a_zero_point) x (b - b_zero_point) as kiln.matmul_integer, exact
/// in i32, for uint8 activations times constant int8 weights [K, N] (the
/// operand types of VNNI's vpdpbusd), the zero points applied around it:
///   sum_k (a - za)(b - zb) = a.b - za (colsum(b) - K zb) - rowsum(a) zb
/// with colsum(b) - K zb known now, and rowsum(a) summed only for a B
/// zero point other than 0 (onnxruntime quantizes weights symmetrically).
/// Null when the operands are not of that form (A's zero point must be
/// one value, B's constant; K a whole number of vpdpbusd's 4-byte groups).
Value integerMatmul(NodeContext &nc, Value a, Value aZero, Value b, Value bZero) {
  // QGemm's transB: the transposed constant, now.
  if (auto t = b.getDefiningOp<TransposeOp>(); t && nc.integerProducts)
    if (auto src = cast<RankedTensorType>(t.getInput().getType()); src.getRank() == 2 &&
                                                                   src.hasStaticShape())
      if (Value c = transposedConstant(nc, t.getInput(), src.getDimSize(0), src.getDimSize(1)))
        b = c;
  auto at = cast<RankedTensorType>(a.getType()), bt = cast<RankedTensorType>(b.getType());
  bool signedA = at.getElementType().isSignlessInteger(8);
  if (!nc.integerProducts || at.getRank() < 2 || bt.getRank() != 2 ||
      !(at.getElementType().isUnsignedInteger(8) || signedA) ||
      !bt.getElementType().isSignlessInteger(8) ||
      !bt.hasStaticShape() || bt.getDimSize(0) % 4 ||
      (aZero && cast<RankedTensorType>(aZero.getType()).getNumElements() != 1))
    return {};
  int64_t K = bt.getDimSize(0), N = bt.getDimSize(1);
  auto values = constantInts(b);
  std::optional<SmallVector<int64_t>> zeros =
      bZero ? constantInts(bZero) : std::optional<SmallVector<int64_t>>(SmallVector<int64_t>{0});
  if (!values || (int64_t)values->size() != K * N || !zeros ||
      (zeros->size() != 1 && (int64_t)zeros->size() != N))
    return {};
  if (signedA) {
    auto u = unsignedActivations(nc, a, aZero);
    if (!u)
      return {};
    std::tie(a, aZero) = *u;
    at = cast<RankedTensorType>(a.getType());
  }
  SmallVector<int64_t> zb(N), corr(N, 0);
  bool shifted = false;
  for (int64_t n = 0; n < N; ++n) {
    zb[n] = (*zeros)[zeros->size() == 1 ? 0 : n];
    shifted |= zb[n] != 0;
    for (int64_t k = 0; k < K; ++k)
      corr[n] += (*values)[k * N + n];
    corr[n] -= K * zb[n];
  }
  Expr e(nc, a);
  Value y = e.op<MatmulIntegerOp>({a, b});
  Type i32 = nc.b.getI32Type();
  if (aZero)
    y = e.sub(y, e.mul(nc.castTo(e.reshape(aZero, {}), i32), i32Constant(nc, {N}, corr)));
  if (shifted) {
    Value rows = e.reduce<ReduceSumOp>(nc.castTo(a, i32), {at.getRank() - 1});
    y = e.sub(y, e.mul(rows, i32Constant(nc, {N}, zb)));
  }
  return y;
}

Value dequantizedProduct(NodeContext &nc, bool gemm) {
  const Dequantized *da = nc.dequantizedInput(0), *db = nc.dequantizedInput(1);
  bool transB = gemm && nc.attrInt("transB", 0);
  if (!nc.integerProducts || !da || !db || (gemm && nc.attrInt("transA", 0)))
    return {};
  auto bt = cast<RankedTensorType>(db->q.getType());
  auto elements = [](Value v) { return cast<RankedTensorType>(v.getType()).getNumElements(); };
  auto isF32 = [](Value v) { return cast<RankedTensorType>(v.getType()).getElementType().isF32(); };
  if (bt.getRank() != 2 || !bt.hasStaticShape() || elements(da->scale) != 1 || !isF32(da->scale) ||
      !isF32(db->scale))
    return {};
  int64_t N = bt.getDimSize(transB ? 0 : 1), K = bt.getDimSize(transB ? 1 : 0);
  // B's scale (and zero point): one, or one per column along its axis.
  bool perColumn = elements(db->scale) != 1;
  if (perColumn && (elements(db->scale) != N || db->axis != (transB ? 0 : 1)))
    return {};
  Value bq = db->q;
  if (transB && !(bq = transposedConstant(nc, bq, N, K))) // [N, K] data
    return {};
  Value acc = integerMatmul(nc, da->q, da->zero, bq, db->zero);
  if (!acc)
    return {};
  Expr e(nc, da->scale);
  Value bs = perColumn ? e.reshape(db->scale, {N}) : e.reshape(db->scale, {});
  Value y = e.mul(nc.castTo(acc, nc.b.getF32Type()), e.mul(e.reshape(da->scale, {}), bs));
  if (!gemm) // a linear layer's Gemm: alpha x product + beta x C
    return y;
  if (double alpha = nc.attrFloat("alpha", 1.0); alpha != 1.0)
    y = e.mul(y, e.c(alpha));
  if (!nc.has(2))
    return y;
  auto c = nc.input(2);
  if (failed(c))
    return {};
  double beta = nc.attrFloat("beta", 1.0);
  return e.add(y, beta == 1.0 ? *c : e.mul(*c, e.c(beta)));
}

namespace {

/// Sums longer than this of products of two shifted 8-bit values, A's
/// split in 16s (|hi x b| <= 16 x 255), stay exact in f32.
constexpr int64_t kSplitDepth = (int64_t(1) << 24) / (16 * 255);

/// The product over a K known only at run time (attention's probabilities
/// times values over a dynamic sequence), where K cannot be cut into
/// chunks now: A's shifted values (|as| <= 255) split as 16 hi + lo, hi in
/// [-16, 15] and lo in [0, 15], so each of the two f32 products is exact
/// for K up to kSplitDepth (4112), the range the sequence's symbol is held
/// to (checked at run time); the two summed in i32.
FailureOr<Value> splitProduct(NodeContext &nc, Value a, Value as, Value b, Value bZero,
                              RankedTensorType bt) {
  if (b.getDefiningOp<TransposeOp>())
    return nc.error("a transposed B (transB) whose depth is known only at run time is not "
                    "supported; pin the model's dimensions with --shape or --dim");
  int64_t depthAxis = cast<RankedTensorType>(a.getType()).getRank() - 1;
  if (!nc.shapes ||
      !nc.shapes->requireAtMost(nc.shapes->dimOf(nc.b, a, depthAxis), kSplitDepth))
    return nc.error("the product's depth is known only at run time and is no input's dimension, "
                    "so it cannot be held to " + Twine(kSplitDepth) +
                    " (its exact range); pin it with --shape or --dim");
  auto bs = shifted(nc, b, bZero, bt.getRank() - 1, nc.b.getF32Type(), "B");
  if (failed(bs))
    return failure();
  Expr e(nc, as);
  Type i32 = nc.b.getI32Type();
  Value hi = e.op<FloorOp>({e.div(as, e.c(16))});
  Value lo = e.sub(as, e.mul(hi, e.c(16)));
  Value high = nc.castTo(e.op<MatmulOp>({hi, *bs}), i32);
  Value low = nc.castTo(e.op<MatmulOp>({lo, *bs}), i32);
  Expr ei(nc, high);
  return ei.add(ei.mul(high, ei.c(16)), low);
}

/// (a - a_zero_point) x (b - b_zero_point), exactly, on the vectorized f32
/// path: K is cut into chunks in which no partial sum can reach 2^24 (one
/// for short products and most linear layers, whose constant weights bound
/// their column sums), each chunk's product exact in f32 and the chunks
/// summed in i32. a's zero point is per row or per tensor, b's per column
/// or per tensor. The result is f32 (one chunk) or i32; i32 from
/// kiln.matmul_integer where the target has a tile for it.
FailureOr<Value> integerProduct(NodeContext &nc, Value a, Value aZero, Value b, Value bZero) {
  auto at = cast<RankedTensorType>(a.getType()), bt = cast<RankedTensorType>(b.getType());
  if (at.getRank() < 2 || bt.getRank() < 2)
    return nc.error("expects matrices (rank 2 or more), not ranks " + Twine(at.getRank()) +
                    " and " + Twine(bt.getRank()));
  if (Value y = integerMatmul(nc, a, aZero, b, bZero))
    return y;
  Value bSource = transBSource(b);
  for (Value q : {a, bSource})
    if (!cast<RankedTensorType>(q.getType()).getElementType().isInteger(8))
      return nc.error(Twine(q == a ? "A" : "B") + "'s data must be 8-bit integers");
  int64_t K = at.getDimSize(at.getRank() - 1);
  // (Sizes known only at run time count as non-empty.)
  auto empty = [](RankedTensorType t) { return llvm::is_contained(t.getShape(), 0); };
  if ((K < 1 && !ShapedType::isDynamic(K)) || empty(at) || empty(bt))
    return nc.error("expects non-empty matrices");
  Type f32 = nc.b.getF32Type(), i32 = nc.b.getI32Type();
  auto as = shifted(nc, a, aZero, at.getRank() - 2, f32, "A");
  if (ShapedType::isDynamic(K))
    return splitProduct(nc, a, *as, b, bZero, bt);
  SmallVector<int64_t> cuts = exactChunks(a, aZero, b, bZero, K);
  // A transposed constant B (QGemm's transB) is shifted before the
  // transpose, so that both fold at compile time.
  auto bs = bSource != b ? shifted(nc, bSource, bZero, 0, f32, "B")
                         : shifted(nc, b, bZero, bt.getRank() - 1, f32, "B");
  if (failed(as) || failed(bs))
    return failure();
  Expr e(nc, *as);
  if (bSource != b)
    bs = e.op<TransposeOp>({*bs}, {nc.b.getNamedAttr("perm", nc.b.getDenseI64ArrayAttr({1, 0}))});
  if (cuts.size() == 2)
    return e.op<MatmulOp>({*as, *bs});
  Value sum;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    Value part = e.op<MatmulOp>({sliceAlong(nc, *as, at.getRank() - 1, cuts[i], cuts[i + 1]),
                                 sliceAlong(nc, *bs, bt.getRank() - 2, cuts[i], cuts[i + 1])});
    part = nc.castTo(part, i32);
    sum = sum ? e.add(sum, part) : part;
  }
  return sum;
}

/// saturate(round_half_even(acc * multiplier) + zero_point) in the zero
/// point's type.
Value requantize(NodeContext &nc, Value acc, Value multiplier, Value zeroPoint) {
  Expr e(nc, acc);
  Type qt = cast<RankedTensorType>(zeroPoint.getType()).getElementType();
  return roundToQuantized(nc, e.mul(acc, multiplier), e.reshape(zeroPoint, {}), qt);
}

LogicalResult matmulInteger(NodeContext &nc) {
  auto a = nc.input(0), b = nc.input(1);
  auto aZero = optionalInput(nc, 2), bZero = optionalInput(nc, 3);
  if (failed(a) || failed(b) || failed(aZero) || failed(bZero))
    return failure();
  auto y = integerProduct(nc, *a, *aZero, *b, *bZero);
  return failed(y) ? failure() : nc.setOutput(0, nc.castTo(*y, nc.b.getI32Type()));
}

LogicalResult qlinearMatmul(NodeContext &nc) {
  auto a = nc.input(0), aScale = nc.input(1), aZero = nc.input(2), b = nc.input(3),
       bScale = nc.input(4), bZero = nc.input(5), yScale = nc.input(6), yZero = nc.input(7);
  for (auto v : {a, aScale, aZero, b, bScale, bZero, yScale, yZero})
    if (failed(v))
      return failure();
  auto acc = integerProduct(nc, *a, *aZero, *b, *bZero);
  if (failed(acc))
    return failure();
  Type ft = cast<RankedTensorType>(aScale->getType()).getElementType();
  Value accF = nc.castTo(*acc, ft);
  auto as = alongDim(nc, *aScale, *a, cast<RankedTensorType>(a->getType()).getRank() - 2,
                     "a_scale");
  auto bs = alongDim(nc, *bScale, *b, cast<RankedTensorType>(b->getType()).getRank() - 1,
                     "b_scale");
  if (failed(as) || failed(bs))
    return failure();
  Expr e(nc, accF);
  Value multiplier = e.div(e.mul(*as, *bs), e.reshape(*yScale, {}));
  return nc.setOutput(0, requantize(nc, accF, multiplier, *yZero));
}

/// f32 (x - x_zero_point) * (w - w_zero_point) (+ bias), w's zero point
/// per output channel or per tensor.
FailureOr<Value> shiftedConv(NodeContext &nc, Value x, Value xZero, Value w, Value wZero,
                             Value bias) {
  Type f32 = nc.b.getF32Type();
  auto xf = shifted(nc, x, xZero, 0, f32, "x");
  auto wf = shifted(nc, w, wZero, 0, f32, "w");
  if (failed(xf) || failed(wf))
    return failure();
  if (xZero && cast<RankedTensorType>(xZero.getType()).getNumElements() != 1)
    return nc.error("x's zero point must be a scalar");
  return buildConv(nc, *xf, *wf, bias ? nc.castTo(bias, f32) : Value());
}

LogicalResult convInteger(NodeContext &nc) {
  auto x = nc.input(0), w = nc.input(1);
  auto xZero = optionalInput(nc, 2), wZero = optionalInput(nc, 3);
  if (failed(x) || failed(w) || failed(xZero) || failed(wZero))
    return failure();
  if (auto conv = integerConv(nc, *x, *xZero, *w, *wZero))
    return nc.setOutput(0, conv->toNchw(nc, conv->acc));
  auto acc = shiftedConv(nc, *x, *xZero, *w, *wZero, Value());
  return failed(acc) ? failure() : nc.setOutput(0, nc.castTo(*acc, nc.b.getI32Type()));
}

LogicalResult qlinearConv(NodeContext &nc) {
  auto x = nc.input(0), xScale = nc.input(1), xZero = nc.input(2), w = nc.input(3),
       wScale = nc.input(4), wZero = nc.input(5), yScale = nc.input(6), yZero = nc.input(7);
  auto bias = optionalInput(nc, 8);
  for (auto v : {x, xScale, xZero, w, wScale, wZero, yScale, yZero, bias})
    if (failed(v))
      return failure();
  if (auto conv = integerConv(nc, *x, *xZero, *w, *wZero)) {
    // Channels last: the bias, scales and requantization per column.
    Type f32 = nc.b.getF32Type();
    Value acc = conv->acc;
    Expr e(nc, acc);
    if (*bias)
      acc = e.add(acc, nc.castTo(*bias, nc.b.getI32Type()));
    auto ws = conv->perChannel(nc, *wScale, "w_scale");
    if (failed(ws))
      return failure();
    Value multiplier = e.div(e.mul(nc.castTo(e.reshape(*xScale, {}), f32), nc.castTo(*ws, f32)),
                             nc.castTo(e.reshape(*yScale, {}), f32));
    return nc.setOutput(0, conv->toNchw(nc, requantize(nc, nc.castTo(acc, f32), multiplier,
                                                        *yZero)));
  }
  auto acc = shiftedConv(nc, *x, *xZero, *w, *wZero, *bias);
  if (failed(acc))
    return failure();
  // The weights' scale per output channel: dimension 1 of the result.
  auto ws = alongDim(nc, *wScale, *acc, 1, "w_scale");
  if (failed(ws))
    return failure();
  Expr e(nc, *acc);
  Value multiplier = e.div(e.mul(nc.castTo(e.reshape(*xScale, {}), nc.b.getF32Type()),
                                 nc.castTo(*ws, nc.b.getF32Type())),
                           nc.castTo(e.reshape(*yScale, {}), nc.b.getF32Type()));
  return nc.setOutput(0, requantize(nc, *acc, multiplier, *yZero));
}

/// A matrix with its last two dimensions swapped.
FailureOr<Value> transposed(NodeContext &nc, Value m) {
  auto t = cast<RankedTensorType>(m.getType());
  if (t.getRank() != 2)
    return nc.error("transA/transB need matrices, not rank " + Twine(t.getRank()));
  auto op = nc.build<TransposeOp>({m}, {nc.b.getNamedAttr("perm", nc.b.getDenseI64ArrayAttr({1, 0}))});
  if (failed(op))
    return failure();
  return (*op)->getResult(0);
}

/// onnxruntime's com.microsoft QGemm: y = (alpha (A' - a_zero_point)(B' -
/// b_zero_point) + C) a_scale b_scale, C an int32 bias at that scale;
/// quantized when y_scale is given, else float. B's scale and zero point
/// may be per column.
LogicalResult qgemm(NodeContext &nc) {
  auto a = nc.input(0), aScale = nc.input(1), b = nc.input(3), bScale = nc.input(4);
  auto aZero = optionalInput(nc, 2), bZero = optionalInput(nc, 5), c = optionalInput(nc, 6),
       yScale = optionalInput(nc, 7), yZero = optionalInput(nc, 8);
  for (auto v : {a, aScale, b, bScale, aZero, bZero, c, yScale, yZero})
    if (failed(v))
      return failure();
  Value lhs = *a, rhs = *b;
  if (nc.attrInt("transA", 0)) {
    auto t = transposed(nc, lhs);
    if (failed(t))
      return failure();
    lhs = *t;
  }
  if (nc.attrInt("transB", 0)) {
    auto t = transposed(nc, rhs);
    if (failed(t))
      return failure();
    rhs = *t;
  }
  auto acc = integerProduct(nc, lhs, *aZero, rhs, *bZero);
  if (failed(acc))
    return failure();
  Type ft = cast<RankedTensorType>(aScale->getType()).getElementType();
  auto as = alongDim(nc, *aScale, lhs, 0, "a_scale");
  auto bs = alongDim(nc, *bScale, rhs, 1, "b_scale");
  if (failed(as) || failed(bs))
    return failure();
  if (cast<RankedTensorType>(as->getType()).getRank())
    return nc.error("a_scale must be one value");
  Value accF = nc.castTo(*acc, ft);
  Expr e(nc, accF);
  Value y = e.mul(e.c(nc.attrFloat("alpha", 1.0)), accF);
  if (*c)
    y = e.add(y, nc.castTo(*c, ft));
  y = e.mul(y, e.mul(*as, *bs));
  if (!*yScale)
    return nc.setOutput(0, y);
  Type qt = *yZero ? cast<RankedTensorType>(yZero->getType()).getElementType()
                   : cast<RankedTensorType>(a->getType()).getElementType();
  Value zero = *yZero ? e.reshape(*yZero, {}) : Value();
  return nc.setOutput(0, quantizeValue(nc, y, e.reshape(*yScale, {}), zero, qt));
}

} // namespace

void registerQuantizedProductHandlers(HandlerTable &t) {
  t["com.microsoft::QGemm"] = qgemm;
  t["MatMulInteger"] = matmulInteger;
  t["QLinearMatMul"] = qlinearMatmul;
  t["ConvInteger"] = convInteger;
  t["QLinearConv"] = qlinearConv;
}

} // namespace kiln

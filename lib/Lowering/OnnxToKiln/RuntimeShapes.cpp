//===- RuntimeShapes.cpp - shape arguments known only at run time ---------===//

#include "RuntimeShapes.h"
#include "SymbolicShape.h"
#include "kiln/Dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>
#include <functional>
#include <limits>

using namespace mlir;

namespace kiln {

FailureOr<SmallVector<Value>> runtimeInts(NodeContext &nc, size_t i, StringRef what) {
  auto v = nc.input(i);
  if (failed(v))
    return failure();
  auto type = cast<RankedTensorType>(v->getType());
  if (!type.hasStaticShape() || type.getRank() > 1 || type.getNumElements() > 64 ||
      !isa<IntegerType>(type.getElementType()))
    return nc.error(what + " (input " + Twine(i) + ") must be an integer scalar or a 1-D " +
                    "tensor of at most 64 elements with a static length, not " +
                    shapeText(type.getShape()));
  SmallVector<Value> out;
  for (int64_t e = 0; e < type.getNumElements(); ++e) {
    SmallVector<Value> at;
    if (type.getRank() == 1)
      at.push_back(arith::ConstantIndexOp::create(nc.b, nc.loc, e));
    Value x = tensor::ExtractOp::create(nc.b, nc.loc, *v, at);
    out.push_back(arith::IndexCastOp::create(nc.b, nc.loc, nc.b.getIndexType(), x));
  }
  return out;
}

LogicalResult reshapeRuntime(NodeContext &nc, Value x, bool allowZero) {
  auto spec = runtimeInts(nc, 1, "shape");
  if (failed(spec))
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  if (spec->empty())
    return nc.error("reshapes to a scalar by a shape known only at run time; give the shape "
                    "as a constant");
  OpBuilder &b = nc.b;
  Location loc = nc.loc;
  auto cst = [&](int64_t c) { return arith::ConstantIndexOp::create(b, loc, c).getResult(); };
  auto eq = [&](Value a, Value c) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, a, c).getResult();
  };
  Value total = cst(1);
  for (int64_t d = 0; d < xt.getRank(); ++d)
    total = arith::MulIOp::create(b, loc, total, tensor::DimOp::create(b, loc, x, d));
  // 0 copies the input's dimension (past its rank: stays 0, invalid).
  SmallVector<Value> dims;
  Value known = cst(1), inferred = cst(0);
  for (auto [i, s] : llvm::enumerate(*spec)) {
    Value d = s;
    if (!allowZero && (int64_t)i < xt.getRank())
      d = arith::SelectOp::create(b, loc, eq(s, cst(0)),
                                  tensor::DimOp::create(b, loc, x, (int64_t)i), s);
    Value isInferred = eq(s, cst(-1));
    inferred = arith::AddIOp::create(b, loc, inferred,
                                     arith::SelectOp::create(b, loc, isInferred, cst(1), cst(0)));
    known = arith::MulIOp::create(b, loc, known,
                                  arith::SelectOp::create(b, loc, isInferred, cst(1), d));
    dims.push_back(d);
  }
  // The -1's size: what the others leave (a zero product divides by 1).
  Value divisor = arith::MaxSIOp::create(b, loc, known, cst(1));
  Value rest = arith::DivSIOp::create(b, loc, total, divisor);
  for (auto [i, s] : llvm::enumerate(*spec))
    dims[i] = arith::SelectOp::create(b, loc, eq(s, cst(-1)), rest, dims[i]);
  // Valid: at most one -1, no other negative size, the element count kept.
  Value product = cst(1);
  Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, inferred, cst(1));
  for (Value d : dims) {
    valid = arith::AndIOp::create(
        b, loc, valid, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, d, cst(0)));
    product = arith::MulIOp::create(b, loc, product, d);
  }
  valid = arith::AndIOp::create(b, loc, valid, eq(product, total));
  dims[0] = arith::SelectOp::create(b, loc, valid, dims[0], cst(-1));
  SmallVector<int64_t> shape(dims.size(), ShapedType::kDynamic);
  auto op = ReshapeOp::create(b, loc, RankedTensorType::get(shape, xt.getElementType()), x, dims);
  if (nc.shapes) {
    SmallVector<DimPoly> polys;
    for (Value d : dims)
      polys.push_back(nc.shapes->opaque(d));
    nc.shapes->record(op, polys);
  }
  return nc.setOutput(0, op);
}

} // namespace kiln

namespace kiln {

/// 0, 1, ..., n-1 of type i64 shaped `shape` (n along `axis`).
static Value iota(NodeContext &nc, ArrayRef<int64_t> shape, int64_t axis) {
  KnownTensor t;
  t.shape.assign(shape.begin(), shape.end());
  t.elementType = nc.b.getI64Type();
  for (int64_t i = 0; i < shape[axis]; ++i)
    t.values.push_back((double)i);
  return nc.constant(t);
}

LogicalResult triluRuntime(NodeContext &nc, Value x, bool upper) {
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t r = xt.getRank();
  if (r < 2 || xt.isDynamicDim(r - 1) || xt.isDynamicDim(r - 2))
    return nc.error("k (input 1) known only at run time needs the last two dimensions static, "
                    "not " + shapeText(xt.getShape()));
  auto k = nc.input(1);
  if (failed(k))
    return failure();
  Value kv = *k;
  auto kt = cast<RankedTensorType>(kv.getType());
  if (kt.getNumElements() != 1 || !isa<IntegerType>(kt.getElementType()))
    return nc.error("k (input 1) must be one integer");
  if (kt.getRank() != 0)
    kv = ReshapeOp::create(nc.b, nc.loc, RankedTensorType::get({}, kt.getElementType()), kv);
  kv = nc.castTo(kv, nc.b.getI64Type());
  // Kept where j - i >= k (upper) or j - i <= k (lower).
  Value rows = iota(nc, {xt.getDimSize(r - 2), 1}, 0);
  Value cols = iota(nc, {1, xt.getDimSize(r - 1)}, 1);
  auto diff = nc.build<SubOp>({cols, rows});
  if (failed(diff))
    return failure();
  auto keep = upper ? nc.build<GreaterEqualOp>({(*diff)->getResult(0), kv})
                    : nc.build<LessEqualOp>({(*diff)->getResult(0), kv});
  if (failed(keep))
    return failure();
  KnownTensor zero;
  zero.elementType = xt.getElementType();
  zero.values = {0.0};
  return nc.emit<WhereOp>({(*keep)->getResult(0), x, nc.constant(zero)});
}

} // namespace kiln

namespace kiln {

/// Input `i`, one number, read at run time in its own type.
static FailureOr<Value> runtimeScalar(NodeContext &nc, size_t i, StringRef what) {
  auto v = nc.input(i);
  if (failed(v))
    return failure();
  auto t = cast<RankedTensorType>(v->getType());
  if (!t.hasStaticShape() || t.getNumElements() != 1)
    return nc.error(what + " (input " + Twine(i) + ") must hold one number, not " +
                    shapeText(t.getShape()));
  SmallVector<Value> at(t.getRank(), arith::ConstantIndexOp::create(nc.b, nc.loc, 0));
  return tensor::ExtractOp::create(nc.b, nc.loc, *v, at).getResult();
}

LogicalResult rangeRuntime(NodeContext &nc) {
  auto start = runtimeScalar(nc, 0, "start"), limit = runtimeScalar(nc, 1, "limit"),
       delta = runtimeScalar(nc, 2, "delta");
  if (failed(start) || failed(limit) || failed(delta))
    return failure();
  Type et = start->getType();
  if (limit->getType() != et || delta->getType() != et)
    return nc.error("start, limit and delta must have one type");
  if (!et.isInteger(64) && !et.isInteger(32) && !et.isInteger(16) && !et.isF32() && !et.isF64())
    return nc.error("counts in a type other than i16, i32, i64, f32 or f64");
  OpBuilder &b = nc.b;
  Location loc = nc.loc;
  Type index = b.getIndexType(), i64 = b.getI64Type();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  // max(ceil((limit - start) / delta), 0) elements; a zero delta counts -1,
  // which the runtime refuses when it sizes an output.
  Value n;
  if (auto ft = dyn_cast<FloatType>(et)) {
    Value q = arith::DivFOp::create(b, loc, arith::SubFOp::create(b, loc, *limit, *start), *delta);
    Value t = arith::FPToSIOp::create(b, loc, i64, q);
    Value back = arith::SIToFPOp::create(b, loc, ft, t);
    Value up = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, back, q);
    Value c = arith::SelectOp::create(b, loc, up,
                                      arith::AddIOp::create(b, loc, t,
                                                            arith::ConstantIntOp::create(b, loc, 1, 64)),
                                      t);
    n = arith::IndexCastOp::create(b, loc, index, c);
    Value isZero = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, *delta,
                                         arith::ConstantOp::create(b, loc, b.getFloatAttr(ft, 0)));
    n = arith::SelectOp::create(b, loc, isZero, arith::ConstantIndexOp::create(b, loc, -1),
                                arith::MaxSIOp::create(b, loc, n, zero));
  } else {
    Value s = arith::IndexCastOp::create(b, loc, index, *start);
    Value l = arith::IndexCastOp::create(b, loc, index, *limit);
    Value d = arith::IndexCastOp::create(b, loc, index, *delta);
    Value isZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, d, zero);
    Value safe = arith::SelectOp::create(b, loc, isZero, arith::ConstantIndexOp::create(b, loc, 1), d);
    n = arith::CeilDivSIOp::create(b, loc, arith::SubIOp::create(b, loc, l, s), safe);
    n = arith::SelectOp::create(b, loc, isZero, arith::ConstantIndexOp::create(b, loc, -1),
                                arith::MaxSIOp::create(b, loc, n, zero));
  }
  auto type = RankedTensorType::get({ShapedType::kDynamic}, et);
  auto gen = tensor::GenerateOp::create(
      b, loc, type, ValueRange{n}, [&](OpBuilder &gb, Location l, ValueRange idx) {
        Value i = arith::IndexCastOp::create(gb, l, i64, idx[0]);
        Value v;
        if (isa<FloatType>(et)) {
          Value fi = arith::SIToFPOp::create(gb, l, et, i);
          v = arith::AddFOp::create(gb, l, *start, arith::MulFOp::create(gb, l, fi, *delta));
        } else {
          Value ii = et.isInteger(64) ? i : arith::TruncIOp::create(gb, l, et, i).getResult();
          v = arith::AddIOp::create(gb, l, *start, arith::MulIOp::create(gb, l, ii, *delta));
        }
        tensor::YieldOp::create(gb, l, v);
      });
  if (nc.shapes)
    nc.shapes->record(gen, {nc.shapes->opaque(n)});
  return nc.setOutput(0, gen);
}

LogicalResult cosineWindowRuntime(NodeContext &nc, double a0, double a1, double a2,
                                  Type type, bool periodic) {
  auto size = runtimeScalar(nc, 0, "size");
  if (failed(size))
    return failure();
  if (!isa<IntegerType>(size->getType()))
    return nc.error("size must be an integer");
  nc.ctx()->getOrLoadDialect<math::MathDialect>();
  OpBuilder &b = nc.b;
  Location loc = nc.loc;
  Value n = arith::IndexCastOp::create(b, loc, b.getIndexType(), *size);
  Value f64n = arith::SIToFPOp::create(b, loc, b.getF64Type(),
                                       arith::IndexCastOp::create(b, loc, b.getI64Type(), n));
  Value one = arith::ConstantOp::create(b, loc, b.getF64FloatAttr(1));
  Value denominator = periodic ? f64n : arith::SubFOp::create(b, loc, f64n, one).getResult();
  auto gen = tensor::GenerateOp::create(
      b, loc, RankedTensorType::get({ShapedType::kDynamic}, type), ValueRange{n},
      [&](OpBuilder &gb, Location l, ValueRange idx) {
        auto cst = [&](double v) {
          return arith::ConstantOp::create(gb, l, gb.getF64FloatAttr(v)).getResult();
        };
        Value i = arith::SIToFPOp::create(
            gb, l, gb.getF64Type(), arith::IndexCastOp::create(gb, l, gb.getI64Type(), idx[0]));
        // x = 2 pi i / N; a symmetric window of one sample is its n = 0.
        Value positive = arith::CmpFOp::create(gb, l, arith::CmpFPredicate::OGT, denominator,
                                               cst(0));
        Value x = arith::DivFOp::create(gb, l, arith::MulFOp::create(gb, l, cst(2 * M_PI), i),
                                        denominator);
        x = arith::SelectOp::create(gb, l, positive, x, cst(0));
        Value c1 = math::CosOp::create(gb, l, x);
        Value c2 = math::CosOp::create(gb, l, arith::MulFOp::create(gb, l, cst(2), x));
        Value v = arith::AddFOp::create(
            gb, l, arith::SubFOp::create(gb, l, cst(a0), arith::MulFOp::create(gb, l, cst(a1), c1)),
            arith::MulFOp::create(gb, l, cst(a2), c2));
        Value r = isa<IntegerType>(type) ? arith::FPToSIOp::create(gb, l, type, v).getResult()
                  : type.isF64()         ? v
                                         : arith::TruncFOp::create(gb, l, type, v).getResult();
        tensor::YieldOp::create(gb, l, r);
      });
  if (nc.shapes)
    nc.shapes->record(gen, {nc.shapes->opaque(n)});
  return nc.setOutput(0, gen);
}

} // namespace kiln

namespace kiln {

namespace {
/// Index arithmetic at the node's point.
struct IndexMath {
  OpBuilder &b;
  Location loc;
  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value eq(Value x, Value y) { return cmp(arith::CmpIPredicate::eq, x, y); }
  Value sel(Value cond, Value x, Value y) { return arith::SelectOp::create(b, loc, cond, x, y); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value falseValue() { return arith::ConstantIntOp::create(b, loc, 0, 1); }
  Value both(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value either(Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); }
  Value count(Value cond) { return sel(cond, c(1), c(0)); }
  /// a < 0 ? a + rank : a
  Value normalize(Value a, int64_t rank) {
    return sel(cmp(arith::CmpIPredicate::slt, a, c(0)), add(a, c(rank)), a);
  }
};
} // namespace

LogicalResult squeezeRuntime(NodeContext &nc, Value x, bool unsqueeze) {
  auto axes = runtimeInts(nc, 1, "axes");
  if (failed(axes))
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t r = xt.getRank(), k = axes->size();
  int64_t outRank = unsqueeze ? r + k : r - k;
  if (outRank < 1)
    return nc.error("makes a scalar by axes known only at run time; give the axes as a "
                    "constant");
  IndexMath m{nc.b, nc.loc};
  SmallVector<Value> inDims;
  for (int64_t i = 0; i < r; ++i)
    inDims.push_back(tensor::DimOp::create(nc.b, nc.loc, x, i));
  SmallVector<Value> norm;
  for (Value a : *axes)
    norm.push_back(m.normalize(a, unsqueeze ? outRank : r));
  // Per dimension of the side the axes index: is it one of them?
  int64_t indexed = unsqueeze ? outRank : r;
  SmallVector<Value> isAxis;
  Value hits = m.c(0);
  for (int64_t j = 0; j < indexed; ++j) {
    Value any = m.eq(norm[0], m.c(j));
    for (Value a : ArrayRef<Value>(norm).drop_front())
      any = m.either(any, m.eq(a, m.c(j)));
    isAxis.push_back(any);
    hits = m.add(hits, m.count(any));
  }
  // Valid: the axes are distinct and in range (each hits one dimension),
  // and a squeezed dimension is 1.
  Value valid = m.eq(hits, m.c(k));
  SmallVector<Value> dims(outRank, m.c(0));
  Value before = m.c(0); // axes (unsqueeze) or kept dimensions (squeeze) so far
  for (int64_t j = 0; j < indexed; ++j) {
    if (unsqueeze) {
      // Output j is 1 on an axis, else input j - (axes before j).
      Value from = m.sub(m.c(j), before);
      Value d = m.c(0);
      for (int64_t i = 0; i < r; ++i)
        d = m.sel(m.eq(from, m.c(i)), inDims[i], d);
      dims[j] = m.sel(isAxis[j], m.c(1), d);
      before = m.add(before, m.count(isAxis[j]));
      continue;
    }
    valid = m.both(valid, m.either(m.eq(isAxis[j], m.falseValue()), m.eq(inDims[j], m.c(1))));
    // A kept input dimension j is output `before`.
    for (int64_t o = 0; o < outRank; ++o)
      dims[o] = m.sel(m.both(m.eq(isAxis[j], m.falseValue()), m.eq(before, m.c(o))), inDims[j],
                      dims[o]);
    before = m.add(before, m.sel(isAxis[j], m.c(0), m.c(1)));
  }
  dims[0] = m.sel(valid, dims[0], m.c(-1));
  SmallVector<int64_t> shape(outRank, ShapedType::kDynamic);
  auto op = ReshapeOp::create(nc.b, nc.loc, RankedTensorType::get(shape, xt.getElementType()), x,
                              dims);
  if (nc.shapes) {
    SmallVector<DimPoly> polys;
    for (Value d : dims)
      polys.push_back(nc.shapes->opaque(d));
    nc.shapes->record(op, polys);
  }
  return nc.setOutput(0, op);
}

} // namespace kiln

namespace kiln {

/// A tensor of `dims` (static where `shape` says) filled with `fill`.
static Value splatOf(NodeContext &nc, ArrayRef<int64_t> shape, ArrayRef<Value> dims,
                     TypedAttr fill) {
  SmallVector<Value> sizes;
  for (auto [s, d] : llvm::zip(shape, dims))
    if (ShapedType::isDynamic(s))
      sizes.push_back(d);
  Value scalar = arith::ConstantOp::create(nc.b, nc.loc, fill);
  auto type = RankedTensorType::get(shape, fill.getType());
  Value splat = tensor::SplatOp::create(nc.b, nc.loc, type, scalar, sizes);
  if (nc.shapes) {
    SmallVector<DimPoly> polys;
    for (auto [s, d] : llvm::zip(shape, dims))
      polys.push_back(ShapedType::isDynamic(s) ? nc.shapes->opaque(d) : DimPoly::constant(s));
    nc.shapes->record(splat, polys);
  }
  return splat;
}

LogicalResult constantOfShapeRuntime(NodeContext &nc) {
  auto dims = runtimeInts(nc, 0, "shape");
  if (failed(dims))
    return failure();
  MLIRContext *ctx = nc.ctx();
  TypedAttr fill = FloatAttr::get(Float32Type::get(ctx), 0.0);
  if (auto *a = nc.attr("value")) {
    auto k = tensorProtoToKnown(a->t(), ctx, nc.modelDirectory());
    if (!k || k->numElements() != 1)
      return nc.error("value must be a tensor of one element");
    fill = isa<FloatType>(k->elementType)
               ? (TypedAttr)FloatAttr::get(k->elementType, k->values[0])
               : (TypedAttr)IntegerAttr::get(k->elementType, toInt64(k->values[0]));
  }
  IndexMath m{nc.b, nc.loc};
  // A negative size stays negative: refused at run time at an output.
  SmallVector<int64_t> shape(dims->size(), ShapedType::kDynamic);
  return nc.setOutput(0, splatOf(nc, shape, *dims, fill));
}

LogicalResult expandRuntime(NodeContext &nc, Value x) {
  auto target = runtimeInts(nc, 1, "shape");
  if (failed(target))
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t r = xt.getRank(), k = target->size(), rank = std::max(r, k);
  IndexMath m{nc.b, nc.loc};
  // numpy broadcasting: a 1 takes the other side's size; sizes that are
  // not 1 must agree, or the first size becomes -1 (refused at run time).
  SmallVector<int64_t> shape;
  SmallVector<Value> dims;
  Value valid = arith::ConstantIntOp::create(nc.b, nc.loc, 1, 1);
  for (int64_t d = 0; d < rank; ++d) {
    int64_t xa = d - (rank - r), ta = d - (rank - k);
    Value xd = xa >= 0 ? tensor::DimOp::create(nc.b, nc.loc, x, xa).getResult() : m.c(1);
    Value td = ta >= 0 ? (*target)[ta] : m.c(1);
    valid = m.both(valid, m.either(m.either(m.eq(td, m.c(1)), m.eq(xd, m.c(1))), m.eq(td, xd)));
    bool staticKept = xa >= 0 && !xt.isDynamicDim(xa) && xt.getDimSize(xa) != 1;
    shape.push_back(staticKept ? xt.getDimSize(xa) : ShapedType::kDynamic);
    dims.push_back(m.sel(m.eq(xd, m.c(1)), td, xd));
  }
  // Keep the first size static if it is; else -1 marks an invalid target.
  if (ShapedType::isDynamic(shape[0]))
    dims[0] = m.sel(valid, dims[0], m.c(-1));
  Type et = xt.getElementType();
  TypedAttr zero = isa<FloatType>(et) ? (TypedAttr)FloatAttr::get(et, 0.0)
                                      : (TypedAttr)IntegerAttr::get(et, 0);
  Value splat = splatOf(nc, shape, dims, zero);
  return et.isInteger(1) ? nc.emit<OrOp>({x, splat}) : nc.emit<AddOp>({x, splat});
}

} // namespace kiln

namespace kiln {

LogicalResult sliceRuntime(NodeContext &nc, Value x) {
  auto starts = runtimeInts(nc, 1, "starts"), ends = runtimeInts(nc, 2, "ends");
  if (failed(starts) || failed(ends))
    return failure();
  size_t k = starts->size();
  if (ends->size() != k)
    return nc.error("starts and ends have different lengths");
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t r = xt.getRank();
  IndexMath m{nc.b, nc.loc};
  SmallVector<Value> axes, steps(k, m.c(1));
  if (nc.has(3)) {
    auto a = runtimeInts(nc, 3, "axes");
    if (failed(a))
      return failure();
    axes = *a;
  } else {
    for (size_t i = 0; i < k; ++i)
      axes.push_back(m.c(i));
  }
  if (nc.has(4)) {
    auto s = runtimeInts(nc, 4, "steps");
    if (failed(s))
      return failure();
    steps = *s;
  }
  if (axes.size() != k || steps.size() != k)
    return nc.error("starts, ends, axes and steps must have one length");
  using P = arith::CmpIPredicate;
  auto clamp = [&](Value v, Value lo, Value hi) {
    return arith::MinSIOp::create(nc.b, nc.loc, arith::MaxSIOp::create(nc.b, nc.loc, v, lo), hi)
        .getResult();
  };
  // Per dimension: its first index, step and count (ONNX's clamping).
  SmallVector<Value> first, step, count;
  Value valid = arith::ConstantIntOp::create(nc.b, nc.loc, 1, 1);
  Value hits = m.c(0);
  for (int64_t d = 0; d < r; ++d) {
    Value dim = tensor::DimOp::create(nc.b, nc.loc, x, d);
    Value s = m.c(0), e = dim, st = m.c(1);
    for (size_t i = 0; i < k; ++i) {
      Value match = m.eq(m.normalize(axes[i], r), m.c(d));
      hits = m.add(hits, m.count(match));
      s = m.sel(match, (*starts)[i], s);
      e = m.sel(match, (*ends)[i], e);
      st = m.sel(match, steps[i], st);
    }
    Value forward = m.cmp(P::sgt, st, m.c(0));
    valid = m.both(valid, m.cmp(P::ne, st, m.c(0)));
    s = m.sel(m.cmp(P::slt, s, m.c(0)), m.add(s, dim), s);
    e = m.sel(m.cmp(P::slt, e, m.c(0)), m.add(e, dim), e);
    Value last = m.sub(dim, m.c(1));
    s = m.sel(forward, clamp(s, m.c(0), dim), clamp(s, m.c(0), last));
    e = m.sel(forward, clamp(e, m.c(0), dim), clamp(e, m.c(-1), last));
    Value safe = m.sel(m.eq(st, m.c(0)), m.c(1), st);
    Value n = arith::CeilDivSIOp::create(nc.b, nc.loc, m.sub(e, s), safe);
    first.push_back(s);
    step.push_back(safe);
    count.push_back(arith::MaxSIOp::create(nc.b, nc.loc, n, m.c(0)));
  }
  // Each axis names one dimension, none twice.
  valid = m.both(valid, m.eq(hits, m.c(k)));
  count[0] = m.sel(valid, count[0], m.c(-1));
  SmallVector<int64_t> shape(r, ShapedType::kDynamic);
  auto type = RankedTensorType::get(shape, xt.getElementType());
  auto gen = tensor::GenerateOp::create(
      nc.b, nc.loc, type, count, [&](OpBuilder &b, Location l, ValueRange idx) {
        SmallVector<Value> at;
        for (int64_t d = 0; d < r; ++d)
          at.push_back(arith::AddIOp::create(b, l, first[d],
                                             arith::MulIOp::create(b, l, idx[d], step[d])));
        tensor::YieldOp::create(b, l, tensor::ExtractOp::create(b, l, x, at).getResult());
      });
  if (nc.shapes) {
    SmallVector<DimPoly> polys;
    for (Value c : count)
      polys.push_back(nc.shapes->opaque(c));
    nc.shapes->record(gen, polys);
  }
  return nc.setOutput(0, gen);
}

} // namespace kiln

namespace kiln {

LogicalResult cumSumRuntime(NodeContext &nc, Value x, bool exclusive, bool reverse) {
  auto axisValues = runtimeInts(nc, 1, "axis");
  if (failed(axisValues))
    return failure();
  if (axisValues->size() != 1)
    return nc.error("axis (input 1) must be one integer");
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t r = xt.getRank();
  if (r == 0)
    return nc.error("needs an input of rank 1 or more");
  nc.ctx()->getOrLoadDialect<scf::SCFDialect>();
  IndexMath m{nc.b, nc.loc};
  // The result has x's shape. An axis out of range matches no dimension:
  // each element then sums itself alone (or nothing, reversed), never
  // reading outside x.
  Value axis = m.normalize((*axisValues)[0], r);
  SmallVector<Value> sizes;
  Value length = m.c(0);
  for (int64_t d = 0; d < r; ++d) {
    Value dim = tensor::DimOp::create(nc.b, nc.loc, x, d);
    length = m.sel(m.eq(axis, m.c(d)), dim, length);
    if (xt.isDynamicDim(d))
      sizes.push_back(dim);
  }
  SmallVector<int64_t> shape(xt.getShape());
  Type et = xt.getElementType();
  // Each element sums its run along the axis: as kiln.cumsum does (a
  // quadratic sum), with the axis picked at run time.
  auto gen = tensor::GenerateOp::create(
      nc.b, nc.loc, RankedTensorType::get(shape, et), sizes,
      [&](OpBuilder &b, Location l, ValueRange idx) {
        IndexMath g{b, l};
        Value at = g.c(0);
        for (int64_t d = 0; d < r; ++d)
          at = g.sel(g.eq(axis, g.c(d)), idx[d], at);
        Value lo = reverse ? (exclusive ? g.add(at, g.c(1)) : at) : g.c(0);
        Value hi = reverse ? length : (exclusive ? at : g.add(at, g.c(1)));
        Value zero = arith::ConstantOp::create(
            b, l, isa<FloatType>(et) ? (TypedAttr)b.getFloatAttr(et, 0) : b.getIntegerAttr(et, 0));
        auto loop = scf::ForOp::create(
            b, l, lo, hi, g.c(1), ValueRange{zero},
            [&](OpBuilder &lb, Location ll, Value k, ValueRange acc) {
              IndexMath h{lb, ll};
              SmallVector<Value> coords;
              for (int64_t d = 0; d < r; ++d)
                coords.push_back(h.sel(h.eq(axis, h.c(d)), k, idx[d]));
              Value v = tensor::ExtractOp::create(lb, ll, x, coords);
              Value s = isa<FloatType>(et) ? arith::AddFOp::create(lb, ll, acc[0], v).getResult()
                                           : arith::AddIOp::create(lb, ll, acc[0], v).getResult();
              scf::YieldOp::create(lb, ll, s);
            });
        tensor::YieldOp::create(b, l, loop.getResult(0));
      });
  return nc.setOutput(0, gen);
}

} // namespace kiln

namespace kiln {

FailureOr<Value> reduceRuntime(NodeContext &nc, Value x, ReduceKind kind, bool keepdims) {
  auto axes = runtimeInts(nc, 1, "axes");
  if (failed(axes))
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t r = xt.getRank(), k = axes->size();
  if (r == 0 || k == 0 || (!keepdims && r - k < 1))
    return nc.error("reduces to a scalar, or by no axes, with axes known only at run time; "
                    "give the axes as a constant");
  nc.ctx()->getOrLoadDialect<scf::SCFDialect>();
  IndexMath m{nc.b, nc.loc};
  SmallVector<Value> dims, reduced;
  Value hits = m.c(0);
  for (int64_t d = 0; d < r; ++d) {
    dims.push_back(tensor::DimOp::create(nc.b, nc.loc, x, d));
    Value any = m.eq(m.normalize((*axes)[0], r), m.c(d));
    for (Value a : ArrayRef<Value>(*axes).drop_front())
      any = m.either(any, m.eq(m.normalize(a, r), m.c(d)));
    reduced.push_back(any);
    hits = m.add(hits, m.count(any));
  }
  // Repeated or out-of-range axes: the first size -1 (refused at run time).
  Value valid = m.eq(hits, m.c(k));
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < r; ++d)
    sizes.push_back(m.sel(reduced[d], m.c(1), dims[d]));
  Value count = m.c(1); // elements per output, for a mean
  for (int64_t d = 0; d < r; ++d)
    count = arith::MulIOp::create(nc.b, nc.loc, count, m.sel(reduced[d], dims[d], m.c(1)));
  sizes[0] = m.sel(valid, sizes[0], m.c(-1));
  Type et = xt.getElementType();
  bool isFloat = isa<FloatType>(et);
  TypedAttr init;
  if (kind == ReduceKind::Max || kind == ReduceKind::Min) {
    bool max = kind == ReduceKind::Max;
    init = isFloat ? (TypedAttr)nc.b.getFloatAttr(
                         et, max ? -std::numeric_limits<double>::infinity()
                                 : std::numeric_limits<double>::infinity())
                   : nc.b.getIntegerAttr(et, max ? APInt::getSignedMinValue(et.getIntOrFloatBitWidth())
                                                 : APInt::getSignedMaxValue(et.getIntOrFloatBitWidth()));
  } else {
    double v = kind == ReduceKind::Prod ? 1 : 0;
    init = isFloat ? (TypedAttr)nc.b.getFloatAttr(et, v) : nc.b.getIntegerAttr(et, (int64_t)v);
  }
  auto combine = [&](OpBuilder &b, Location l, Value acc, Value v) -> Value {
    switch (kind) {
    case ReduceKind::Sum:
    case ReduceKind::Mean:
      return isFloat ? arith::AddFOp::create(b, l, acc, v).getResult()
                     : arith::AddIOp::create(b, l, acc, v).getResult();
    case ReduceKind::Prod:
      return isFloat ? arith::MulFOp::create(b, l, acc, v).getResult()
                     : arith::MulIOp::create(b, l, acc, v).getResult();
    case ReduceKind::Max:
      return isFloat ? arith::MaximumFOp::create(b, l, acc, v).getResult()
                     : arith::MaxSIOp::create(b, l, acc, v).getResult();
    case ReduceKind::Min:
      return isFloat ? arith::MinimumFOp::create(b, l, acc, v).getResult()
                     : arith::MinSIOp::create(b, l, acc, v).getResult();
    }
    return acc;
  };
  // Each output element loops over its reduced box: dimension d runs over
  // its whole length where reduced, else stays at the output's index.
  SmallVector<int64_t> shape(r, ShapedType::kDynamic);
  auto gen = tensor::GenerateOp::create(
      nc.b, nc.loc, RankedTensorType::get(shape, et), sizes,
      [&](OpBuilder &b, Location l, ValueRange idx) {
        IndexMath g{b, l};
        SmallVector<Value> coords(r);
        std::function<Value(OpBuilder &, Location, int64_t, Value)> nest =
            [&](OpBuilder &ob, Location ol, int64_t d, Value acc) -> Value {
          if (d == r)
            return combine(ob, ol, acc, tensor::ExtractOp::create(ob, ol, x, coords));
          IndexMath h{ob, ol};
          Value upper = h.sel(reduced[d], dims[d], h.c(1));
          auto loop = scf::ForOp::create(
              ob, ol, h.c(0), upper, h.c(1), ValueRange{acc},
              [&](OpBuilder &lb, Location ll, Value i, ValueRange a) {
                coords[d] = arith::SelectOp::create(lb, ll, reduced[d], i, idx[d]);
                scf::YieldOp::create(lb, ll, nest(lb, ll, d + 1, a[0]));
              });
          return loop.getResult(0);
        };
        Value acc = nest(b, l, 0, arith::ConstantOp::create(b, l, init));
        if (kind == ReduceKind::Mean) {
          Value n = arith::IndexCastOp::create(b, l, b.getI64Type(), count);
          acc = isFloat ? arith::DivFOp::create(b, l, acc, arith::SIToFPOp::create(b, l, et, n))
                              .getResult()
                        : arith::DivSIOp::create(b, l, acc,
                                                 arith::TruncIOp::create(b, l, et, n))
                              .getResult();
        }
        tensor::YieldOp::create(b, l, acc);
      });
  if (keepdims)
    return gen.getResult();
  // keepdims=0: the kept sizes in order (a squeeze of the reduced ones).
  SmallVector<Value> out(r - k, m.c(0));
  Value before = m.c(0);
  for (int64_t d = 0; d < r; ++d) {
    for (int64_t o = 0; o < r - k; ++o)
      out[o] = m.sel(m.both(m.eq(reduced[d], m.falseValue()), m.eq(before, m.c(o))), dims[d],
                     out[o]);
    before = m.add(before, m.sel(reduced[d], m.c(0), m.c(1)));
  }
  out[0] = m.sel(valid, out[0], m.c(-1));
  SmallVector<int64_t> outShape(r - k, ShapedType::kDynamic);
  return ReshapeOp::create(nc.b, nc.loc, RankedTensorType::get(outShape, et), gen, out)
      .getResult();
}

} // namespace kiln

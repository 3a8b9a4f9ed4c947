//===- RuntimeValues.cpp - scalar arguments known only at run time --------===//
//
// Trilu's k, Range's bounds, a window's size, CumSum's axis and the
// reductions' axes read at run time (RuntimeShapes.h).
//
//===----------------------------------------------------------------------===//

#include "RuntimeShapes.h"
#include "SymbolicShape.h"
#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Dialects/Kiln/IR/ShapeUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>
#include <functional>
#include <limits>

using namespace mlir;

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

/// Trilu with k known only at run time: x where the mask of `j - i >= k`
/// (upper) or `j - i <= k` holds, else 0.
static LogicalResult triluRuntime(NodeContext &nc) {
  auto input = nc.input(0);
  if (failed(input))
    return failure();
  Value x = *input;
  bool upper = nc.attrInt("upper", 1);
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
  recordRuntimeDims(nc, gen, {n});
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
  recordRuntimeDims(nc, gen, {n});
  return nc.setOutput(0, gen);
}


/// CumSum along an axis known only at run time (the rank fixes the
/// choices): each element sums its run along that axis.
static LogicalResult cumSumRuntime(NodeContext &nc) {
  auto input = nc.input(0);
  if (failed(input))
    return failure();
  Value x = *input;
  bool exclusive = nc.attrInt("exclusive", 0), reverse = nc.attrInt("reverse", 0);
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


/// Tile by repeats known only at run time: out[i] = x[i mod size], each
/// size times its repeat (a negative repeat refused at run time).
static LogicalResult tileRuntime(NodeContext &nc) {
  auto x = nc.input(0);
  auto repeats = runtimeInts(nc, 1, "repeats");
  if (failed(x) || failed(repeats))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  int64_t r = xt.getRank();
  if ((int64_t)repeats->size() != r)
    return nc.error("repeats has " + Twine(repeats->size()) + " values for rank " + Twine(r));
  IndexMath m{nc.b, nc.loc};
  SmallVector<Value> dims, sizes;
  Value valid = arith::ConstantIntOp::create(nc.b, nc.loc, 1, 1);
  for (int64_t d = 0; d < r; ++d) {
    dims.push_back(tensor::DimOp::create(nc.b, nc.loc, *x, d));
    valid = m.both(valid, m.cmp(arith::CmpIPredicate::sge, (*repeats)[d], m.c(0)));
    sizes.push_back(arith::MulIOp::create(nc.b, nc.loc, dims[d], (*repeats)[d]));
  }
  if (r == 0)
    return nc.setOutput(0, *x);
  sizes[0] = m.sel(valid, sizes[0], m.c(-1));
  SmallVector<int64_t> shape(r, ShapedType::kDynamic);
  auto gen = tensor::GenerateOp::create(
      nc.b, nc.loc, RankedTensorType::get(shape, xt.getElementType()), sizes,
      [&](OpBuilder &b, Location l, ValueRange idx) {
        SmallVector<Value> at;
        for (int64_t d = 0; d < r; ++d)
          at.push_back(arith::RemUIOp::create(b, l, idx[d], dims[d]));
        tensor::YieldOp::create(b, l, tensor::ExtractOp::create(b, l, *x, at).getResult());
      });
  return nc.setOutput(0, gen);
}

/// OneHot of a depth known only at run time: the depth's axis compares
/// its index with each index (negative ones counted from the end).
static LogicalResult oneHotRuntime(NodeContext &nc) {
  auto indices = nc.input(0), values = nc.input(2);
  auto depth = runtimeScalar(nc, 1, "depth");
  if (failed(indices) || failed(values) || failed(depth))
    return failure();
  auto it = cast<RankedTensorType>(indices->getType());
  auto vt = cast<RankedTensorType>(values->getType());
  int64_t rank = it.getRank() + 1;
  auto axis = normalizeAxis(nc.attrInt("axis", -1), rank);
  if (!axis || !vt.hasStaticShape() || vt.getNumElements() != 2)
    return nc.error("needs a valid axis and two values [off, on]");
  OpBuilder &b = nc.b;
  Location loc = nc.loc;
  IndexMath m{b, loc};
  Type i64 = b.getI64Type();
  auto toI64 = [&](OpBuilder &ob, Location l, Value v) -> Value {
    if (isa<FloatType>(v.getType()))
      return arith::FPToSIOp::create(ob, l, i64, v);
    if (v.getType().isInteger(64))
      return v;
    return arith::ExtSIOp::create(ob, l, i64, v);
  };
  Value n = arith::IndexCastOp::create(b, loc, b.getIndexType(), toI64(b, loc, *depth));
  // A depth below 1 is refused at run time (size -1).
  n = m.sel(m.cmp(arith::CmpIPredicate::sge, n, m.c(1)), n, m.c(-1));
  SmallVector<int64_t> shape(it.getShape());
  shape.insert(shape.begin() + *axis, ShapedType::kDynamic);
  SmallVector<Value> sizes;
  for (int64_t d = 0, j = 0; d < rank; ++d) {
    if (d == *axis) {
      sizes.push_back(n);
      continue;
    }
    if (it.isDynamicDim(j))
      sizes.push_back(tensor::DimOp::create(b, loc, *indices, j));
    ++j;
  }
  auto gen = tensor::GenerateOp::create(
      b, loc, RankedTensorType::get(shape, vt.getElementType()), sizes,
      [&](OpBuilder &gb, Location l, ValueRange idx) {
        SmallVector<Value> at;
        for (int64_t d = 0; d < rank; ++d)
          if (d != *axis)
            at.push_back(idx[d]);
        Value i = toI64(gb, l, tensor::ExtractOp::create(gb, l, *indices, at));
        Value len = arith::IndexCastOp::create(gb, l, i64, n);
        Value zero = arith::ConstantIntOp::create(gb, l, 0, 64);
        i = arith::SelectOp::create(
            gb, l, arith::CmpIOp::create(gb, l, arith::CmpIPredicate::slt, i, zero),
            arith::AddIOp::create(gb, l, i, len), i);
        Value hit = arith::CmpIOp::create(
            gb, l, arith::CmpIPredicate::eq, i,
            arith::IndexCastOp::create(gb, l, i64, idx[*axis]));
        SmallVector<Value> first(vt.getRank(), arith::ConstantIndexOp::create(gb, l, 0));
        SmallVector<Value> second(first);
        second.back() = arith::ConstantIndexOp::create(gb, l, 1);
        Value off = tensor::ExtractOp::create(gb, l, *values, first);
        Value on = tensor::ExtractOp::create(gb, l, *values, second);
        tensor::YieldOp::create(gb, l, arith::SelectOp::create(gb, l, hit, on, off).getResult());
      });
  return nc.setOutput(0, gen);
}

static LogicalResult topKRuntime(NodeContext &nc);

void wrapRuntimeArguments(HandlerTable &t) {
  auto wrap = [&](StringRef op, Handler runTime) {
    Handler compileTime = t[op];
    t[op] = [compileTime, runTime](NodeContext &nc) {
      return !nc.has(1) || nc.known(1) ? compileTime(nc) : runTime(nc);
    };
  };
  wrap("Trilu", triluRuntime);
  wrap("CumSum", cumSumRuntime);
  wrap("Tile", tileRuntime);
  wrap("OneHot", oneHotRuntime);
  wrap("Split", splitRuntime);
  wrap("Pad", padRuntime);
  wrap("TopK", topKRuntime);
}


/// TopK with K known only at run time: output j along the axis is the
/// element of rank j (ranked by value, then by index, as the unrolled
/// compile-time path picks them), found by counting: quadratic in the
/// axis's length per output, where the compile-time path is linear per k.
static LogicalResult topKRuntime(NodeContext &nc) {
  auto input = nc.input(0);
  auto kv = runtimeInts(nc, 1, "K");
  if (failed(input) || failed(kv))
    return failure();
  if (kv->size() != 1)
    return nc.error("K (input 1) must hold one integer");
  Value x = *input;
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t r = xt.getRank();
  auto axisOr = normalizeAxis(nc.attrInt("axis", -1), r);
  if (!axisOr)
    return nc.error("axis " + Twine(nc.attrInt("axis", -1)) + " out of range for rank " +
                    Twine(r));
  int64_t axis = *axisOr;
  bool largest = nc.attrInt("largest", 1);
  nc.ctx()->getOrLoadDialect<scf::SCFDialect>();
  IndexMath m{nc.b, nc.loc};
  Value n = tensor::DimOp::create(nc.b, nc.loc, x, axis);
  Value k = (*kv)[0];
  // K outside [0, n] is refused at run time (size -1).
  Value valid = m.both(m.cmp(arith::CmpIPredicate::sge, k, m.c(0)),
                       m.cmp(arith::CmpIPredicate::sle, k, n));
  SmallVector<Value> sizes;
  SmallVector<int64_t> shape(xt.getShape());
  shape[axis] = ShapedType::kDynamic;
  for (int64_t d = 0; d < r; ++d)
    if (d == axis)
      sizes.push_back(m.sel(valid, k, m.c(-1)));
    else if (xt.isDynamicDim(d))
      sizes.push_back(tensor::DimOp::create(nc.b, nc.loc, x, d));
  bool isFloat = isa<FloatType>(xt.getElementType());
  auto indices = tensor::GenerateOp::create(
      nc.b, nc.loc, RankedTensorType::get(shape, nc.b.getI64Type()), sizes,
      [&](OpBuilder &b, Location l, ValueRange idx) {
        IndexMath g{b, l};
        auto at = [&](OpBuilder &ob, Location ol, Value i) {
          SmallVector<Value> c(idx.begin(), idx.end());
          c[axis] = i;
          return tensor::ExtractOp::create(ob, ol, x, c).getResult();
        };
        // Is the element at `a` ranked before the one at `c`?
        auto before = [&](OpBuilder &ob, Location ol, Value a, Value c) {
          Value xa = at(ob, ol, a), xc = at(ob, ol, c);
          Value better, same;
          if (isFloat) {
            better = arith::CmpFOp::create(ob, ol,
                                           largest ? arith::CmpFPredicate::OGT
                                                   : arith::CmpFPredicate::OLT, xa, xc);
            same = arith::CmpFOp::create(ob, ol, arith::CmpFPredicate::OEQ, xa, xc);
          } else {
            better = arith::CmpIOp::create(ob, ol,
                                           largest ? arith::CmpIPredicate::sgt
                                                   : arith::CmpIPredicate::slt, xa, xc);
            same = arith::CmpIOp::create(ob, ol, arith::CmpIPredicate::eq, xa, xc);
          }
          Value earlier = arith::CmpIOp::create(ob, ol, arith::CmpIPredicate::ult, a, c);
          return arith::OrIOp::create(ob, ol, better,
                                      arith::AndIOp::create(ob, ol, same, earlier))
              .getResult();
        };
        Value want = idx[axis];
        auto outer = scf::ForOp::create(
            b, l, g.c(0), n, g.c(1), ValueRange{g.c(0)},
            [&](OpBuilder &ob, Location ol, Value i, ValueRange found) {
              IndexMath h{ob, ol};
              auto inner = scf::ForOp::create(
                  ob, ol, h.c(0), n, h.c(1), ValueRange{h.c(0)},
                  [&](OpBuilder &ib, Location il, Value j, ValueRange rank) {
                    IndexMath q{ib, il};
                    scf::YieldOp::create(ib, il,
                                         q.add(rank[0], q.count(before(ib, il, j, i))));
                  });
              Value hit = h.eq(inner.getResult(0), want);
              scf::YieldOp::create(ob, ol, h.sel(hit, i, found[0]));
            });
        tensor::YieldOp::create(
            b, l, arith::IndexCastOp::create(b, l, b.getI64Type(), outer.getResult(0)));
      });
  SmallVector<Value> valueSizes(sizes);
  auto values = tensor::GenerateOp::create(
      nc.b, nc.loc, RankedTensorType::get(shape, xt.getElementType()), valueSizes,
      [&](OpBuilder &b, Location l, ValueRange idx) {
        SmallVector<Value> c(idx.begin(), idx.end());
        c[axis] = arith::IndexCastOp::create(
            b, l, b.getIndexType(), tensor::ExtractOp::create(b, l, indices, idx));
        tensor::YieldOp::create(b, l, tensor::ExtractOp::create(b, l, x, c).getResult());
      });
  if (failed(nc.setOutput(0, values)))
    return failure();
  return nc.hasOutput(1) ? nc.setOutput(1, indices) : success();
}

} // namespace kiln

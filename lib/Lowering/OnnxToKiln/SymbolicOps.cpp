//===- SymbolicOps.cpp - Slice, Range and Expand with run-time sizes ------===//
//
// Exports of transformers slice, count and broadcast to sizes known at run
// time: position_ids[:, :seq] (a Slice whose end is the sequence length),
// arange(seq), a mask expanded to [batch, 1, seq, seq]. With the sizes as
// polynomials (SymbolicShape.h) these become tensor.extract_slice,
// tensor.generate and a broadcast against tensor.splat, all sized by index
// values. What keeps them in bounds is a requirement on the symbols
// (seq <= 512 for a 512-long table), met by their ranges and so checked
// by the runtime on every input.
//
//===----------------------------------------------------------------------===//

#include "NodeContext.h"
#include "RuntimeShapes.h"
#include "SymbolicShape.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;

namespace kiln {

namespace {

/// Input `i`'s elements as polynomials (numbers or sizes); none when it is
/// not known at import.
std::optional<SmallVector<DimPoly>> polysOf(NodeContext &nc, size_t i) {
  const KnownTensor *k = nc.knownOrSymbolic(i);
  if (!k)
    return std::nullopt;
  SmallVector<DimPoly> out;
  for (size_t j = 0; j < k->values.size(); ++j) {
    if (k->symbolic() && k->syms[j] >= 0) {
      out.push_back(nc.shapes->poly(k->syms[j]));
      continue;
    }
    if (k->values[j] != std::trunc(k->values[j]))
      return std::nullopt; // a float that is no size (a range from 0.5)
    out.push_back(DimPoly::constant(toInt64(k->values[j])));
  }
  return out;
}

} // namespace

LogicalResult sliceAxesAndSteps(NodeContext &nc, size_t count, std::vector<int64_t> &axes,
                                std::vector<int64_t> &steps) {
  axes.clear();
  for (size_t i = 0; i < count; ++i)
    axes.push_back(i);
  steps.assign(count, 1);
  if (nc.has(3)) {
    auto a = nc.constInts(3, "axes");
    if (failed(a))
      return failure();
    axes = *a;
  }
  if (nc.has(4)) {
    auto s = nc.constInts(4, "steps");
    if (failed(s))
      return failure();
    steps = *s;
  }
  return success();
}

/// A slice of a dynamic axis ending at a number below this is a window of
/// that many elements: the axis must be at least that long (its symbol's
/// range says so). Ends above it are clamped to the axis at run time.
constexpr int64_t kWindow = int64_t(1) << 12;

LogicalResult sliceSymbolic(NodeContext &nc, Value x) {
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t rank = xt.getRank();
  auto starts = polysOf(nc, 1), ends = polysOf(nc, 2);
  if (!starts || !ends || starts->size() != ends->size())
    return nc.error("slices with starts and ends the importer cannot follow (they must be "
                    "known, or sizes of dynamic dimensions)");
  std::vector<int64_t> axes, steps;
  if (failed(sliceAxesAndSteps(nc, starts->size(), axes, steps)))
    return failure();
  if (axes.size() != starts->size() || steps.size() != starts->size())
    return nc.error("starts, ends, axes and steps must have one value per sliced axis");
  ShapeSymbols &sym = *nc.shapes;
  SmallVector<DimPoly> offsets, sizes;
  for (int64_t d = 0; d < rank; ++d) {
    offsets.push_back(DimPoly::constant(0));
    sizes.push_back(sym.dimOf(nc.b, x, d));
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (a < 0 || a >= rank)
      return nc.error("slices axis " + Twine(axes[i]) + " of a rank-" + Twine(rank) + " input");
    if (steps[i] != 1)
      return nc.error("slices a dynamic shape with step " + Twine(steps[i]) +
                      "; only step 1 is supported so far");
    DimPoly dim = sym.dimOf(nc.b, x, a);
    std::optional<int64_t> n = dim.constantValue();
    // A negative bound counts from the end, one past the end is the end.
    auto resolve = [&](const DimPoly &p) -> std::optional<DimPoly> {
      std::optional<int64_t> c = p.constantValue();
      if (!c)
        return p;
      if (*c < 0)
        return dim.plus(DimPoly::constant(*c));
      if (*c >= (int64_t(1) << 40) || (n && *c > *n))
        return dim;
      return p;
    };
    std::optional<DimPoly> s = resolve((*starts)[i]), e = resolve((*ends)[i]);
    std::optional<DimPoly> len = s && e ? e->minus(*s) : std::nullopt;
    if (!len)
      return nc.error("slice bounds overflow");
    // In bounds: 0 <= start <= end <= dim. Numbers against a static axis
    // clamp; otherwise the symbols must allow only in-bounds slices.
    std::optional<int64_t> cs = s->constantValue(), ce = e->constantValue();
    bool ok = false;
    if (n && cs && ce) {
      int64_t lo = std::clamp<int64_t>(*cs, 0, *n), hi = std::clamp<int64_t>(*ce, lo, *n);
      s = DimPoly::constant(lo);
      len = DimPoly::constant(hi - lo);
      ok = true;
    } else if (n && cs && *cs >= 0 && *cs <= *n) {
      ok = sym.requireAtMost(*e, *n) && sym.requireAtLeast(*e, *cs); // [:seq] of a table
    } else if (!n && cs && ce && *cs >= 0 && *ce >= *cs && *ce < kWindow) {
      ok = sym.requireAtLeast(dim, *ce); // a fixed window of a dynamic axis
    } else if (!n && cs && ce && *cs >= 0 && *ce >= *cs) {
      // An end past any window ("to the end", as 10^6 often says): the
      // axis's size where that is smaller, at run time.
      Value end = arith::MinSIOp::create(nc.b, nc.loc, sym.materialize(nc.b, nc.loc, dim, x),
                                         arith::ConstantIndexOp::create(nc.b, nc.loc, *ce));
      std::optional<DimPoly> l = sym.opaque(end).minus(*s);
      ok = l && sym.requireAtLeast(dim, *cs);
      if (ok)
        len = *l;
    } else if (!n && *e == dim) {
      std::optional<int64_t> k = len->constantValue(); // from k on, or the last k
      ok = (cs && *cs >= 0 && sym.requireAtLeast(dim, *cs)) ||
           (k && *k >= 0 && sym.requireAtLeast(dim, *k));
    }
    if (!ok)
      return nc.error("slices axis " + Twine(a) + " (of size " +
                      (n ? std::to_string(*n) : std::string("?")) +
                      ") with bounds the importer cannot keep inside it at run time; pin the "
                      "dynamic dimensions with --shape or --dim");
    offsets[a] = *s;
    sizes[a] = *len;
  }
  SmallVector<OpFoldResult> offs, lens, ones(rank, nc.b.getIndexAttr(1));
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    auto fold = [&](const DimPoly &p) -> OpFoldResult {
      if (std::optional<int64_t> c = p.constantValue())
        return nc.b.getIndexAttr(*c);
      return sym.materialize(nc.b, nc.loc, p, x);
    };
    offs.push_back(fold(offsets[d]));
    lens.push_back(fold(sizes[d]));
    shape.push_back(sizes[d].constantValue().value_or(ShapedType::kDynamic));
  }
  auto type = RankedTensorType::get(shape, xt.getElementType());
  Value r = tensor::ExtractSliceOp::create(nc.b, nc.loc, type, x, offs, lens, ones);
  sym.record(r, sizes);
  return nc.setOutput(0, r);
}

LogicalResult rangeSymbolic(NodeContext &nc) {
  // Range(start, limit, delta) with a size for limit and numbers for the
  // rest: limit - start elements when delta is 1 (arange(seq)).
  auto start = polysOf(nc, 0), limit = polysOf(nc, 1), delta = polysOf(nc, 2);
  if (!start || !limit || !delta || start->size() != 1 || limit->size() != 1 ||
      delta->size() != 1 || (*delta)[0].constantValue() != 1 || !(*start)[0].constantValue())
    return nc.error("counts to a size known at run time with a start or step the importer "
                    "cannot follow (it takes a known start and step 1)");
  std::optional<DimPoly> n = (*limit)[0].minus((*start)[0]);
  // A size is never negative: only a positive start needs the limit kept
  // at least that (a compound limit, past + seq, starts from 0).
  int64_t first = *(*start)[0].constantValue();
  if (!n || (first > 0 && !nc.shapes->requireAtLeast((*limit)[0], first)))
    return nc.error("counts to a size the importer cannot keep at least the start");
  Type et = nc.knownOrSymbolic(1)->elementType;
  if (!et.isInteger(64) && !et.isInteger(32) && !et.isF32() && !et.isF64())
    return nc.error("counts in a type other than i32, i64, f32 or f64 to a size known at run "
                    "time");
  Value size = nc.shapes->materialize(nc.b, nc.loc, *n);
  auto type = RankedTensorType::get({ShapedType::kDynamic}, et);
  auto gen = tensor::GenerateOp::create(
      nc.b, nc.loc, type, ValueRange{size}, [&](OpBuilder &b, Location loc, ValueRange idx) {
        Value v = arith::AddIOp::create(b, loc, idx[0], arith::ConstantIndexOp::create(b, loc, first));
        Value r = isa<FloatType>(et)
                      ? arith::SIToFPOp::create(
                            b, loc, et, arith::IndexCastOp::create(b, loc, b.getI64Type(), v))
                            .getResult()
                      : arith::IndexCastOp::create(b, loc, et, v).getResult();
        tensor::YieldOp::create(b, loc, r);
      });
  nc.shapes->record(gen, {*n});
  return nc.setOutput(0, gen);
}

LogicalResult rangeOp(NodeContext &nc) {
  const KnownTensor *limit = nc.knownOrSymbolic(1);
  if (limit && limit->symbolic())
    return rangeSymbolic(nc);
  // Known, but too long to track as a known value (arange(seq) at 128): a
  // constant.
  const KnownTensor *start = nc.known(0), *delta = nc.known(2);
  // Any of them known only at run time (given as graph inputs).
  if (!start || !limit || !delta)
    return rangeRuntime(nc);
  if (start->numElements() != 1 || limit->numElements() != 1 ||
      delta->numElements() != 1 || delta->values[0] == 0)
    return nc.error("needs a start, limit and non-zero delta known at compile time "
                    "(scalars), or a limit that is a size known at run time");
  double first = start->values[0], step = delta->values[0];
  double count = std::ceil((limit->values[0] - first) / step);
  if (!(count <= (1 << 24)))
    return nc.error("counts more than 2^24 values");
  auto type = RankedTensorType::get({std::max<int64_t>(0, (int64_t)count)}, start->elementType);
  SmallVector<Attribute> values;
  for (int64_t i = 0; i < type.getDimSize(0); ++i) {
    double v = first + i * step;
    values.push_back(isa<FloatType>(start->elementType)
                         ? (Attribute)FloatAttr::get(start->elementType, v)
                         : (Attribute)IntegerAttr::get(start->elementType, toInt64(v)));
  }
  return nc.setOutput(0, ConstantOp::create(nc.b, nc.loc, DenseElementsAttr::get(type, values)));
}

LogicalResult expandSymbolic(NodeContext &nc, Value x) {
  auto target = polysOf(nc, 1);
  auto xt = cast<RankedTensorType>(x.getType());
  if (!target)
    return nc.error("expands to a shape the importer cannot follow");
  int64_t rank = std::max<int64_t>(xt.getRank(), target->size());
  // numpy broadcasting: a 1 takes the other side's size; two sizes that
  // are not 1 must agree (taken to at run time, as elementwise ops do).
  SmallVector<DimPoly> dims;
  ShapeSymbols &sym = *nc.shapes;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t xa = d - (rank - xt.getRank()), ta = d - (rank - (int64_t)target->size());
    std::optional<DimPoly> xd, td;
    if (xa >= 0)
      xd = sym.dimOf(nc.b, x, xa);
    if (ta >= 0)
      td = (*target)[ta];
    std::optional<int64_t> cx = xd ? xd->constantValue() : std::nullopt,
                           ct = td ? td->constantValue() : std::nullopt;
    if (cx && ct && *cx != 1 && *ct != 1 && *cx != *ct)
      return nc.error("cannot expand dimension " + Twine(d) + " of size " + Twine(*cx) +
                      " to " + Twine(*ct));
    if (td && (!xd || cx == 1))
      dims.push_back(*td);
    else
      dims.push_back(*xd);
  }
  SmallVector<int64_t> shape;
  SmallVector<Value> sizes;
  for (const DimPoly &p : dims) {
    std::optional<int64_t> c = p.constantValue();
    shape.push_back(c.value_or(ShapedType::kDynamic));
    if (!c)
      sizes.push_back(sym.materialize(nc.b, nc.loc, p, x));
  }
  Type et = xt.getElementType();
  auto type = RankedTensorType::get(shape, et);
  TypedAttr zero = isa<FloatType>(et) ? (TypedAttr)FloatAttr::get(et, 0.0)
                                      : (TypedAttr)IntegerAttr::get(et, 0);
  Value scalar = arith::ConstantOp::create(nc.b, nc.loc, zero);
  Value splat = tensor::SplatOp::create(nc.b, nc.loc, type, scalar, sizes);
  sym.record(splat, dims);
  auto sum = et.isInteger(1) ? nc.build<OrOp>({x, splat}) : nc.build<AddOp>({x, splat});
  if (failed(sum))
    return failure();
  sym.record((*sum)->getResult(0), dims);
  return nc.setOutput(0, (*sum)->getResult(0));
}

} // namespace kiln

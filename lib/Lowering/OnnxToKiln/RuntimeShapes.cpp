//===- RuntimeShapes.cpp - shape arguments known only at run time ---------===//
//
// The ops whose output sizes follow from shape arguments read at run time:
// Reshape, Squeeze/Unsqueeze, ConstantOfShape, Expand, Slice.
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


/// Input `i`, one number, read at run time in its own type.
void recordRuntimeDims(NodeContext &nc, Value v, ArrayRef<Value> dims) {
  if (!nc.shapes)
    return;
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<DimPoly> polys;
  for (auto [i, d] : llvm::enumerate(dims))
    polys.push_back(type.isDynamicDim(i) ? nc.shapes->opaque(d)
                                         : DimPoly::constant(type.getDimSize(i)));
  nc.shapes->record(v, polys);
}

FailureOr<Value> runtimeScalar(NodeContext &nc, size_t i, StringRef what) {
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
  recordRuntimeDims(nc, op, dims);
  return nc.setOutput(0, op);
}


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
  recordRuntimeDims(nc, op, dims);
  return nc.setOutput(0, op);
}


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
  recordRuntimeDims(nc, splat, dims);
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
  recordRuntimeDims(nc, gen, count);
  return nc.setOutput(0, gen);
}

LogicalResult splitRuntime(NodeContext &nc) {
  auto input = nc.input(0);
  auto sizes = runtimeInts(nc, 1, "split");
  if (failed(input) || failed(sizes))
    return failure();
  Value x = *input;
  auto norm = normalizeAxis(nc.attrInt("axis", 0), cast<RankedTensorType>(x.getType()).getRank());
  if (!norm)
    return nc.error("axis " + Twine(nc.attrInt("axis", 0)) + " out of range");
  int64_t axis = *norm;
  size_t n = nc.numOutputs();
  if (sizes->size() != n)
    return nc.error("split has " + Twine(sizes->size()) + " sizes for " + Twine(n) + " outputs");
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t r = xt.getRank();
  IndexMath m{nc.b, nc.loc};
  Value dim = tensor::DimOp::create(nc.b, nc.loc, x, axis);
  // Valid: no negative size, and they add up to the axis (else -1 sizes).
  Value total = m.c(0);
  Value valid = arith::ConstantIntOp::create(nc.b, nc.loc, 1, 1);
  for (Value s : *sizes) {
    valid = m.both(valid, m.cmp(arith::CmpIPredicate::sge, s, m.c(0)));
    total = m.add(total, s);
  }
  valid = m.both(valid, m.eq(total, dim));
  Value offset = m.c(0);
  for (size_t i = 0; i < n; ++i) {
    Value size = m.sel(valid, (*sizes)[i], m.c(-1));
    SmallVector<OpFoldResult> offs, lens, ones(r, nc.b.getIndexAttr(1));
    SmallVector<int64_t> shape(xt.getShape());
    shape[axis] = ShapedType::kDynamic;
    for (int64_t d = 0; d < r; ++d) {
      offs.push_back(d == axis ? OpFoldResult(offset) : nc.b.getIndexAttr(0));
      lens.push_back(d == axis            ? OpFoldResult(size)
                     : !xt.isDynamicDim(d) ? OpFoldResult(nc.b.getIndexAttr(xt.getDimSize(d)))
                         : OpFoldResult(tensor::DimOp::create(nc.b, nc.loc, x, d).getResult()));
    }
    auto piece = tensor::ExtractSliceOp::create(
        nc.b, nc.loc, RankedTensorType::get(shape, xt.getElementType()), x, offs, lens, ones);
    if (failed(nc.setOutput(i, piece)))
      return failure();
    offset = m.add(offset, (*sizes)[i]);
  }
  return success();
}

LogicalResult padRuntime(NodeContext &nc) {
  auto input = nc.input(0);
  auto pads = runtimeInts(nc, 1, "pads");
  if (failed(input) || failed(pads))
    return failure();
  Value x = *input;
  std::string mode = nc.attrString("mode", "constant");
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t r = xt.getRank();
  if ((int64_t)pads->size() != 2 * r || nc.has(3))
    return nc.error("pads known only at run time must give 2 x rank values (no axes input)");
  if (mode != "constant" && mode != "edge" && mode != "reflect")
    return nc.error("pad mode '" + mode + "' is not supported");
  Type et = xt.getElementType();
  Value fill;
  if (nc.has(2)) {
    auto v = runtimeScalar(nc, 2, "constant_value");
    if (failed(v))
      return failure();
    fill = *v;
  } else {
    fill = arith::ConstantOp::create(
        nc.b, nc.loc, isa<FloatType>(et) ? (TypedAttr)nc.b.getFloatAttr(et, 0)
                                         : nc.b.getIntegerAttr(et, 0));
  }
  if (fill.getType() != et)
    return nc.error("constant_value must have the input's element type");
  IndexMath m{nc.b, nc.loc};
  SmallVector<Value> dims, sizes;
  for (int64_t d = 0; d < r; ++d) {
    dims.push_back(tensor::DimOp::create(nc.b, nc.loc, x, d));
    // Negative pads crop; a size below 0 is refused at run time.
    Value s = m.add(m.add(dims[d], (*pads)[d]), (*pads)[d + r]);
    sizes.push_back(arith::MaxSIOp::create(nc.b, nc.loc, s, m.c(-1)));
  }
  SmallVector<int64_t> shape(r, ShapedType::kDynamic);
  auto gen = tensor::GenerateOp::create(
      nc.b, nc.loc, RankedTensorType::get(shape, et), sizes,
      [&](OpBuilder &b, Location l, ValueRange idx) {
        IndexMath g{b, l};
        using P = arith::CmpIPredicate;
        SmallVector<Value> at;
        Value inside = arith::ConstantIntOp::create(b, l, 1, 1);
        for (int64_t d = 0; d < r; ++d) {
          Value c = g.sub(idx[d], (*pads)[d]);
          Value last = g.sub(dims[d], g.c(1));
          inside = g.both(inside, g.both(g.cmp(P::sge, c, g.c(0)), g.cmp(P::slt, c, dims[d])));
          if (mode == "reflect") {
            c = g.sel(g.cmp(P::slt, c, g.c(0)), g.sub(g.c(0), c), c);
            c = g.sel(g.cmp(P::sgt, c, last), g.sub(g.add(last, last), c), c);
          }
          // Clamped in every mode: a read never leaves x.
          at.push_back(arith::MaxSIOp::create(
              b, l, arith::MinSIOp::create(b, l, c, last), g.c(0)));
        }
        Value v = tensor::ExtractOp::create(b, l, x, at);
        if (mode == "constant")
          v = arith::SelectOp::create(b, l, inside, v, fill);
        tensor::YieldOp::create(b, l, v);
      });
  return nc.setOutput(0, gen);
}

} // namespace kiln

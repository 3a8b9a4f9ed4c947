//===- Tensor.cpp - ONNX shape and data-movement ops => kiln --------------===//

#include "Expr.h"
#include "NodeContext.h"
#include "RuntimeShapes.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Dialects/Kiln/IR/ShapeUtils.h"

#include <cmath>

using namespace mlir;

namespace kiln {
namespace {

NamedAttribute i64s(NodeContext &nc, StringRef name, ArrayRef<int64_t> v) {
  return nc.b.getNamedAttr(name, nc.b.getDenseI64ArrayAttr(v));
}
NamedAttribute i64(NodeContext &nc, StringRef name, int64_t v) {
  return nc.b.getNamedAttr(name, nc.b.getI64IntegerAttr(v));
}

LogicalResult reshape(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  // A dynamic input, or a target computed from dynamic sizes: the sizes
  // are polynomials (SymbolicFolding.cpp).
  auto xt0 = cast<RankedTensorType>(x->getType());
  const KnownTensor *target = nc.opset >= 5 ? nc.knownOrSymbolic(1) : nullptr;
  // A target known only at run time (a graph input, or computed from one).
  if (nc.opset >= 5 && !target)
    return reshapeRuntime(nc, *x, nc.attrInt("allowzero", 0));
  if (!xt0.hasStaticShape() || (target && target->symbolic()))
    return reshapeSymbolic(nc, *x, nc.attrInt("allowzero", 0));
  // Before opset 5 the target shape was an attribute.
  auto spec = nc.opset < 5 ? FailureOr<std::vector<int64_t>>(nc.attrInts("shape"))
                           : nc.constInts(1, "shape");
  if (failed(spec))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  bool allowZero = nc.attrInt("allowzero", 0);
  SmallVector<int64_t> shape;
  int64_t inferred = -1, known = 1;
  for (size_t i = 0; i < spec->size(); ++i) {
    int64_t d = (*spec)[i];
    if (d == 0 && !allowZero) {
      if ((int64_t)i >= xt.getRank())
        return nc.error("shape copies dimension " + Twine(i) + " of a rank-" +
                        Twine(xt.getRank()) + " input");
      d = xt.getDimSize(i);
    }
    if (d == -1) {
      if (inferred >= 0)
        return nc.error("shape has more than one -1");
      inferred = i;
      d = 1;
    } else if (d < 0) {
      return nc.error("shape has negative dimension " + Twine(d));
    }
    shape.push_back(d);
    if ((int64_t)i != inferred && __builtin_mul_overflow(known, d, &known))
      return nc.error("shape " + shapeText(*spec) + " has more elements than a tensor can");
  }
  int64_t total = xt.getNumElements();
  if (inferred >= 0) {
    if (known == 0 || total % known)
      return nc.error("cannot reshape " + shapeText(xt.getShape()) + " to " +
                      shapeText(*spec));
    shape[inferred] = total / known;
  }
  if (numElements(shape) != total)
    return nc.error("cannot reshape " + shapeText(xt.getShape()) + " (" + Twine(total) +
                    " elements) to " + shapeText(shape) + " (" + Twine(numElements(shape)) +
                    " elements)");
  return nc.setOutput(0, ReshapeOp::create(nc.b, nc.loc,
                                           RankedTensorType::get(shape, xt.getElementType()),
                                           *x));
}

LogicalResult flatten(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  return nc.emit<FlattenOp>({*x}, {i64(nc, "axis", nc.attrInt("axis", 1))});
}

LogicalResult transpose(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  std::vector<int64_t> reversed;
  for (int64_t i = rank - 1; i >= 0; --i)
    reversed.push_back(i);
  return nc.emit<TransposeOp>({*x}, {i64s(nc, "perm", nc.attrInts("perm", reversed))});
}

/// Axes from the attribute (old opsets) or the optional input (13+).
FailureOr<std::vector<int64_t>> axesOf(NodeContext &nc, size_t inputIndex) {
  if (nc.has(inputIndex))
    return nc.constInts(inputIndex, "axes");
  return nc.attrInts("axes");
}

template <typename OpTy>
LogicalResult squeezeLike(NodeContext &nc) {
  auto x = nc.input(0);
  if (succeeded(x) && nc.opset >= 13 && nc.has(1) && !nc.known(1))
    return squeezeRuntime(nc, *x, std::is_same_v<OpTy, UnsqueezeOp>);
  auto axes = axesOf(nc, 1);
  if (failed(x) || failed(axes))
    return failure();
  return nc.emit<OpTy>({*x}, {i64s(nc, "axes", *axes)});
}

LogicalResult concat(NodeContext &nc) {
  auto inputs = nc.presentInputs();
  if (failed(inputs))
    return failure();
  // Before opset 4 the axis defaulted to 1.
  return nc.emit<ConcatOp>(*inputs, {i64(nc, "axis", nc.attrInt("axis", nc.opset < 4 ? 1 : 0))});
}

LogicalResult split(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  int64_t axis = nc.attrInt("axis", 0);
  auto norm = normalizeAxis(axis, xt.getRank());
  if (!norm)
    return nc.error("axis " + Twine(axis) + " out of range");
  std::vector<int64_t> sizes = nc.attrInts("split");
  if (nc.has(1)) {
    auto s = nc.constInts(1, "split");
    if (failed(s))
      return failure();
    sizes = *s;
  }
  int64_t n = nc.numOutputs(), dim = xt.getDimSize(*norm);
  if (xt.isDynamicDim(*norm))
    return nc.error("split axis " + Twine(*norm) + " has a size known only at run time; pin "
                    "it with --shape or --dim");
  if (sizes.empty()) {
    // Equal parts; with num_outputs (18+) the last part may be smaller.
    int64_t parts = nc.attrInt("num_outputs", n);
    int64_t chunk = (dim + parts - 1) / parts;
    for (int64_t i = 0; i < parts; ++i)
      sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - i * chunk)));
  }
  if ((int64_t)sizes.size() != n)
    return nc.error("split has " + Twine(sizes.size()) + " sizes for " + Twine(n) + " outputs");
  auto op = nc.build<SplitOp>({*x}, {i64(nc, "axis", axis), i64s(nc, "sizes", sizes)}, n);
  if (failed(op))
    return failure();
  for (int64_t i = 0; i < n; ++i)
    (void)nc.setOutput(i, (*op)->getResult(i));
  return success();
}

LogicalResult slice(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  if (nc.opset < 10) { // starts/ends/axes were attributes, steps always 1
    auto starts = nc.attrInts("starts"), ends = nc.attrInts("ends");
    std::vector<int64_t> axes = nc.attrInts("axes");
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i)
        axes.push_back(i);
    return nc.emit<SliceOp>({*x}, {i64s(nc, "starts", starts), i64s(nc, "ends", ends),
                                   i64s(nc, "axes", axes),
                                   i64s(nc, "steps", std::vector<int64_t>(starts.size(), 1))});
  }
  // A dynamic input, or bounds that are sizes known at run time.
  const KnownTensor *s = nc.knownOrSymbolic(1), *e = nc.knownOrSymbolic(2);
  if (!s || !e || (nc.has(3) && !nc.known(3)) || (nc.has(4) && !nc.known(4)))
    return sliceRuntime(nc, *x); // bounds, axes or steps known only at run time
  if (!cast<RankedTensorType>(x->getType()).hasStaticShape() || (s && s->symbolic()) ||
      (e && e->symbolic()))
    return sliceSymbolic(nc, *x); // SymbolicOps.cpp
  auto starts = nc.constInts(1, "starts");
  auto ends = nc.constInts(2, "ends");
  if (failed(starts) || failed(ends))
    return failure();
  std::vector<int64_t> axes, steps;
  if (failed(sliceAxesAndSteps(nc, starts->size(), axes, steps)))
    return failure();
  return nc.emit<SliceOp>({*x}, {i64s(nc, "starts", *starts), i64s(nc, "ends", *ends),
                                 i64s(nc, "axes", axes), i64s(nc, "steps", steps)});
}

LogicalResult gather(NodeContext &nc) {
  auto data = nc.input(0), idx = nc.input(1);
  if (failed(data) || failed(idx))
    return failure();
  return nc.emit<GatherOp>({*data, *idx}, {i64(nc, "axis", nc.attrInt("axis", 0))});
}

LogicalResult gatherElements(NodeContext &nc) {
  auto data = nc.input(0), idx = nc.input(1);
  if (failed(data) || failed(idx))
    return failure();
  return nc.emit<GatherElementsOp>({*data, *idx}, {i64(nc, "axis", nc.attrInt("axis", 0))});
}

/// Integers 0..n-1 along `axis` of a rank-`rank` tensor (size 1 elsewhere).
Value iota(NodeContext &nc, Type et, int64_t n, int64_t axis, int64_t rank) {
  KnownTensor k;
  k.elementType = et;
  k.shape.assign(rank, 1);
  k.shape[axis] = n;
  for (int64_t i = 0; i < n; ++i)
    k.values.push_back(i);
  if (n > 64) { // too large to track as known: a plain constant
    auto type = RankedTensorType::get(k.shape, et);
    SmallVector<Attribute> values;
    for (double v : k.values)
      values.push_back(IntegerAttr::get(et, toInt64(v)));
    return ConstantOp::create(nc.b, nc.loc, DenseElementsAttr::get(type, values));
  }
  return nc.constant(k);
}


LogicalResult gatherND(NodeContext &nc) {
  auto data = nc.input(0), idx = nc.input(1);
  if (failed(data) || failed(idx))
    return failure();
  return nc.emit<GatherNDOp>({*data, nc.castTo(*idx, nc.b.getI64Type())},
                             {i64(nc, "batch_dims", nc.attrInt("batch_dims", 0))});
}

template <bool isND>
LogicalResult scatter(NodeContext &nc) {
  auto data = nc.input(0), idx = nc.input(1), updates = nc.input(2);
  if (failed(data) || failed(idx) || failed(updates))
    return failure();
  SmallVector<NamedAttribute> attrs{
      nc.b.getNamedAttr("reduction", nc.b.getStringAttr(nc.attrString("reduction", "none")))};
  Value i64idx = nc.castTo(*idx, nc.b.getI64Type());
  if (isND)
    return nc.emit<ScatterNDOp>({*data, i64idx, *updates}, attrs);
  attrs.push_back(i64(nc, "axis", nc.attrInt("axis", 0)));
  return nc.emit<ScatterElementsOp>({*data, i64idx, *updates}, attrs);
}

/// TopK as k rounds of argmax (argmin): take the extreme, record it, mask it
/// out. Ties resolve to the lower index, as ONNX requires; k is small in
/// the models that use it.
LogicalResult topK(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  int64_t k = nc.attrInt("k", 0);
  if (nc.has(1)) {
    auto kv = nc.constInts(1, "K");
    if (failed(kv) || kv->size() != 1)
      return nc.error("K (input 1) must be one constant known at compile time");
    k = (*kv)[0];
  }
  auto xt = cast<RankedTensorType>(x->getType());
  auto axis = normalizeAxis(nc.attrInt("axis", -1), xt.getRank());
  if (!axis)
    return nc.error("axis " + Twine(nc.attrInt("axis", -1)) + " out of range for rank " +
                    Twine(xt.getRank()));
  if (k < 1 || k > xt.getDimSize(*axis))
    return nc.error("k must be in [1, " + Twine(xt.getDimSize(*axis)) + "], got " + Twine(k));
  bool largest = nc.attrInt("largest", 1);
  Expr e(nc, *x);
  Type et = xt.getElementType();
  double sentinel = isa<FloatType>(et) ? (largest ? -INFINITY : INFINITY)
                                       : (largest ? -9.2e18 : 9.2e18);
  Value ids = iota(nc, nc.b.getI64Type(), xt.getDimSize(*axis), *axis, xt.getRank());
  // `taken` marks indices already returned. Each round finds the best value
  // among the rest, then the first untaken index holding it, so inputs that
  // contain the sentinel themselves (-inf) are still picked exactly once.
  KnownTensor none;
  none.elementType = nc.b.getI1Type();
  none.shape.assign(cast<RankedTensorType>(ids.getType()).getShape().begin(),
                    cast<RankedTensorType>(ids.getType()).getShape().end());
  none.values.assign(xt.getDimSize(*axis), 0);
  Value taken = nc.constant(none);
  SmallVector<Value> values, indices;
  auto keep = nc.b.getNamedAttr("keepdims", nc.b.getBoolAttr(true));
  auto axes = nc.b.getNamedAttr("axes", nc.b.getDenseI64ArrayAttr({*axis}));
  for (int64_t i = 0; i < k; ++i) {
    Value rest = e.where(taken, e.c(sentinel), *x);
    Value best = largest ? e.op<ReduceMaxOp>({rest}, {axes, keep})
                         : e.op<ReduceMinOp>({rest}, {axes, keep});
    Value hit = e.op<AndOp>({e.op<NotOp>({taken}), e.op<EqualOp>({*x, best})});
    Value idx = e.op<ArgMaxOp>({nc.castTo(hit, nc.b.getI64Type())},
                               {i64(nc, "axis", *axis), keep});
    values.push_back(best);
    indices.push_back(idx);
    taken = e.op<OrOp>({taken, e.op<EqualOp>({ids, idx})});
  }
  auto cat = [&](SmallVector<Value> &parts) {
    return parts.size() == 1 ? parts[0] : e.op<ConcatOp>(parts, {i64(nc, "axis", *axis)});
  };
  (void)nc.setOutput(1, cat(indices));
  return nc.setOutput(0, cat(values));
}

LogicalResult trilu(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  int64_t k = 0;
  if (nc.has(1)) {
    auto v = nc.constScalar(1, "k");
    if (failed(v))
      return failure();
    k = toInt64(*v);
  }
  return nc.emit<TriluOp>({*x}, {nc.b.getNamedAttr("upper", nc.b.getBoolAttr(nc.attrInt("upper", 1))),
                                 i64(nc, "k", k)});
}

LogicalResult constant(NodeContext &nc) {
  const onnx::AttributeProto *a = nc.attr("value");
  if (!a) {
    if (nc.hasAttr("value_float") || nc.hasAttr("value_int") || nc.hasAttr("value_floats") ||
        nc.hasAttr("value_ints"))
      return nc.error("internal: scalar Constant forms are folded at import");
    return nc.error("only Constant with a tensor 'value' is supported");
  }
  std::string error;
  auto attr = tensorProtoToAttr(a->t(), nc.ctx(), nc.modelDirectory(), error);
  if (failed(attr))
    return nc.error(error);
  return nc.setOutput(0, ConstantOp::create(nc.b, nc.loc, *attr));
}

LogicalResult expand(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  const KnownTensor *target = nc.knownOrSymbolic(1);
  if (target && target->symbolic())
    return expandSymbolic(nc, *x); // SymbolicOps.cpp
  if (!target)
    return expandRuntime(nc, *x); // RuntimeShapes.cpp
  auto shape = nc.constInts(1, "shape");
  if (failed(x) || failed(shape))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  auto out = broadcastShapes(xt.getShape(), *shape);
  if (!out)
    return nc.error("cannot expand " + shapeText(xt.getShape()) + " to " + shapeText(*shape));
  Expr e(nc, *x);
  Value y = e.broadcastTo(*x, *out);
  return nc.hasFailed() ? failure() : nc.setOutput(0, y);
}

LogicalResult pad(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  std::string mode = nc.attrString("mode", "constant");
  std::vector<int64_t> pads;
  double value = 0;
  if (nc.opset < 11) { // pads and value were attributes
    pads = nc.attrInts(nc.opset < 2 ? "paddings" : "pads");
    value = nc.attrFloat("value", 0.0);
  } else {
    auto p = nc.constInts(1, "pads");
    if (failed(p))
      return failure();
    pads = *p;
    if (nc.has(2)) {
      auto v = nc.constScalar(2, "constant_value");
      if (failed(v))
        return failure();
      value = *v;
    }
  }
  if (nc.has(3)) { // opset 18: pads apply to the listed axes only
    auto axes = nc.constInts(3, "axes");
    if (failed(axes))
      return failure();
    std::vector<int64_t> full(2 * rank, 0);
    for (size_t i = 0; i < axes->size(); ++i) {
      auto a = normalizeAxis((*axes)[i], rank);
      if (!a || 2 * axes->size() != pads.size())
        return nc.error("pads and axes do not match");
      full[*a] = pads[i];
      full[*a + rank] = pads[i + axes->size()];
    }
    pads = full;
  }
  if (mode == "wrap")
    return nc.error("pad mode 'wrap' is not supported");
  auto &b = nc.b;
  return nc.emit<PadOp>({*x}, {i64s(nc, "pads", pads),
                               b.getNamedAttr("mode", b.getStringAttr(mode)),
                               b.getNamedAttr("value", b.getF64FloatAttr(value))});
}

/// Tile as concatenations of the input with itself along each axis.
LogicalResult tile(NodeContext &nc) {
  auto x = nc.input(0);
  auto repeats = nc.constInts(1, "repeats");
  if (failed(x) || failed(repeats))
    return failure();
  int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  if ((int64_t)repeats->size() != rank)
    return nc.error("repeats has " + Twine(repeats->size()) + " values for rank " + Twine(rank));
  Value v = *x;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t r = (*repeats)[d];
    if (r < 0)
      return nc.error("negative repeat " + Twine(r));
    if (r == 1)
      continue;
    if (r == 0) {
      auto t = cast<RankedTensorType>(v.getType());
      SmallVector<int64_t> shape(t.getShape());
      shape[d] = 0;
      auto sl = nc.build<SliceOp>({v}, {i64s(nc, "starts", {0}), i64s(nc, "ends", {0}),
                                        i64s(nc, "axes", {d}), i64s(nc, "steps", {1})});
      if (failed(sl))
        return failure();
      v = (*sl)->getResult(0);
      continue;
    }
    SmallVector<Value> copies(r, v);
    auto cat = nc.build<ConcatOp>(copies, {i64(nc, "axis", d)});
    if (failed(cat))
      return failure();
    v = (*cat)->getResult(0);
  }
  return nc.setOutput(0, v);
}

/// DepthToSpace / SpaceToDepth as reshape - transpose - reshape.
template <bool toSpace>
LogicalResult depthSpace(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  if (xt.getRank() != 4)
    return nc.error("expects a 4-D NCHW input");
  int64_t bs = nc.attrInt("blocksize", 0);
  int64_t n = xt.getDimSize(0), c = xt.getDimSize(1), h = xt.getDimSize(2), w = xt.getDimSize(3);
  if (bs < 1 || (toSpace ? c % (bs * bs) : (h % bs || w % bs)))
    return nc.error("blocksize " + Twine(bs) + " does not divide the input");
  Expr e(nc, *x);
  Value t;
  auto transpose = [&](Value v, ArrayRef<int64_t> perm) {
    return e.op<TransposeOp>({v}, {i64s(nc, "perm", perm)});
  };
  if (toSpace) {
    bool crd = nc.attrString("mode", "DCR") == "CRD";
    int64_t oc = c / (bs * bs);
    t = crd ? transpose(e.reshape(*x, {n, oc, bs, bs, h, w}), {0, 1, 4, 2, 5, 3})
            : transpose(e.reshape(*x, {n, bs, bs, oc, h, w}), {0, 3, 4, 1, 5, 2});
    return nc.setOutput(0, e.reshape(t, {n, oc, h * bs, w * bs}));
  }
  t = transpose(e.reshape(*x, {n, c, h / bs, bs, w / bs, bs}), {0, 3, 5, 1, 2, 4});
  return nc.setOutput(0, e.reshape(t, {n, c * bs * bs, h / bs, w / bs}));
}



LogicalResult hardmax(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  int64_t axis = nc.attrInt("axis", nc.opset >= 13 ? -1 : 1);
  auto norm = normalizeAxis(axis, xt.getRank());
  if (!norm)
    return nc.error("axis out of range");
  Expr e(nc, *x);
  Value in = *x;
  int64_t a = *norm;
  if (nc.opset < 13) { // over the input flattened to 2-D at `axis`
    in = e.op<FlattenOp>({in}, {i64(nc, "axis", a)});
    a = 1;
  }
  auto it = cast<RankedTensorType>(in.getType());
  Value best = e.op<ArgMaxOp>({in}, {i64(nc, "axis", a),
                                     nc.b.getNamedAttr("keepdims", nc.b.getBoolAttr(true))});
  Value ids = iota(nc, nc.b.getI64Type(), it.getDimSize(a), a, it.getRank());
  Value r = nc.castTo(e.op<EqualOp>({ids, best}), it.getElementType());
  if (nc.opset < 13)
    r = ReshapeOp::create(nc.b, nc.loc, xt, r);
  return nc.setOutput(0, r);
}

LogicalResult oneHot(NodeContext &nc) {
  auto indices = nc.input(0), values = nc.input(2);
  auto depth = nc.constScalar(1, "depth");
  if (failed(indices) || failed(values) || failed(depth))
    return failure();
  auto it = cast<RankedTensorType>(indices->getType());
  auto vt = cast<RankedTensorType>(values->getType());
  int64_t rank = it.getRank() + 1, n = toInt64(*depth);
  auto axis = normalizeAxis(nc.attrInt("axis", -1), rank);
  if (!axis || n < 1 || vt.getNumElements() != 2)
    return nc.error("needs a valid axis, depth >= 1 and two values [off, on]");
  Expr e(nc, *values);
  Type i64 = nc.b.getI64Type();
  Value idx = nc.castTo(*indices, i64);
  Expr ie(nc, idx);
  // Negative indices count from the end.
  idx = ie.where(ie.less(idx, ie.c(0)), ie.add(idx, ie.c(n)), idx);
  idx = ie.op<UnsqueezeOp>({idx}, {i64s(nc, "axes", {*axis})});
  Value hit = ie.op<EqualOp>({iota(nc, i64, n, *axis, rank), idx});
  auto pick = [&](int64_t i) {
    Value v = e.op<SliceOp>({*values}, {i64s(nc, "starts", {i}), i64s(nc, "ends", {i + 1}),
                                        i64s(nc, "axes", {0}), i64s(nc, "steps", {1})});
    return e.reshape(v, {});
  };
  return nc.setOutput(0, e.where(hit, pick(1), pick(0)));
}

LogicalResult eyeLike(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  if (xt.getRank() != 2)
    return nc.error("expects a 2-D input");
  Type et = nc.hasAttr("dtype") ? onnxElementType(nc.ctx(), nc.attrInt("dtype", 1))
                                : xt.getElementType();
  if (!et)
    return nc.error("unsupported dtype");
  int64_t k = nc.attrInt("k", 0), rows = xt.getDimSize(0), cols = xt.getDimSize(1);
  SmallVector<Attribute> values;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double v = j - i == k ? 1.0 : 0.0;
      values.push_back(isa<FloatType>(et) ? (Attribute)FloatAttr::get(et, v)
                                          : (Attribute)IntegerAttr::get(et, (int64_t)v));
    }
  auto type = RankedTensorType::get({rows, cols}, et);
  return nc.setOutput(0, ConstantOp::create(nc.b, nc.loc, DenseElementsAttr::get(type, values)));
}

LogicalResult cumSum(NodeContext &nc) {
  auto x = nc.input(0);
  auto axis = nc.constScalar(1, "axis");
  if (failed(x) || failed(axis))
    return failure();
  auto &b = nc.b;
  return nc.emit<CumSumOp>({*x}, {i64(nc, "axis", toInt64(*axis)),
                                  b.getNamedAttr("exclusive", b.getBoolAttr(nc.attrInt("exclusive", 0))),
                                  b.getNamedAttr("reverse", b.getBoolAttr(nc.attrInt("reverse", 0)))});
}

LogicalResult notFolded(NodeContext &nc) {
  return nc.error("needs inputs known at compile time (shape arithmetic on dynamic "
                  "values is not supported)");
}

} // namespace

void registerTensorHandlers(HandlerTable &t) {
  t["Reshape"] = reshape;
  t["Flatten"] = flatten;
  t["Transpose"] = transpose;
  t["Squeeze"] = squeezeLike<SqueezeOp>;
  t["Unsqueeze"] = squeezeLike<UnsqueezeOp>;
  t["Concat"] = concat;
  t["Split"] = split;
  t["Slice"] = slice;
  t["Gather"] = gather;
  t["GatherElements"] = gatherElements;
  t["GatherND"] = gatherND;
  t["TopK"] = topK;
  t["ScatterElements"] = scatter<false>;
  t["Scatter"] = scatter<false>; // deprecated alias of ScatterElements
  t["ScatterND"] = scatter<true>;
  t["Trilu"] = trilu;
  t["Constant"] = constant;
  t["Expand"] = expand;
  t["Pad"] = pad;
  t["Hardmax"] = hardmax;
  t["OneHot"] = oneHot;
  t["EyeLike"] = eyeLike;
  t["CumSum"] = cumSum;
  t["Tile"] = tile;
  t["DepthToSpace"] = depthSpace<true>;
  t["SpaceToDepth"] = depthSpace<false>;
  // Always folded at import when their inputs are known.
  t["Shape"] = notFolded;
  t["Size"] = notFolded;
  t["ConstantOfShape"] = constantOfShapeRuntime; // folded where the shape is known
  t["Range"] = rangeOp; // SymbolicOps.cpp
}

} // namespace kiln

//===- ShapeFolding.cpp - evaluate exporters' shape arithmetic at import --===//
//
// torch.onnx.export emits Shape -> Gather -> Unsqueeze -> Concat -> Reshape
// chains (and Constant, ConstantOfShape, Range, Cast, Mul...). With static
// shapes all of it is known, so it is evaluated here on small host tensors
// and never becomes kiln ops.
//
//===----------------------------------------------------------------------===//

#include "NodeContext.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Dialects/Kiln/IR/ShapeUtils.h"

#include <cmath>

using namespace mlir;

namespace kiln {
namespace {

constexpr int64_t kMaxKnown = 64;

KnownTensor ints(MLIRContext *ctx, ArrayRef<int64_t> shape, ArrayRef<double> values,
                 Type et = Type()) {
  KnownTensor k;
  k.shape.assign(shape.begin(), shape.end());
  k.values.assign(values.begin(), values.end());
  k.elementType = et ? et : IntegerType::get(ctx, 64);
  return k;
}

bool allKnown(NodeContext &nc) {
  for (size_t i = 0; i < nc.numInputs(); ++i)
    if (nc.has(i) && !nc.known(i))
      return false;
  return nc.numInputs() > 0;
}

/// Elementwise binary op with numpy broadcasting on known tensors.
std::optional<KnownTensor> binary(const KnownTensor &a, const KnownTensor &b, Type et,
                                  llvm::function_ref<double(double, double)> fn) {
  auto shape = broadcastShapes(a.shape, b.shape);
  if (!shape || numElements(*shape) > kMaxKnown)
    return std::nullopt;
  KnownTensor r;
  r.shape = *shape;
  r.elementType = et;
  int64_t n = numElements(*shape), rank = shape->size();
  for (int64_t flat = 0; flat < n; ++flat) {
    auto index = [&](const KnownTensor &t) {
      int64_t idx = 0, rem = flat, stride = 1;
      SmallVector<int64_t> coords(rank);
      for (int64_t d = rank - 1; d >= 0; --d) {
        coords[d] = rem % (*shape)[d];
        rem /= (*shape)[d];
      }
      for (int64_t d = t.shape.size() - 1; d >= 0; --d) {
        int64_t c = coords[rank - t.shape.size() + d];
        idx += (t.shape[d] == 1 ? 0 : c) * stride;
        stride *= t.shape[d];
      }
      return idx;
    };
    r.values.push_back(fn(a.values[index(a)], b.values[index(b)]));
  }
  return r;
}

double truncDiv(double a, double b, bool isInt) {
  if (!isInt)
    return a / b;
  if (b == 0)
    return 0;
  return std::trunc(a / b);
}

} // namespace

bool foldKnownNode(NodeContext &nc) {
  const std::string &op = nc.node.op_type();
  MLIRContext *ctx = nc.ctx();
  Builder b(ctx);

  if (op == "Shape") {
    auto t = nc.inputType(0);
    if (!t)
      return false;
    int64_t rank = t.getRank();
    int64_t start = nc.attrInt("start", 0), end = nc.attrInt("end", rank);
    start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
    end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
    SmallVector<double> dims;
    for (int64_t d = start; d < end; ++d)
      dims.push_back(t.getDimSize(d));
    (void)nc.setKnown(0, ints(ctx, {(int64_t)dims.size()}, dims));
    return true;
  }
  if (op == "Constant") {
    if (auto *a = nc.attr("value_int"))
      return succeeded(nc.setKnown(0, ints(ctx, {}, {(double)a->i()})));
    if (auto *a = nc.attr("value_ints")) {
      SmallVector<double> v(a->ints().begin(), a->ints().end());
      return succeeded(nc.setKnown(0, ints(ctx, {(int64_t)v.size()}, v)));
    }
    if (auto *a = nc.attr("value_float"))
      return succeeded(nc.setKnown(0, ints(ctx, {}, {a->f()}, b.getF32Type())));
    if (auto *a = nc.attr("value_floats")) {
      SmallVector<double> v(a->floats().begin(), a->floats().end());
      return succeeded(nc.setKnown(0, ints(ctx, {(int64_t)v.size()}, v, b.getF32Type())));
    }
    if (auto *a = nc.attr("value"))
      if (auto k = tensorProtoToKnown(a->t(), ctx, nc.modelDirectory()))
        return succeeded(nc.setKnown(0, *k));
    return false;
  }
  if (op == "ConstantOfShape") {
    const KnownTensor *shape = nc.known(0);
    if (!shape)
      return false;
    KnownTensor fill = ints(ctx, {}, {0.0}, b.getF32Type());
    if (auto *a = nc.attr("value"))
      if (auto k = tensorProtoToKnown(a->t(), ctx, nc.modelDirectory()); k && k->numElements() == 1)
        fill = *k;
    SmallVector<int64_t> dims(shape->values.begin(), shape->values.end());
    if (llvm::any_of(dims, [](int64_t d) { return d < 0; }))
      return false;
    if (numElements(dims) <= kMaxKnown) {
      KnownTensor r = fill;
      r.shape = dims;
      r.values.assign(numElements(dims), fill.values[0]);
      return succeeded(nc.setKnown(0, r));
    }
    auto type = RankedTensorType::get(dims, fill.elementType);
    Attribute v = isa<FloatType>(fill.elementType)
                      ? (Attribute)FloatAttr::get(fill.elementType, fill.values[0])
                      : (Attribute)IntegerAttr::get(fill.elementType, (int64_t)fill.values[0]);
    return succeeded(
        nc.setOutput(0, ConstantOp::create(nc.b, nc.loc, DenseElementsAttr::get(type, v))));
  }
  if (!allKnown(nc))
    return false;

  auto in = [&](size_t i) -> const KnownTensor & { return *nc.known(i); };
  auto set = [&](std::optional<KnownTensor> k) {
    return k && succeeded(nc.setKnown(0, std::move(*k)));
  };
  if (op == "Identity")
    return set(in(0));
  if (op == "Cast") {
    Type to = onnxElementType(ctx, nc.attrInt("to", 0));
    if (!to || isa<FloatType>(to) != isa<FloatType>(in(0).elementType))
      return false;
    KnownTensor r = in(0);
    r.elementType = to;
    return set(r);
  }
  if (op == "Unsqueeze" || op == "Squeeze" || op == "Reshape" || op == "Flatten") {
    // Only the common scalar <-> 1-element-vector reshapes of shape math.
    const KnownTensor &x = in(0);
    KnownTensor r = x;
    if (op == "Unsqueeze" && x.shape.empty())
      r.shape = {1};
    else if (op == "Squeeze" && x.shape == SmallVector<int64_t>{1})
      r.shape = {};
    else if (op == "Reshape" && nc.has(1) && in(1).numElements() == 1 &&
             (in(1).values[0] == -1 || in(1).values[0] == x.numElements()))
      r.shape = {x.numElements()};
    else
      return false;
    return set(r);
  }
  if (op == "Concat") {
    KnownTensor r = in(0);
    if (r.shape.size() != 1)
      return false;
    for (size_t i = 1; i < nc.numInputs(); ++i) {
      if (in(i).shape.size() != 1 || in(i).elementType != r.elementType)
        return false;
      r.values.append(in(i).values.begin(), in(i).values.end());
    }
    r.shape = {(int64_t)r.values.size()};
    return set(r);
  }
  if (op == "Gather") {
    const KnownTensor &data = in(0), &idx = in(1);
    if (data.shape.size() != 1 || nc.attrInt("axis", 0) != 0)
      return false;
    KnownTensor r = idx;
    r.elementType = data.elementType;
    for (double &v : r.values) {
      int64_t i = (int64_t)v < 0 ? (int64_t)v + data.numElements() : (int64_t)v;
      if (i < 0 || i >= data.numElements())
        return false;
      v = data.values[i];
    }
    return set(r);
  }
  if (op == "Slice") {
    const KnownTensor &x = in(0);
    if (x.shape.size() != 1 || (nc.has(3) && in(3).values != SmallVector<double>{0}))
      return false;
    auto dims = resolveSlice(x.shape, in(1).ints(), in(2).ints(), {0},
                             nc.has(4) ? in(4).ints() : std::vector<int64_t>{1});
    if (!dims)
      return false;
    KnownTensor r = x;
    r.values.clear();
    auto d = (*dims)[0];
    for (int64_t i = 0; i < d.size; ++i)
      r.values.push_back(x.values[d.start + i * d.step]);
    r.shape = {d.size};
    return set(r);
  }
  if (op == "Range") {
    double start = in(0).values[0], limit = in(1).values[0], delta = in(2).values[0];
    if (delta == 0)
      return false;
    int64_t n = std::max<int64_t>(0, (int64_t)std::ceil((limit - start) / delta));
    if (n > kMaxKnown)
      return false;
    KnownTensor r = in(0);
    r.shape = {n};
    r.values.clear();
    for (int64_t i = 0; i < n; ++i)
      r.values.push_back(start + i * delta);
    return set(r);
  }
  if (nc.numInputs() == 2 && (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" ||
                              op == "Equal" || op == "Max" || op == "Min")) {
    const KnownTensor &x = in(0), &y = in(1);
    bool isInt = !isa<FloatType>(x.elementType);
    Type et = op == "Equal" ? (Type)b.getI1Type() : x.elementType;
    auto fn = [&](double p, double q) -> double {
      if (op == "Add") return p + q;
      if (op == "Sub") return p - q;
      if (op == "Mul") return p * q;
      if (op == "Div") return truncDiv(p, q, isInt);
      if (op == "Max") return std::max(p, q);
      if (op == "Min") return std::min(p, q);
      return p == q;
    };
    return set(binary(x, y, et, fn));
  }
  if (op == "Where") {
    const KnownTensor &c = in(0), &x = in(1), &y = in(2);
    auto pick = binary(c, x, x.elementType, [](double p, double q) { return p ? q : NAN; });
    if (!pick)
      return false;
    return set(binary(*pick, y, x.elementType,
                      [](double p, double q) { return std::isnan(p) ? q : p; }));
  }
  if (op == "Not")
    return false;
  return false;
}

} // namespace kiln

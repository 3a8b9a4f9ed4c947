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

} // namespace

/// Elementwise op with numpy broadcasting over any number of known tensors.
std::optional<KnownTensor> broadcastMap(ArrayRef<const KnownTensor *> args, Type et,
                                        llvm::function_ref<double(ArrayRef<double>)> fn) {
  SmallVector<int64_t> shape;
  for (const KnownTensor *t : args) {
    auto b = broadcastShapes(shape, t->shape);
    if (!b)
      return std::nullopt;
    shape = *b;
  }
  if (numElements(shape) > kMaxKnown)
    return std::nullopt;
  KnownTensor r;
  r.shape = shape;
  r.elementType = et;
  int64_t n = numElements(shape), rank = shape.size();
  SmallVector<int64_t> coords(rank);
  SmallVector<double> operands(args.size());
  for (int64_t flat = 0; flat < n; ++flat) {
    for (int64_t d = rank - 1, rem = flat; d >= 0; --d) {
      coords[d] = rem % shape[d];
      rem /= shape[d];
    }
    for (size_t a = 0; a < args.size(); ++a) {
      const KnownTensor &t = *args[a];
      int64_t idx = 0, stride = 1;
      for (int64_t d = t.shape.size() - 1; d >= 0; --d) {
        idx += (t.shape[d] == 1 ? 0 : coords[rank - t.shape.size() + d]) * stride;
        stride *= t.shape[d];
      }
      operands[a] = t.values[idx];
    }
    r.values.push_back(fn(operands));
  }
  return r;
}

namespace {

std::optional<KnownTensor> binary(const KnownTensor &a, const KnownTensor &b, Type et,
                                  llvm::function_ref<double(double, double)> fn) {
  return broadcastMap({&a, &b}, et, [&](ArrayRef<double> v) { return fn(v[0], v[1]); });
}

double truncDiv(double a, double b, bool isInt) {
  if (!isInt)
    return a / b;
  if (b == 0)
    return 0;
  return std::trunc(a / b);
}

} // namespace

namespace {

bool foldShape(NodeContext &nc) {
  auto t = nc.inputType(0);
  if (!t)
    return false;
  int64_t rank = t.getRank();
  int64_t start = nc.attrInt("start", 0), end = nc.attrInt("end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  SmallVector<double> dims;
  for (int64_t d = start; d < end; ++d) {
    if (t.isDynamicDim(d))
      return false; // a size known at run time: foldSymbolicNode
    dims.push_back(t.getDimSize(d));
  }
  return succeeded(nc.setKnown(0, ints(nc.ctx(), {(int64_t)dims.size()}, dims)));
}

bool foldConstant(NodeContext &nc) {
  MLIRContext *ctx = nc.ctx();
  Type f32 = Float32Type::get(ctx);
  if (auto *a = nc.attr("value_int"))
    return succeeded(nc.setKnown(0, ints(ctx, {}, {(double)a->i()})));
  if (auto *a = nc.attr("value_ints")) {
    SmallVector<double> v(a->ints().begin(), a->ints().end());
    return succeeded(nc.setKnown(0, ints(ctx, {(int64_t)v.size()}, v)));
  }
  if (auto *a = nc.attr("value_float"))
    return succeeded(nc.setKnown(0, ints(ctx, {}, {a->f()}, f32)));
  if (auto *a = nc.attr("value_floats")) {
    SmallVector<double> v(a->floats().begin(), a->floats().end());
    return succeeded(nc.setKnown(0, ints(ctx, {(int64_t)v.size()}, v, f32)));
  }
  if (auto *a = nc.attr("value"))
    if (auto k = tensorProtoToKnown(a->t(), ctx, nc.modelDirectory()))
      return succeeded(nc.setKnown(0, *k));
  return false;
}

/// Small results become known tensors; large ones a splat constant.
bool foldConstantOfShape(NodeContext &nc) {
  const KnownTensor *shape = nc.known(0);
  if (!shape)
    return false;
  MLIRContext *ctx = nc.ctx();
  KnownTensor fill = ints(ctx, {}, {0.0}, Float32Type::get(ctx));
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

// The folders below run only when every input is known.
using Known = ArrayRef<const KnownTensor *>;

KnownTensor castKnown(const KnownTensor &x, Type to) {
  KnownTensor r = x;
  r.elementType = to;
  if (to.isInteger(1))
    for (double &v : r.values)
      v = v != 0;
  else if (!isa<FloatType>(to))
    for (double &v : r.values)
      v = std::trunc(v); // float -> int truncates toward zero
  return r;
}

std::optional<KnownTensor> foldCast(NodeContext &nc, Known in) {
  Type to = onnxElementType(nc.ctx(), nc.attrInt("to", 0));
  if (!to)
    return std::nullopt;
  return castKnown(*in[0], to);
}

/// A known tensor broadcast to a known shape (the dynamo exporter's
/// `Expand(Shape(w)[0:1], [1])`, a zero bias's size).
std::optional<KnownTensor> foldExpand(NodeContext &, Known in) {
  const KnownTensor &shape = *in[1];
  if (shape.shape.size() != 1 || isa<FloatType>(shape.elementType))
    return std::nullopt;
  KnownTensor target;
  for (double d : shape.values)
    target.shape.push_back(toInt64(d));
  if (llvm::any_of(target.shape, [](int64_t d) { return d < 0; }) ||
      numElements(target.shape) > kMaxKnown)
    return std::nullopt;
  target.values.assign(numElements(target.shape), 0.0);
  target.elementType = in[0]->elementType;
  return broadcastMap({in[0], &target}, in[0]->elementType,
                      [](ArrayRef<double> v) { return v[0]; });
}

/// Elementwise unary folds of shape arithmetic.
template <double (*fn)(double)>
std::optional<KnownTensor> foldUnary(NodeContext &, Known in) {
  KnownTensor r = *in[0];
  for (double &v : r.values)
    v = fn(v);
  return r;
}
double negate(double v) { return -v; }
double relu(double v) { return v > 0 ? v : 0; }
double logicalNot(double v) { return v == 0; }

/// Only the scalar <-> 1-element-vector reshapes of shape arithmetic.
std::optional<KnownTensor> foldReshapeLike(NodeContext &nc, Known in) {
  const std::string &op = nc.node.op_type();
  const KnownTensor &x = *in[0];
  KnownTensor r = x;
  if (op == "Unsqueeze" && x.shape.empty())
    r.shape = {1};
  else if (op == "Squeeze" && x.shape == SmallVector<int64_t>{1})
    r.shape = {};
  else if (op == "Reshape" && in.size() > 1 && in[1]->shape.size() == 1) {
    // Any reshape of a small known tensor: 0 copies x's dimension (unless
    // allowzero), one -1 takes what is left.
    SmallVector<int64_t> shape;
    int64_t product = 1, inferred = -1;
    for (auto [i, v] : llvm::enumerate(in[1]->ints())) {
      if (v == 0 && !nc.attrInt("allowzero", 0)) {
        if (i >= x.shape.size())
          return std::nullopt;
        v = x.shape[i];
      }
      if (v == -1) {
        if (inferred >= 0)
          return std::nullopt;
        inferred = i;
      } else if (v < 0) {
        return std::nullopt;
      } else {
        product *= v;
      }
      shape.push_back(v);
    }
    if (inferred >= 0) {
      if (product == 0 || x.numElements() % product)
        return std::nullopt;
      shape[inferred] = x.numElements() / product;
    } else if (product != x.numElements()) {
      return std::nullopt;
    }
    r.shape = shape;
  } else {
    return std::nullopt;
  }
  return r;
}

std::optional<KnownTensor> foldConcat(NodeContext &, Known in) {
  KnownTensor r = *in[0];
  if (r.shape.size() != 1)
    return std::nullopt;
  for (const KnownTensor *t : in.drop_front()) {
    if (t->shape.size() != 1 || t->elementType != r.elementType)
      return std::nullopt;
    r.values.append(t->values.begin(), t->values.end());
  }
  r.shape = {(int64_t)r.values.size()};
  return r;
}

std::optional<KnownTensor> foldGather(NodeContext &nc, Known in) {
  const KnownTensor &data = *in[0];
  if (in.size() != 2 || data.shape.size() != 1 || nc.attrInt("axis", 0) != 0)
    return std::nullopt;
  KnownTensor r = *in[1];
  r.elementType = data.elementType;
  for (double &v : r.values) {
    int64_t i = toInt64(v) < 0 ? toInt64(v) + data.numElements() : toInt64(v);
    if (i < 0 || i >= data.numElements())
      return std::nullopt;
    v = data.values[i];
  }
  return r;
}

std::optional<KnownTensor> foldSlice(NodeContext &, Known in) {
  const KnownTensor &x = *in[0];
  if (x.shape.size() != 1 || in.size() < 3 || !in[1] || !in[2] ||
      (in.size() > 3 && in[3] && in[3]->values != SmallVector<double>{0}))
    return std::nullopt;
  auto steps = in.size() > 4 && in[4] ? in[4]->ints() : std::vector<int64_t>{1};
  auto dims = resolveSlice(x.shape, in[1]->ints(), in[2]->ints(), {0}, steps);
  if (!dims)
    return std::nullopt;
  KnownTensor r = x;
  r.values.clear();
  SliceDim d = (*dims)[0];
  for (int64_t i = 0; i < d.size; ++i)
    r.values.push_back(x.values[d.start + i * d.step]);
  r.shape = {d.size};
  return r;
}

std::optional<KnownTensor> foldRange(NodeContext &, Known in) {
  if (in.size() != 3 || in[0]->numElements() != 1 || in[1]->numElements() != 1 ||
      in[2]->numElements() != 1)
    return std::nullopt;
  double start = in[0]->values[0], limit = in[1]->values[0], delta = in[2]->values[0];
  if (delta == 0)
    return std::nullopt;
  int64_t n = std::max<int64_t>(0, (int64_t)std::ceil((limit - start) / delta));
  if (n > kMaxKnown)
    return std::nullopt;
  KnownTensor r = *in[0];
  r.shape = {n};
  r.values.clear();
  for (int64_t i = 0; i < n; ++i)
    r.values.push_back(start + i * delta);
  return r;
}

std::optional<KnownTensor> foldArith(NodeContext &nc, Known in) {
  if (in.size() != 2)
    return std::nullopt;
  const std::string &op = nc.node.op_type();
  const KnownTensor &x = *in[0], &y = *in[1];
  bool isInt = !isa<FloatType>(x.elementType);
  bool compares = op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
                  op == "GreaterOrEqual";
  Type et = compares ? (Type)IntegerType::get(nc.ctx(), 1) : x.elementType;
  return binary(x, y, et, [&](double p, double q) -> double {
    if (op == "Add") return p + q;
    if (op == "Sub") return p - q;
    if (op == "Mul") return p * q;
    if (op == "Div") return truncDiv(p, q, isInt);
    if (op == "Max") return std::max(p, q);
    if (op == "Min") return std::min(p, q);
    if (op == "Pow") return std::pow(p, q);
    if (op == "Less") return p < q;
    if (op == "Greater") return p > q;
    if (op == "LessOrEqual") return p <= q;
    if (op == "GreaterOrEqual") return p >= q;
    if (op == "And") return p != 0 && q != 0;
    if (op == "Or") return p != 0 || q != 0;
    if (op == "Mod") {
      // fmod=1: the dividend's sign (C's fmod); else (integers) the
      // divisor's, as Python's %.
      if (q == 0 && isInt)
        return 0; // as Div: undefined in ONNX
      double m = std::fmod(p, q);
      if (!nc.attrInt("fmod", 0) && m != 0 && (m < 0) != (q < 0))
        m += q;
      return m;
    }
    return p == q;
  });
}

std::optional<KnownTensor> foldWhere(NodeContext &, Known in) {
  if (in.size() != 3)
    return std::nullopt;
  return broadcastMap(in, in[1]->elementType,
                      [](ArrayRef<double> v) { return v[0] != 0 ? v[1] : v[2]; });
}

using KnownFolder = std::optional<KnownTensor> (*)(NodeContext &, Known);

const llvm::StringMap<KnownFolder> &knownFolders() {
  static const llvm::StringMap<KnownFolder> table = {
      {"Identity", [](NodeContext &, Known in) -> std::optional<KnownTensor> { return *in[0]; }},
      {"Cast", foldCast},       {"Unsqueeze", foldReshapeLike}, {"Squeeze", foldReshapeLike},
      {"Reshape", foldReshapeLike}, {"Concat", foldConcat},     {"Gather", foldGather},
      {"Slice", foldSlice},     {"Range", foldRange},           {"Add", foldArith},
      {"Sub", foldArith},       {"Mul", foldArith},             {"Div", foldArith},
      {"Equal", foldArith},     {"Max", foldArith},             {"Min", foldArith},
      {"Mod", foldArith},       {"Pow", foldArith},       {"Sqrt", foldUnary<std::sqrt>},
      {"Where", foldWhere},     {"Neg", foldUnary<negate>},     {"Abs", foldUnary<std::fabs>},
      {"Expand", foldExpand},
      {"Floor", foldUnary<std::floor>}, {"Ceil", foldUnary<std::ceil>},
      // A Loop's trip count and condition (unrolled: see importLoop).
      {"Relu", foldUnary<relu>},  {"Not", foldUnary<logicalNot>}, {"Less", foldArith},
      {"Greater", foldArith},   {"LessOrEqual", foldArith},     {"GreaterOrEqual", foldArith},
      {"And", foldArith},       {"Or", foldArith}};
  return table;
}

} // namespace

bool foldKnownNode(NodeContext &nc) {
  const std::string &op = nc.node.op_type();
  if (op == "Shape")
    return foldShape(nc);
  if (op == "Size") {
    auto t = nc.inputType(0);
    return t && t.hasStaticShape() &&
           succeeded(nc.setKnown(0, ints(nc.ctx(), {}, {(double)t.getNumElements()})));
  }
  if (op == "Constant")
    return foldConstant(nc);
  // CastLike needs only its second input's type (the dynamo exporter's
  // `CastLike(0.0, x)`: a zero of x's type, x a graph input).
  if (op == "CastLike") {
    auto like = nc.numInputs() == 2 ? nc.inputType(1) : nullptr;
    const KnownTensor *x = nc.numInputs() == 2 ? nc.known(0) : nullptr;
    return x && like && !nc.isTrainable(0) &&
           succeeded(nc.setKnown(0, castKnown(*x, like.getElementType())));
  }
  if (op == "ConstantOfShape")
    return foldConstantOfShape(nc);
  auto it = knownFolders().find(op);
  if (it == knownFolders().end() || nc.numInputs() == 0)
    return false;
  SmallVector<const KnownTensor *> in;
  for (size_t i = 0; i < nc.numInputs(); ++i) {
    if (!nc.has(i)) {
      in.push_back(nullptr);
      continue;
    }
    if (!nc.known(i) || nc.isTrainable(i))
      return false;
    in.push_back(nc.known(i));
  }
  auto r = foldKnown(nc, in);
  return r && succeeded(nc.setKnown(0, std::move(*r)));
}

std::optional<KnownTensor> foldKnown(NodeContext &nc, ArrayRef<const KnownTensor *> in) {
  auto it = knownFolders().find(nc.node.op_type());
  // Only Slice has optional inputs (axes, steps); elsewhere a missing one
  // means a malformed node, which the op handler reports.
  if (it == knownFolders().end() || in.empty() || !in[0] ||
      (nc.node.op_type() != "Slice" && llvm::is_contained(in, nullptr)))
    return std::nullopt;
  return it->second(nc, in);
}

} // namespace kiln

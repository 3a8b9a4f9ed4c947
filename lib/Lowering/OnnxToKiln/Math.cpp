//===- Math.cpp - ONNX elementwise and logical ops => kiln ----------------===//

#include "Expr.h"
#include "NodeContext.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"

#include <cmath>

using namespace mlir;

namespace kiln {
namespace {

/// Before opset 7, `broadcast=1` with `axis` aligned B's dimensions with A's
/// starting at `axis`; numpy broadcasting needs them right-aligned, so B gets
/// trailing unit dimensions.
Value legacyBroadcast(NodeContext &nc, Value lhs, Value rhs) {
  if (nc.opset >= 7 || !nc.attrInt("broadcast", 0) || !nc.hasAttr("axis"))
    return rhs;
  auto lt = cast<RankedTensorType>(lhs.getType()), rt = cast<RankedTensorType>(rhs.getType());
  int64_t axis = nc.attrInt("axis", 0);
  if (axis < 0)
    axis += lt.getRank();
  int64_t trailing = lt.getRank() - axis - rt.getRank();
  if (trailing <= 0)
    return rhs;
  SmallVector<int64_t> shape(rt.getShape());
  shape.append(trailing, 1);
  return ReshapeOp::create(nc.b, nc.loc, RankedTensorType::get(shape, rt.getElementType()), rhs);
}

template <typename OpTy>
Handler binary() {
  return [](NodeContext &nc) -> LogicalResult {
    auto lhs = nc.input(0), rhs = nc.input(1);
    if (failed(lhs) || failed(rhs))
      return failure();
    auto lt = cast<RankedTensorType>(lhs->getType()), rt = cast<RankedTensorType>(rhs->getType());
    if (lt.getElementType() != rt.getElementType())
      return nc.error("operands have different element types");
    return nc.emit<OpTy>({*lhs, legacyBroadcast(nc, *lhs, *rhs)});
  };
}

/// Max/Min/Sum take any number of inputs: fold them left to right.
template <typename OpTy>
Handler variadic() {
  return [](NodeContext &nc) -> LogicalResult {
    auto acc = nc.input(0);
    if (failed(acc))
      return failure();
    Value v = *acc;
    for (size_t i = 1; i < nc.numInputs(); ++i) {
      auto next = nc.input(i);
      if (failed(next))
        return failure();
      auto op = nc.build<OpTy>({v, *next});
      if (failed(op))
        return failure();
      v = (*op)->getResult(0);
    }
    return nc.setOutput(0, v);
  };
}

template <typename OpTy>
Handler unary() {
  return [](NodeContext &nc) -> LogicalResult {
    auto x = nc.input(0);
    if (failed(x))
      return failure();
    return nc.emit<OpTy>({*x});
  };
}

bool isFloatTensor(Value v) {
  return isa<FloatType>(cast<RankedTensorType>(v.getType()).getElementType());
}

LogicalResult pow(NodeContext &nc) {
  auto x = nc.input(0), y = nc.input(1);
  if (failed(x) || failed(y))
    return failure();
  Type et = cast<RankedTensorType>(x->getType()).getElementType();
  Value exponent = legacyBroadcast(nc, *x, *y);
  if (isFloatTensor(*x))
    return nc.emit<PowOp>({*x, nc.castTo(exponent, et)});
  // Integer bases: computed in f64 (exact for the magnitudes integers
  // reach before overflowing), truncated back.
  Type f64 = nc.b.getF64Type();
  auto p = nc.build<PowOp>({nc.castTo(*x, f64), nc.castTo(exponent, f64)});
  if (failed(p))
    return failure();
  return nc.setOutput(0, nc.castTo((*p)->getResult(0), et));
}

LogicalResult cast(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  // Before opset 6 `to` was a type name string.
  int64_t toCode = nc.attrInt("to", 0);
  if (const onnx::AttributeProto *a = nc.attr("to"); a && a->has_s()) {
    onnx::TensorProto::DataType parsed;
    toCode = onnx::TensorProto_DataType_Parse(a->s(), &parsed) ? parsed : 0;
  }
  Type to = onnxElementType(nc.ctx(), toCode);
  if (!to)
    return nc.error("cast to unsupported type " + onnxTypeName(toCode));
  auto t = llvm::cast<RankedTensorType>(x->getType());
  return nc.setOutput(0, CastOp::create(nc.b, nc.loc,
                                        RankedTensorType::get(t.getShape(), to), *x));
}

LogicalResult clip(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  SmallVector<NamedAttribute> attrs;
  if (nc.opset < 11) { // bounds were attributes
    for (const char *name : {"min", "max"})
      if (nc.hasAttr(name))
        attrs.push_back(nc.b.getNamedAttr(name, nc.b.getF64FloatAttr(nc.attrFloat(name, 0))));
    return nc.emit<ClipOp>({*x}, attrs);
  }
  // Known bounds become attributes; runtime ones clamp with max/min.
  Value y = *x;
  for (auto [idx, name] : {std::pair<size_t, const char *>{1, "min"}, {2, "max"}}) {
    if (!nc.has(idx))
      continue;
    if (const KnownTensor *k = nc.known(idx); k && k->numElements() == 1) {
      attrs.push_back(nc.b.getNamedAttr(name, nc.b.getF64FloatAttr(k->values[0])));
      continue;
    }
    auto bound = nc.input(idx);
    if (failed(bound))
      return failure();
    Expr e(nc, y);
    y = idx == 1 ? e.max(y, *bound) : e.min(y, *bound);
  }
  if (attrs.empty())
    return nc.setOutput(0, y);
  return nc.emit<ClipOp>({y}, attrs);
}

LogicalResult where(NodeContext &nc) {
  auto c = nc.input(0), x = nc.input(1), y = nc.input(2);
  if (failed(c) || failed(x) || failed(y))
    return failure();
  return nc.emit<WhereOp>({*c, *x, *y});
}

/// A scalar constant broadcastable against `like`.
Value scalarLike(NodeContext &nc, Value like, double v) {
  KnownTensor k;
  k.elementType = llvm::cast<RankedTensorType>(like.getType()).getElementType();
  k.values = {v};
  return nc.constant(k);
}

LogicalResult gelu(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  // none: x/2 (1 + erf(x/sqrt 2));  tanh: x/2 (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3)))
  Expr e(nc, *x);
  auto bin = [&](auto tag, Value a, Value b) -> Value {
    using OpTy = decltype(tag);
    return e.op<OpTy>({a, b});
  };
  Value inner;
  if (nc.attrString("approximate", "none") == "tanh") {
    Value cube = bin(MulOp(), bin(MulOp(), *x, *x), *x);
    Value poly = bin(AddOp(), *x, bin(MulOp(), cube, scalarLike(nc, *x, 0.044715)));
    Value scaled = bin(MulOp(), poly, scalarLike(nc, *x, std::sqrt(2.0 / M_PI)));
    inner = TanhOp::create(nc.b, nc.loc, scaled);
  } else {
    inner = ErfOp::create(nc.b, nc.loc, bin(MulOp(), *x, scalarLike(nc, *x, M_SQRT1_2)));
  }
  Value onePlus = bin(AddOp(), inner, scalarLike(nc, *x, 1.0));
  Value half = bin(MulOp(), *x, scalarLike(nc, *x, 0.5));
  return nc.setOutput(0, bin(MulOp(), half, onePlus));
}

LogicalResult mod(NodeContext &nc) {
  auto a = nc.input(0), b = nc.input(1);
  if (failed(a) || failed(b))
    return failure();
  bool fmod = nc.attrInt("fmod", 0);
  if (isFloatTensor(*a) && !fmod)
    return nc.error("floating-point Mod requires fmod=1");
  return nc.emit<ModOp>({*a, *b}, {nc.b.getNamedAttr("fmod", nc.b.getBoolAttr(fmod))});
}

LogicalResult bitShift(NodeContext &nc) {
  auto a = nc.input(0), b = nc.input(1);
  if (failed(a) || failed(b))
    return failure();
  std::string dir = nc.attrString("direction", "");
  if (dir != "LEFT" && dir != "RIGHT")
    return nc.error("direction must be LEFT or RIGHT, got '" + dir + "'");
  return nc.emit<BitShiftOp>({*a, *b}, {nc.b.getNamedAttr("left", nc.b.getBoolAttr(dir == "LEFT"))});
}

LogicalResult castLikeHandler(NodeContext &nc) {
  auto x = nc.input(0), like = nc.input(1);
  if (failed(x) || failed(like))
    return failure();
  Type to = llvm::cast<RankedTensorType>(like->getType()).getElementType();
  return nc.setOutput(0, nc.castTo(*x, to));
}

LogicalResult sign(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  Expr e(nc, *x);
  Value zero = e.c(0);
  return nc.setOutput(0, e.where(e.greater(*x, zero), e.c(1),
                                 e.where(e.less(*x, zero), e.c(-1), zero)));
}

LogicalResult mean(NodeContext &nc) {
  auto inputs = nc.presentInputs(size_t(-1), /*required=*/1);
  if (failed(inputs))
    return failure();
  Value acc = (*inputs)[0];
  for (Value v : llvm::drop_begin(*inputs)) {
    auto sum = nc.build<AddOp>({acc, v});
    if (failed(sum))
      return failure();
    acc = (*sum)->getResult(0);
  }
  Expr e(nc, acc);
  return nc.setOutput(0, e.div(acc, e.c((double)inputs->size())));
}

LogicalResult isInf(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  auto &b = nc.b;
  return nc.emit<IsInfOp>(
      {*x}, {b.getNamedAttr("detect_positive", b.getBoolAttr(nc.attrInt("detect_positive", 1))),
             b.getNamedAttr("detect_negative", b.getBoolAttr(nc.attrInt("detect_negative", 1)))});
}

} // namespace

void registerMathHandlers(HandlerTable &t) {
  t["Sin"] = unary<SinOp>();
  t["Cos"] = unary<CosOp>();
  t["Tan"] = unary<TanOp>();
  t["Asin"] = unary<AsinOp>();
  t["Acos"] = unary<AcosOp>();
  t["Atan"] = unary<AtanOp>();
  t["Sinh"] = unary<SinhOp>();
  t["Cosh"] = unary<CoshOp>();
  t["Asinh"] = unary<AsinhOp>();
  t["Acosh"] = unary<AcoshOp>();
  t["Atanh"] = unary<AtanhOp>();
  t["Round"] = unary<RoundOp>();
  t["IsNaN"] = unary<IsNaNOp>();
  t["IsInf"] = isInf;
  t["Mod"] = mod;
  t["BitShift"] = bitShift;
  t["CastLike"] = castLikeHandler;
  t["Sign"] = sign;
  t["Mean"] = mean;
  t["Add"] = binary<AddOp>();
  t["Sub"] = binary<SubOp>();
  t["Mul"] = binary<MulOp>();
  t["Div"] = binary<DivOp>();
  t["Pow"] = pow;
  t["Max"] = variadic<MaxOp>();
  t["Min"] = variadic<MinOp>();
  t["Sum"] = variadic<AddOp>();
  t["And"] = binary<AndOp>();
  t["Or"] = binary<OrOp>();
  t["Xor"] = binary<XorOp>();
  t["Equal"] = binary<EqualOp>();
  t["Less"] = binary<LessOp>();
  t["LessOrEqual"] = binary<LessEqualOp>();
  t["Greater"] = binary<GreaterOp>();
  t["GreaterOrEqual"] = binary<GreaterEqualOp>();
  t["Neg"] = unary<NegOp>();
  t["Abs"] = unary<AbsOp>();
  t["Exp"] = unary<ExpOp>();
  t["Log"] = unary<LogOp>();
  t["Sqrt"] = unary<SqrtOp>();
  t["Reciprocal"] = unary<ReciprocalOp>();
  t["Erf"] = unary<ErfOp>();
  t["Tanh"] = unary<TanhOp>();
  t["Sigmoid"] = unary<SigmoidOp>();
  t["Relu"] = unary<ReluOp>();
  t["Floor"] = unary<FloorOp>();
  t["Ceil"] = unary<CeilOp>();
  t["Not"] = unary<NotOp>();
  t["Identity"] = unary<IdentityOp>();
  t["Cast"] = cast;
  t["Clip"] = clip;
  t["Where"] = where;
  t["Gelu"] = gelu;
}

} // namespace kiln

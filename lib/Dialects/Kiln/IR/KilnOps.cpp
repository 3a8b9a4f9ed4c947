//===- KilnOps.cpp - kiln op type inference and verifiers -----------------===//
//
// Result types are computed here from operand types and attributes; the
// verifier of every InferTypeOpAdaptor op compares against this, so a bad
// model is caught at the op that made it bad.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Dialects/Kiln/IR/ShapeUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace kiln;

#define GET_OP_CLASSES
#include "kiln/Dialects/Kiln/IR/KilnOps.cpp.inc"

namespace {
using Loc = std::optional<Location>;
using Types = SmallVectorImpl<Type>;

RankedTensorType tensorOf(Value v) {
  return dyn_cast_or_null<RankedTensorType>(v ? v.getType() : Type());
}

LogicalResult fail(Loc loc, const Twine &msg) {
  return emitOptionalError(loc, msg);
}

std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s.empty() ? "scalar" : s;
}

LogicalResult inferBroadcast(Loc loc, ArrayRef<Value> operands, Type elementType,
                             Types &results) {
  SmallVector<int64_t> shape;
  for (Value v : operands) {
    auto t = tensorOf(v);
    if (!t)
      return fail(loc, "expected ranked tensor operands");
    auto b = broadcastShapes(shape, t.getShape());
    if (!b)
      return fail(loc, "shapes " + shapeStr(shape) + " and " +
                           shapeStr(t.getShape()) + " do not broadcast");
    shape = *b;
  }
  results.push_back(RankedTensorType::get(
      shape, elementType ? elementType : tensorOf(operands[0]).getElementType()));
  return success();
}

LogicalResult inferSame(Value input, Types &results) {
  results.push_back(input.getType());
  return success();
}

/// Shape with the reduced axes removed or kept as 1.
LogicalResult reducedShape(Loc loc, RankedTensorType t, ArrayRef<int64_t> axes,
                           bool keepdims, SmallVectorImpl<int64_t> &out) {
  int64_t rank = t.getRank();
  SmallVector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) {
    auto n = normalizeAxis(a, rank);
    if (!n)
      return fail(loc, "axis " + Twine(a) + " out of range for rank " + Twine(rank));
    reduced[*n] = true;
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d])
      out.push_back(t.getDimSize(d));
    else if (keepdims)
      out.push_back(1);
  }
  return success();
}
} // namespace

//===----------------------------------------------------------------------===//
// Constants, identity, casts
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *, Loc, Adaptor adaptor,
                                           Types &results) {
  results.push_back(adaptor.getValue().getType());
  return success();
}

LogicalResult IdentityOp::inferReturnTypes(MLIRContext *, Loc, Adaptor adaptor,
                                           Types &results) {
  return inferSame(adaptor.getInput(), results);
}

LogicalResult CastOp::verify() {
  if (getInput().getType().getShape() != getResult().getType().getShape())
    return emitOpError("result shape must equal the input shape");
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

#define KILN_UNARY_INFER(OP)                                                   \
  LogicalResult OP::inferReturnTypes(MLIRContext *, Loc, Adaptor adaptor,      \
                                     Types &results) {                         \
    return inferSame(adaptor.getInput(), results);                             \
  }
KILN_UNARY_INFER(NegOp)
KILN_UNARY_INFER(AbsOp)
KILN_UNARY_INFER(ExpOp)
KILN_UNARY_INFER(LogOp)
KILN_UNARY_INFER(SqrtOp)
KILN_UNARY_INFER(ReciprocalOp)
KILN_UNARY_INFER(ErfOp)
KILN_UNARY_INFER(TanhOp)
KILN_UNARY_INFER(SigmoidOp)
KILN_UNARY_INFER(ReluOp)
KILN_UNARY_INFER(FloorOp)
KILN_UNARY_INFER(CeilOp)
KILN_UNARY_INFER(NotOp)
KILN_UNARY_INFER(ClipOp)
KILN_UNARY_INFER(SinOp)
KILN_UNARY_INFER(CosOp)
KILN_UNARY_INFER(TanOp)
KILN_UNARY_INFER(AsinOp)
KILN_UNARY_INFER(AcosOp)
KILN_UNARY_INFER(AtanOp)
KILN_UNARY_INFER(SinhOp)
KILN_UNARY_INFER(CoshOp)
KILN_UNARY_INFER(AsinhOp)
KILN_UNARY_INFER(AcoshOp)
KILN_UNARY_INFER(AtanhOp)
KILN_UNARY_INFER(RoundOp)
#undef KILN_UNARY_INFER

#define KILN_PREDICATE_INFER(OP)                                               \
  LogicalResult OP::inferReturnTypes(MLIRContext *ctx, Loc, Adaptor adaptor,   \
                                     Types &results) {                         \
    auto t = tensorOf(adaptor.getInput());                                     \
    results.push_back(RankedTensorType::get(t.getShape(), IntegerType::get(ctx, 1))); \
    return success();                                                          \
  }
KILN_PREDICATE_INFER(IsNaNOp)
KILN_PREDICATE_INFER(IsInfOp)
#undef KILN_PREDICATE_INFER

LogicalResult ClipOp::verify() {
  if (getMin() && getMax() && getMin()->convertToDouble() > getMax()->convertToDouble())
    return emitOpError("min ") << getMin()->convertToDouble() << " exceeds max "
                               << getMax()->convertToDouble();
  return success();
}

#define KILN_BINARY_INFER(OP, ELEMENT)                                         \
  LogicalResult OP::inferReturnTypes(MLIRContext *ctx, Loc loc,                \
                                     Adaptor adaptor, Types &results) {        \
    (void)ctx;                                                                 \
    return inferBroadcast(loc, {adaptor.getLhs(), adaptor.getRhs()}, ELEMENT,  \
                          results);                                            \
  }
KILN_BINARY_INFER(AddOp, Type())
KILN_BINARY_INFER(SubOp, Type())
KILN_BINARY_INFER(MulOp, Type())
KILN_BINARY_INFER(DivOp, Type())
KILN_BINARY_INFER(PowOp, Type())
KILN_BINARY_INFER(MaxOp, Type())
KILN_BINARY_INFER(MinOp, Type())
KILN_BINARY_INFER(ModOp, Type())
KILN_BINARY_INFER(BitShiftOp, Type())
KILN_BINARY_INFER(AndOp, Type())
KILN_BINARY_INFER(OrOp, Type())
KILN_BINARY_INFER(XorOp, Type())
KILN_BINARY_INFER(EqualOp, IntegerType::get(ctx, 1))
KILN_BINARY_INFER(LessOp, IntegerType::get(ctx, 1))
KILN_BINARY_INFER(LessEqualOp, IntegerType::get(ctx, 1))
KILN_BINARY_INFER(GreaterOp, IntegerType::get(ctx, 1))
KILN_BINARY_INFER(GreaterEqualOp, IntegerType::get(ctx, 1))
#undef KILN_BINARY_INFER

LogicalResult ModOp::verify() {
  bool isFloat = isa<FloatType>(getLhs().getType().getElementType());
  if (isFloat && !getFmod())
    return emitOpError("floating-point mod requires fmod = true");
  return success();
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                        Types &results) {
  auto x = tensorOf(adaptor.getX()), y = tensorOf(adaptor.getY());
  if (!x || !y || x.getElementType() != y.getElementType())
    return fail(loc, "x and y must have the same element type");
  return inferBroadcast(loc, {adaptor.getCondition(), adaptor.getX(), adaptor.getY()},
                        x.getElementType(), results);
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                         Types &results) {
  auto a = tensorOf(adaptor.getLhs()), b = tensorOf(adaptor.getRhs());
  if (!a || !b || a.getRank() == 0 || b.getRank() == 0)
    return fail(loc, "matmul operands must have rank >= 1");
  SmallVector<int64_t> as(a.getShape()), bs(b.getShape());
  bool vecA = as.size() == 1, vecB = bs.size() == 1;
  if (vecA)
    as.insert(as.begin(), 1);
  if (vecB)
    bs.push_back(1);
  int64_t k1 = as.back(), k2 = bs[bs.size() - 2];
  if (k1 != k2)
    return fail(loc, "matmul contraction sizes differ: " + shapeStr(a.getShape()) +
                         " by " + shapeStr(b.getShape()));
  auto batch = broadcastShapes(ArrayRef<int64_t>(as).drop_back(2),
                               ArrayRef<int64_t>(bs).drop_back(2));
  if (!batch)
    return fail(loc, "matmul batch dimensions do not broadcast: " +
                         shapeStr(a.getShape()) + " by " + shapeStr(b.getShape()));
  SmallVector<int64_t> shape = *batch;
  if (!vecA)
    shape.push_back(as[as.size() - 2]);
  if (!vecB)
    shape.push_back(bs.back());
  results.push_back(RankedTensorType::get(shape, a.getElementType()));
  return success();
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                       Types &results) {
  auto a = tensorOf(adaptor.getA()), b = tensorOf(adaptor.getB());
  if (!a || !b || a.getRank() != 2 || b.getRank() != 2)
    return fail(loc, "gemm operands must be 2-D");
  int64_t m = a.getDimSize(adaptor.getTransA() ? 1 : 0);
  int64_t k = a.getDimSize(adaptor.getTransA() ? 0 : 1);
  int64_t k2 = b.getDimSize(adaptor.getTransB() ? 1 : 0);
  int64_t n = b.getDimSize(adaptor.getTransB() ? 0 : 1);
  if (k != k2)
    return fail(loc, "gemm contraction sizes differ: " + Twine(k) + " vs " + Twine(k2));
  SmallVector<int64_t> shape{m, n};
  if (auto c = tensorOf(adaptor.getC()))
    if (!broadcastShapes(shape, c.getShape()) ||
        *broadcastShapes(shape, c.getShape()) != shape)
      return fail(loc, "gemm C of shape " + shapeStr(c.getShape()) +
                           " does not broadcast to " + shapeStr(shape));
  results.push_back(RankedTensorType::get(shape, a.getElementType()));
  return success();
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                       Types &results) {
  auto x = tensorOf(adaptor.getInput()), w = tensorOf(adaptor.getWeight());
  if (!x || !w || x.getRank() != w.getRank() || (x.getRank() != 4 && x.getRank() != 5))
    return fail(loc, "conv expects 4-D or 5-D input (NC...) and weight (FC...) of the same rank");
  size_t n = x.getRank() - 2;
  auto s = adaptor.getStrides(), p = adaptor.getPads(), d = adaptor.getDilations();
  int64_t g = adaptor.getGroup();
  if (s.size() != n || p.size() != 2 * n || d.size() != n)
    return fail(loc, "conv needs " + Twine(n) + " strides, " + Twine(2 * n) + " pads and " +
                         Twine(n) + " dilations");
  if (g < 1 || x.getDimSize(1) != w.getDimSize(1) * g || w.getDimSize(0) % g)
    return fail(loc, "conv channels: input has " + Twine(x.getDimSize(1)) +
                         ", weight expects " + Twine(w.getDimSize(1)) + " x group " + Twine(g));
  if (auto bias = tensorOf(adaptor.getBias()))
    if (bias.getRank() != 1 || bias.getDimSize(0) != w.getDimSize(0))
      return fail(loc, "conv bias must have " + Twine(w.getDimSize(0)) + " elements");
  SmallVector<int64_t> shape{x.getDimSize(0), w.getDimSize(0)};
  for (size_t i = 0; i < n; ++i) {
    if (s[i] < 1 || d[i] < 1)
      return fail(loc, "conv strides and dilations must be positive");
    int64_t o = windowOutputSize(x.getDimSize(2 + i), w.getDimSize(2 + i), s[i], p[i], p[i + n],
                                 d[i], false);
    if (o < 1)
      return fail(loc, "conv window larger than the padded input");
    shape.push_back(o);
  }
  results.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization and pooling
//===----------------------------------------------------------------------===//

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                            Types &results) {
  auto x = tensorOf(adaptor.getInput());
  if (!x || x.getRank() < 2)
    return fail(loc, "batch_norm input must have rank >= 2");
  for (Value v : {adaptor.getScale(), adaptor.getBias(), adaptor.getMean(),
                  adaptor.getVariance()}) {
    auto t = tensorOf(v);
    if (!t || t.getRank() != 1 || t.getDimSize(0) != x.getDimSize(1))
      return fail(loc, "batch_norm parameters must have " + Twine(x.getDimSize(1)) +
                           " elements");
  }
  return inferSame(adaptor.getInput(), results);
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *, Loc, Adaptor adaptor,
                                            Types &results) {
  return inferSame(adaptor.getInput(), results);
}

LogicalResult LayerNormOp::verify() {
  auto x = getInput().getType();
  auto axis = normalizeAxis(getAxis(), x.getRank());
  if (!axis)
    return emitOpError("axis ") << getAxis() << " out of range for rank " << x.getRank();
  auto normShape = x.getShape().drop_front(*axis);
  for (Value v : {getScale(), getBias()}) {
    if (!v)
      continue;
    auto t = cast<RankedTensorType>(v.getType());
    auto b = broadcastShapes(normShape, t.getShape());
    if (!b || ArrayRef<int64_t>(*b) != normShape)
      return emitOpError("scale/bias of shape ")
             << shapeStr(t.getShape()) << " do not broadcast to " << shapeStr(normShape);
  }
  return success();
}

LogicalResult SoftmaxOp::inferReturnTypes(MLIRContext *, Loc, Adaptor adaptor,
                                          Types &results) {
  return inferSame(adaptor.getInput(), results);
}

LogicalResult SoftmaxOp::verify() {
  if (!normalizeAxis(getAxis(), getInput().getType().getRank()))
    return emitOpError("axis ") << getAxis() << " out of range";
  return success();
}

namespace {
LogicalResult inferPool(Loc loc, Value input, ArrayRef<int64_t> kernel,
                        ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                        ArrayRef<int64_t> dilations, bool ceil, Types &results) {
  auto x = tensorOf(input);
  if (!x || (x.getRank() != 4 && x.getRank() != 5))
    return fail(loc, "pooling expects a 4-D or 5-D input (N, C, spatial...)");
  size_t n = x.getRank() - 2;
  if (kernel.size() != n || strides.size() != n || pads.size() != 2 * n ||
      (!dilations.empty() && dilations.size() != n))
    return fail(loc, "pooling needs " + Twine(n) + " kernel sizes and strides, and " +
                         Twine(2 * n) + " pads");
  SmallVector<int64_t> shape{x.getDimSize(0), x.getDimSize(1)};
  for (size_t i = 0; i < n; ++i) {
    int64_t dil = dilations.empty() ? 1 : dilations[i];
    if (kernel[i] < 1 || strides[i] < 1 || dil < 1)
      return fail(loc, "pooling kernel, strides and dilations must be positive");
    if (pads[i] >= kernel[i] || pads[i + n] >= kernel[i])
      return fail(loc, "pooling pads must be smaller than the kernel");
    int64_t o = windowOutputSize(x.getDimSize(2 + i), kernel[i], strides[i], pads[i],
                                 pads[i + n], dil, ceil);
    if (o < 1)
      return fail(loc, "pooling window larger than the padded input");
    shape.push_back(o);
  }
  results.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}
} // namespace

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                          Types &results) {
  return inferPool(loc, adaptor.getInput(), adaptor.getKernelShape(),
                   adaptor.getStrides(), adaptor.getPads(), adaptor.getDilations(),
                   adaptor.getCeilMode(), results);
}

LogicalResult AvgPoolOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                          Types &results) {
  return inferPool(loc, adaptor.getInput(), adaptor.getKernelShape(),
                   adaptor.getStrides(), adaptor.getPads(), {}, adaptor.getCeilMode(),
                   results);
}

LogicalResult GlobalAvgPoolOp::inferReturnTypes(MLIRContext *, Loc loc,
                                                Adaptor adaptor, Types &results) {
  auto x = tensorOf(adaptor.getInput());
  if (!x || x.getRank() < 3)
    return fail(loc, "global_avg_pool expects rank >= 3 (N, C, spatial...)");
  SmallVector<int64_t> shape(x.getShape());
  for (size_t i = 2; i < shape.size(); ++i)
    shape[i] = 1;
  results.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

#define KILN_REDUCE_INFER(OP)                                                  \
  LogicalResult OP::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,  \
                                     Types &results) {                         \
    auto t = tensorOf(adaptor.getInput());                                     \
    SmallVector<int64_t> shape;                                                \
    if (!t || failed(reducedShape(loc, t, adaptor.getAxes(),                   \
                                  adaptor.getKeepdims(), shape)))              \
      return failure();                                                        \
    results.push_back(RankedTensorType::get(shape, t.getElementType()));       \
    return success();                                                          \
  }
KILN_REDUCE_INFER(ReduceSumOp)
KILN_REDUCE_INFER(ReduceMeanOp)
KILN_REDUCE_INFER(ReduceMaxOp)
KILN_REDUCE_INFER(ReduceMinOp)
KILN_REDUCE_INFER(ReduceProdOp)
#undef KILN_REDUCE_INFER

#define KILN_ARG_INFER(OP)                                                     \
  LogicalResult OP::inferReturnTypes(MLIRContext *ctx, Loc loc, Adaptor adaptor, \
                                     Types &results) {                         \
    auto t = tensorOf(adaptor.getInput());                                     \
    SmallVector<int64_t> shape;                                                \
    int64_t axis = adaptor.getAxis();                                          \
    if (!t || failed(reducedShape(loc, t, ArrayRef<int64_t>(axis),             \
                                  adaptor.getKeepdims(), shape)))              \
      return failure();                                                        \
    if (t.getDimSize(*normalizeAxis(axis, t.getRank())) == 0)                  \
      return fail(loc, "cannot take the index of an empty dimension");         \
    results.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 64))); \
    return success();                                                          \
  }
KILN_ARG_INFER(ArgMaxOp)
KILN_ARG_INFER(ArgMinOp)
#undef KILN_ARG_INFER

LogicalResult CumSumOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                         Types &results) {
  auto t = tensorOf(adaptor.getInput());
  if (!normalizeAxis(adaptor.getAxis(), t.getRank()))
    return fail(loc, "cumsum axis " + Twine(adaptor.getAxis()) + " out of range");
  return inferSame(adaptor.getInput(), results);
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                      Types &results) {
  auto t = tensorOf(adaptor.getInput());
  auto pads = adaptor.getPads();
  int64_t rank = t.getRank();
  if ((int64_t)pads.size() != 2 * rank)
    return fail(loc, "pad needs " + Twine(2 * rank) + " amounts, got " + Twine(pads.size()));
  StringRef mode = adaptor.getMode();
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return fail(loc, "unknown pad mode '" + mode + "'");
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = t.getDimSize(d) + pads[d] + pads[d + rank];
    if (size < 0)
      return fail(loc, "pad crops dimension " + Twine(d) + " below zero");
    if (mode == "reflect" && (pads[d] >= t.getDimSize(d) || pads[d + rank] >= t.getDimSize(d)) &&
        (pads[d] > 0 || pads[d + rank] > 0))
      return fail(loc, "reflect pad of " + Twine(std::max(pads[d], pads[d + rank])) +
                           " needs dimension " + Twine(d) + " larger than that");
    if (mode == "edge" && t.getDimSize(d) == 0 && size > 0)
      return fail(loc, "edge pad of an empty dimension");
    shape.push_back(size);
  }
  results.push_back(RankedTensorType::get(shape, t.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("element type must not change");
  if (numElements(in.getShape()) != numElements(out.getShape()))
    return emitOpError("cannot reshape ")
           << shapeStr(in.getShape()) << " (" << numElements(in.getShape())
           << " elements) to " << shapeStr(out.getShape()) << " ("
           << numElements(out.getShape()) << " elements)";
  return success();
}

LogicalResult FlattenOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                          Types &results) {
  auto t = tensorOf(adaptor.getInput());
  int64_t rank = t.getRank(), axis = adaptor.getAxis();
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank)
    return fail(loc, "flatten axis " + Twine(adaptor.getAxis()) + " out of range");
  int64_t outer = numElements(t.getShape().take_front(axis));
  int64_t inner = numElements(t.getShape().drop_front(axis));
  results.push_back(RankedTensorType::get({outer, inner}, t.getElementType()));
  return success();
}

LogicalResult SqueezeOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                          Types &results) {
  auto t = tensorOf(adaptor.getInput());
  int64_t rank = t.getRank();
  SmallVector<bool> drop(rank, false);
  if (adaptor.getAxes().empty()) {
    for (int64_t d = 0; d < rank; ++d)
      drop[d] = t.getDimSize(d) == 1;
  }
  for (int64_t a : adaptor.getAxes()) {
    auto n = normalizeAxis(a, rank);
    if (!n)
      return fail(loc, "squeeze axis " + Twine(a) + " out of range");
    if (t.getDimSize(*n) != 1)
      return fail(loc, "squeeze axis " + Twine(a) + " has size " +
                           Twine(t.getDimSize(*n)) + ", expected 1");
    drop[*n] = true;
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d)
    if (!drop[d])
      shape.push_back(t.getDimSize(d));
  results.push_back(RankedTensorType::get(shape, t.getElementType()));
  return success();
}

LogicalResult UnsqueezeOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                            Types &results) {
  auto t = tensorOf(adaptor.getInput());
  int64_t rank = t.getRank() + adaptor.getAxes().size();
  SmallVector<bool> inserted(rank, false);
  for (int64_t a : adaptor.getAxes()) {
    auto n = normalizeAxis(a, rank);
    if (!n || inserted[*n])
      return fail(loc, "unsqueeze axis " + Twine(a) + " out of range or repeated");
    inserted[*n] = true;
  }
  SmallVector<int64_t> shape;
  auto src = t.getShape();
  for (int64_t d = 0, i = 0; d < rank; ++d)
    shape.push_back(inserted[d] ? 1 : src[i++]);
  results.push_back(RankedTensorType::get(shape, t.getElementType()));
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                            Types &results) {
  auto t = tensorOf(adaptor.getInput());
  auto perm = adaptor.getPerm();
  int64_t rank = t.getRank();
  if ((int64_t)perm.size() != rank)
    return fail(loc, "transpose perm has " + Twine(perm.size()) +
                         " entries for rank " + Twine(rank));
  SmallVector<bool> used(rank, false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || used[p])
      return fail(loc, "transpose perm is not a permutation");
    used[p] = true;
    shape.push_back(t.getDimSize(p));
  }
  results.push_back(RankedTensorType::get(shape, t.getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                         Types &results) {
  auto inputs = adaptor.getInputs();
  if (inputs.empty())
    return fail(loc, "concat needs at least one input");
  auto first = tensorOf(inputs[0]);
  auto axis = normalizeAxis(adaptor.getAxis(), first.getRank());
  if (!axis)
    return fail(loc, "concat axis " + Twine(adaptor.getAxis()) + " out of range");
  SmallVector<int64_t> shape(first.getShape());
  shape[*axis] = 0;
  for (Value v : inputs) {
    auto t = tensorOf(v);
    if (t.getRank() != first.getRank())
      return fail(loc, "concat inputs differ in rank");
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (d != *axis && t.getDimSize(d) != first.getDimSize(d))
        return fail(loc, "concat inputs differ in dimension " + Twine(d) + ": " +
                             shapeStr(first.getShape()) + " vs " +
                             shapeStr(t.getShape()));
    shape[*axis] += t.getDimSize(*axis);
  }
  results.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                        Types &results) {
  auto t = tensorOf(adaptor.getInput());
  auto axis = normalizeAxis(adaptor.getAxis(), t.getRank());
  if (!axis)
    return fail(loc, "split axis " + Twine(adaptor.getAxis()) + " out of range");
  int64_t total = 0;
  for (int64_t s : adaptor.getSizes()) {
    if (s < 0)
      return fail(loc, "split sizes must be non-negative");
    total += s;
    SmallVector<int64_t> shape(t.getShape());
    shape[*axis] = s;
    results.push_back(RankedTensorType::get(shape, t.getElementType()));
  }
  if (total != t.getDimSize(*axis))
    return fail(loc, "split sizes add up to " + Twine(total) + ", dimension is " +
                         Twine(t.getDimSize(*axis)));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                        Types &results) {
  auto t = tensorOf(adaptor.getInput());
  auto dims = resolveSlice(t.getShape(), adaptor.getStarts(), adaptor.getEnds(),
                           adaptor.getAxes(), adaptor.getSteps());
  if (!dims)
    return fail(loc, "invalid slice parameters (axes out of range or repeated, "
                     "zero step, or lengths differ)");
  SmallVector<int64_t> shape;
  for (auto &d : *dims)
    shape.push_back(d.size);
  results.push_back(RankedTensorType::get(shape, t.getElementType()));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                         Types &results) {
  auto data = tensorOf(adaptor.getData()), idx = tensorOf(adaptor.getIndices());
  auto axis = normalizeAxis(adaptor.getAxis(), data.getRank());
  if (!axis)
    return fail(loc, "gather axis " + Twine(adaptor.getAxis()) + " out of range");
  SmallVector<int64_t> shape(data.getShape().take_front(*axis));
  llvm::append_range(shape, idx.getShape());
  llvm::append_range(shape, data.getShape().drop_front(*axis + 1));
  results.push_back(RankedTensorType::get(shape, data.getElementType()));
  return success();
}

LogicalResult GatherElementsOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                                 Types &results) {
  auto data = tensorOf(adaptor.getData()), idx = tensorOf(adaptor.getIndices());
  if (data.getRank() != idx.getRank() || data.getRank() == 0)
    return fail(loc, "gather_elements: data and indices must have the same non-zero rank");
  if (!normalizeAxis(adaptor.getAxis(), data.getRank()))
    return fail(loc, "gather_elements axis " + Twine(adaptor.getAxis()) + " out of range");
  results.push_back(RankedTensorType::get(idx.getShape(), data.getElementType()));
  return success();
}

LogicalResult GatherNDOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                           Types &results) {
  auto data = tensorOf(adaptor.getData()), idx = tensorOf(adaptor.getIndices());
  int64_t b = adaptor.getBatchDims();
  if (idx.getRank() < 1 || b < 0 || b >= idx.getRank() || b >= data.getRank())
    return fail(loc, "gather_nd: bad batch_dims or index rank");
  int64_t k = idx.getDimSize(idx.getRank() - 1);
  if (k < 1 || b + k > data.getRank())
    return fail(loc, "gather_nd: index tuples of " + Twine(k) + " do not fit data of rank " +
                         Twine(data.getRank()));
  SmallVector<int64_t> shape(idx.getShape().drop_back());
  llvm::append_range(shape, data.getShape().drop_front(b + k));
  results.push_back(RankedTensorType::get(shape, data.getElementType()));
  return success();
}

namespace {
LogicalResult checkReduction(Loc loc, StringRef r) {
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min")
    return fail(loc, "unknown scatter reduction '" + r + "'");
  return success();
}
} // namespace

LogicalResult ScatterElementsOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                                  Types &results) {
  auto data = tensorOf(adaptor.getData()), idx = tensorOf(adaptor.getIndices()),
       upd = tensorOf(adaptor.getUpdates());
  if (idx.getShape() != upd.getShape() || idx.getRank() != data.getRank() ||
      !normalizeAxis(adaptor.getAxis(), data.getRank()))
    return fail(loc, "scatter_elements: indices and updates must match, with data's rank");
  if (failed(checkReduction(loc, adaptor.getReduction())))
    return failure();
  return inferSame(adaptor.getData(), results);
}

LogicalResult ScatterNDOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                            Types &results) {
  auto data = tensorOf(adaptor.getData()), idx = tensorOf(adaptor.getIndices()),
       upd = tensorOf(adaptor.getUpdates());
  if (idx.getRank() < 1)
    return fail(loc, "scatter_nd: indices need rank >= 1");
  int64_t k = idx.getDimSize(idx.getRank() - 1);
  SmallVector<int64_t> want(idx.getShape().drop_back());
  if (k > data.getRank())
    return fail(loc, "scatter_nd: index tuples longer than data's rank");
  llvm::append_range(want, data.getShape().drop_front(k));
  if (ArrayRef<int64_t>(want) != upd.getShape())
    return fail(loc, "scatter_nd: updates have the wrong shape");
  if (failed(checkReduction(loc, adaptor.getReduction())))
    return failure();
  return inferSame(adaptor.getData(), results);
}

LogicalResult TriluOp::inferReturnTypes(MLIRContext *, Loc, Adaptor adaptor,
                                        Types &results) {
  return inferSame(adaptor.getInput(), results);
}

LogicalResult TriluOp::verify() {
  if (getInput().getType().getRank() < 2)
    return emitOpError("input must have rank >= 2");
  return success();
}

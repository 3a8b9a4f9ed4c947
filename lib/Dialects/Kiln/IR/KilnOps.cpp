//===- KilnOps.cpp - kiln op type inference and verifiers -----------------===//
//
// Result types are computed here from operand types and attributes; the
// verifier of every InferTypeOpAdaptor op compares against this, so a bad
// model is caught at the op that made it bad.
//
//===----------------------------------------------------------------------===//

#include "KilnOpsUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace kiln;

#define GET_OP_CLASSES
#include "kiln/Dialects/Kiln/IR/KilnOps.cpp.inc"

using namespace kiln::detail;

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
// Randomness
//===----------------------------------------------------------------------===//

LogicalResult RandomUniformOp::verify() {
  if (getCounter().getType().getNumElements() != 1)
    return emitOpError("counter must have one element");
  if (!getResult().getType().hasStaticShape())
    return emitOpError("result shape must be static");
  return success();
}

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *ctx, Loc, Adaptor adaptor,
                                          Types &results) {
  auto t = tensorOf(adaptor.getInput());
  results.push_back(t);
  results.push_back(RankedTensorType::get(t.getShape(), IntegerType::get(ctx, 1)));
  return success();
}

LogicalResult DropoutOp::verify() {
  double r = getRatio().convertToDouble();
  if (!(r >= 0 && r <= 1))
    return emitOpError("ratio must be in [0, 1], not ") << r;
  return success();
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

namespace {
LogicalResult verifyReduction(Operation *op, StringRef reduction) {
  if (reduction != "sum" && reduction != "mean")
    return op->emitOpError("reduction must be \"sum\" or \"mean\", not \"") << reduction << "\"";
  return success();
}
} // namespace

LogicalResult AllReduceOp::verify() { return verifyReduction(*this, getReduction()); }

LogicalResult AllReduceInPlaceOp::verify() { return verifyReduction(*this, getReduction()); }

LogicalResult AllReduceStartOp::verify() { return verifyReduction(*this, getReduction()); }

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
  if (k1 != k2 && !ShapedType::isDynamic(k1) && !ShapedType::isDynamic(k2))
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

LogicalResult MatmulIntegerOp::inferReturnTypes(MLIRContext *ctx, Loc loc, Adaptor adaptor,
                                                Types &results) {
  auto a = tensorOf(adaptor.getLhs()), b = tensorOf(adaptor.getRhs());
  if (!a || !b || a.getRank() < 2 || b.getRank() != 2)
    return fail(loc, "matmul_integer takes a matrix (or a batch of them) times a matrix");
  int64_t k1 = a.getShape().back(), k2 = b.getDimSize(0);
  if (k1 != k2 && !ShapedType::isDynamic(k1) && !ShapedType::isDynamic(k2))
    return fail(loc, "matmul_integer contraction sizes differ: " + shapeStr(a.getShape()) +
                         " by " + shapeStr(b.getShape()));
  SmallVector<int64_t> shape(a.getShape().drop_back());
  shape.push_back(b.getDimSize(1));
  results.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 32)));
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
  if (k != k2 && !ShapedType::isDynamic(k) && !ShapedType::isDynamic(k2))
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
  bool last = adaptor.getChannelsLast();
  if (last && n != 2)
    return fail(loc, "a channels-last conv is 2-D");
  // Where each layout keeps the channels and the window: NCHW / FCHW, or
  // NHWC / HWCF.
  int64_t inC = last ? 3 : 1, wC = last ? 2 : 1, wF = last ? 3 : 0, sp0 = last ? 1 : 2,
          wK0 = last ? 0 : 2;
  if (s.size() != n || p.size() != 2 * n || d.size() != n)
    return fail(loc, "conv needs " + Twine(n) + " strides, " + Twine(2 * n) + " pads and " +
                         Twine(n) + " dilations");
  if (g < 1 || x.getDimSize(inC) != w.getDimSize(wC) * g || w.getDimSize(wF) % g)
    return fail(loc, "conv channels: input has " + Twine(x.getDimSize(inC)) +
                         ", weight expects " + Twine(w.getDimSize(wC)) + " x group " + Twine(g));
  if (last && g != 1 && (w.getDimSize(wC) != 1 || w.getDimSize(wF) != g))
    return fail(loc, "a channels-last conv is ungrouped or depthwise");
  if (auto bias = tensorOf(adaptor.getBias()))
    if (bias.getRank() != 1 || bias.getDimSize(0) != w.getDimSize(wF))
      return fail(loc, "conv bias must have " + Twine(w.getDimSize(wF)) + " elements");
  SmallVector<int64_t> shape{x.getDimSize(0)};
  if (!last)
    shape.push_back(w.getDimSize(wF));
  for (size_t i = 0; i < n; ++i) {
    if (s[i] < 1 || d[i] < 1)
      return fail(loc, "conv strides and dilations must be positive");
    int64_t o = windowOutputSize(x.getDimSize(sp0 + i), w.getDimSize(wK0 + i), s[i], p[i],
                                 p[i + n], d[i], false);
    if (o == ShapedType::kDynamic)
      return fail(loc, "conv over a dynamic spatial size is not supported");
    if (o < 1)
      return fail(loc, "conv window larger than the padded input");
    shape.push_back(o);
  }
  if (last)
    shape.push_back(w.getDimSize(wF));
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
    if (o == ShapedType::kDynamic)
      return fail(loc, "pooling over a dynamic spatial size is not supported");
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


//===- ElementwiseGradients.cpp - gradient rules of elementwise ops -------===//
//
// One formula per op, as in PyTorch's derivatives.yaml; `dy` is the
// gradient of the result, `x` the input, `y` the result. Broadcast operands
// get their gradient summed back to their shape (GradBuilder::sumTo).
// Integer and boolean operands have no gradient (null).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/IR/KilnOps.h"

#include <cmath>

using namespace mlir;
using namespace kiln;

using Grads = SmallVectorImpl<Value>;

namespace {
Value lessThan(GradBuilder &g, Value a, double c) { return g.op<LessOp>({a, g.scalar(c, a)}); }
Value greaterThan(GradBuilder &g, Value a, double c) {
  return g.op<GreaterOp>({a, g.scalar(c, a)});
}
/// dy where `keep`, else 0.
Value mask(GradBuilder &g, Value keep, Value dy) { return g.where(keep, dy, g.scalar(0, dy)); }
/// 1 - x * x
Value oneMinusSquare(GradBuilder &g, Value x) {
  return g.sub(g.scalar(1, x), g.square(x));
}
} // namespace

#define KILN_UNARY_GRADIENT(OP, EXPR)                                                    \
  LogicalResult OP::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,          \
                                   Grads &operandGrads) {                                \
    Value dy = resultGrads[0], x = getInput(), y = getResult();                          \
    (void)dy, (void)x, (void)y;                                                          \
    operandGrads.push_back(isFloatTensor(x) ? (EXPR) : Value());                         \
    return success();                                                                    \
  }

KILN_UNARY_GRADIENT(NegOp, g.neg(dy))
KILN_UNARY_GRADIENT(AbsOp, g.where(lessThan(g, x, 0), g.neg(dy),
                                   mask(g, greaterThan(g, x, 0), dy)))
KILN_UNARY_GRADIENT(ExpOp, g.mul(dy, y))
KILN_UNARY_GRADIENT(LogOp, g.div(dy, x))
KILN_UNARY_GRADIENT(SqrtOp, g.div(g.mul(dy, 0.5), y))
KILN_UNARY_GRADIENT(ReciprocalOp, g.neg(g.mul(dy, g.square(y))))
KILN_UNARY_GRADIENT(ErfOp, g.mul(g.mul(dy, 2.0 / std::sqrt(M_PI)),
                                 g.unary("kiln.exp", g.neg(g.square(x)))))
KILN_UNARY_GRADIENT(TanhOp, g.mul(dy, oneMinusSquare(g, y)))
KILN_UNARY_GRADIENT(SigmoidOp, g.mul(dy, g.mul(y, g.sub(g.scalar(1, y), y))))
KILN_UNARY_GRADIENT(ReluOp, mask(g, greaterThan(g, x, 0), dy))
// Piecewise constant: zero almost everywhere (as PyTorch).
KILN_UNARY_GRADIENT(FloorOp, g.zerosLike(dy))
KILN_UNARY_GRADIENT(CeilOp, g.zerosLike(dy))
KILN_UNARY_GRADIENT(RoundOp, g.zerosLike(dy))
KILN_UNARY_GRADIENT(NotOp, Value())
KILN_UNARY_GRADIENT(SinOp, g.mul(dy, g.unary("kiln.cos", x)))
KILN_UNARY_GRADIENT(CosOp, g.neg(g.mul(dy, g.unary("kiln.sin", x))))
KILN_UNARY_GRADIENT(TanOp, g.mul(dy, g.add(g.square(y), 1.0)))
KILN_UNARY_GRADIENT(AsinOp, g.div(dy, g.unary("kiln.sqrt", oneMinusSquare(g, x))))
KILN_UNARY_GRADIENT(AcosOp, g.neg(g.div(dy, g.unary("kiln.sqrt", oneMinusSquare(g, x)))))
KILN_UNARY_GRADIENT(AtanOp, g.div(dy, g.add(g.square(x), 1.0)))
KILN_UNARY_GRADIENT(SinhOp, g.mul(dy, g.unary("kiln.cosh", x)))
KILN_UNARY_GRADIENT(CoshOp, g.mul(dy, g.unary("kiln.sinh", x)))
KILN_UNARY_GRADIENT(AsinhOp, g.div(dy, g.unary("kiln.sqrt", g.add(g.square(x), 1.0))))
KILN_UNARY_GRADIENT(AcoshOp, g.div(dy, g.unary("kiln.sqrt", g.add(g.square(x), -1.0))))
KILN_UNARY_GRADIENT(AtanhOp, g.div(dy, oneMinusSquare(g, x)))
KILN_UNARY_GRADIENT(IdentityOp, dy)

// Each rank's loss reaches every rank's result, so the gradient of a
// combination over ranks is the same combination of the gradients.
LogicalResult AllReduceOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                          Grads &operandGrads) {
  operandGrads.push_back(AllReduceOp::create(g.b, g.loc, resultGrads[0].getType(), resultGrads[0],
                                             getReductionAttr()));
  return success();
}

LogicalResult CastOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                     Grads &operandGrads) {
  Value x = getInput();
  // Only float -> float carries a gradient (the cast back); integers stop it.
  bool flows = isFloatTensor(x) && isFloatTensor(getResult());
  operandGrads.push_back(
      flows ? g.cast(resultGrads[0], getInput().getType().getElementType()) : Value());
  return success();
}

LogicalResult ClipOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                     Grads &operandGrads) {
  Value dy = resultGrads[0], x = getInput();
  if (!isFloatTensor(x)) {
    operandGrads.push_back(Value());
    return success();
  }
  // PyTorch: the gradient passes where min <= x <= max.
  Value keep;
  if (auto lo = getMin())
    keep = g.op<GreaterEqualOp>({x, g.scalar(lo->convertToDouble(), x)});
  if (auto hi = getMax()) {
    Value inside = g.op<LessEqualOp>({x, g.scalar(hi->convertToDouble(), x)});
    keep = keep ? g.op<AndOp>({keep, inside}) : inside;
  }
  operandGrads.push_back(keep ? mask(g, keep, dy) : dy);
  return success();
}

//===----------------------------------------------------------------------===//
// Binary
//===----------------------------------------------------------------------===//

#define KILN_BINARY_GRADIENT(OP, DA, DB)                                                 \
  LogicalResult OP::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,          \
                                   Grads &operandGrads) {                                \
    Value dy = resultGrads[0], a = getLhs(), b = getRhs(), y = getResult();              \
    (void)y;                                                                             \
    if (!isFloatTensor(y)) {                                                             \
      operandGrads.append(2, Value());                                                   \
      return success();                                                                  \
    }                                                                                    \
    operandGrads.push_back(g.sumTo((DA), a.getType()));                                  \
    operandGrads.push_back(g.sumTo((DB), b.getType()));                                  \
    return success();                                                                    \
  }

KILN_BINARY_GRADIENT(AddOp, dy, dy)
KILN_BINARY_GRADIENT(SubOp, dy, g.neg(dy))
KILN_BINARY_GRADIENT(MulOp, g.mul(dy, b), g.mul(dy, a))
KILN_BINARY_GRADIENT(DivOp, g.div(dy, b), g.neg(g.div(g.mul(dy, y), b)))
// d/da = b a^(b-1); d/db = y log(a), 0 where a == 0 (as PyTorch).
KILN_BINARY_GRADIENT(PowOp, g.mul(dy, g.mul(b, g.op<PowOp>({a, g.add(b, -1.0)}))),
                     g.mul(dy, g.where(g.op<EqualOp>({a, g.scalar(0, a)}), g.scalar(0, a),
                                       g.mul(y, g.unary("kiln.log", a)))))
// Ties split the gradient evenly, as PyTorch's maximum/minimum.
KILN_BINARY_GRADIENT(MaxOp,
                     g.where(g.op<GreaterOp>({a, b}), dy,
                             mask(g, g.op<EqualOp>({a, b}), g.mul(dy, 0.5))),
                     g.where(g.op<GreaterOp>({b, a}), dy,
                             mask(g, g.op<EqualOp>({a, b}), g.mul(dy, 0.5))))
KILN_BINARY_GRADIENT(MinOp,
                     g.where(g.op<LessOp>({a, b}), dy,
                             mask(g, g.op<EqualOp>({a, b}), g.mul(dy, 0.5))),
                     g.where(g.op<LessOp>({b, a}), dy,
                             mask(g, g.op<EqualOp>({a, b}), g.mul(dy, 0.5))))

LogicalResult ModOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                    Grads &operandGrads) {
  Value dy = resultGrads[0], a = getLhs(), b = getRhs();
  if (!isFloatTensor(a)) {
    operandGrads.append(2, Value());
    return success();
  }
  // Float mod is fmod (the verifier insists): a - b * trunc(a/b), so
  // d/da = 1 and d/db = -trunc(a/b).
  Value q = g.div(a, b);
  q = g.where(lessThan(g, q, 0), g.unary("kiln.ceil", q), g.unary("kiln.floor", q));
  operandGrads.push_back(g.sumTo(dy, a.getType()));
  operandGrads.push_back(g.sumTo(g.neg(g.mul(dy, q)), b.getType()));
  return success();
}

#define KILN_NO_GRADIENT(OP)                                                             \
  LogicalResult OP::buildGradients(GradBuilder &, ArrayRef<Value>, Grads &operandGrads) { \
    operandGrads.append(getOperation()->getNumOperands(), Value());                      \
    return success();                                                                    \
  }
KILN_NO_GRADIENT(BitShiftOp)
KILN_NO_GRADIENT(AndOp)
KILN_NO_GRADIENT(OrOp)
KILN_NO_GRADIENT(XorOp)

LogicalResult WhereOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                      Grads &operandGrads) {
  Value dy = resultGrads[0], c = getCondition();
  operandGrads.push_back(Value());
  if (!isFloatTensor(getResult())) {
    operandGrads.append(2, Value());
    return success();
  }
  Value zero = g.scalar(0, dy);
  operandGrads.push_back(g.sumTo(g.where(c, dy, zero), getX().getType()));
  operandGrads.push_back(g.sumTo(g.where(c, zero, dy), getY().getType()));
  return success();
}

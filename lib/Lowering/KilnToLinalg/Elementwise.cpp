//===- Elementwise.cpp - kiln elementwise ops to linalg.generic -----------===//
//
// kiln.add %x, %b : tensor<2x8xf32>, tensor<8xf32>
//   => linalg.generic {maps = [(d0,d1)->(d0,d1), (d0,d1)->(d1), id]} { arith.addf }
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Lowering/KilnToLinalg/KilnToLinalg.h"

#include <functional>

using namespace mlir;

namespace kiln {
namespace {

bool isFloat(Value v) { return isa<FloatType>(v.getType()); }

/// Scalar body of one op: (builder, loc, op, block arguments) => value.
template <typename OpTy>
using BodyFn = std::function<Value(OpBuilder &, Location, OpTy, ValueRange)>;

/// Any broadcasting elementwise kiln op => one linalg.generic.
template <typename OpTy>
struct ElementwiseLowering : OpRewritePattern<OpTy> {
  ElementwiseLowering(MLIRContext *ctx, BodyFn<OpTy> body)
      : OpRewritePattern<OpTy>(ctx), body(std::move(body)) {}

  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    Value r = buildElementwise(
        rewriter, op.getLoc(), resultType, op->getOperands(),
        [&](OpBuilder &b, Location loc, ValueRange args) { return body(b, loc, op, args); });
    rewriter.replaceOp(op, r);
    return success();
  }

  BodyFn<OpTy> body;
};

template <typename OpTy>
void add(RewritePatternSet &patterns, BodyFn<OpTy> body) {
  patterns.add<ElementwiseLowering<OpTy>>(patterns.getContext(), std::move(body));
}

/// Set by kiln-signless on ops over (formerly) unsigned integers.
bool isUnsigned(Operation *op) { return op->hasAttr(KilnDialect::getUnsignedAttrName()); }

/// Ops whose float, signed and unsigned forms are single arith ops.
template <typename OpTy, typename FOp, typename IOp, typename UOp = IOp>
void addArith(RewritePatternSet &patterns) {
  add<OpTy>(patterns, [](OpBuilder &b, Location loc, OpTy op, ValueRange a) -> Value {
    if (isFloat(a[0]))
      return FOp::create(b, loc, a[0], a[1]);
    if (isUnsigned(op))
      return UOp::create(b, loc, a[0], a[1]);
    return IOp::create(b, loc, a[0], a[1]);
  });
}

template <typename OpTy>
void addCompare(RewritePatternSet &patterns, arith::CmpFPredicate fp, arith::CmpIPredicate ip,
                arith::CmpIPredicate up) {
  add<OpTy>(patterns, [fp, ip, up](OpBuilder &b, Location loc, OpTy op, ValueRange a) -> Value {
    if (isFloat(a[0]))
      return arith::CmpFOp::create(b, loc, fp, a[0], a[1]);
    return arith::CmpIOp::create(b, loc, isUnsigned(op) ? up : ip, a[0], a[1]);
  });
}

template <typename OpTy, typename MathOp>
void addMath(RewritePatternSet &patterns) {
  add<OpTy>(patterns, [](OpBuilder &b, Location loc, OpTy, ValueRange a) -> Value {
    return MathOp::create(b, loc, a[0]);
  });
}

/// Conversion between any two element types with ONNX Cast semantics;
/// `fromUnsigned`/`toUnsigned` say how to read and make integers.
Value castScalar(OpBuilder &b, Location loc, Value x, Type to, bool fromUnsigned,
                 bool toUnsigned) {
  Type from = x.getType();
  if (from == to)
    return x;
  auto fromF = dyn_cast<FloatType>(from), toF = dyn_cast<FloatType>(to);
  if (fromF && toF)
    return fromF.getWidth() < toF.getWidth()
               ? (Value)arith::ExtFOp::create(b, loc, to, x)
               : (Value)arith::TruncFOp::create(b, loc, to, x);
  if (to.isInteger(1)) {
    if (fromF)
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, x,
                                   scalarConstant(b, loc, from, 0.0));
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x,
                                 scalarConstant(b, loc, from, 0.0));
  }
  if (fromF)
    return toUnsigned ? (Value)arith::FPToUIOp::create(b, loc, to, x)
                      : (Value)arith::FPToSIOp::create(b, loc, to, x);
  bool zeroExtend = from.isInteger(1) || fromUnsigned;
  if (toF)
    return zeroExtend ? (Value)arith::UIToFPOp::create(b, loc, to, x)
                      : (Value)arith::SIToFPOp::create(b, loc, to, x);
  unsigned fw = from.getIntOrFloatBitWidth(), tw = to.getIntOrFloatBitWidth();
  if (fw == tw)
    return x;
  if (fw < tw)
    return zeroExtend ? (Value)arith::ExtUIOp::create(b, loc, to, x)
                      : (Value)arith::ExtSIOp::create(b, loc, to, x);
  return arith::TruncIOp::create(b, loc, to, x);
}

} // namespace

void populateKilnElementwiseToLinalgPatterns(RewritePatternSet &patterns) {
  addArith<AddOp, arith::AddFOp, arith::AddIOp>(patterns);
  addArith<SubOp, arith::SubFOp, arith::SubIOp>(patterns);
  addArith<MulOp, arith::MulFOp, arith::MulIOp>(patterns);
  addArith<DivOp, arith::DivFOp, arith::DivSIOp, arith::DivUIOp>(patterns);
  addArith<MaxOp, arith::MaximumFOp, arith::MaxSIOp, arith::MaxUIOp>(patterns);
  addArith<MinOp, arith::MinimumFOp, arith::MinSIOp, arith::MinUIOp>(patterns);
  add<BitShiftOp>(patterns, [](OpBuilder &b, Location loc, BitShiftOp op, ValueRange a) -> Value {
    // Shifting by the width or more gives 0 in ONNX (LLVM: poison).
    unsigned width = a[0].getType().getIntOrFloatBitWidth();
    Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, a[1],
                                          scalarConstant(b, loc, a[1].getType(), width));
    Value shifted = op.getLeft() ? (Value)arith::ShLIOp::create(b, loc, a[0], a[1])
                                 : (Value)arith::ShRUIOp::create(b, loc, a[0], a[1]);
    return arith::SelectOp::create(b, loc, inRange, shifted,
                                   scalarConstant(b, loc, a[0].getType(), 0));
  });
  addArith<AndOp, arith::AndIOp, arith::AndIOp>(patterns);
  addArith<OrOp, arith::OrIOp, arith::OrIOp>(patterns);
  addArith<XorOp, arith::XOrIOp, arith::XOrIOp>(patterns);
  add<PowOp>(patterns, [](OpBuilder &b, Location loc, PowOp, ValueRange a) -> Value {
    return math::PowFOp::create(b, loc, a[0], a[1]);
  });

  using FP = arith::CmpFPredicate;
  using IP = arith::CmpIPredicate;
  addCompare<EqualOp>(patterns, FP::OEQ, IP::eq, IP::eq);
  addCompare<LessOp>(patterns, FP::OLT, IP::slt, IP::ult);
  addCompare<LessEqualOp>(patterns, FP::OLE, IP::sle, IP::ule);
  addCompare<GreaterOp>(patterns, FP::OGT, IP::sgt, IP::ugt);
  addCompare<GreaterEqualOp>(patterns, FP::OGE, IP::sge, IP::uge);

  addMath<ExpOp, math::ExpOp>(patterns);
  addMath<LogOp, math::LogOp>(patterns);
  addMath<SqrtOp, math::SqrtOp>(patterns);
  addMath<ErfOp, math::ErfOp>(patterns);
  addMath<TanhOp, math::TanhOp>(patterns);
  addMath<FloorOp, math::FloorOp>(patterns);
  addMath<CeilOp, math::CeilOp>(patterns);
  addMath<SinOp, math::SinOp>(patterns);
  addMath<CosOp, math::CosOp>(patterns);
  addMath<TanOp, math::TanOp>(patterns);
  addMath<AsinOp, math::AsinOp>(patterns);
  addMath<AcosOp, math::AcosOp>(patterns);
  addMath<AtanOp, math::AtanOp>(patterns);
  addMath<SinhOp, math::SinhOp>(patterns);
  addMath<CoshOp, math::CoshOp>(patterns);
  addMath<AsinhOp, math::AsinhOp>(patterns);
  addMath<AcoshOp, math::AcoshOp>(patterns);
  addMath<AtanhOp, math::AtanhOp>(patterns);
  addMath<RoundOp, math::RoundEvenOp>(patterns);
  add<IsNaNOp>(patterns, [](OpBuilder &b, Location loc, IsNaNOp, ValueRange a) -> Value {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, a[0], a[0]);
  });
  add<IsInfOp>(patterns, [](OpBuilder &b, Location loc, IsInfOp op, ValueRange a) -> Value {
    auto ft = cast<FloatType>(a[0].getType());
    auto inf = [&](bool negative) -> Value {
      return arith::ConstantOp::create(
          b, loc, b.getFloatAttr(ft, APFloat::getInf(ft.getFloatSemantics(), negative)));
    };
    Value r = scalarConstant(b, loc, b.getI1Type(), 0);
    if (op.getDetectPositive())
      r = arith::OrIOp::create(
          b, loc, r, arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, a[0], inf(false)));
    if (op.getDetectNegative())
      r = arith::OrIOp::create(
          b, loc, r, arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, a[0], inf(true)));
    return r;
  });
  add<ModOp>(patterns, [](OpBuilder &b, Location loc, ModOp op, ValueRange a) -> Value {
    if (isFloat(a[0]))
      return arith::RemFOp::create(b, loc, a[0], a[1]);
    if (isUnsigned(op))
      return arith::RemUIOp::create(b, loc, a[0], a[1]);
    Value r = arith::RemSIOp::create(b, loc, a[0], a[1]);
    if (op.getFmod())
      return r;
    // Python-style: a non-zero remainder takes the divisor's sign.
    Value zero = scalarConstant(b, loc, r.getType(), 0);
    Value nonZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, r, zero);
    Value rNeg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, r, zero);
    Value bNeg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, a[1], zero);
    Value differ = arith::XOrIOp::create(b, loc, rNeg, bNeg);
    Value fix = arith::AndIOp::create(b, loc, nonZero, differ);
    return arith::SelectOp::create(b, loc, fix, arith::AddIOp::create(b, loc, r, a[1]), r);
  });

  add<NegOp>(patterns, [](OpBuilder &b, Location loc, NegOp, ValueRange a) -> Value {
    if (isFloat(a[0]))
      return arith::NegFOp::create(b, loc, a[0]);
    return arith::SubIOp::create(b, loc, scalarConstant(b, loc, a[0].getType(), 0), a[0]);
  });
  add<AbsOp>(patterns, [](OpBuilder &b, Location loc, AbsOp, ValueRange a) -> Value {
    if (isFloat(a[0]))
      return math::AbsFOp::create(b, loc, a[0]);
    return math::AbsIOp::create(b, loc, a[0]);
  });
  add<ReciprocalOp>(patterns, [](OpBuilder &b, Location loc, ReciprocalOp,
                                 ValueRange a) -> Value {
    return arith::DivFOp::create(b, loc, scalarConstant(b, loc, a[0].getType(), 1.0), a[0]);
  });
  add<SigmoidOp>(patterns, [](OpBuilder &b, Location loc, SigmoidOp, ValueRange a) -> Value {
    // 1 / (1 + e^-x): e^-x overflows to inf for very negative x, giving 0.
    Type t = a[0].getType();
    Value one = scalarConstant(b, loc, t, 1.0);
    Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, a[0]));
    return arith::DivFOp::create(b, loc, one, arith::AddFOp::create(b, loc, one, e));
  });
  add<ReluOp>(patterns, [](OpBuilder &b, Location loc, ReluOp, ValueRange a) -> Value {
    return maxScalar(b, loc, a[0], scalarConstant(b, loc, a[0].getType(), 0.0));
  });
  add<NotOp>(patterns, [](OpBuilder &b, Location loc, NotOp, ValueRange a) -> Value {
    return arith::XOrIOp::create(b, loc, a[0], scalarConstant(b, loc, a[0].getType(), 1));
  });
  add<ClipOp>(patterns, [](OpBuilder &b, Location loc, ClipOp op, ValueRange a) -> Value {
    Value x = a[0];
    Type t = x.getType();
    if (auto lo = op.getMin())
      x = maxScalar(b, loc, x, scalarConstant(b, loc, t, lo->convertToDouble()));
    if (auto hi = op.getMax())
      x = minScalar(b, loc, x, scalarConstant(b, loc, t, hi->convertToDouble()));
    return x;
  });
  add<WhereOp>(patterns, [](OpBuilder &b, Location loc, WhereOp, ValueRange a) -> Value {
    return arith::SelectOp::create(b, loc, a[0], a[1], a[2]);
  });
  add<CastOp>(patterns, [](OpBuilder &b, Location loc, CastOp op, ValueRange a) -> Value {
    return castScalar(b, loc, a[0], op.getType().getElementType(),
                      op->hasAttr(KilnDialect::getUnsignedInAttrName()),
                      op->hasAttr(KilnDialect::getUnsignedOutAttrName()));
  });
}

} // namespace kiln

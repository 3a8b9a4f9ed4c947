//===- ScalarReads.cpp - one element read through kiln arithmetic ---------===//
//
//   %t = tensor.from_elements %i : tensor<i64>
//   %s = kiln.add %t, %one : tensor<i64>, tensor<i64> -> tensor<i64>
//   %r = kiln.reshape %s : tensor<i64> -> tensor<1xi64>
//   %e = tensor.extract %r[%c0]                     =>  %e = arith.addi %i, %c1
//
// A Loop body's Slice bounds computed from its counter, a shape built from
// a dimension: index math ONNX spells on one-element tensors. Read as
// scalars it stays on the host, so the CUDA host program need not read a
// kernel's result to size or place the next one, and the CPU need not
// round-trip through memory. The kiln dialect's canonicalization patterns.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace kiln {
namespace {

/// Whether `v` is a tensor of exactly one element.
bool isOneElement(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.hasStaticShape() && t.getNumElements() == 1;
}

/// The one element of `v`.
Value readOne(PatternRewriter &rewriter, Location loc, Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  SmallVector<Value> at(t.getRank(), arith::ConstantIndexOp::create(rewriter, loc, 0));
  return tensor::ExtractOp::create(rewriter, loc, v, at);
}

/// tensor.extract of a one-element add, sub or mul (integers or floats:
/// each is exact as one scalar op), or of a one-element reshape.
struct ReadScalarThroughArith final : OpRewritePattern<tensor::ExtractOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::ExtractOp op, PatternRewriter &rewriter) const override {
    Operation *def = op.getTensor().getDefiningOp();
    if (!def || !isOneElement(op.getTensor()) || def->getNumOperands() == 0 ||
        !isOneElement(def->getOperand(0)))
      return failure();
    Location loc = op.getLoc();
    if (isa<ReshapeOp, SqueezeOp, UnsqueezeOp, FlattenOp>(def)) {
      rewriter.replaceOp(op, readOne(rewriter, loc, def->getOperand(0)));
      return success();
    }
    if (!isa<AddOp, SubOp, MulOp>(def) || !isOneElement(def->getOperand(1)))
      return failure();
    Type type = op.getType();
    bool isFloat = isa<FloatType>(type);
    if (!isFloat && !type.isSignlessInteger())
      return failure();
    Value x = readOne(rewriter, loc, def->getOperand(0));
    Value y = readOne(rewriter, loc, def->getOperand(1));
    Value r;
    if (isa<AddOp>(def))
      r = isFloat ? arith::AddFOp::create(rewriter, loc, x, y).getResult()
                  : arith::AddIOp::create(rewriter, loc, x, y).getResult();
    else if (isa<SubOp>(def))
      r = isFloat ? arith::SubFOp::create(rewriter, loc, x, y).getResult()
                  : arith::SubIOp::create(rewriter, loc, x, y).getResult();
    else
      r = isFloat ? arith::MulFOp::create(rewriter, loc, x, y).getResult()
                  : arith::MulIOp::create(rewriter, loc, x, y).getResult();
    rewriter.replaceOp(op, r);
    return success();
  }
};

} // namespace

void KilnDialect::getCanonicalizationPatterns(RewritePatternSet &results) const {
  results.add<ReadScalarThroughArith>(getContext());
}

} // namespace kiln

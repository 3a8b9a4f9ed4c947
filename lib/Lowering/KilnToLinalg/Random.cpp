//===- Random.cpp - kiln.random_uniform to linalg.generic -----------------===//
//
// u[i] = top 24 bits of splitmix64(base + (i + 1) * golden) / 2^24, where
// base = splitmix64(seed ^ splitmix64(counter)) and i is the row-major
// position: a counter-based generator (no state, any element computable on
// its own, so tiling and recomputation give the same numbers).
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Lowering/KilnToLinalg/KilnToLinalg.h"

using namespace mlir;

namespace kiln {
namespace {

Value i64Const(OpBuilder &b, Location loc, uint64_t v) {
  return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr((int64_t)v));
}

/// splitmix64's finalizer.
Value mix(OpBuilder &b, Location loc, Value z) {
  auto step = [&](Value x, unsigned shift, uint64_t mul) {
    x = arith::XOrIOp::create(b, loc, x, arith::ShRUIOp::create(b, loc, x, i64Const(b, loc, shift)));
    return mul ? (Value)arith::MulIOp::create(b, loc, x, i64Const(b, loc, mul)) : x;
  };
  z = step(z, 30, 0xbf58476d1ce4e5b9ull);
  z = step(z, 27, 0x94d049bb133111ebull);
  return step(z, 31, 0);
}

struct RandomUniformLowering : OpRewritePattern<RandomUniformOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RandomUniformOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = op.getResult().getType();
    auto counterType = op.getCounter().getType();
    int64_t rank = type.getRank();
    Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(), type.getElementType());
    // The counter is an input every element reads (a broadcast), not a
    // scalar read before: a CUDA kernel reads it from device memory, where
    // a training step keeps it.
    SmallVector<AffineMap> maps{
        AffineMap::get(rank, 0, SmallVector<AffineExpr>(counterType.getRank(),
                                                        rewriter.getAffineConstantExpr(0)),
                       rewriter.getContext()),
        rewriter.getMultiDimIdentityMap(rank)};
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, ValueRange{op.getCounter()}, ValueRange{init}, maps,
        iterators, [&](OpBuilder &b, Location l, ValueRange args) {
          Value counter = args[0];
          if (counterType.getElementTypeBitWidth() < 64)
            counter = arith::ExtSIOp::create(b, l, b.getI64Type(), counter);
          else if (counterType.getElementTypeBitWidth() > 64)
            counter = arith::TruncIOp::create(b, l, b.getI64Type(), counter);
          Value base = mix(b, l, arith::XOrIOp::create(b, l, i64Const(b, l, op.getSeed()),
                                                       mix(b, l, counter)));
          Value linear = i64Const(b, l, 0);
          for (int64_t d = 0; d < rank; ++d) {
            Value idx = arith::IndexCastOp::create(b, l, b.getI64Type(),
                                                   linalg::IndexOp::create(b, l, d));
            linear = arith::AddIOp::create(
                b, l, arith::MulIOp::create(b, l, linear, i64Const(b, l, type.getDimSize(d))),
                idx);
          }
          Value z = arith::AddIOp::create(
              b, l, base,
              arith::MulIOp::create(b, l, arith::AddIOp::create(b, l, linear, i64Const(b, l, 1)),
                                    i64Const(b, l, 0x9e3779b97f4a7c15ull)));
          Value bits = arith::ShRUIOp::create(b, l, mix(b, l, z), i64Const(b, l, 40));
          Value f = arith::UIToFPOp::create(b, l, b.getF64Type(), bits);
          Value u = arith::MulFOp::create(b, l, f,
                                          arith::ConstantOp::create(
                                              b, l, b.getF64FloatAttr(1.0 / (1 << 24))));
          Type et = type.getElementType();
          if (et != b.getF64Type())
            u = arith::TruncFOp::create(b, l, et, u);
          linalg::YieldOp::create(b, l, u);
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

} // namespace

void populateKilnRandomToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<RandomUniformLowering>(patterns.getContext());
}

} // namespace kiln

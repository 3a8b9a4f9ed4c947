//===- Indexing.cpp - gathers and scatters to linalg/scf -------------------===//
//
// kiln.gather / gather_elements / gather_nd => linalg.generic reading the
//                                              data at wrapped, clamped indices
// kiln.scatter_elements / scatter_nd        => scf.for over the updates
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Dialects/Kiln/IR/ShapeUtils.h"
#include "kiln/Lowering/KilnToLinalg/KilnToLinalg.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace kiln {
namespace {

/// Clamps a (possibly negative, wrapped) index into [0, dim).
Value wrapAndClamp(OpBuilder &b, Location l, Value i, Value dim) {
  Value zero = indexConst(b, l, 0);
  Value neg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, i, zero);
  i = arith::SelectOp::create(b, l, neg, arith::AddIOp::create(b, l, i, dim), i);
  Value last = arith::SubIOp::create(b, l, dim, indexConst(b, l, 1));
  return arith::MaxSIOp::create(b, l, arith::MinSIOp::create(b, l, i, last), zero);
}

Value wrapAndClamp(OpBuilder &b, Location l, Value i, int64_t dim) {
  Value zero = indexConst(b, l, 0);
  Value neg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, i, zero);
  i = arith::SelectOp::create(b, l, neg, arith::AddIOp::create(b, l, i, indexConst(b, l, dim)), i);
  return arith::MaxSIOp::create(b, l, arith::MinSIOp::create(b, l, i, indexConst(b, l, dim - 1)),
                                zero);
}

struct GatherLowering : OpRewritePattern<GatherOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GatherOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value data = op.getData();
    auto dt = tensorType(data), it = tensorType(op.getIndices());
    auto outType = op.getType();
    int64_t axis = *normalizeAxis(op.getAxis(), dt.getRank());
    int64_t ir = it.getRank(), dim = dt.getDimSize(axis);
    MLIRContext *ctx = rewriter.getContext();
    SmallVector<AffineExpr> idxExprs;
    for (int64_t i = 0; i < ir; ++i)
      idxExprs.push_back(getAffineDimExpr(axis + i, ctx));
    AffineMap idxMap = AffineMap::get(outType.getRank(), 0, idxExprs, ctx);
    // The result's dimensions: data's before the axis, the indices', and
    // data's after it.
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < outType.getRank(); ++d) {
      if (!outType.isDynamicDim(d))
        continue;
      if (d < axis)
        sizes.push_back(dimOf(rewriter, loc, data, d));
      else if (d < axis + ir)
        sizes.push_back(dimOf(rewriter, loc, op.getIndices(), d - axis));
      else
        sizes.push_back(dimOf(rewriter, loc, data, d - ir + 1));
    }
    // A dynamic axis (a flattened batch: the dynamo exporter's as_strided
    // after a pooling) is clamped to its size at run time.
    Value dynamicDim = ShapedType::isDynamic(dim) ? dimOf(rewriter, loc, data, axis) : Value();
    Value r = gatherGeneric(
        rewriter, loc, outType, ValueRange{op.getIndices()}, {idxMap},
        [&](OpBuilder &b, Location l, ValueRange args, ArrayRef<Value> idx) {
          // Negative indices count from the end; out-of-range ones are clamped
          // so that bad data can never read outside the tensor.
          Value cast = arith::IndexCastOp::create(b, l, b.getIndexType(), args[0]);
          Value i = dynamicDim ? wrapAndClamp(b, l, cast, dynamicDim) : wrapAndClamp(b, l, cast, dim);
          SmallVector<Value> src(idx.take_front(axis));
          src.push_back(i);
          llvm::append_range(src, idx.drop_front(axis + ir));
          return tensor::ExtractOp::create(b, l, data, src);
        },
        sizes);
    rewriter.replaceOp(op, r);
    return success();
  }
};

struct GatherElementsLowering : OpRewritePattern<GatherElementsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GatherElementsOp op, PatternRewriter &rewriter) const override {
    Value data = op.getData();
    auto dt = tensorType(data);
    int64_t axis = *normalizeAxis(op.getAxis(), dt.getRank());
    int64_t dim = dt.getDimSize(axis);
    Value dynamicDim =
        ShapedType::isDynamic(dim) ? dimOf(rewriter, op.getLoc(), data, axis) : Value();
    AffineMap id = rewriter.getMultiDimIdentityMap(dt.getRank());
    // The result has the indices' shape.
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < op.getType().getRank(); ++d)
      if (op.getType().isDynamicDim(d))
        sizes.push_back(dimOf(rewriter, op.getLoc(), op.getIndices(), d));
    Value r = gatherGeneric(
        rewriter, op.getLoc(), op.getType(), ValueRange{op.getIndices()}, {id},
        [&](OpBuilder &b, Location l, ValueRange args, ArrayRef<Value> idx) {
          SmallVector<Value> src(idx);
          Value cast = arith::IndexCastOp::create(b, l, b.getIndexType(), args[0]);
          src[axis] = dynamicDim ? wrapAndClamp(b, l, cast, dynamicDim) : wrapAndClamp(b, l, cast, dim);
          return tensor::ExtractOp::create(b, l, data, src);
        },
        sizes);
    rewriter.replaceOp(op, r);
    return success();
  }
};

struct GatherNDLowering : OpRewritePattern<GatherNDOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GatherNDOp op, PatternRewriter &rewriter) const override {
    Value data = op.getData(), indices = op.getIndices();
    auto dt = tensorType(data), it = tensorType(indices);
    int64_t b = op.getBatchDims(), ir = it.getRank(), k = it.getDimSize(ir - 1);
    if (ShapedType::isDynamic(k))
      return rewriter.notifyMatchFailure(op, "index tuples of a length known at run time");
    // The result: the indices' dimensions but the last, then data's past
    // the indexed ones; sizes known at run time from them.
    Location loc = op.getLoc();
    RankedTensorType outType = op.getType();
    SmallVector<Value> sizes, dataDims;
    for (int64_t d = 0; d < outType.getRank(); ++d)
      if (outType.isDynamicDim(d))
        sizes.push_back(d < ir - 1 ? dimOf(rewriter, loc, indices, d)
                                   : dimOf(rewriter, loc, data, d - (ir - 1) + b + k));
    for (int64_t j = 0; j < k; ++j)
      dataDims.push_back(dt.isDynamicDim(b + j) ? dimOf(rewriter, loc, data, b + j) : Value());
    Value r = gatherGeneric(
        rewriter, loc, outType, {}, {},
        [&](OpBuilder &bb, Location l, ValueRange, ArrayRef<Value> idx) {
          SmallVector<Value> src(idx.take_front(b)), at(idx.take_front(ir - 1));
          at.push_back(Value());
          for (int64_t j = 0; j < k; ++j) {
            at.back() = indexConst(bb, l, j);
            Value v = tensor::ExtractOp::create(bb, l, indices, at);
            v = arith::IndexCastOp::create(bb, l, bb.getIndexType(), v);
            src.push_back(dataDims[j] ? wrapAndClamp(bb, l, v, dataDims[j])
                                      : wrapAndClamp(bb, l, v, dt.getDimSize(b + j)));
          }
          llvm::append_range(src, idx.drop_front(ir - 1));
          return tensor::ExtractOp::create(bb, l, data, src);
        },
        sizes);
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// The combination a scatter applies to (current, update).
Value combine(OpBuilder &b, Location l, StringRef reduction, Value cur, Value upd) {
  if (reduction == "add")
    return addScalar(b, l, cur, upd);
  if (reduction == "mul")
    return mulScalar(b, l, cur, upd);
  if (reduction == "max")
    return maxScalar(b, l, cur, upd);
  if (reduction == "min")
    return minScalar(b, l, cur, upd);
  return upd;
}

/// Multi-index of flat position `flat` in `shape` (row-major); a dynamic
/// dimension's size is `dynamicSizes[d]`.
SmallVector<Value> delinearize(OpBuilder &b, Location l, Value flat, ArrayRef<int64_t> shape,
                               ArrayRef<Value> dynamicSizes = {}) {
  SmallVector<Value> idx(shape.size());
  for (int64_t d = shape.size() - 1; d >= 0; --d) {
    Value size = ShapedType::isDynamic(shape[d]) ? dynamicSizes[d] : indexConst(b, l, shape[d]);
    idx[d] = arith::RemUIOp::create(b, l, flat, size);
    flat = arith::DivUIOp::create(b, l, flat, size);
  }
  return idx;
}

/// Scatters are sequential by definition (later updates win): an scf.for
/// over the updates carrying the result tensor, which bufferizes in place.
template <typename OpTy>
struct ScatterLowering : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    constexpr bool isND = std::is_same_v<OpTy, ScatterNDOp>;
    Location loc = op.getLoc();
    Value indices = op.getIndices(), updates = op.getUpdates();
    auto dt = tensorType(op.getData()), ut = tensorType(updates), it = tensorType(indices);
    StringRef reduction = op.getReduction();
    // The updates' sizes (a dynamic batch's read at run time) bound the loop.
    SmallVector<Value> updateSizes(ut.getRank());
    Value ub;
    if (ut.hasStaticShape()) {
      ub = indexConst(rewriter, loc, ut.getNumElements());
    } else {
      ub = indexConst(rewriter, loc, 1);
      for (int64_t d = 0; d < ut.getRank(); ++d) {
        Value size = ut.isDynamicDim(d) ? dimOf(rewriter, loc, updates, d)
                                        : indexConst(rewriter, loc, ut.getDimSize(d));
        if (ut.isDynamicDim(d))
          updateSizes[d] = size;
        ub = arith::MulIOp::create(rewriter, loc, ub, size);
      }
    }
    Value lb = indexConst(rewriter, loc, 0), step = indexConst(rewriter, loc, 1);
    auto loop = scf::ForOp::create(
        rewriter, loc, lb, ub, step, ValueRange{op.getData()},
        [&](OpBuilder &b, Location l, Value iv, ValueRange acc) {
          SmallVector<Value> uidx = delinearize(b, l, iv, ut.getShape(), updateSizes);
          Value upd = tensor::ExtractOp::create(b, l, updates, uidx);
          SmallVector<Value> target;
          if constexpr (isND) {
            int64_t ir = it.getRank(), k = it.getDimSize(ir - 1);
            SmallVector<Value> at(uidx.begin(), uidx.begin() + (ir - 1));
            at.push_back(Value());
            for (int64_t j = 0; j < k; ++j) {
              at.back() = indexConst(b, l, j);
              Value v = arith::IndexCastOp::create(b, l, b.getIndexType(),
                                                   tensor::ExtractOp::create(b, l, indices, at));
              target.push_back(dt.isDynamicDim(j) ? wrapAndClamp(b, l, v, dimOf(b, l, op.getData(), j))
                                                  : wrapAndClamp(b, l, v, dt.getDimSize(j)));
            }
            target.append(uidx.begin() + (ir - 1), uidx.end());
          } else {
            int64_t axis = *normalizeAxis(op.getAxis(), dt.getRank());
            target = uidx;
            Value v = arith::IndexCastOp::create(b, l, b.getIndexType(),
                                                 tensor::ExtractOp::create(b, l, indices, uidx));
            target[axis] = dt.isDynamicDim(axis)
                               ? wrapAndClamp(b, l, v, dimOf(b, l, op.getData(), axis))
                               : wrapAndClamp(b, l, v, dt.getDimSize(axis));
          }
          Value cur = tensor::ExtractOp::create(b, l, acc[0], target);
          Value next = tensor::InsertOp::create(b, l, combine(b, l, reduction, cur, upd), acc[0],
                                                target);
          scf::YieldOp::create(b, l, next);
        });
    rewriter.replaceOp(op, loop.getResult(0));
    return success();
  }
};

} // namespace

void populateKilnIndexingToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<GatherLowering, GatherElementsLowering, GatherNDLowering,
               ScatterLowering<ScatterElementsOp>, ScatterLowering<ScatterNDOp>>(
      patterns.getContext());
}

} // namespace kiln

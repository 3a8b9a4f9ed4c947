//===- DataMovement.cpp - shape and indexing ops to tensor/linalg ---------===//
//
// kiln.reshape/flatten/squeeze/unsqueeze => tensor.collapse_shape + expand_shape
// kiln.transpose                         => linalg.transpose
// kiln.concat / kiln.split / kiln.slice  => tensor.insert_slice / extract_slice
//                                           (negative steps: an indexing generic)
// kiln.gather / kiln.trilu               => linalg.generic with linalg.index
// kiln.constant                          => arith.constant (blobs stay resources)
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Dialects/Kiln/IR/ShapeUtils.h"
#include "kiln/Lowering/KilnToLinalg/KilnToLinalg.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

#include <type_traits>

using namespace mlir;

namespace kiln {
namespace {

template <typename OpTy>
struct ReshapeLikeLowering : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    auto in = cast<RankedTensorType>(op.getInput().getType());
    auto out = cast<RankedTensorType>(op.getType());
    // Squeeze and unsqueeze keep the dynamic dimensions in order.
    if (isa<SqueezeOp, UnsqueezeOp>(op) && !in.hasStaticShape()) {
      SmallVector<Value> sizes;
      for (int64_t i = 0; i < in.getRank(); ++i)
        if (in.isDynamicDim(i))
          sizes.push_back(tensor::DimOp::create(rewriter, op.getLoc(), op.getInput(), i));
      rewriter.replaceOp(op, reshapeWithSizes(rewriter, op.getLoc(), op.getInput(), out, sizes));
      return success();
    }
    rewriter.replaceOp(op, reshapeTo(rewriter, op.getLoc(), op.getInput(), out));
    return success();
  }
};

struct ReshapeLowering : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op, PatternRewriter &rewriter) const override {
    if (op.getSizes().empty() && (op.getType().hasStaticShape() == 
                                  op.getInput().getType().hasStaticShape()))
      rewriter.replaceOp(op, reshapeTo(rewriter, op.getLoc(), op.getInput(), op.getType()));
    else
      rewriter.replaceOp(op, reshapeWithSizes(rewriter, op.getLoc(), op.getInput(), op.getType(),
                                              op.getSizes()));
    return success();
  }
};

struct IdentityLowering : OpRewritePattern<IdentityOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(IdentityOp op, PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};

struct ConstantLowering : OpRewritePattern<ConstantOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConstantOp op, PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, cast<TypedAttr>(op.getValue()));
    return success();
  }
};

struct TransposeLowering : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op, PatternRewriter &rewriter) const override {
    auto type = op.getType();
    SmallVector<Value> sizes;
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (type.isDynamicDim(i))
        sizes.push_back(dimOf(rewriter, op.getLoc(), op.getInput(), op.getPerm()[i]));
    Value init = tensor::EmptyOp::create(rewriter, op.getLoc(), type.getShape(),
                                         type.getElementType(), sizes);
    rewriter.replaceOp(op, linalg::TransposeOp::create(rewriter, op.getLoc(), op.getInput(),
                                                       init, op.getPerm())
                               .getResult()[0]);
    return success();
  }
};

/// Concat pieces inserted into place one by one, at most (see below).
constexpr size_t kMaxInsertChain = 32;

struct ConcatLowering : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConcatOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = op.getType();
    int64_t axis = *normalizeAxis(op.getAxis(), type.getRank());
    // Many pieces (an unrolled recurrence's output, one per step): one
    // tensor.concat, which bufferizes to copies into one buffer. A chain
    // of insert_slices lets each piece's producer write into place, but
    // one-shot bufferization's alias analysis of a chain grows with its
    // square: 150 steps took 80 s.
    if (op.getInputs().size() > kMaxInsertChain) {
      rewriter.replaceOpWithNewOp<tensor::ConcatOp>(op, type, axis, op.getInputs());
      return success();
    }
    if (!type.hasStaticShape())
      return lowerDynamic(op, rewriter, axis);
    Value result = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                           type.getElementType());
    int64_t offset = 0;
    for (Value in : op.getInputs()) {
      auto it = tensorType(in);
      SmallVector<int64_t> offsets(type.getRank(), 0), strides(type.getRank(), 1);
      offsets[axis] = offset;
      result = tensor::InsertSliceOp::create(rewriter, loc, in, result, ValueRange{},
                                             ValueRange{}, ValueRange{}, offsets,
                                             it.getShape(), strides);
      offset += it.getDimSize(axis);
    }
    rewriter.replaceOp(op, result);
    return success();
  }

  /// Pieces with sizes known at run time (a KV cache's past and new
  /// positions): the result's size along the axis is their sum, each
  /// piece inserted at the sum of those before it.
  LogicalResult lowerDynamic(ConcatOp op, PatternRewriter &rewriter, int64_t axis) const {
    Location loc = op.getLoc();
    auto type = op.getType();
    auto sizesOf = [&](Value in) {
      SmallVector<OpFoldResult> sizes;
      auto t = tensorType(in);
      for (int64_t d = 0; d < t.getRank(); ++d)
        sizes.push_back(t.isDynamicDim(d) ? OpFoldResult(dimOf(rewriter, loc, in, d))
                                          : OpFoldResult(rewriter.getIndexAttr(t.getDimSize(d))));
      return sizes;
    };
    auto add = [&](OpFoldResult a, OpFoldResult b) -> OpFoldResult {
      auto ca = getConstantIntValue(a), cb = getConstantIntValue(b);
      if (ca && cb)
        return rewriter.getIndexAttr(*ca + *cb);
      return arith::AddIOp::create(rewriter, loc, getValueOrCreateConstantIndexOp(rewriter, loc, a),
                                   getValueOrCreateConstantIndexOp(rewriter, loc, b))
          .getResult();
    };
    SmallVector<OpFoldResult> total = sizesOf(op.getInputs()[0]);
    for (Value in : op.getInputs().drop_front()) {
      SmallVector<OpFoldResult> s = sizesOf(in);
      total[axis] = add(total[axis], s[axis]);
      for (int64_t d = 0; d < type.getRank(); ++d) // another piece's size where it is known
        if (d != axis && isa<Attribute>(s[d]))
          total[d] = s[d];
    }
    SmallVector<Value> dynSizes;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        dynSizes.push_back(getValueOrCreateConstantIndexOp(rewriter, loc, total[d]));
    Value result = tensor::EmptyOp::create(rewriter, loc, type.getShape(), type.getElementType(),
                                           dynSizes);
    OpFoldResult offset = rewriter.getIndexAttr(0);
    SmallVector<OpFoldResult> ones(type.getRank(), rewriter.getIndexAttr(1));
    for (Value in : op.getInputs()) {
      SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0));
      offsets[axis] = offset;
      SmallVector<OpFoldResult> s = sizesOf(in);
      result = tensor::InsertSliceOp::create(rewriter, loc, in, result, offsets, s, ones);
      offset = add(offset, s[axis]);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct SplitLowering : OpRewritePattern<SplitOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SplitOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = tensorType(op.getInput());
    int64_t axis = *normalizeAxis(op.getAxis(), type.getRank());
    SmallVector<Value> pieces;
    int64_t offset = 0;
    // The other dimensions are the input's, dynamic ones included.
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, op.getInput());
    SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0)),
        strides(type.getRank(), rewriter.getIndexAttr(1));
    for (Value r : op.getResults()) {
      auto rt = tensorType(r);
      offsets[axis] = rewriter.getIndexAttr(offset);
      sizes[axis] = rewriter.getIndexAttr(rt.getDimSize(axis));
      pieces.push_back(tensor::ExtractSliceOp::create(rewriter, loc, rt, op.getInput(), offsets,
                                                      sizes, strides));
      offset += rt.getDimSize(axis);
    }
    rewriter.replaceOp(op, pieces);
    return success();
  }
};

/// A generic that fills the result by reading input[index(d0..dn)].
Value gatherGeneric(OpBuilder &b, Location loc, RankedTensorType outType,
                    ValueRange inputs, ArrayRef<AffineMap> inputMaps,
                    llvm::function_ref<Value(OpBuilder &, Location, ValueRange,
                                             ArrayRef<Value>)> element,
                    ValueRange dynSizes = {}) {
  int64_t rank = outType.getRank();
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(b.getMultiDimIdentityMap(rank));
  Value init = tensor::EmptyOp::create(b, loc, outType.getShape(), outType.getElementType(),
                                       dynSizes);
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, outType, inputs, ValueRange{init}, maps, iters,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               SmallVector<Value> idx;
               for (int64_t d = 0; d < rank; ++d)
                 idx.push_back(linalg::IndexOp::create(nb, l, d));
               linalg::YieldOp::create(nb, l, element(nb, l, args.drop_back(), idx));
             })
      .getResult(0);
}

Value indexConst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

struct SliceLowering : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = op.getInput();
    auto type = tensorType(input);
    auto dims = *resolveSlice(type.getShape(), op.getStarts(), op.getEnds(), op.getAxes(),
                              op.getSteps());
    auto outType = op.getType();
    bool positive = llvm::all_of(dims, [](const SliceDim &d) { return d.step > 0; });
    if (positive || outType.getNumElements() == 0) {
      SmallVector<int64_t> offsets, strides;
      for (auto &d : dims) {
        offsets.push_back(d.size ? d.start : 0);
        strides.push_back(d.size ? d.step : 1);
      }
      rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
          op, outType, input, ValueRange{}, ValueRange{}, ValueRange{}, offsets,
          outType.getShape(), strides);
      return success();
    }
    Value r = gatherGeneric(rewriter, loc, outType, {}, {},
                            [&](OpBuilder &b, Location l, ValueRange, ArrayRef<Value> idx) {
                              SmallVector<Value> src;
                              for (auto [d, i] : llvm::zip(dims, idx)) {
                                Value scaled = arith::MulIOp::create(b, l, i, indexConst(b, l, d.step));
                                src.push_back(arith::AddIOp::create(b, l, scaled,
                                                                    indexConst(b, l, d.start)));
                              }
                              return tensor::ExtractOp::create(b, l, input, src);
                            });
    rewriter.replaceOp(op, r);
    return success();
  }
};

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
    if (ShapedType::isDynamic(dim))
      return rewriter.notifyMatchFailure(op, "gathers along a dynamic axis");
    Value r = gatherGeneric(
        rewriter, loc, outType, ValueRange{op.getIndices()}, {idxMap},
        [&](OpBuilder &b, Location l, ValueRange args, ArrayRef<Value> idx) {
          // Negative indices count from the end; out-of-range ones are clamped
          // so that bad data can never read outside the tensor.
          Value i = arith::IndexCastOp::create(b, l, b.getIndexType(), args[0]);
          Value zero = indexConst(b, l, 0), n = indexConst(b, l, dim);
          Value neg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, i, zero);
          i = arith::SelectOp::create(b, l, neg, arith::AddIOp::create(b, l, i, n), i);
          i = arith::MaxSIOp::create(b, l, i, zero);
          i = arith::MinSIOp::create(b, l, i, indexConst(b, l, dim - 1));
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
    if (ShapedType::isDynamic(dim))
      return rewriter.notifyMatchFailure(op, "gathers along a dynamic axis");
    AffineMap id = rewriter.getMultiDimIdentityMap(dt.getRank());
    // The result has the indices' shape.
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < op.getType().getRank(); ++d)
      if (op.getType().isDynamicDim(d))
        sizes.push_back(dimOf(rewriter, op.getLoc(), op.getIndices(), d));
    Value r = gatherGeneric(
        rewriter, op.getLoc(), op.getType(), ValueRange{op.getIndices()}, {id},
        [&](OpBuilder &b, Location l, ValueRange args, ArrayRef<Value> idx) {
          Value i = arith::IndexCastOp::create(b, l, b.getIndexType(), args[0]);
          Value zero = indexConst(b, l, 0);
          Value neg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, i, zero);
          i = arith::SelectOp::create(b, l, neg, arith::AddIOp::create(b, l, i, indexConst(b, l, dim)), i);
          i = arith::MaxSIOp::create(b, l, arith::MinSIOp::create(b, l, i, indexConst(b, l, dim - 1)), zero);
          SmallVector<Value> src(idx);
          src[axis] = i;
          return tensor::ExtractOp::create(b, l, data, src);
        },
        sizes);
    rewriter.replaceOp(op, r);
    return success();
  }
};

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

/// Every mode as one indexing generic: result[i] reads input[src(i)] where
/// src maps the padded index back (reflect mirrors, edge clamps), or takes
/// the pad value outside the input in constant mode.
struct PadLowering : OpRewritePattern<PadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PadOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = op.getInput();
    auto inType = tensorType(input);
    auto outType = op.getType();
    int64_t rank = inType.getRank();
    auto pads = op.getPads();
    StringRef mode = op.getMode();
    double padValue = op.getValue().convertToDouble();
    if (outType.getNumElements() == 0 || inType.getNumElements() == 0) {
      Value fill = scalarConstant(rewriter, loc, outType.getElementType(), padValue);
      rewriter.replaceOp(op, filledTensor(rewriter, loc, outType, fill));
      return success();
    }
    Value r = gatherGeneric(
        rewriter, loc, outType, {}, {},
        [&](OpBuilder &b, Location l, ValueRange, ArrayRef<Value> idx) -> Value {
          Value inside = scalarConstant(b, l, b.getI1Type(), 1);
          SmallVector<Value> src;
          for (int64_t d = 0; d < rank; ++d) {
            int64_t n = inType.getDimSize(d);
            Value zero = indexConst(b, l, 0), last = indexConst(b, l, n - 1);
            Value s = arith::SubIOp::create(b, l, idx[d], indexConst(b, l, pads[d]));
            Value below = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, s, zero);
            Value above = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sgt, s, last);
            if (mode == "reflect") {
              s = arith::SelectOp::create(b, l, below, arith::SubIOp::create(b, l, zero, s), s);
              Value mirrored = arith::SubIOp::create(b, l, indexConst(b, l, 2 * (n - 1)), s);
              s = arith::SelectOp::create(b, l, above, mirrored, s);
            } else {
              Value outside = arith::OrIOp::create(b, l, below, above);
              inside = arith::AndIOp::create(
                  b, l, inside, arith::XOrIOp::create(b, l, outside,
                                                      scalarConstant(b, l, b.getI1Type(), 1)));
            }
            // Clamp: edge mode's rule, and a safe read for constant mode.
            s = arith::MaxSIOp::create(b, l, arith::MinSIOp::create(b, l, s, last), zero);
            src.push_back(s);
          }
          Value v = tensor::ExtractOp::create(b, l, input, src);
          if (mode != "constant")
            return v;
          return arith::SelectOp::create(b, l, inside, v,
                                         scalarConstant(b, l, v.getType(), padValue));
        });
    rewriter.replaceOp(op, r);
    return success();
  }
};

struct TriluLowering : OpRewritePattern<TriluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TriluOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = op.getType();
    int64_t rank = type.getRank(), k = op.getK();
    bool upper = op.getUpper();
    AffineMap id = rewriter.getMultiDimIdentityMap(rank);
    Value r = gatherGeneric(
        rewriter, loc, type, ValueRange{op.getInput()}, {id},
        [&](OpBuilder &b, Location l, ValueRange args, ArrayRef<Value> idx) {
          // keep when j - i >= k (upper) or j - i <= k (lower)
          Value diff = arith::SubIOp::create(b, l, idx[rank - 1], idx[rank - 2]);
          auto pred = upper ? arith::CmpIPredicate::sge : arith::CmpIPredicate::sle;
          Value keep = arith::CmpIOp::create(b, l, pred, diff, indexConst(b, l, k));
          Value zero = scalarConstant(b, l, args[0].getType(), 0.0);
          return arith::SelectOp::create(b, l, keep, args[0], zero);
        });
    rewriter.replaceOp(op, r);
    return success();
  }
};

} // namespace

void populateKilnDataMovementToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<ReshapeLowering, ReshapeLikeLowering<FlattenOp>,
               ReshapeLikeLowering<SqueezeOp>, ReshapeLikeLowering<UnsqueezeOp>,
               IdentityLowering, ConstantLowering, TransposeLowering, ConcatLowering,
               SplitLowering, SliceLowering, GatherLowering, GatherElementsLowering, GatherNDLowering,
               ScatterLowering<ScatterElementsOp>, ScatterLowering<ScatterNDOp>, PadLowering,
               TriluLowering>(
      patterns.getContext());
}

} // namespace kiln

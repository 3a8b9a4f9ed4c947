//===- DataMovement.cpp - shape and indexing ops to tensor/linalg ---------===//
//
// kiln.reshape/flatten/squeeze/unsqueeze => tensor.collapse_shape + expand_shape
// kiln.transpose                         => linalg.transpose
// kiln.concat / kiln.split / kiln.slice  => tensor.insert_slice / extract_slice
//                                           (negative steps: an indexing generic)
// kiln.pad / kiln.trilu                  => linalg.generic with linalg.index
// (gathers and scatters: Indexing.cpp)
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
      sizes[axis] = rewriter.getIndexAttr(rt.getDimSize(axis));
      // An empty piece is no slice (its offset may be the axis's end).
      if (rt.getDimSize(axis) == 0) {
        pieces.push_back(tensor::EmptyOp::create(rewriter, loc, sizes, rt.getElementType()));
        continue;
      }
      offsets[axis] = rewriter.getIndexAttr(offset);
      pieces.push_back(tensor::ExtractSliceOp::create(rewriter, loc, rt, op.getInput(), offsets,
                                                      sizes, strides));
      offset += rt.getDimSize(axis);
    }
    rewriter.replaceOp(op, pieces);
    return success();
  }
};


struct SliceLowering : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = op.getInput();
    auto type = tensorType(input);
    auto dims = *resolveSlice(type.getShape(), op.getStarts(), op.getEnds(), op.getAxes(),
                              op.getSteps());
    auto outType = op.getType();
    // Dynamic dimensions are never sliced (the verifier): whole, their
    // sizes the input's.
    SmallVector<Value> dynSizes;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        dynSizes.push_back(tensor::DimOp::create(rewriter, loc, input, d));
    bool positive = llvm::all_of(dims, [](const SliceDim &d) { return d.step > 0; });
    bool empty = llvm::any_of(dims, [](const SliceDim &d) { return d.size == 0; });
    if (positive || empty) {
      SmallVector<int64_t> offsets, strides;
      for (auto &d : dims) {
        offsets.push_back(d.size ? d.start : 0);
        strides.push_back(d.size ? d.step : 1);
      }
      rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
          op, outType, input, ValueRange{}, dynSizes, ValueRange{}, offsets,
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
                            },
                            dynSizes);
    rewriter.replaceOp(op, r);
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
    // A dynamic dimension is never padded (the verifier): the input's size,
    // its last index read at run time.
    SmallVector<Value> dynSizes, inSizes(rank);
    for (int64_t d = 0; d < rank; ++d)
      if (inType.isDynamicDim(d))
        dynSizes.push_back(inSizes[d] = tensor::DimOp::create(rewriter, loc, input, d));
    auto staticEmpty = [](RankedTensorType t) {
      return llvm::is_contained(t.getShape(), 0);
    };
    if (staticEmpty(outType) || staticEmpty(inType)) {
      Value fill = scalarConstant(rewriter, loc, outType.getElementType(), padValue);
      rewriter.replaceOp(op, filledTensor(rewriter, loc, outType, fill, dynSizes));
      return success();
    }
    Value r = gatherGeneric(
        rewriter, loc, outType, {}, {},
        [&](OpBuilder &b, Location l, ValueRange, ArrayRef<Value> idx) -> Value {
          Value inside = scalarConstant(b, l, b.getI1Type(), 1);
          SmallVector<Value> src;
          for (int64_t d = 0; d < rank; ++d) {
            int64_t n = inType.getDimSize(d);
            Value zero = indexConst(b, l, 0);
            Value last = inSizes[d] ? arith::SubIOp::create(b, l, inSizes[d], indexConst(b, l, 1))
                                          .getResult()
                                    : indexConst(b, l, n - 1);
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
        },
        dynSizes);
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// One copy generic over (n, oh, ow, kh, kw, c) into [N, OH, OW, KH, KW,
/// C], its input read at (n, oh*sh + kh*dh, ow*sw + kw*dw, c): affine, so
/// kernel formation tiles it over the pool and the channels are copied as
/// vectors; collapsed to the rows.
struct Im2ColLowering : OpRewritePattern<Im2ColOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(Im2ColOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = op.getInput();
    auto in = tensorType(input);
    auto out = op.getType();
    auto k = op.getKernelShape(), s = op.getStrides(), d = op.getDilations();
    MLIRContext *ctx = rewriter.getContext();
    auto dim = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    auto windows = RankedTensorType::get(
        {out.getDimSize(0), out.getDimSize(1), out.getDimSize(2), k[0], k[1], in.getDimSize(3)},
        in.getElementType());
    SmallVector<Value> dynSizes;
    if (in.isDynamicDim(0))
      dynSizes.push_back(tensor::DimOp::create(rewriter, loc, input, 0));
    Value empty = tensor::EmptyOp::create(rewriter, loc, windows.getShape(),
                                          windows.getElementType(), dynSizes);
    auto read = AffineMap::get(
        6, 0, {dim(0), dim(1) * s[0] + dim(3) * d[0], dim(2) * s[1] + dim(4) * d[1], dim(5)}, ctx);
    Value cols = linalg::GenericOp::create(
                     rewriter, loc, windows, ValueRange{input}, ValueRange{empty},
                     ArrayRef<AffineMap>{read, AffineMap::getMultiDimIdentityMap(6, ctx)},
                     SmallVector<utils::IteratorType>(6, utils::IteratorType::parallel),
                     [](OpBuilder &b, Location l, ValueRange a) {
                       linalg::YieldOp::create(b, l, a[0]);
                     })
                     .getResult(0);
    rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(
        op, out, cols, SmallVector<ReassociationIndices>{{0}, {1}, {2}, {3, 4, 5}});
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
  patterns.add<Im2ColLowering, ReshapeLowering, ReshapeLikeLowering<FlattenOp>,
               ReshapeLikeLowering<SqueezeOp>, ReshapeLikeLowering<UnsqueezeOp>,
               IdentityLowering, ConstantLowering, TransposeLowering, ConcatLowering,
               SplitLowering, SliceLowering, PadLowering, TriluLowering>(
      patterns.getContext());
}

} // namespace kiln

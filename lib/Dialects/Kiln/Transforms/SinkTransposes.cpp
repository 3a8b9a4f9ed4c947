//===- SinkTransposes.cpp - kiln-sink-transposes ---------------------------===//
//
//   %a' = kiln.transpose %a {perm = p}      (only used here)
//   %b' = kiln.transpose %b {perm = p}      (only used here)
//   %y  = kiln.add %a', %b'                 (or any elementwise op; other
//                                            operands single values)
// =>
//   %s  = kiln.add %a, %b
//   %y  = kiln.transpose %s {perm = p}
//
// where that reduces the transposes: two operands' become one, or further
// down the elementwise chain the moved transpose meets another; or where
// it then copies fewer bytes (past a QDQ model's requantization to uint8).
// The importer runs 8-bit convolutions channels last (QuantizedConv.cpp):
// each begins with NCHW -> NHWC and ends with NHWC -> NCHW. Back to back
// the two compose away, but a QDQ model's requantization (div, round, add,
// clip, cast) and a residual network's adds sit between them, each pair
// then two copies of the image. Moved below those ops, the transposes
// meet and cancel, and the network stays channels last from one
// convolution to the next.
//
// An operand broadcast along the permuted dimensions (ConvNeXt's layer
// scale, [C, 1, 1] against NCHW) moves as a reshape of itself, and an
// operand whose inverse transpose some other op reads already (the
// residual stream, transposed for the next depthwise convolution) moves as
// that copy. With channels-last-convs, depthwise convolutions move the
// transposes through themselves (SinkTransposeConvs.cpp).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/Transforms/Passes.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Dialects/Kiln/IR/ShapeUtils.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSINKTRANSPOSES
#include "kiln/Dialects/Kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Ops computed element by element, each result element from the operands'
/// elements at the same (broadcast) index.
bool isElementwise(Operation *op) {
  return isa<CastOp, ClipOp, RoundOp, ReluOp, NegOp, AbsOp, FloorOp, CeilOp, ExpOp, LogOp, SqrtOp,
             ReciprocalOp, ErfOp, TanhOp, SigmoidOp, AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp,
             PowOp>(op);
}

/// A tensor of one element: the same under any permutation of the others'
/// dimensions.
bool isSingleValue(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.hasStaticShape() && t.getNumElements() == 1;
}

/// The shape of `v` before a transpose by `perm` to `type`, when `v` is
/// broadcast against `type` along the permuted dimensions so that this is
/// a reshape of it (a per-channel [C, 1, 1] operand of an NCHW image:
/// [1, 1, 1, C] for the NHWC one). Full-size operands are not broadcast.
std::optional<SmallVector<int64_t>> reshapedBroadcast(Value v, RankedTensorType type,
                                                      ArrayRef<int64_t> perm) {
  auto vt = dyn_cast<RankedTensorType>(v.getType());
  int64_t rank = type.getRank();
  if (!vt || !vt.hasStaticShape() || vt.getRank() > rank ||
      (int64_t)perm.size() != rank || vt.getNumElements() == 1 ||
      (type.hasStaticShape() && vt.getNumElements() >= type.getNumElements()))
    return std::nullopt;
  SmallVector<int64_t> aligned(rank - vt.getRank(), 1), shape(rank);
  llvm::append_range(aligned, vt.getShape());
  for (int64_t i = 0; i < rank; ++i) {
    if (aligned[i] != 1 && aligned[i] != type.getDimSize(i))
      return std::nullopt;
    shape[perm[i]] = aligned[i];
  }
  if (!onlyUnitDimsMove(shape, perm))
    return std::nullopt;
  return shape;
}

SmallVector<int64_t> inverse(ArrayRef<int64_t> perm) {
  SmallVector<int64_t> inv(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inv[p] = i;
  return inv;
}

/// A transpose of `v` by the inverse of `perm` that another op reads
/// already, in `block`: `v` before the transpose by `perm`, without a new
/// copy.
TransposeOp inverseTransposeOf(Value v, ArrayRef<int64_t> perm, Block *block) {
  SmallVector<int64_t> inv = inverse(perm);
  for (Operation *u : v.getUsers())
    if (auto t = dyn_cast<TransposeOp>(u); t && t.getPerm() == ArrayRef<int64_t>(inv) &&
                                           t->getBlock() == block)
      return t;
  return {};
}

/// Whether `v` is a transpose by `perm`, or an elementwise op's result
/// whose operands all are (or single values): what sinking turns into
/// one transpose by `perm`. Or it is transposed back already for another
/// op (inverseTransposeOf).
bool becomesTranspose(Value v, ArrayRef<int64_t> perm, int depth = 0) {
  if (auto t = v.getDefiningOp<TransposeOp>())
    return t.getPerm() == perm;
  Operation *op = v.getDefiningOp();
  if (op && inverseTransposeOf(v, perm, op->getBlock()))
    return true;
  if (!op || depth > 16 || !isElementwise(op))
    return false;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  bool any = false;
  for (Value operand : op->getOperands()) {
    if (isSingleValue(operand) || (type && reshapedBroadcast(operand, type, perm)))
      continue;
    if (!becomesTranspose(operand, perm, depth + 1))
      return false;
    any = true;
  }
  return any;
}

/// A cast to an element type narrower than `width` bits, the transposed
/// tensor's (a QDQ model's requantization of f32 to uint8): a transpose
/// after it copies fewer bytes than one before.
bool narrows(Operation *op, unsigned width) {
  auto c = dyn_cast<CastOp>(op);
  return c && cast<RankedTensorType>(c.getType()).getElementType().getIntOrFloatBitWidth() < width;
}

unsigned elementWidth(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType().getIntOrFloatBitWidth();
}

/// A reduction keeping its dimensions (global average pooling's mean over
/// the pixels) whose result, moved above a transpose by `perm`, would need
/// only a reshape after it.
bool reducesTranspose(Operation *op, ArrayRef<int64_t> perm) {
  if (!isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp>(op) ||
      !op->getAttrOfType<BoolAttr>("keepdims").getValue() ||
      op->getAttrOfType<DenseI64ArrayAttr>("axes").empty())
    return false;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || !type.hasStaticShape() || (int64_t)perm.size() != type.getRank())
    return false;
  SmallVector<int64_t> shape(type.getRank());
  for (auto [i, d] : llvm::enumerate(perm))
    shape[d] = type.getDimSize(i);
  return onlyUnitDimsMove(shape, perm);
}

/// Whether a transpose by `perm` of `v`'s value, sunk along its elementwise
/// users, meets another transpose (and composes with it), joins one from
/// another operand (two become one) or reaches a narrowing cast (fewer
/// bytes to copy). Elsewhere sinking only moves the copy
/// (a CUDA kernel's transpose read through by the ReLU after it).
bool meetsTranspose(Value v, ArrayRef<int64_t> perm, unsigned width, int depth = 0) {
  if (depth > 16)
    return false;
  if (llvm::any_of(v.getUsers(), [](Operation *u) { return isa<TransposeOp>(u); }))
    return true;
  if (!v.hasOneUse())
    return false;
  Operation *user = *v.getUsers().begin();
  if (reducesTranspose(user, perm) || narrows(user, width))
    return true;
  if (!isElementwise(user) || user->getNumResults() != 1)
    return false;
  auto type = dyn_cast<RankedTensorType>(user->getResult(0).getType());
  for (Value operand : user->getOperands())
    if (operand != v && !isSingleValue(operand) &&
        !(type && reshapedBroadcast(operand, type, perm)) && becomesTranspose(operand, perm))
      return true;
  return meetsTranspose(user->getResult(0), perm, width, depth + 1);
}

struct SinkTranspose : RewritePattern {
  SinkTranspose(MLIRContext *ctx) : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!isElementwise(op) || op->getNumResults() != 1)
      return failure();
    // Dynamic sizes (a batch) move with their dimensions.
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!type)
      return failure();
    // The permutation: of the operands transposed for this op alone.
    std::optional<SmallVector<int64_t>> perm;
    auto ownTranspose = [&](Value v) -> TransposeOp {
      auto t = v.getDefiningOp<TransposeOp>();
      auto vt = dyn_cast<RankedTensorType>(v.getType());
      if (t && vt && vt.getShape() == type.getShape() &&
          llvm::all_of(t->getUsers(), [&](Operation *u) { return u == op; }))
        return t;
      return {};
    };
    for (Value v : op->getOperands()) {
      // (A transpose of a transpose composes with it first.)
      if (auto t = v.getDefiningOp<TransposeOp>(); t && t.getInput().getDefiningOp<TransposeOp>())
        return failure();
      if (TransposeOp t = ownTranspose(v)) {
        SmallVector<int64_t> p(t.getPerm());
        if (perm && *perm != p)
          return failure();
        perm = p;
      }
    }
    if (!perm)
      return failure();
    // Each operand before the transpose: untransposed, the same single
    // value, reshaped, or another op's copy.
    SmallVector<Value> operands;
    SmallVector<std::pair<unsigned, SmallVector<int64_t>>> reshapes;
    SmallVector<TransposeOp> copies;
    int transposed = 0;
    unsigned width = 0;
    for (auto [i, v] : llvm::enumerate(op->getOperands())) {
      if (TransposeOp t = ownTranspose(v)) {
        width = elementWidth(v);
        ++transposed;
        operands.push_back(t.getInput());
      } else if (isSingleValue(v)) {
        operands.push_back(v);
      } else if (auto shape = reshapedBroadcast(v, type, *perm)) {
        reshapes.push_back({i, *shape});
        operands.push_back(v);
      } else if (TransposeOp t = inverseTransposeOf(v, *perm, op->getBlock());
                 t && cast<RankedTensorType>(v.getType()).getShape() == type.getShape()) {
        copies.push_back(t);
        operands.push_back(t.getResult());
      } else {
        return failure();
      }
    }
    if (transposed + (int)copies.size() < 2 && !narrows(op, width) &&
        !meetsTranspose(op->getResult(0), *perm, width))
      return failure();
    // Another op's copy, moved up to where its input is made (or to the
    // block's start, where the input comes from outside it).
    for (TransposeOp t : copies) {
      Operation *def = t.getInput().getDefiningOp();
      if (def && def->getBlock() == t->getBlock())
        rewriter.moveOpAfter(t, def);
      else
        rewriter.moveOpBefore(t, &t->getBlock()->front());
    }
    for (auto &[i, shape] : reshapes) {
      auto et = cast<RankedTensorType>(operands[i].getType()).getElementType();
      operands[i] = ReshapeOp::create(rewriter, op->getLoc(), RankedTensorType::get(shape, et),
                                      operands[i]);
    }
    // The result before the transpose: dimension perm[i] is the result's i.
    SmallVector<int64_t> shape(type.getRank());
    for (auto [i, d] : llvm::enumerate(*perm))
      shape[d] = type.getDimSize(i);
    Operation *inner = rewriter.clone(*op);
    inner->setOperands(operands);
    inner->getResult(0).setType(RankedTensorType::get(shape, type.getElementType()));
    rewriter.replaceOpWithNewOp<TransposeOp>(op, type, inner->getResult(0),
                                             rewriter.getDenseI64ArrayAttr(*perm));
    return success();
  }
};

/// reduce(T(x), axes) keeping its dimensions => reshape(reduce(x, axes'))
/// where the transpose of the reduced tensor would only move unit
/// dimensions (reducesTranspose): the mean over a channels-last image's
/// pixels needs no NCHW copy of the image.
struct SinkTransposeIntoReduce : RewritePattern {
  SinkTransposeIntoReduce(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (op->getNumOperands() != 1)
      return failure();
    auto t = op->getOperand(0).getDefiningOp<TransposeOp>();
    if (!t || !t->hasOneUse() || !reducesTranspose(op, t.getPerm()))
      return failure();
    ArrayRef<int64_t> perm = t.getPerm();
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    int64_t rank = type.getRank();
    SmallVector<int64_t> axes, shape(rank);
    for (int64_t a : op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef())
      axes.push_back(perm[a < 0 ? a + rank : a]);
    for (auto [i, d] : llvm::enumerate(perm))
      shape[d] = type.getDimSize(i);
    Operation *inner = rewriter.clone(*op);
    inner->setOperand(0, t.getInput());
    inner->setAttr("axes", rewriter.getDenseI64ArrayAttr(axes));
    inner->getResult(0).setType(RankedTensorType::get(shape, type.getElementType()));
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, type, inner->getResult(0));
    return success();
  }
};

/// The non-unit sizes of `shape`, with the position of each.
SmallVector<std::pair<int64_t, int64_t>> nonUnitDims(ArrayRef<int64_t> shape) {
  SmallVector<std::pair<int64_t, int64_t>> dims;
  for (auto [i, d] : llvm::enumerate(shape))
    if (d != 1)
      dims.push_back({(int64_t)i, d});
  return dims;
}

/// gather(reshape?(T(x)), i) along `axis`, i a constant scalar, the
/// reshape only adding or dropping unit dimensions
///   => reshape(T(slice(x, i along the dimension T moved to `axis`)))
/// when such gathers are all that read T: each copies its slice instead of
/// T copying the whole tensor first. torch's MultiheadAttention splits
/// its packed q, k, v so ([1, 197, 1, 3, 768] -> [3, 197, 1, 1, 768], then
/// three gathers): ViT-B/16 copied 1.8 MB a layer for nothing. The new
/// transpose moves only unit dimensions there, a reshape.
struct SinkTransposeIntoGather : OpRewritePattern<GatherOp> {
  using OpRewritePattern::OpRewritePattern;

  /// The scalar index of a gather with a constant one.
  static std::optional<int64_t> scalarIndex(GatherOp g) {
    DenseElementsAttr attr;
    if (cast<RankedTensorType>(g.getIndices().getType()).getRank() != 0 ||
        !matchPattern(g.getIndices(), m_Constant(&attr)))
      return std::nullopt;
    return (*attr.getValues<APInt>().begin()).getSExtValue();
  }

  LogicalResult matchAndRewrite(GatherOp op, PatternRewriter &rewriter) const override {
    Value data = op.getData();
    auto reshape = data.getDefiningOp<ReshapeOp>();
    auto t = (reshape ? reshape.getInput() : data).getDefiningOp<TransposeOp>();
    std::optional<int64_t> index = scalarIndex(op);
    auto dt = cast<RankedTensorType>(data.getType());
    if (!t || !index || (reshape && !t->hasOneUse()) || !dt.hasStaticShape() ||
        !cast<RankedTensorType>(t.getInput().getType()).hasStaticShape())
      return rewriter.notifyMatchFailure(op, "no constant scalar gather of a static transpose");
    int64_t axis = op.getAxis() < 0 ? op.getAxis() + dt.getRank() : op.getAxis();
    // Every reader of the transposed data such a gather along the axis.
    if (!llvm::all_of(data.getUsers(), [&](Operation *u) {
          auto g = dyn_cast<GatherOp>(u);
          return g && g.getData() == data && g.getAxis() == op.getAxis() && scalarIndex(g);
        }))
      return rewriter.notifyMatchFailure(op, "the transpose has other readers");
    // The transpose's dimension the gather's axis is (through the reshape).
    auto tt = cast<RankedTensorType>(t.getType());
    int64_t size = dt.getDimSize(axis), b = axis;
    if (reshape) {
      auto from = nonUnitDims(tt.getShape()), to = nonUnitDims(dt.getShape());
      if (size == 1 || from.size() != to.size() ||
          !llvm::equal(llvm::make_second_range(from), llvm::make_second_range(to)))
        return rewriter.notifyMatchFailure(op, "the reshape does more than unit dimensions");
      auto at = llvm::find_if(to, [&](auto d) { return d.first == axis; });
      b = from[at - to.begin()].first;
    }
    int64_t i = *index < 0 ? *index + size : *index;
    if (i < 0 || i >= size)
      return failure(); // out of range: the lowering clamps it, leave it so
    int64_t xd = t.getPerm()[b];
    Location loc = op.getLoc();
    Value slice = SliceOp::create(rewriter, loc, t.getInput(), rewriter.getDenseI64ArrayAttr({i}),
                                  rewriter.getDenseI64ArrayAttr({i + 1}),
                                  rewriter.getDenseI64ArrayAttr({xd}),
                                  rewriter.getDenseI64ArrayAttr({1}));
    Value moved = TransposeOp::create(rewriter, loc, slice, t.getPermAttr());
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), moved);
    return success();
  }
};

/// An elementwise op on `v` that never decreases with it and takes the
/// same values on equal inputs (so a maximum commutes with it): a cast of
/// integers to a float type (exact for 8 and 16 bits), adding or
/// subtracting a single value, multiplying by a positive constant one. A
/// dequantization is such a chain.
bool keepsOrder(Operation *op, Value v) {
  if (auto c = dyn_cast<CastOp>(op)) {
    auto in = cast<RankedTensorType>(c.getInput().getType()).getElementType();
    auto out = cast<RankedTensorType>(c.getType()).getElementType();
    return in.isInteger() && in.getIntOrFloatBitWidth() <= 16 && isa<FloatType>(out);
  }
  if (!isa<AddOp, SubOp, MulOp>(op) || op->getOperand(0) != v ||
      cast<RankedTensorType>(op->getResult(0).getType()) !=
          cast<RankedTensorType>(v.getType()))
    return false;
  Value other = op->getOperand(1);
  if (!isSingleValue(other))
    return false;
  if (!isa<MulOp>(op))
    return true;
  DenseElementsAttr attr;
  if (!matchPattern(other, m_Constant(&attr)) || !isa<FloatType>(attr.getElementType()))
    return false;
  return (*attr.getValues<APFloat>().begin()).convertToDouble() > 0;
}

/// max_pool(g(T(x))) with x an NHWC integer image, T its transpose to
/// NCHW and g a chain of ops keeping order (keepsOrder: a dequantization)
///   => g(T(max over the windows' taps of pad(x, lowest))).
/// The maximum commutes with g, and channels last the taps are strided
/// slices whose maximum is elementwise along the channels: no NCHW copy
/// of the image (a quantized ResNet-50's stem output, 64 x 112 x 112:
/// 0.32 ms at batch 1 to transpose, 0.1 ms more to transpose back), and
/// the transpose left moves on down to the next convolution's.
struct SinkTransposeIntoMaxPool : OpRewritePattern<MaxPoolOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MaxPoolOp op, PatternRewriter &rewriter) const override {
    SmallVector<Operation *> chain; // nearest the pool first
    Value v = op.getInput();
    TransposeOp t;
    while (!(t = v.getDefiningOp<TransposeOp>())) {
      Operation *d = v.getDefiningOp();
      if (!d || !d->hasOneUse() || d->getNumOperands() == 0 || !keepsOrder(d, d->getOperand(0)))
        return failure();
      chain.push_back(d);
      v = d->getOperand(0);
    }
    auto x = t.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    auto type = op.getType();
    auto k = op.getKernelShape(), st = op.getStrides(), pads = op.getPads(),
         dil = op.getDilations();
    if (!t->hasOneUse() || t.getPerm() != ArrayRef<int64_t>{0, 3, 1, 2} || k.size() != 2 ||
        !xt.getElementType().isInteger() || xt.getElementType().getIntOrFloatBitWidth() > 16 ||
        llvm::any_of(xt.getShape().drop_front(), ShapedType::isDynamic) ||
        llvm::any_of(type.getShape().drop_front(), ShapedType::isDynamic))
      return failure();
    int64_t OH = type.getDimSize(2), OW = type.getDimSize(3);
    // Ends padded so every window is whole (ceil_mode's last ones too).
    int64_t endH = std::max<int64_t>(0, (OH - 1) * st[0] + (k[0] - 1) * dil[0] + 1 -
                                            xt.getDimSize(1) - pads[0]);
    int64_t endW = std::max<int64_t>(0, (OW - 1) * st[1] + (k[1] - 1) * dil[1] + 1 -
                                            xt.getDimSize(2) - pads[1]);
    auto it = cast<IntegerType>(xt.getElementType());
    unsigned w = it.getWidth();
    double lowest = it.isUnsigned() ? 0.0 : -double(int64_t(1) << (w - 1));
    Location loc = op.getLoc();
    Value xp = x;
    if (pads[0] || pads[1] || endH || endW)
      xp = PadOp::create(rewriter, loc, x, rewriter.getDenseI64ArrayAttr(
                                              {0, pads[0], pads[1], 0, 0, endH, endW, 0}),
                                  rewriter.getStringAttr("constant"),
                                  rewriter.getF64FloatAttr(lowest));
    Value m;
    for (int64_t kh = 0; kh < k[0]; ++kh)
      for (int64_t kw = 0; kw < k[1]; ++kw) {
        Value tap = SliceOp::create(
            rewriter, loc, xp, rewriter.getDenseI64ArrayAttr({kh * dil[0], kw * dil[1]}),
            rewriter.getDenseI64ArrayAttr(
                {kh * dil[0] + (OH - 1) * st[0] + 1, kw * dil[1] + (OW - 1) * st[1] + 1}),
            rewriter.getDenseI64ArrayAttr({1, 2}), rewriter.getDenseI64ArrayAttr(st));
        m = m ? MaxOp::create(rewriter, loc, m, tap).getResult() : tap;
      }
    Value r = TransposeOp::create(rewriter, loc, m, t.getPermAttr());
    for (Operation *d : llvm::reverse(chain)) {
      Operation *c = rewriter.clone(*d);
      c->setOperand(0, r);
      auto dt = cast<RankedTensorType>(d->getResult(0).getType());
      c->getResult(0).setType(RankedTensorType::get(type.getShape(), dt.getElementType()));
      r = c->getResult(0);
    }
    rewriter.replaceOp(op, r);
    return success();
  }
};

struct KilnSinkTransposesPass final : impl::KilnSinkTransposesBase<KilnSinkTransposesPass> {
  using Base::Base;
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    // The convolutions first: a transpose sunk past an elementwise op after
    // one first would no longer be next to it.
    if (channelsLastConvs) {
      RewritePatternSet convs(ctx);
      populateChannelsLastConvPatterns(convs);
      TransposeOp::getCanonicalizationPatterns(convs, ctx);
      if (failed(applyPatternsGreedily(getOperation(), std::move(convs))))
        return signalPassFailure();
    }
    RewritePatternSet patterns(ctx);
    patterns.add<SinkTranspose, SinkTransposeIntoReduce, SinkTransposeIntoMaxPool,
                 SinkTransposeIntoGather>(ctx);
    if (channelsLastConvs)
      populateChannelsLastConvPatterns(patterns);
    TransposeOp::getCanonicalizationPatterns(patterns, ctx);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace kiln

//===- PointwiseConvAsMatmul.cpp - kiln-pointwise-conv-as-matmul ----------===//
//
//   %y = linalg.conv_2d_nchw_fchw {strides = [s, s]}
//          ins(%x : [N, C, H, W], %w : [F, C, 1, 1]) outs(%init : [N, F, OH, OW])
//   %z = linalg.generic (elementwise over [N, F, OH, OW]) ins(%y, ...)
// =>
//   %xs = x[:, :, ::s, ::s]                              (a copy, s > 1 only)
//   %m  = linalg.generic (n, f, p, c)  out[n, f, p] += w[f, c] * xs[n, c, p]
//           ins(collapse(%xs) : [N, C, OH*OW], collapse(%w) : [F, C])
//   %z' = linalg.generic (elementwise over [N, F, OH*OW]) ins(%m, collapse(...))
//   %z  = expand(%z') : [N, F, OH, OW]
//
// A 1x1 convolution is a matrix product over the flattened pixels: the
// weights' rows times the image's [C, pixels] rows. As a convolution the
// CPU register tile covers one output row's columns (a vector of 8 holds a
// 7-wide row of ResNet's last stage, 2 vectors 14 of 16) with at most 8
// channels; as a product it is kiln-vectorize-matmul's 4 x 24 tile over
// the pixels, B packed by kiln-pack-matmul-weights where it can be. The
// elementwise ops after it (batch-norm's scale and shift, the residual
// add, ReLU) are collapsed the same way, so they stay in the product's
// kernel; the shape goes back to 4-D where something else reads it.
// ResNet-50's 1x1 convolutions on a 2-core Zen 3: 50-80 -> 100-130
// GFLOP/s. A strided convolution with a larger kernel goes the same way
// over its im2col columns, copied out first, unless kiln-pack-conv-weights
// will take it (constant weights, whole vectors of output channels): the
// NCHW direct tile would gather every s-th input column.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/ConvTiles.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallBitVector.h"

namespace kiln {
#define GEN_PASS_DEF_KILNPOINTWISECONVASMATMUL
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// f32 of a static shape but for a dynamic batch (dimension 0).
bool isStaticF32(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.getElementType().isF32() &&
         llvm::none_of(llvm::seq<int64_t>(1, t.getRank()), [&](int64_t d) { return t.isDynamicDim(d); });
}

/// Whether kiln-pack-conv-weights will pack the convolution's weights: its
/// register tile then fills every lane at any stride and image width, and
/// needs no im2col copy. ResNet-50's stride-2 and 7x7 3x3 convolutions
/// on 2 Sapphire Rapids cores, with their im2col copies: 1.24 -> 1.14,
/// 1.35 -> 0.91 and 1.07 -> 1.06 ms (stride 2), 1.14-1.18 -> 1.04 ms (7x7).
bool packedConvTakes(linalg::Conv2DNchwFchwOp conv, unsigned vectorBits) {
  return packsConvWeights(vectorBits) && isPackableConv(conv, vectorBits / 32);
}

/// Whether a convolution with a larger kernel runs faster as im2col and a
/// product than as kiln-vectorize-conv's direct register tile: when it is
/// strided (the direct tile gathers every s-th input column). Measured on
/// a Zen 3 core pair, ResNet-50's stride-2 3x3 convolutions: 4.0-5.3 ->
/// 1.5-3.2 ms each. At stride 1 neither wins throughout (the im2col copy
/// is KH x KW times the image and the product reads it unpacked), nor for
/// an RGB stem (3 channels: 147 products a pixel). The columns live in
/// the arena: up to 32 MiB of them (ResNet-50's largest, at batch 8: 28
/// MiB), past that the convolution stays direct.
/// Nor at stride 1, but where the image is narrow against the vector
/// register (7 columns on AVX-512): the direct tile's vectors are then
/// half-width ones, at most half full, while the product's columns are
/// all the pixels (49, in four 16-lane panels). ResNet-50's 7x7 3x3
/// convolutions on 2 Sapphire Rapids cores: 184 -> 289 GFLOP/s.
/// Always where the direct tile does not take the convolution at all (a
/// column stride over 2, a dilation): it would run as scalar loops. And
/// where the windows do not overlap (a ViT's 16x16 patches at stride 16):
/// the columns are the image itself, reordered, and the product beats the
/// packed tile too, whose every tap broadcasts one input element. ViT-B/16's
/// patch embedding on 2 Zen 2 cores: 51 ms as scalar loops, 2.86 ms
/// packed, 1.44 ms as a product (AVX-512 not measured).
/// Otherwise not where kiln-pack-conv-weights takes the convolution.
bool im2colWins(linalg::Conv2DNchwFchwOp conv, int64_t C, int64_t KH, int64_t KW,
                ArrayRef<int64_t> strides, int64_t OW, int64_t columnBytes,
                unsigned vectorBits) {
  if (columnBytes > (int64_t(32) << 20))
    return false;
  if (strides[0] >= KH && strides[1] >= KW && C * KH * KW >= 16)
    return true;
  if (packedConvTakes(conv, vectorBits))
    return false;
  if (!isRegisterTiledConv(conv))
    return true;
  bool narrow = OW * 2 <= int64_t(vectorBits / 32);
  return C >= 16 && (narrow || llvm::any_of(strides, [](int64_t s) { return s > 1; }));
}

/// The pixel-collapsed [N, F, OH*OW] product of a 1x1 convolution (or of
/// a strided one's im2col columns), expanded back to the convolution's
/// shape; null when `conv` stays a convolution.
tensor::ExpandShapeOp rewriteConv(RewriterBase &b, linalg::Conv2DNchwFchwOp conv,
                                  unsigned vectorBits) {
  Value x = conv.getInputs()[0], w = conv.getInputs()[1], init = conv.getOutputs()[0];
  if (!conv.hasPureTensorSemantics() || !isStaticF32(x) || !isStaticF32(w) || !isStaticF32(init))
    return {};
  auto wt = cast<RankedTensorType>(w.getType());
  int64_t KH = wt.getDimSize(2), KW = wt.getDimSize(3);
  auto it = cast<RankedTensorType>(x.getType()), ot = cast<RankedTensorType>(init.getType());
  int64_t N = it.getDimSize(0), C = it.getDimSize(1), OH = ot.getDimSize(2),
          OW = ot.getDimSize(3);
  SmallVector<int64_t> strides(conv.getStrides().getValues<int64_t>());
  SmallVector<int64_t> dilations(conv.getDilations().getValues<int64_t>());
  // A 1x1 one on a narrow image too: the product's pixel panels would be
  // 49 of 64 lanes at 7x7. ResNet-50's last-stage 1x1 kernels on 2
  // Sapphire Rapids cores: 4.2 -> 3.7 ms.
  bool narrow = OW * 2 <= int64_t(vectorBits / 32);
  if (KH == 1 && KW == 1 && narrow && packedConvTakes(conv, vectorBits))
    return {};
  // A dynamic batch: the columns sized for one image (they come from the
  // session's allocator, not the arena).
  int64_t images = ShapedType::isDynamic(N) ? 1 : N;
  if ((KH != 1 || KW != 1) &&
      !im2colWins(conv, C, KH, KW, strides, OW, images * C * KH * KW * OH * OW * 4, vectorBits))
    return {};
  Location loc = conv.getLoc();
  MLIRContext *ctx = b.getContext();
  auto dim = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  b.setInsertionPoint(conv);
  if (KH != 1 || KW != 1 || strides[0] != 1 || strides[1] != 1 || it.getDimSize(2) != OH ||
      it.getDimSize(3) != OW) {
    // The image's columns as the product reads them, [N, C, KH, KW, OH,
    // OW] (im2col; for a strided 1x1, every s-th pixel of every s-th
    // row): contiguous rows of pixels per (c, kh, kw).
    auto st = RankedTensorType::get({N, C, KH, KW, OH, OW}, b.getF32Type());
    SmallVector<Value> batch;
    if (ShapedType::isDynamic(N))
      batch.push_back(tensor::DimOp::create(b, loc, x, 0));
    Value empty = tensor::EmptyOp::create(b, loc, st.getShape(), st.getElementType(), batch);
    auto in = AffineMap::get(6, 0,
                             {dim(0), dim(1), dim(4) * strides[0] + dim(2) * dilations[0],
                              dim(5) * strides[1] + dim(3) * dilations[1]},
                             ctx);
    Value cols = linalg::GenericOp::create(
                     b, loc, st, ValueRange{x}, ValueRange{empty},
                     ArrayRef<AffineMap>{in, AffineMap::getMultiDimIdentityMap(6, ctx)},
                     SmallVector<utils::IteratorType>(6, utils::IteratorType::parallel),
                     [](OpBuilder &nb, Location l, ValueRange a) {
                       linalg::YieldOp::create(nb, l, a[0]);
                     })
                     .getResult(0);
    x = tensor::CollapseShapeOp::create(
        b, loc, cols, SmallVector<ReassociationIndices>{{0}, {1, 2, 3}, {4}, {5}});
  }
  SmallVector<ReassociationIndices> pixels{{0}, {1}, {2, 3}};
  Value xc = tensor::CollapseShapeOp::create(b, loc, x, pixels);
  Value wc = tensor::CollapseShapeOp::create(b, loc, w, SmallVector<ReassociationIndices>{{0}, {1, 2, 3}});
  Value ic = tensor::CollapseShapeOp::create(b, loc, init, pixels);
  // Loops (n, f, p, c).
  auto product = linalg::GenericOp::create(
      b, loc, ic.getType(), ValueRange{wc, xc}, ValueRange{ic},
      ArrayRef<AffineMap>{AffineMap::get(4, 0, {dim(1), dim(3)}, ctx),
                          AffineMap::get(4, 0, {dim(0), dim(3), dim(2)}, ctx),
                          AffineMap::get(4, 0, {dim(0), dim(1), dim(2)}, ctx)},
      SmallVector<utils::IteratorType>{utils::IteratorType::parallel, utils::IteratorType::parallel,
                                       utils::IteratorType::parallel,
                                       utils::IteratorType::reduction},
      [](OpBuilder &nb, Location l, ValueRange a) {
        Value m = arith::MulFOp::create(nb, l, a[0], a[1]);
        linalg::YieldOp::create(nb, l, ValueRange{arith::AddFOp::create(nb, l, a[2], m)});
      });
  auto expand = tensor::ExpandShapeOp::create(b, loc, ot, product.getResult(0), pixels);
  b.replaceOp(conv, expand.getResult());
  return expand;
}

/// `op` with each input read at constant 0 along some unit dimensions (a
/// per-channel bias as [1, F, 1, 1] at (n, f, 0, 0)) reading it with those
/// dimensions collapsed away instead, so its maps are projected
/// permutations; `op` itself when there are none.
linalg::GenericOp dropConstantIndices(RewriterBase &b, linalg::GenericOp op) {
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  bool changed = false;
  b.setInsertionPoint(op);
  for (OpOperand *in : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(in);
    auto type = dyn_cast<RankedTensorType>(in->get().getType());
    SmallVector<AffineExpr> kept;
    SmallVector<ReassociationIndices> groups;
    bool constant = false, ok = type != nullptr;
    for (auto [i, e] : llvm::enumerate(map.getResults())) {
      auto c = dyn_cast<AffineConstantExpr>(e);
      if (c && ok && c.getValue() == 0 && type.getDimSize(i) == 1) {
        constant = true;
        if (groups.empty()) // leading: joins the first kept dimension
          continue;
        groups.back().push_back(i);
        continue;
      }
      if (groups.empty()) {
        groups.push_back({});
        for (unsigned j = 0; j < i; ++j)
          groups.back().push_back(j);
      } else {
        groups.push_back({});
      }
      groups.back().push_back(i);
      kept.push_back(e);
    }
    if (!constant || !ok) {
      inputs.push_back(in->get());
      maps.push_back(map);
      continue;
    }
    if (kept.empty())
      groups.clear(); // every dimension a unit: rank 0
    inputs.push_back(tensor::CollapseShapeOp::create(b, op.getLoc(), in->get(), groups));
    maps.push_back(AffineMap::get(map.getNumDims(), 0, kept, op.getContext()));
    changed = true;
  }
  if (!changed)
    return op;
  for (OpOperand &init : op.getDpsInitsMutable())
    maps.push_back(op.getMatchingIndexingMap(&init));
  auto copy = linalg::GenericOp::create(b, op.getLoc(), op.getResultTypes(), inputs,
                                        op.getDpsInits(), maps, op.getIteratorTypesArray());
  b.inlineRegionBefore(op.getRegion(), copy.getRegion(), copy.getRegion().begin());
  b.replaceOp(op, copy.getResults());
  return copy;
}

/// An elementwise op over the 4-D shape that reads `operand` (a pixel
/// expand) as it writes, and whose maps keep the pixel loops (2, 3)
/// together: collapsible onto the product's shape.
bool collapsible(OpOperand &operand) {
  auto op = dyn_cast<linalg::GenericOp>(operand.getOwner());
  if (!op || !op.hasPureTensorSemantics() || op.getNumLoops() != 4 ||
      op.getNumLoops() != op.getNumParallelLoops() || !op.isDpsInput(&operand))
    return false;
  if (!op.getMatchingIndexingMap(&operand).isIdentity())
    return false;
  for (OpOperand &init : op.getDpsInitsMutable())
    if (!op.getMatchingIndexingMap(&init).isIdentity())
      return false;
  // Constant indices (unit broadcasts) are dropped before collapsing, so
  // the pixel loops are checked without them: areDimSequencesPreserved
  // takes projected permutations only (it casts every result to a
  // dimension; a constant's read garbage, and MobileNetV2 compiled to 34
  // or 40 kernels from run to run).
  SmallVector<AffineMap> dimsOnly;
  for (AffineMap m : op.getIndexingMapsArray()) {
    llvm::SmallBitVector constants(m.getNumResults());
    for (auto [i, e] : llvm::enumerate(m.getResults())) {
      auto c = dyn_cast<AffineConstantExpr>(e);
      if (c && c.getValue() == 0)
        constants.set(i);
      else if (!isa<AffineDimExpr>(e))
        return false;
    }
    dimsOnly.push_back(m.dropResults(constants));
  }
  return linalg::areDimSequencesPreserved(dimsOnly, {{2, 3}});
}

struct KilnPointwiseConvAsMatmulPass final
    : impl::KilnPointwiseConvAsMatmulBase<KilnPointwiseConvAsMatmulPass> {
  using Base::Base;
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    IRRewriter rewriter(&getContext());
    SmallVector<linalg::Conv2DNchwFchwOp> convs;
    fn.walk([&](linalg::Conv2DNchwFchwOp c) { convs.push_back(c); });
    SmallVector<tensor::ExpandShapeOp> worklist;
    for (linalg::Conv2DNchwFchwOp c : convs)
      if (tensor::ExpandShapeOp e = rewriteConv(rewriter, c, vectorBits))
        worklist.push_back(e);
    // Down the elementwise ops after each product: each collapsed one
    // hands its own expand on.
    while (!worklist.empty()) {
      tensor::ExpandShapeOp e = worklist.pop_back_val();
      llvm::SetVector<linalg::GenericOp> users;
      for (OpOperand &use : e->getUses())
        if (collapsible(use))
          users.insert(cast<linalg::GenericOp>(use.getOwner()));
      for (linalg::GenericOp op : users) {
        op = dropConstantIndices(rewriter, op);
        SmallVector<AffineMap> maps = op.getIndexingMapsArray();
        if (!llvm::all_of(maps, [](AffineMap m) { return m.isProjectedPermutation(); }) ||
            !linalg::areDimSequencesPreserved(maps, {{2, 3}}))
          continue;
        rewriter.setInsertionPoint(op);
        FailureOr<linalg::CollapseResult> r =
            linalg::collapseOpIterationDims(op, {{0}, {1}, {2, 3}}, rewriter);
        if (failed(r))
          continue;
        rewriter.replaceOp(op, r->results);
        for (Value v : r->results)
          if (auto next = v.getDefiningOp<tensor::ExpandShapeOp>())
            worklist.push_back(next);
      }
    }
  }
};

} // namespace
} // namespace kiln

//===- PackConvWeights.cpp - kiln-pack-conv-weights -----------------------===//
//
//   linalg.conv_2d_nchw_fchw ins(%x, %W) outs(%y)      W a constant [F, C, KH, KW]
// =>
//   linalg.generic (n, f, oh, ow, c, kh, kw)
//     ins(x(n, c, oh*sh + kh, ow*sw + kw), Wp(f floordiv P, c, kh, kw, f mod P))
//     outs(y(n, f, oh, ow))
//   with Wp = W as [F/P, C, KH, KW, P] (P: lanes of a vector), packed now
//
// The NCHW direct tile (kiln-vectorize-conv) puts output columns in the
// vector lanes: a 56-wide row fills 3.5 vectors of 16, a 14-wide one
// 0.875 of one, so about an eighth of every FMA is padding, and the
// stride-2 tile loads twice the lanes it keeps. With the weights packed,
// a vector holds P output channels (one panel row, contiguous) and each
// output pixel is one broadcast input element: every lane is used at any
// width and any stride. This is MLAS's and oneDNN's blocked-channel
// kernel, with the activations left in NCHW: the tile's accumulators are
// transposed once at the end of its reduction to store pixel rows. Only
// convolutions whose F is whole vectors; nothing else changes (the same
// products, summed in the same order per output).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/IR/ConstantData.h"
#include "kiln/Lowering/ConvTiles.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>

namespace kiln {
#define GEN_PASS_DEF_KILNPACKCONVWEIGHTS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {

namespace {
/// The maps of a packed convolution with these strides and lanes.
SmallVector<AffineMap> packedConvMaps(MLIRContext *ctx, int64_t sh, int64_t sw, int64_t lanes) {
  AffineExpr n, f, oh, ow, c, kh, kw;
  bindDims(ctx, n, f, oh, ow, c, kh, kw);
  return {AffineMap::get(7, 0, {n, c, oh * sh + kh, ow * sw + kw}, ctx),
          AffineMap::get(7, 0, {f.floorDiv(lanes), c, kh, kw, f % lanes}, ctx),
          AffineMap::get(7, 0, {n, f, oh, ow}, ctx)};
}
} // namespace

std::optional<PackedConv> matchPackedConv(Operation *op) {
  auto g = dyn_cast_or_null<linalg::GenericOp>(op);
  if (!g || g.getNumDpsInputs() != 2 || g.getNumDpsInits() != 1 || g.getNumLoops() != 7 ||
      g.getNumParallelLoops() != 4)
    return std::nullopt;
  auto wType = dyn_cast<ShapedType>(g.getDpsInputs()[1].getType());
  if (!wType || wType.getRank() != 5 || !wType.hasStaticShape())
    return std::nullopt;
  SmallVector<AffineMap> maps = g.getIndexingMapsArray();
  // The strides are the coefficients of oh and ow in the input's rows and
  // columns; the whole maps must then be the packed ones.
  auto stride = [](AffineExpr e) -> int64_t {
    auto sum = dyn_cast<AffineBinaryOpExpr>(e);
    if (!sum || sum.getKind() != AffineExprKind::Add)
      return 0;
    auto mul = dyn_cast<AffineBinaryOpExpr>(sum.getLHS());
    if (!mul || mul.getKind() != AffineExprKind::Mul)
      return isa<AffineDimExpr>(sum.getLHS()) ? 1 : 0;
    auto c = dyn_cast<AffineConstantExpr>(mul.getRHS());
    return c ? c.getValue() : 0;
  };
  if (maps[0].getNumResults() != 4)
    return std::nullopt;
  PackedConv p{stride(maps[0].getResult(2)), stride(maps[0].getResult(3)), wType.getDimSize(4)};
  if (p.sh < 1 || p.sw < 1 || maps != packedConvMaps(op->getContext(), p.sh, p.sw, p.lanes))
    return std::nullopt;
  // out += in * w
  Block &body = g.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getValues()[0].getDefiningOp<arith::AddFOp>();
  if (body.getOperations().size() != 3 || !add)
    return std::nullopt;
  auto mul = add.getRhs().getDefiningOp<arith::MulFOp>();
  if (!mul || add.getLhs() != body.getArgument(2) || mul.getLhs() != body.getArgument(0) ||
      mul.getRhs() != body.getArgument(1))
    return std::nullopt;
  return p;
}

bool isPackableConv(Operation *op, int64_t lanes) {
  auto conv = dyn_cast_or_null<linalg::Conv2DNchwFchwOp>(op);
  if (!conv || !conv.hasPureTensorSemantics() || lanes < 1)
    return false;
  for (Value v : conv->getOperands()) {
    // A dynamic batch is fine: the weights and each image are static.
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || !t.getElementType().isF32() ||
        llvm::any_of(llvm::seq<int64_t>(1, t.getRank()), [&](int64_t d) { return t.isDynamicDim(d); }))
      return false;
  }
  if (!llvm::all_of(conv.getDilations().getValues<int64_t>(), [](int64_t d) { return d == 1; }))
    return false;
  Value w = conv.getInputs()[1];
  auto constant = w.getDefiningOp<arith::ConstantOp>();
  auto type = cast<RankedTensorType>(w.getType());
  if (!constant || type.getDimSize(0) % lanes)
    return false;
  return isa<SplatElementsAttr>(constant.getValue()) ||
         constantData(constant.getValue()).size() == size_t(type.getNumElements()) * sizeof(float);
}

namespace {

/// `raw` [F, C, KH, KW] as [F/P, C, KH, KW, P].
Value packConstant(OpBuilder &b, Location loc, ArrayRef<char> raw, ArrayRef<int64_t> shape,
                   int64_t lanes) {
  int64_t F = shape[0], inner = shape[1] * shape[2] * shape[3];
  std::vector<char> packed(F * inner * sizeof(float));
  const float *src = reinterpret_cast<const float *>(raw.data());
  float *dst = reinterpret_cast<float *>(packed.data());
  for (int64_t f = 0; f < F; ++f)
    for (int64_t i = 0; i < inner; ++i)
      dst[((f / lanes) * inner + i) * lanes + f % lanes] = src[f * inner + i];
  auto type = RankedTensorType::get({F / lanes, shape[1], shape[2], shape[3], lanes},
                                    b.getF32Type());
  return arith::ConstantOp::create(
      b, loc,
      cast<TypedAttr>(DenseResourceElementsAttr::get(
          type, "packed_conv",
          HeapAsmResourceBlob::allocateAndCopyWithAlign(packed, alignof(std::max_align_t)))));
}

bool packWeights(linalg::Conv2DNchwFchwOp conv, int64_t lanes,
                 llvm::DenseMap<Value, Value> &packed) {
  if (!isPackableConv(conv, lanes))
    return false;
  Value w = conv.getInputs()[1];
  auto constant = w.getDefiningOp<arith::ConstantOp>();
  auto type = cast<RankedTensorType>(w.getType());
  auto splat = dyn_cast<SplatElementsAttr>(constant.getValue());
  ArrayRef<char> raw = constantData(constant.getValue());
  ArrayRef<int64_t> shape = type.getShape();
  Value &copy = packed[w];
  if (!copy) {
    OpBuilder atConstant(constant); // dominates every convolution reading it
    auto packedType =
        RankedTensorType::get({shape[0] / lanes, shape[1], shape[2], shape[3], lanes},
                              atConstant.getF32Type());
    copy = splat ? arith::ConstantOp::create(atConstant, constant.getLoc(),
                                             splat.resizeSplat(packedType))
                       .getResult()
                 : packConstant(atConstant, constant.getLoc(), raw, shape, lanes);
  }
  auto strides = llvm::to_vector(conv.getStrides().getValues<int64_t>());
  OpBuilder b(conv);
  SmallVector<utils::IteratorType> iterators(4, utils::IteratorType::parallel);
  iterators.append(3, utils::IteratorType::reduction);
  auto repl = linalg::GenericOp::create(
      b, conv.getLoc(), conv->getResultTypes(), ValueRange{conv.getInputs()[0], copy},
      conv.getOutputs(), packedConvMaps(b.getContext(), strides[0], strides[1], lanes),
      iterators, [](OpBuilder &nb, Location loc, ValueRange args) {
        Value product = arith::MulFOp::create(nb, loc, args[0], args[1]);
        linalg::YieldOp::create(nb, loc, ValueRange{arith::AddFOp::create(nb, loc, args[2], product)});
      });
  repl->setDiscardableAttrs(conv->getDiscardableAttrDictionary());
  conv->replaceAllUsesWith(repl->getResults());
  conv.erase();
  return true;
}

struct KilnPackConvWeightsPass final : impl::KilnPackConvWeightsBase<KilnPackConvWeightsPass> {
  using Base::Base;
  void runOnOperation() override {
    if (vectorBits < 128)
      return;
    SmallVector<linalg::Conv2DNchwFchwOp> convs;
    getOperation().walk([&](linalg::Conv2DNchwFchwOp c) { convs.push_back(c); });
    llvm::DenseMap<Value, Value> packed;
    for (linalg::Conv2DNchwFchwOp c : convs)
      (void)packWeights(c, vectorBits / 32, packed);
  }
};

} // namespace
} // namespace kiln

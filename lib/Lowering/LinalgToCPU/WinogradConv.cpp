//===- WinogradConv.cpp - kiln-winograd-conv -------------------------------===//
//
//   linalg.conv_2d_nchw_fchw ins(%x : [N, C, mTY+2, mTX+2], %w : [F, C, 3, 3] constant)
//                            outs(%y0 : [N, F, mTY, mTX])      (unit strides, dilations)
// =>                                                  (m = 4 or 2, t = m + 2)
//   %v = linalg.generic {kiln.winograd = "input"} (p, c, n, ty, tx)
//          ins(x(n, c, m ty + a, m tx + b) for a, b < t) outs([t^2, C, N, TY, TX])
//   %m = linalg.generic (p, f, t, c)  m[p, f, t] += u[p, f, c] * v[p, c, t]
//          (u = G w G^T as [t^2, F, C], computed now; t = (n, ty, tx))
//   (v packed in panels of the vector's P tiles: all images' with a static
//   batch, each image's with a dynamic one, whose m is then [t^2, N, F, T])
//   %y = linalg.generic {kiln.winograd = "output"} (n, f, ty, i, tx, j)
//          ins(m(p, f, n, ty, tx) for p < t^2) outs(%y0 as [N, F, TY, m, TX, m])
//
// Winograd's minimal filtering, F(m x m, 3x3) (Lavin and Gray, 2015): each
// m x m block of outputs comes from its t x t input tile with t^2
// multiplications per input and output channel instead of 9 m^2 (36
// against 144 for F(4x4, 3x3), 16 against 36 for F(2x2, 3x3)); the
// transforms' additions are done once per tile and channel, not per
// output channel. A ResNet-50 3x3 convolution runs at the FMA peak already
// (kiln-pack-conv-weights), so fewer multiplications are the only way left
// to make it faster: 4x fewer (2.25x), as t^2 products that
// kiln-vectorize-matmul tiles like any other, for two passes over memory
// (the transformed tiles and the products, 2.25x the image and the output
// with 4x4 blocks, 4x with 2x2). Wide channels only (the products' depth
// is C): at 64 channels the products run too far below the peak to pay
// for those passes. The transforms' bodies select one of t^2 (m^2)
// results per element, exact but slow as loops; kiln-vectorize-winograd
// computes them all at once. Sums are taken in another order than the
// direct convolution's, through G's fractions (1/6, 1/24 for 4x4 blocks)
// and B's and A's integers up to 8: the results differ from the direct
// sums by a few units in the 6th digit with 4x4 blocks, in the last bits
// with 2x2.
//
//===----------------------------------------------------------------------===//

#include "Winograd.h"

#include "kiln/Dialects/Kiln/IR/ConstantData.h"
#include "kiln/Lowering/Passes.h"
#include "kiln/Lowering/VectorRows.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

namespace kiln {
#define GEN_PASS_DEF_KILNWINOGRADCONV
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The filter's weights as floats (a splat repeated), or empty.
std::vector<float> weights(Value w) {
  auto constant = w.getDefiningOp<arith::ConstantOp>();
  if (!constant)
    return {};
  int64_t count = cast<ShapedType>(w.getType()).getNumElements();
  if (auto splat = dyn_cast<SplatElementsAttr>(constant.getValue()))
    return std::vector<float>(count, splat.getSplatValue<float>());
  ArrayRef<char> raw = constantData(constant.getValue());
  if (raw.size() != size_t(count) * sizeof(float))
    return {};
  std::vector<float> out(count);
  std::memcpy(out.data(), raw.data(), raw.size());
  return out;
}

/// u[p][f][c] = (G g G^T)[p / t][p % t] for g = w[f][c], G the (t = m +
/// 2) x 3 matrix of F(mxm, 3x3), in double before the rounding to f32.
Value filterTransform(OpBuilder &b, Location loc, const std::vector<float> &w, int64_t F,
                      int64_t C, int64_t m) {
  ArrayRef<double> G = winograd::filterMatrix(m);
  int64_t t = m + 2;
  std::vector<float> u(t * t * F * C);
  for (int64_t f = 0; f < F; ++f)
    for (int64_t c = 0; c < C; ++c) {
      const float *g = &w[(f * C + c) * 9];
      for (int64_t xi = 0; xi < t; ++xi)
        for (int64_t nu = 0; nu < t; ++nu) {
          double s = 0;
          for (int kh = 0; kh < 3; ++kh)
            for (int kw = 0; kw < 3; ++kw)
              s += G[3 * xi + kh] * double(g[kh * 3 + kw]) * G[3 * nu + kw];
          u[((t * xi + nu) * F + f) * C + c] = float(s);
        }
    }
  auto type = RankedTensorType::get({t * t, F, C}, b.getF32Type());
  ArrayRef<char> bytes(reinterpret_cast<const char *>(u.data()), u.size() * sizeof(float));
  return arith::ConstantOp::create(
      b, loc,
      cast<TypedAttr>(DenseResourceElementsAttr::get(
          type, "winograd_filter",
          HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, alignof(std::max_align_t)))));
}

/// A zero fill's result: the products need not add to it.
bool isZeroFill(Value v) {
  auto fill = v.getDefiningOp<linalg::FillOp>();
  return fill && matchPattern(fill.getInputs()[0], m_AnyZeroFloat());
}

Value selectOf(OpBuilder &b, Location loc, Value index, ArrayRef<Value> choices) {
  Value result = choices.back();
  for (int64_t k = int64_t(choices.size()) - 2; k >= 0; --k) {
    Value is = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, index,
                                     arith::ConstantIndexOp::create(b, loc, k));
    result = arith::SelectOp::create(b, loc, is, choices[k], result);
  }
  return result;
}

/// The only user of the convolution's output `y` (or of `y` without its
/// unit batch: a single image's ops lose that dimension before this pass)
/// when it is elementwise over it (batch-norm's shift, ReLU, a residual
/// add: fused already) and the output transform can compute it too,
/// writing each output once: its other operands read along the output
/// rows (or one value per row, a channel's bias) at the blocks' places
/// `blocked` (n, f, ty, i, tx, j) -> (n, f, m ty + i, m tx + j), or (f, m
/// ty + i, m tx + j) without the batch.
linalg::GenericOp fusableEpilogue(Value y, AffineMap blocked, int64_t m) {
  if (!y.hasOneUse())
    return {};
  auto e = dyn_cast<linalg::GenericOp>(*y.getUsers().begin());
  int64_t rank = cast<RankedTensorType>(y.getType()).getRank();
  if (!e || e.getNumResults() != 1 || e.getNumLoops() != rank ||
      e.getNumParallelLoops() != rank ||
      !e.hasPureTensorSemantics() || !rows::isElementwiseBody(e.getRegion().front()))
    return {};
  OpOperand *init = e.getDpsInitOperand(0);
  if (!e.getMatchingIndexingMap(init).isIdentity() || init->get().getType() != y.getType() ||
      !e.getMatchingBlockArgument(init).use_empty())
    return {};
  AffineExpr column = m * getAffineDimExpr(4, e.getContext()) + getAffineDimExpr(5, e.getContext());
  for (OpOperand *in : e.getDpsInputOperands()) {
    AffineMap map = e.getMatchingIndexingMap(in);
    if (in->get() == y) {
      if (!map.isIdentity())
        return {};
      continue;
    }
    AffineMap r = map.compose(blocked);
    for (auto [k, expr] : llvm::enumerate(r.getResults()))
      if ((expr.isFunctionOfDim(4) || expr.isFunctionOfDim(5)) &&
          (k + 1 != r.getNumResults() || expr != column))
        return {};
  }
  return e;
}

/// A convolution the rewrite takes, its sizes, and the builders of its
/// three parts.
struct Rewriter {
  linalg::Conv2DNchwFchwOp conv;
  OpBuilder b;
  Location loc;
  MLIRContext *ctx;
  int64_t N = 0, C = 0, F = 0, OH = 0, OW = 0, TY = 0, TX = 0, P = 0;
  int64_t M = 0;           // the output tiles' side: F(M x M, 3x3)
  Value n = {};            // the batch, a value
  bool packed = false;     // the tiles in the products' panels (a static batch)
  bool perImage = false;   // each image's tiles in panels of their own (a dynamic batch)
  bool accumulate = false; // the convolution adds to an accumulator, no zero fill
  bool odd = false;        // a height or width not a multiple of M
  Type f32 = {};

  int64_t side() { return M + 2; }         // the input tiles'
  int64_t points() { return side() * side(); } // products per tile
  OpFoldResult batch() { return ShapedType::isDynamic(N) ? OpFoldResult(n) : b.getIndexAttr(N); }
  SmallVector<Value> dynamicBatch() {
    return ShapedType::isDynamic(N) ? SmallVector<Value>{n} : SmallVector<Value>{};
  }

  /// An empty `type` ([points, ...]) whose planes lie a cache line more
  /// than their size apart. A plane's size is mostly a multiple of 4 KiB
  /// (packed, C x 16 floats), so the 16 stores (or loads) of a vector of
  /// tiles fell into one set of the 8-way L1 and evicted each other:
  /// ResNet-18's input transforms at batch 2, 128 channels 0.67 -> 0.26
  /// ms, 512 channels 0.60 -> 0.43 ms; the output transforms 0.15 -> 0.10.
  /// A bufferization.alloc_tensor, not a tensor.empty: kernel formation
  /// folds a static empty's slice into an empty of the slice's size, and
  /// static batches had lost the padding (ResNet-50 at batch 8 on 2 Zen 2
  /// cores 365.6 -> 345.3 ms, at batch 1 49.6 -> 47.6).
  Value planes(RankedTensorType type, ValueRange dynamic) {
    SmallVector<OpFoldResult> sizes;
    unsigned next = 0;
    OpFoldResult plane = b.getIndexAttr(1);
    AffineExpr s0, s1;
    bindSymbols(ctx, s0, s1);
    for (int64_t d = 1; d < type.getRank(); ++d) {
      OpFoldResult size = type.isDynamicDim(d) ? OpFoldResult(dynamic[next++])
                                               : b.getIndexAttr(type.getDimSize(d));
      sizes.push_back(size);
      plane = affine::makeComposedFoldedAffineApply(b, loc, s0 * s1, {plane, size});
    }
    OpFoldResult padded = affine::makeComposedFoldedAffineApply(b, loc, s0 + 16, {plane});
    SmallVector<Value> dynamicSizes;
    SmallVector<int64_t> flatShape{points()};
    if (auto v = dyn_cast<Value>(padded)) {
      flatShape.push_back(ShapedType::kDynamic);
      dynamicSizes.push_back(v);
    } else {
      flatShape.push_back(*getConstantIntValue(padded));
    }
    Value flat = bufferization::AllocTensorOp::create(b, loc, RankedTensorType::get(flatShape, f32),
                                                      dynamicSizes);
    SmallVector<OpFoldResult> offsets(2, b.getIndexAttr(0)), strides(2, b.getIndexAttr(1));
    Value slice = tensor::ExtractSliceOp::create(
        b, loc, flat, offsets, ArrayRef<OpFoldResult>{b.getIndexAttr(points()), plane}, strides);
    SmallVector<OpFoldResult> shape{b.getIndexAttr(points())};
    shape.append(sizes);
    ReassociationIndices inner = llvm::to_vector(llvm::seq<int64_t>(1, type.getRank()));
    return tensor::ExpandShapeOp::create(b, loc, type, slice,
                                         ArrayRef<ReassociationIndices>{{0}, inner}, shape);
  }

  /// The input transform of `x` (padded for odd sizes): [points, T/P, C,
  /// P] packed as kiln-pack-matmul-weights would (the tiles t = (n, ty,
  /// tx) in panels of P lanes); with a dynamic batch [points, N,
  /// TY*TX/P, C, P], each image's tiles t = (ty, tx) in panels of their
  /// own (the last one's lanes past TY*TX unwritten, their products never
  /// stored); else [points, C, N, TY, TX]. Read in place, unpacked, the
  /// products ran at 155 GFLOP/s against 200 packed (ResNet-50's
  /// 256-channel stage at batch 8); a dynamic ResNet-50 at batch 1, 3x3
  /// convolutions at 7x7 2.15 -> 1.25 ms. Packed, ty and tx appear plainly
  /// in no map but an empty [TY, TX]'s, there so that their ranges can be
  /// inferred.
  Value input(Value x) {
    AffineExpr p, c, in, ty, tx;
    bindDims(ctx, p, c, in, ty, tx);
    SmallVector<AffineMap> maps;
    for (int64_t a = 0; a < side(); ++a)
      for (int64_t col = 0; col < side(); ++col)
        maps.push_back(AffineMap::get(5, 0, {in, c, M * ty + a, M * tx + col}, ctx));
    SmallVector<Value> inputs(points(), x);
    RankedTensorType type;
    SmallVector<Value> dynamic;
    if (packed) {
      AffineExpr tile = (in * TY + ty) * TX + tx;
      inputs.push_back(tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{TY, TX}, f32));
      maps.push_back(AffineMap::get(5, 0, {ty, tx}, ctx));
      maps.push_back(AffineMap::get(5, 0, {p, tile.floorDiv(P), c, tile % P}, ctx));
      type = RankedTensorType::get({points(), (N * TY * TX + P - 1) / P, C, P}, f32);
    } else if (perImage) {
      AffineExpr tile = ty * TX + tx;
      inputs.push_back(tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{TY, TX}, f32));
      maps.push_back(AffineMap::get(5, 0, {ty, tx}, ctx));
      maps.push_back(AffineMap::get(5, 0, {p, in, tile.floorDiv(P), c, tile % P}, ctx));
      type = RankedTensorType::get({points(), N, (TY * TX + P - 1) / P, C, P}, f32);
      dynamic = dynamicBatch();
    } else {
      maps.push_back(AffineMap::getMultiDimIdentityMap(5, ctx));
      type = RankedTensorType::get({points(), C, N, TY, TX}, f32);
      dynamic = dynamicBatch();
    }
    int64_t m = M, count = points();
    auto op = linalg::GenericOp::create(
        b, loc, type, inputs, planes(type, dynamic), maps,
        SmallVector<utils::IteratorType>(5, utils::IteratorType::parallel),
        [&](OpBuilder &nb, Location l, ValueRange args) {
          SmallVector<Value, 36> v =
              winograd::inputTile(nb, l, llvm::to_vector(args.take_front(count)), m);
          linalg::YieldOp::create(nb, l, selectOf(nb, l, linalg::IndexOp::create(nb, l, 0), v));
        });
    op->setAttr(winograd::kAttr, b.getStringAttr("input"));
    return op.getResult(0);
  }

  /// The products over the tiles of all images, [points, F, T]; per image
  /// [points, N, F, TY*TX], the images among the products' outer loops.
  Value products(Value v, const std::vector<float> &g) {
    auto par = utils::IteratorType::parallel;
    Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
    if (perImage) {
      AffineExpr p, in, f, t, c;
      bindDims(ctx, p, in, f, t, c);
      auto type = RankedTensorType::get({points(), N, F, TY * TX}, f32);
      Value init = linalg::FillOp::create(b, loc, zero, planes(type, dynamicBatch())).getResult(0);
      return product(g, v, init,
                     {AffineMap::get(5, 0, {p, f, c}, ctx),
                      AffineMap::get(5, 0, {p, in, t.floorDiv(P), c, t % P}, ctx),
                      AffineMap::get(5, 0, {p, in, f, t}, ctx)},
                     {par, par, par, par, utils::IteratorType::reduction});
    }
    AffineExpr p, f, t, c;
    bindDims(ctx, p, f, t, c);
    int64_t T = ShapedType::isDynamic(N) ? ShapedType::kDynamic : N * TY * TX;
    AffineMap bMap = AffineMap::get(4, 0, {p, t.floorDiv(P), c, t % P}, ctx);
    if (!packed) {
      v = tensor::CollapseShapeOp::create(b, loc, RankedTensorType::get({points(), C, T}, f32), v,
                                          ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3, 4}});
      bMap = AffineMap::get(4, 0, {p, c, t}, ctx);
    }
    auto type = RankedTensorType::get({points(), F, T}, f32);
    SmallVector<Value> dynamic;
    if (ShapedType::isDynamic(T))
      dynamic.push_back(tensor::DimOp::create(b, loc, v, 2));
    Value init = linalg::FillOp::create(b, loc, zero, planes(type, dynamic)).getResult(0);
    return product(g, v, init,
                   {AffineMap::get(4, 0, {p, f, c}, ctx), bMap, AffineMap::get(4, 0, {p, f, t}, ctx)},
                   {par, par, par, utils::IteratorType::reduction});
  }

  /// init += u v, u the filter transformed now, at `maps`.
  Value product(const std::vector<float> &g, Value v, Value init, ArrayRef<AffineMap> maps,
                ArrayRef<utils::IteratorType> iterators) {
    auto op = linalg::GenericOp::create(
        b, loc, init.getType(), ValueRange{filterTransform(b, loc, g, F, C, M), v}, init, maps,
        iterators, [](OpBuilder &nb, Location l, ValueRange args) {
          Value product = arith::MulFOp::create(nb, l, args[0], args[1]);
          linalg::YieldOp::create(nb, l, ValueRange{arith::AddFOp::create(nb, l, args[2], product)});
        });
    return op.getResult(0);
  }

  /// The output transform of the products `m` into MxM blocks of `init`
  /// ([N, F, M TY, M TX], or [F, M TY, M TX] for an epilogue of a single
  /// image's output `y` without its batch), `epilogue`'s body applied to
  /// each output, if any.
  Value output(Value m, Value init, linalg::GenericOp epilogue, AffineMap blocked, Value y) {
    Value m5;
    if (perImage) // [points, N, F, TY*TX]
      m5 = tensor::ExpandShapeOp::create(
          b, loc, RankedTensorType::get({points(), N, F, TY, TX}, f32), m,
          ArrayRef<ReassociationIndices>{{0}, {1}, {2}, {3, 4}},
          SmallVector<OpFoldResult>{b.getIndexAttr(points()), batch(), b.getIndexAttr(F),
                                    b.getIndexAttr(TY), b.getIndexAttr(TX)});
    else // [points, F, N*TY*TX]
      m5 = tensor::ExpandShapeOp::create(
          b, loc, RankedTensorType::get({points(), F, N, TY, TX}, f32), m,
          ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3, 4}},
          SmallVector<OpFoldResult>{b.getIndexAttr(points()), b.getIndexAttr(F), batch(),
                                    b.getIndexAttr(TY), b.getIndexAttr(TX)});
    auto y6Type = RankedTensorType::get({N, F, TY, M, TX, M}, f32);
    auto initType = cast<RankedTensorType>(init.getType());
    SmallVector<ReassociationIndices> blocks{{0}, {1}, {2, 3}, {4, 5}};
    if (initType.getRank() == 3)
      blocks = {{0, 1}, {2, 3}, {4, 5}};
    Value y6 = tensor::ExpandShapeOp::create(
        b, loc, y6Type, init, blocks,
        SmallVector<OpFoldResult>{batch(), b.getIndexAttr(F), b.getIndexAttr(TY),
                                  b.getIndexAttr(M), b.getIndexAttr(TX), b.getIndexAttr(M)});
    AffineExpr on, of, oty, oi, otx, oj;
    bindDims(ctx, on, of, oty, oi, otx, oj);
    SmallVector<AffineMap> maps;
    for (int64_t k = 0; k < points(); ++k) {
      SmallVector<AffineExpr> at{getAffineConstantExpr(k, ctx), of, on, oty, otx};
      if (perImage)
        std::swap(at[1], at[2]);
      maps.push_back(AffineMap::get(6, 0, at, ctx));
    }
    SmallVector<Value> inputs(points(), m5);
    if (epilogue) {
      // The epilogue's other operands, read at each output's place.
      for (OpOperand *in : epilogue.getDpsInputOperands()) {
        if (in->get() == y)
          continue;
        inputs.push_back(in->get());
        maps.push_back(epilogue.getMatchingIndexingMap(in).compose(blocked));
      }
    }
    maps.push_back(AffineMap::getMultiDimIdentityMap(6, ctx));
    bool add = accumulate;
    int64_t side = M, count = points();
    auto op = linalg::GenericOp::create(
        b, loc, y6Type, inputs, y6, maps,
        SmallVector<utils::IteratorType>(6, utils::IteratorType::parallel),
        [&](OpBuilder &nb, Location l, ValueRange args) {
          SmallVector<Value, 16> out =
              winograd::outputTile(nb, l, llvm::to_vector(args.take_front(count)), side);
          Value i = linalg::IndexOp::create(nb, l, 3), j = linalg::IndexOp::create(nb, l, 5);
          SmallVector<Value, 4> rowValues;
          for (int64_t r = 0; r < side; ++r)
            rowValues.push_back(selectOf(nb, l, j, ArrayRef<Value>(out).slice(side * r, side)));
          Value value = selectOf(nb, l, i, rowValues);
          value.getDefiningOp()->setAttr(winograd::kValueAttr, nb.getUnitAttr());
          if (add)
            value = arith::AddFOp::create(nb, l, args.back(), value);
          if (epilogue) {
            Block &body = epilogue.getRegion().front();
            IRMapping map;
            unsigned next = count;
            for (OpOperand *in : epilogue.getDpsInputOperands())
              map.map(epilogue.getMatchingBlockArgument(in), in->get() == y ? value : args[next++]);
            for (Operation &o : body.without_terminator())
              nb.clone(o, map);
            value = map.lookupOrDefault(body.getTerminator()->getOperand(0));
          }
          linalg::YieldOp::create(nb, l, value);
        });
    op->setAttr(winograd::kAttr, b.getStringAttr("output"));
    return tensor::CollapseShapeOp::create(b, loc, initType, op.getResult(0), blocks);
  }
};

/// The products' multiplications (points times tiles) of F(m x m, 3x3)
/// over an oh x ow output, per channel pair and image.
int64_t productCost(int64_t m, int64_t oh, int64_t ow) {
  return (m + 2) * (m + 2) * ((oh + m - 1) / m) * ((ow + m - 1) / m);
}

LogicalResult rewrite(linalg::Conv2DNchwFchwOp conv, int64_t minChannels, int64_t panelLanes,
                      int64_t maxTile) {
  if (!conv.hasPureTensorSemantics() ||
      !llvm::all_of(conv.getStrides().getValues<int64_t>(), [](int64_t s) { return s == 1; }) ||
      !llvm::all_of(conv.getDilations().getValues<int64_t>(), [](int64_t d) { return d == 1; }))
    return failure();
  Value x = conv.getInputs()[0], w = conv.getInputs()[1], init = conv.getOutputs()[0];
  auto xType = cast<RankedTensorType>(x.getType());
  auto wType = cast<RankedTensorType>(w.getType());
  auto yType = cast<RankedTensorType>(init.getType());
  // A dynamic batch is fine: every image's tiles are static.
  for (RankedTensorType t : {xType, wType, yType})
    if (!t.getElementType().isF32() ||
        llvm::any_of(llvm::seq<int64_t>(1, 4), [&](int64_t d) { return t.isDynamicDim(d); }))
      return failure();
  if (wType.isDynamicDim(0))
    return failure();
  Rewriter r{conv, OpBuilder(conv), conv.getLoc(), conv.getContext()};
  r.N = xType.getDimSize(0);
  r.F = wType.getDimSize(0);
  r.C = wType.getDimSize(1);
  r.OH = yType.getDimSize(2);
  r.OW = yType.getDimSize(3);
  if (wType.getDimSize(2) != 3 || wType.getDimSize(3) != 3 || r.C < minChannels ||
      r.F < minChannels || r.OH < 2 || r.OW < 2)
    return failure();
  r.accumulate = !isZeroFill(init);
  bool dynamic = ShapedType::isDynamic(r.N);
  // The tile side with the fewest multiplications among those allowed.
  // Few tiles make products too narrow to pay for the transforms: a
  // single image's 7x7 stage has 16 of F(2x2, 3x3), one panel (1.29 ms
  // against 1.24 ms directly at 512 channels); 49 tiles already won (1.00
  // against 1.18). F(4x4, 3x3) reads a filter 2.25x as large for each
  // tile, so it takes 4 panels: a single image's 14x14 stage, 16 tiles,
  // read its 9.4 MB filters from DRAM at 0.85 ms against F(2x2, 3x3)'s
  // 0.82 (2 Zen 2 cores). A dynamic batch counts one image's tiles: its
  // products are each image's (v in per-image panels), so every image
  // reads all the transformed filters (16/9 of the direct ones for F(2x2,
  // 3x3)); ResNet-50's 7x7 stage at batch 2, 2 SPR cores, 2.1 ms a
  // convolution by F(2x2, 3x3) against 1.9 directly. Yet F(4x4, 3x3)
  // from 3 panels of one image's tiles with a dynamic batch: the 28x28
  // stage's 49 (of 64 lanes) take 36 x 64 point-tiles a product against
  // F(2x2, 3x3)'s 16 x 208, and the images after the first find the
  // filters in L2; dynamic ResNet-50 on 2 SPR cores at 4 / 16 / 32
  // images 0.5 / 2.3 / 4.5% faster, at 1 image 2% slower. An output not
  // a whole number of tiles (ResNet-50's 7x7 stage) takes one more row or
  // column of tiles, of zeros in, cut off out: only onto a zero fill.
  r.M = 0;
  for (int64_t m : winograd::kOutputTiles) {
    int64_t ty = (r.OH + m - 1) / m, tx = (r.OW + m - 1) / m;
    int64_t tiles = (dynamic ? 1 : r.N) * ty * tx;
    bool ragged = r.OH % m || r.OW % m;
    bool narrow = tiles < (m == 2 ? 2 : dynamic ? 3 : 4) * panelLanes;
    if (m > maxTile || narrow || (ragged && r.accumulate))
      continue;
    if (!r.M || productCost(m, r.OH, r.OW) < productCost(r.M, r.OH, r.OW))
      r.M = m;
  }
  if (!r.M)
    return failure();
  r.TY = (r.OH + r.M - 1) / r.M;
  r.TX = (r.OW + r.M - 1) / r.M;
  r.P = panelLanes;
  r.odd = r.OH % r.M || r.OW % r.M;
  std::vector<float> g = weights(w);
  if (g.empty())
    return failure();
  r.packed = !dynamic && r.P >= 4;
  r.perImage = dynamic && r.P >= 4;
  r.f32 = r.b.getF32Type();
  r.n = tensor::DimOp::create(r.b, r.loc, x, 0);
  if (r.odd) {
    SmallVector<int64_t> shape(xType.getShape());
    shape[2] = r.M * r.TY + 2;
    shape[3] = r.M * r.TX + 2;
    x = tensor::createPadHighOp(RankedTensorType::get(shape, r.f32), x,
                                arith::ConstantOp::create(r.b, r.loc, r.b.getF32FloatAttr(0)),
                                /*nofold=*/false, r.loc, r.b);
  }
  Value m = r.products(r.input(x), g);

  AffineExpr on, of, oty, oi, otx, oj;
  bindDims(r.ctx, on, of, oty, oi, otx, oj);
  AffineMap blocked = AffineMap::get(6, 0, {on, of, r.M * oty + oi, r.M * otx + oj}, r.ctx);
  // A single image's epilogue reads the output without its batch.
  Value read = conv.getResult(0);
  tensor::CollapseShapeOp dropBatch;
  if (read.hasOneUse())
    dropBatch = dyn_cast<tensor::CollapseShapeOp>(*read.getUsers().begin());
  if (dropBatch && r.N == 1 && dropBatch.getResultType().getRank() == 3 &&
      dropBatch.getReassociationIndices().front().size() == 2) {
    read = dropBatch.getResult();
    blocked = AffineMap::get(6, 0, {of, r.M * oty + oi, r.M * otx + oj}, r.ctx);
  } else {
    dropBatch = {};
  }
  linalg::GenericOp epilogue =
      (r.odd || r.accumulate) ? linalg::GenericOp() : fusableEpilogue(read, blocked, r.M);
  if (epilogue) {
    // At the epilogue: its operands (its output's init, a residual) may
    // come after the convolution.
    init = epilogue.getDpsInits()[0];
    r.b.setInsertionPoint(epilogue);
  } else if (!r.accumulate) {
    init = tensor::EmptyOp::create(
        r.b, r.loc, RankedTensorType::get({r.N, r.F, r.M * r.TY, r.M * r.TX}, r.f32),
        r.dynamicBatch());
  }
  Value y = r.output(m, init, epilogue, blocked, read);
  if (r.odd) {
    SmallVector<OpFoldResult> offsets(4, r.b.getIndexAttr(0)), strides(4, r.b.getIndexAttr(1));
    SmallVector<OpFoldResult> sizes{r.batch(), r.b.getIndexAttr(r.F), r.b.getIndexAttr(r.OH),
                                    r.b.getIndexAttr(r.OW)};
    y = tensor::ExtractSliceOp::create(r.b, r.loc, yType, y, offsets, sizes, strides);
  }
  if (epilogue) {
    epilogue->replaceAllUsesWith(ValueRange{y});
    epilogue.erase();
    if (dropBatch)
      dropBatch.erase();
  } else {
    conv->replaceAllUsesWith(ValueRange{y});
  }
  conv.erase();
  return success();
}

struct KilnWinogradConvPass final : impl::KilnWinogradConvBase<KilnWinogradConvPass> {
  using Base::Base;
  void runOnOperation() override {
    if (!minChannels)
      return;
    SmallVector<linalg::Conv2DNchwFchwOp> convs;
    getOperation().walk([&](linalg::Conv2DNchwFchwOp c) { convs.push_back(c); });
    for (linalg::Conv2DNchwFchwOp c : convs)
      (void)rewrite(c, minChannels, vectorBits / 32, outputTile);
  }
};

} // namespace
} // namespace kiln

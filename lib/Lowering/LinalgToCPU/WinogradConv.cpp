//===- WinogradConv.cpp - kiln-winograd-conv -------------------------------===//
//
//   linalg.conv_2d_nchw_fchw ins(%x : [N, C, 2TY+2, 2TX+2], %w : [F, C, 3, 3] constant)
//                            outs(%y0 : [N, F, 2TY, 2TX])      (unit strides, dilations)
// =>
//   %v = linalg.generic {kiln.winograd = "input"} (p, c, n, ty, tx)
//          ins(x(n, c, 2ty + a, 2tx + b) for a, b < 4) outs([16, C, N, TY, TX])
//   %m = linalg.generic (p, f, t, c)  m[p, f, t] += u[p, f, c] * v[p, c, t]
//          (u = G w G^T as [16, F, C], computed now; t = (n, ty, tx))
//   (v packed in panels of the vector's P tiles: all images' with a static
//   batch, each image's with a dynamic one, whose m is then [16, N, F, T])
//   %y = linalg.generic {kiln.winograd = "output"} (n, f, ty, i, tx, j)
//          ins(m(p, f, n, ty, tx) for p < 16) outs(%y0 as [N, F, TY, 2, TX, 2])
//
// Winograd's minimal filtering, F(2x2, 3x3) (Lavin and Gray, 2015): each
// 2x2 block of outputs comes from its 4x4 input tile with 16
// multiplications per input and output channel instead of 36; the
// transforms' additions are done once per tile and channel, not per
// output channel. A ResNet-50 3x3 convolution runs at the FMA peak already
// (kiln-pack-conv-weights), so fewer multiplications are the only way left
// to make it faster: 2.25x fewer, as 16 products that
// kiln-vectorize-matmul tiles like any other, for two passes over memory
// (the transformed tiles and the products, 4x the image and the output).
// Wide channels only (the products' depth is C): at 64 channels the
// products run too far below the peak to pay for those passes. The
// transforms' bodies select one of 16 (2x2) results per element, exact
// but slow as loops; kiln-vectorize-winograd computes them all at once.
// Sums are taken in another order than the direct convolution's, with
// G's halves: the results differ in the last bits.
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

namespace kiln::winograd {

SmallVector<Value, 16> inputTile(OpBuilder &b, Location loc, ArrayRef<Value> d) {
  auto add = [&](Value x, Value y) { return arith::AddFOp::create(b, loc, x, y).getResult(); };
  auto sub = [&](Value x, Value y) { return arith::SubFOp::create(b, loc, x, y).getResult(); };
  // B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1] along each tile row, then
  // down each column.
  auto transform = [&](Value x0, Value x1, Value x2, Value x3) {
    return std::array<Value, 4>{sub(x0, x2), add(x1, x2), sub(x2, x1), sub(x1, x3)};
  };
  std::array<std::array<Value, 4>, 4> rows;
  for (int a = 0; a < 4; ++a)
    rows[a] = transform(d[4 * a], d[4 * a + 1], d[4 * a + 2], d[4 * a + 3]);
  SmallVector<Value, 16> v(16);
  for (int nu = 0; nu < 4; ++nu) {
    std::array<Value, 4> col = transform(rows[0][nu], rows[1][nu], rows[2][nu], rows[3][nu]);
    for (int xi = 0; xi < 4; ++xi)
      v[4 * xi + nu] = col[xi];
  }
  return v;
}

SmallVector<Value, 4> outputTile(OpBuilder &b, Location loc, ArrayRef<Value> m) {
  auto add = [&](Value x, Value y) { return arith::AddFOp::create(b, loc, x, y).getResult(); };
  auto sub = [&](Value x, Value y) { return arith::SubFOp::create(b, loc, x, y).getResult(); };
  // A^T = [1 1 1 0; 0 1 -1 -1] down each column, then along the rows.
  auto transform = [&](Value x0, Value x1, Value x2, Value x3) {
    return std::array<Value, 2>{add(add(x0, x1), x2), sub(sub(x1, x2), x3)};
  };
  std::array<std::array<Value, 2>, 4> cols;
  for (int nu = 0; nu < 4; ++nu)
    cols[nu] = transform(m[nu], m[4 + nu], m[8 + nu], m[12 + nu]);
  SmallVector<Value, 4> y(4);
  for (int i = 0; i < 2; ++i) {
    std::array<Value, 2> row = transform(cols[0][i], cols[1][i], cols[2][i], cols[3][i]);
    y[2 * i] = row[0];
    y[2 * i + 1] = row[1];
  }
  return y;
}

} // namespace kiln::winograd

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

/// u[p][f][c] = (G g G^T)[p / 4][p % 4] for g = w[f][c], G = [1 0 0; 1/2
/// 1/2 1/2; 1/2 -1/2 1/2; 0 0 1].
Value filterTransform(OpBuilder &b, Location loc, const std::vector<float> &w, int64_t F,
                      int64_t C) {
  static constexpr double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  std::vector<float> u(16 * F * C);
  for (int64_t f = 0; f < F; ++f)
    for (int64_t c = 0; c < C; ++c) {
      const float *g = &w[(f * C + c) * 9];
      for (int xi = 0; xi < 4; ++xi)
        for (int nu = 0; nu < 4; ++nu) {
          double s = 0;
          for (int kh = 0; kh < 3; ++kh)
            for (int kw = 0; kw < 3; ++kw)
              s += G[xi][kh] * double(g[kh * 3 + kw]) * G[nu][kw];
          u[((4 * xi + nu) * F + f) * C + c] = float(s);
        }
    }
  auto type = RankedTensorType::get({16, F, C}, b.getF32Type());
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

/// The convolution's only user when it is elementwise over its output
/// (batch-norm's shift, ReLU, a residual add: fused already) and the
/// output transform can compute it too, writing each output once: its
/// other operands read along the output rows (or one value per row, a
/// channel's bias) at the blocks' places `blocked` (n, f, ty, i, tx, j) ->
/// (n, f, 2ty + i, 2tx + j).
linalg::GenericOp fusableEpilogue(linalg::Conv2DNchwFchwOp conv, AffineMap blocked) {
  Value y = conv.getResult(0);
  if (!y.hasOneUse())
    return {};
  auto e = dyn_cast<linalg::GenericOp>(*y.getUsers().begin());
  if (!e || e.getNumResults() != 1 || e.getNumLoops() != 4 || e.getNumParallelLoops() != 4 ||
      !e.hasPureTensorSemantics() || !rows::isElementwiseBody(e.getRegion().front()))
    return {};
  OpOperand *init = e.getDpsInitOperand(0);
  if (!e.getMatchingIndexingMap(init).isIdentity() || init->get().getType() != y.getType() ||
      !e.getMatchingBlockArgument(init).use_empty())
    return {};
  AffineExpr column = 2 * getAffineDimExpr(4, e.getContext()) + getAffineDimExpr(5, e.getContext());
  for (OpOperand *in : e.getDpsInputOperands()) {
    AffineMap m = e.getMatchingIndexingMap(in);
    if (in->get() == y) {
      if (!m.isIdentity())
        return {};
      continue;
    }
    AffineMap r = m.compose(blocked);
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
  int64_t N, C, F, OH, OW, TY, TX, P;
  Value n;              // the batch, a value
  bool packed;          // the tiles in the products' panels (a static batch)
  bool perImage;        // each image's tiles in panels of their own (a dynamic batch)
  bool accumulate;      // the convolution adds to an accumulator, no zero fill
  bool odd;             // an odd height or width
  Type f32;

  OpFoldResult batch() { return ShapedType::isDynamic(N) ? OpFoldResult(n) : b.getIndexAttr(N); }
  SmallVector<Value> dynamicBatch() {
    return ShapedType::isDynamic(N) ? SmallVector<Value>{n} : SmallVector<Value>{};
  }

  /// An empty `type` ([16, ...]) whose 16 planes lie a cache line more
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
    SmallVector<int64_t> flatShape{16};
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
        b, loc, flat, offsets, ArrayRef<OpFoldResult>{b.getIndexAttr(16), plane}, strides);
    SmallVector<OpFoldResult> shape{b.getIndexAttr(16)};
    shape.append(sizes);
    ReassociationIndices inner = llvm::to_vector(llvm::seq<int64_t>(1, type.getRank()));
    return tensor::ExpandShapeOp::create(b, loc, type, slice,
                                         ArrayRef<ReassociationIndices>{{0}, inner}, shape);
  }

  /// The input transform of `x` (padded for odd sizes): [16, T/P, C, P]
  /// packed as kiln-pack-matmul-weights would (the tiles t = (n, ty, tx)
  /// in panels of P lanes); with a dynamic batch [16, N, TY*TX/P, C, P],
  /// each image's tiles t = (ty, tx) in panels of their own (the last
  /// one's lanes past TY*TX unwritten, their products never stored); else
  /// [16, C, N, TY, TX]. Read in place, unpacked, the products ran at 155
  /// GFLOP/s against 200 packed (ResNet-50's 256-channel stage at batch
  /// 8); a dynamic ResNet-50 at batch 1, 3x3 convolutions at 7x7 2.15 ->
  /// 1.25 ms. Packed, ty and tx appear plainly in no map but an empty
  /// [TY, TX]'s, there so that their ranges can be inferred.
  Value input(Value x) {
    AffineExpr p, c, in, ty, tx;
    bindDims(ctx, p, c, in, ty, tx);
    SmallVector<AffineMap> maps;
    for (int a = 0; a < 4; ++a)
      for (int col = 0; col < 4; ++col)
        maps.push_back(AffineMap::get(5, 0, {in, c, 2 * ty + a, 2 * tx + col}, ctx));
    SmallVector<Value> inputs(16, x);
    RankedTensorType type;
    SmallVector<Value> dynamic;
    if (packed) {
      AffineExpr tile = (in * TY + ty) * TX + tx;
      inputs.push_back(tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{TY, TX}, f32));
      maps.push_back(AffineMap::get(5, 0, {ty, tx}, ctx));
      maps.push_back(AffineMap::get(5, 0, {p, tile.floorDiv(P), c, tile % P}, ctx));
      type = RankedTensorType::get({16, (N * TY * TX + P - 1) / P, C, P}, f32);
    } else if (perImage) {
      AffineExpr tile = ty * TX + tx;
      inputs.push_back(tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{TY, TX}, f32));
      maps.push_back(AffineMap::get(5, 0, {ty, tx}, ctx));
      maps.push_back(AffineMap::get(5, 0, {p, in, tile.floorDiv(P), c, tile % P}, ctx));
      type = RankedTensorType::get({16, N, (TY * TX + P - 1) / P, C, P}, f32);
      dynamic = dynamicBatch();
    } else {
      maps.push_back(AffineMap::getMultiDimIdentityMap(5, ctx));
      type = RankedTensorType::get({16, C, N, TY, TX}, f32);
      dynamic = dynamicBatch();
    }
    auto op = linalg::GenericOp::create(
        b, loc, type, inputs, planes(type, dynamic), maps,
        SmallVector<utils::IteratorType>(5, utils::IteratorType::parallel),
        [](OpBuilder &nb, Location l, ValueRange args) {
          SmallVector<Value, 16> v = winograd::inputTile(nb, l, llvm::to_vector(args.take_front(16)));
          linalg::YieldOp::create(nb, l, selectOf(nb, l, linalg::IndexOp::create(nb, l, 0), v));
        });
    op->setAttr(winograd::kAttr, b.getStringAttr("input"));
    return op.getResult(0);
  }

  /// The 16 products over the tiles of all images, [16, F, T]; per image
  /// [16, N, F, TY*TX], the images among the products' outer loops.
  Value products(Value v, const std::vector<float> &g) {
    auto par = utils::IteratorType::parallel;
    Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
    if (perImage) {
      AffineExpr p, in, f, t, c;
      bindDims(ctx, p, in, f, t, c);
      auto type = RankedTensorType::get({16, N, F, TY * TX}, f32);
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
      v = tensor::CollapseShapeOp::create(b, loc, RankedTensorType::get({16, C, T}, f32), v,
                                          ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3, 4}});
      bMap = AffineMap::get(4, 0, {p, c, t}, ctx);
    }
    auto type = RankedTensorType::get({16, F, T}, f32);
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
        b, loc, init.getType(), ValueRange{filterTransform(b, loc, g, F, C), v}, init, maps,
        iterators, [](OpBuilder &nb, Location l, ValueRange args) {
          Value product = arith::MulFOp::create(nb, l, args[0], args[1]);
          linalg::YieldOp::create(nb, l, ValueRange{arith::AddFOp::create(nb, l, args[2], product)});
        });
    return op.getResult(0);
  }

  /// The output transform of the products `m` into 2x2 blocks of `init`
  /// ([N, F, 2TY, 2TX]), `epilogue`'s body applied to each output, if any.
  Value output(Value m, Value init, linalg::GenericOp epilogue, AffineMap blocked) {
    Value m5;
    if (perImage) // [16, N, F, TY*TX]
      m5 = tensor::ExpandShapeOp::create(
          b, loc, RankedTensorType::get({16, N, F, TY, TX}, f32), m,
          ArrayRef<ReassociationIndices>{{0}, {1}, {2}, {3, 4}},
          SmallVector<OpFoldResult>{b.getIndexAttr(16), batch(), b.getIndexAttr(F),
                                    b.getIndexAttr(TY), b.getIndexAttr(TX)});
    else // [16, F, N*TY*TX]
      m5 = tensor::ExpandShapeOp::create(
          b, loc, RankedTensorType::get({16, F, N, TY, TX}, f32), m,
          ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3, 4}},
          SmallVector<OpFoldResult>{b.getIndexAttr(16), b.getIndexAttr(F), batch(),
                                    b.getIndexAttr(TY), b.getIndexAttr(TX)});
    auto y6Type = RankedTensorType::get({N, F, TY, 2, TX, 2}, f32);
    SmallVector<ReassociationIndices> blocks{{0}, {1}, {2, 3}, {4, 5}};
    Value y6 = tensor::ExpandShapeOp::create(
        b, loc, y6Type, init, blocks,
        SmallVector<OpFoldResult>{batch(), b.getIndexAttr(F), b.getIndexAttr(TY),
                                  b.getIndexAttr(2), b.getIndexAttr(TX), b.getIndexAttr(2)});
    AffineExpr on, of, oty, oi, otx, oj;
    bindDims(ctx, on, of, oty, oi, otx, oj);
    SmallVector<AffineMap> maps;
    for (int k = 0; k < 16; ++k) {
      SmallVector<AffineExpr> at{getAffineConstantExpr(k, ctx), of, on, oty, otx};
      if (perImage)
        std::swap(at[1], at[2]);
      maps.push_back(AffineMap::get(6, 0, at, ctx));
    }
    SmallVector<Value> inputs(16, m5);
    Value y = conv.getResult(0);
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
    auto op = linalg::GenericOp::create(
        b, loc, y6Type, inputs, y6, maps,
        SmallVector<utils::IteratorType>(6, utils::IteratorType::parallel),
        [&](OpBuilder &nb, Location l, ValueRange args) {
          SmallVector<Value, 4> out = winograd::outputTile(nb, l, llvm::to_vector(args.take_front(16)));
          Value i = linalg::IndexOp::create(nb, l, 3), j = linalg::IndexOp::create(nb, l, 5);
          Value top = selectOf(nb, l, j, {out[0], out[1]});
          Value bottom = selectOf(nb, l, j, {out[2], out[3]});
          Value value = selectOf(nb, l, i, {top, bottom});
          value.getDefiningOp()->setAttr(winograd::kValueAttr, nb.getUnitAttr());
          if (add)
            value = arith::AddFOp::create(nb, l, args.back(), value);
          if (epilogue) {
            Block &body = epilogue.getRegion().front();
            IRMapping map;
            unsigned next = 16;
            for (OpOperand *in : epilogue.getDpsInputOperands())
              map.map(epilogue.getMatchingBlockArgument(in), in->get() == y ? value : args[next++]);
            for (Operation &o : body.without_terminator())
              nb.clone(o, map);
            value = map.lookupOrDefault(body.getTerminator()->getOperand(0));
          }
          linalg::YieldOp::create(nb, l, value);
        });
    op->setAttr(winograd::kAttr, b.getStringAttr("output"));
    return tensor::CollapseShapeOp::create(b, loc, RankedTensorType::get({N, F, 2 * TY, 2 * TX}, f32),
                                           op.getResult(0), blocks);
  }
};

LogicalResult rewrite(linalg::Conv2DNchwFchwOp conv, int64_t minChannels, int64_t panelLanes) {
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
  r.TY = (r.OH + 1) / 2;
  r.TX = (r.OW + 1) / 2;
  r.P = panelLanes;
  // An odd height or width (ResNet-50's 7x7 stage): the tiles cover one
  // more row or column, of zeros in, cut off out; only onto a zero fill.
  r.odd = r.OH % 2 || r.OW % 2;
  r.accumulate = !isZeroFill(init);
  if (r.odd && r.accumulate)
    return failure();
  // Few tiles make products too narrow to pay for the transforms: a
  // single image's 7x7 stage has 16, one panel (1.29 ms against 1.24 ms
  // directly at 512 channels); 49 tiles already won (1.00 against 1.18).
  bool dynamic = ShapedType::isDynamic(r.N);
  if (!dynamic && r.N * r.TY * r.TX < 2 * panelLanes)
    return failure();
  std::vector<float> g = weights(w);
  if (g.empty())
    return failure();
  r.packed = !dynamic && r.P >= 4;
  r.perImage = dynamic && r.P >= 4;
  r.f32 = r.b.getF32Type();
  r.n = tensor::DimOp::create(r.b, r.loc, x, 0);
  if (r.odd) {
    SmallVector<int64_t> shape(xType.getShape());
    shape[2] = 2 * r.TY + 2;
    shape[3] = 2 * r.TX + 2;
    x = tensor::createPadHighOp(RankedTensorType::get(shape, r.f32), x,
                                arith::ConstantOp::create(r.b, r.loc, r.b.getF32FloatAttr(0)),
                                /*nofold=*/false, r.loc, r.b);
  }
  Value m = r.products(r.input(x), g);

  AffineExpr on, of, oty, oi, otx, oj;
  bindDims(r.ctx, on, of, oty, oi, otx, oj);
  AffineMap blocked = AffineMap::get(6, 0, {on, of, 2 * oty + oi, 2 * otx + oj}, r.ctx);
  linalg::GenericOp epilogue =
      (r.odd || r.accumulate) ? linalg::GenericOp() : fusableEpilogue(conv, blocked);
  if (epilogue) {
    // At the epilogue: its operands (its output's init, a residual) may
    // come after the convolution.
    init = epilogue.getDpsInits()[0];
    r.b.setInsertionPoint(epilogue);
  } else if (!r.accumulate) {
    init = tensor::EmptyOp::create(
        r.b, r.loc, RankedTensorType::get({r.N, r.F, 2 * r.TY, 2 * r.TX}, r.f32), r.dynamicBatch());
  }
  Value y = r.output(m, init, epilogue, blocked);
  if (r.odd) {
    SmallVector<OpFoldResult> offsets(4, r.b.getIndexAttr(0)), strides(4, r.b.getIndexAttr(1));
    SmallVector<OpFoldResult> sizes{r.batch(), r.b.getIndexAttr(r.F), r.b.getIndexAttr(r.OH),
                                    r.b.getIndexAttr(r.OW)};
    y = tensor::ExtractSliceOp::create(r.b, r.loc, yType, y, offsets, sizes, strides);
  }
  if (epilogue) {
    epilogue->replaceAllUsesWith(ValueRange{y});
    epilogue.erase();
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
      (void)rewrite(c, minChannels, vectorBits / 32);
  }
};

} // namespace
} // namespace kiln

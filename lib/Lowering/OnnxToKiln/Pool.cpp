//===- Pool.cpp - ONNX pooling and unpooling => kiln ----------------------===//

#include "Expr.h"
#include "NodeContext.h"
#include "RuntimeShapes.h"

#include <algorithm>
#include <limits>

#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Dialects/Kiln/IR/ShapeUtils.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace kiln {
namespace {

NamedAttribute i64s(NodeContext &nc, StringRef name, ArrayRef<int64_t> v) {
  return nc.b.getNamedAttr(name, nc.b.getDenseI64ArrayAttr(v));
}

/// The node's pooling (its kernel_shape, strides, pads or auto_pad,
/// dilations, ceil_mode, count_include_pad) of `x`.
template <bool isMax> FailureOr<Value> buildPool(NodeContext &nc, Value x) {
  auto xt = cast<RankedTensorType>(x.getType());
  if (xt.getRank() < 3 || xt.getRank() > 5)
    return nc.error("only 1-D, 2-D and 3-D pooling are supported, input has rank " +
                    Twine(xt.getRank()));
  bool is1d = xt.getRank() == 3;
  size_t n = xt.getRank() - 2;
  auto kernel = nc.attrInts("kernel_shape");
  if (kernel.size() != n)
    return nc.error("kernel_shape must have " + Twine(n) + " values");
  auto strides = nc.attrInts("strides", std::vector<int64_t>(n, 1));
  auto dilations = nc.attrInts("dilations", std::vector<int64_t>(n, 1));
  if (!isMax && llvm::any_of(dilations, [](int64_t d) { return d != 1; }))
    return nc.error("dilated average pooling is not supported");
  auto pads = resolvePads(nc, xt.getShape().drop_front(2), kernel, strides, dilations);
  if (failed(pads))
    return failure();
  Value input = x;
  if (is1d) { // as 2-D with a unit height
    input = addUnitHeight(nc, input);
    kernel.insert(kernel.begin(), 1);
    strides.insert(strides.begin(), 1);
    dilations.insert(dilations.begin(), 1);
    *pads = {0, (*pads)[0], 0, (*pads)[1]};
  }
  auto &b = nc.b;
  SmallVector<NamedAttribute> attrs{
      i64s(nc, "kernel_shape", kernel), i64s(nc, "strides", strides), i64s(nc, "pads", *pads),
      b.getNamedAttr("ceil_mode", b.getBoolAttr(nc.attrInt("ceil_mode", 0)))};
  FailureOr<Operation *> op;
  if (isMax) {
    attrs.push_back(i64s(nc, "dilations", dilations));
    op = nc.build<MaxPoolOp>({input}, attrs);
  } else {
    attrs.push_back(
        b.getNamedAttr("count_include_pad", b.getBoolAttr(nc.attrInt("count_include_pad", 0))));
    op = nc.build<AvgPoolOp>({input}, attrs);
  }
  if (failed(op))
    return failure();
  Value r = (*op)->getResult(0);
  return is1d ? dropUnitHeight(nc, r) : r;
}

/// MaxPool's Indices output (2-D): each output's maximum as a flat
/// position in the whole input (row-major, or column-major within each
/// image with storage_order=1), found by gathering every window's values
/// from the input padded with -inf, [N, C, OH*OW, KH*KW], and mapping the
/// argmax through a constant table of the window's positions.
FailureOr<Value> maxPoolIndices(NodeContext &nc, Value x, RankedTensorType pooled) {
  auto xt = cast<RankedTensorType>(x.getType());
  if (xt.getRank() != 4)
    return nc.error("the Indices output is supported for 2-D pooling only");
  auto kernel = nc.attrInts("kernel_shape");
  auto strides = nc.attrInts("strides", std::vector<int64_t>(2, 1));
  auto dilations = nc.attrInts("dilations", std::vector<int64_t>(2, 1));
  auto pads = resolvePads(nc, xt.getShape().drop_front(2), kernel, strides, dilations);
  if (failed(pads) || kernel.size() != 2 || strides.size() != 2 || dilations.size() != 2)
    return failure();
  int64_t N = xt.getDimSize(0), C = xt.getDimSize(1), H = xt.getDimSize(2), W = xt.getDimSize(3);
  int64_t OH = pooled.getDimSize(2), OW = pooled.getDimSize(3), K = kernel[0] * kernel[1];
  if (OH * OW * K > (int64_t(1) << 26) || N * C > (int64_t(1) << 26))
    return nc.error("the Indices output's position tables are past what a constant may hold here");
  // Pad with -inf, at the end as far as ceil_mode's last windows reach.
  int64_t top = (*pads)[0], left = (*pads)[1];
  int64_t bottom =
      std::max((*pads)[2], (OH - 1) * strides[0] + (kernel[0] - 1) * dilations[0] + 1 - H - top);
  int64_t right =
      std::max((*pads)[3], (OW - 1) * strides[1] + (kernel[1] - 1) * dilations[1] + 1 - W - left);
  int64_t HP = H + top + bottom, WP = W + left + right;
  Expr e(nc, x);
  Value padded = e.op<PadOp>(
      {x},
      {i64s(nc, "pads", {0, 0, top, left, 0, 0, bottom, right}),
       nc.b.getNamedAttr("value", nc.b.getF64FloatAttr(-std::numeric_limits<double>::infinity()))});
  bool columnMajor = nc.attrInt("storage_order", 0) != 0;
  KnownTensor windows, positions;
  windows.shape = {OH * OW, K};
  positions.shape = {1, 1, OH * OW, K};
  windows.elementType = positions.elementType = nc.b.getI64Type();
  for (int64_t oh = 0; oh < OH; ++oh)
    for (int64_t ow = 0; ow < OW; ++ow)
      for (int64_t kh = 0; kh < kernel[0]; ++kh)
        for (int64_t kw = 0; kw < kernel[1]; ++kw) {
          int64_t h = oh * strides[0] + kh * dilations[0], w = ow * strides[1] + kw * dilations[1];
          windows.values.push_back(h * WP + w);
          int64_t ih = std::clamp<int64_t>(h - top, 0, H - 1),
                  iw = std::clamp<int64_t>(w - left, 0, W - 1);
          positions.values.push_back(columnMajor ? iw * H + ih : ih * W + iw);
        }
  Value values = e.op<GatherOp>({e.reshape(padded, {N, C, HP * WP}), nc.constant(windows)},
                                {nc.b.getNamedAttr("axis", nc.b.getI64IntegerAttr(2))});
  Value which = e.op<ArgMaxOp>({values}, {nc.b.getNamedAttr("axis", nc.b.getI64IntegerAttr(3)),
                                          nc.b.getNamedAttr("keepdims", nc.b.getBoolAttr(true))});
  Value table = e.broadcastTo(nc.constant(positions), {N, C, OH * OW, K});
  Value index = e.op<GatherElementsOp>({table, which},
                                       {nc.b.getNamedAttr("axis", nc.b.getI64IntegerAttr(3))});
  // Each image's offset in the whole input.
  KnownTensor planes;
  planes.shape = {N, C, 1, 1};
  planes.elementType = nc.b.getI64Type();
  for (int64_t p = 0; p < N * C; ++p)
    planes.values.push_back((double)(p * H * W));
  return e.add(e.reshape(index, {N, C, OH, OW}), nc.constant(planes));
}

template <bool isMax> LogicalResult pool(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  if (!isMax && nc.hasOutput(1))
    return nc.error("AveragePool has one output");
  // MaxPool's 8-bit integers (quantized activations) pool as f32, which
  // holds each of them exactly.
  Type et = cast<RankedTensorType>(x->getType()).getElementType();
  bool bytes = isMax && et.isInteger(8);
  Value in = bytes ? nc.castTo(*x, nc.b.getF32Type()) : *x;
  auto r = buildPool<isMax>(nc, in);
  if (failed(r))
    return failure();
  if (nc.hasOutput(1)) {
    auto indices = maxPoolIndices(nc, in, cast<RankedTensorType>(r->getType()));
    if (failed(indices) || failed(nc.setOutput(1, *indices)))
      return failure();
  }
  return nc.setOutput(0, bytes ? nc.castTo(*r, et) : *r);
}

/// MaxUnpool to an output_shape given as data: each index (a flat position
/// in the pooled input's shape, `inferred`) moved to the same coordinates
/// in the given shape, X scattered there into zeros of that shape. A given
/// dimension smaller than the inferred one makes the first size -1 (the
/// run then fails), as the compile-time path refuses it.
LogicalResult maxUnpoolRuntime(NodeContext &nc, Value x, Value indices,
                               ArrayRef<int64_t> inferred) {
  auto given = runtimeInts(nc, 2, "output_shape");
  if (failed(given))
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  if (!xt.hasStaticShape() || !cast<RankedTensorType>(indices.getType()).hasStaticShape())
    return nc.error("an output_shape given as data needs X and I of static shapes, not " +
                    shapeText(xt.getShape()));
  size_t rank = inferred.size();
  if (given->size() != rank)
    return nc.error("output_shape must have " + Twine(rank) + " values");
  IndexMath m{nc.b, nc.loc};
  Value valid = arith::ConstantIntOp::create(nc.b, nc.loc, 1, 1);
  SmallVector<Value> dims(*given), toStride(rank);
  Value total = m.c(1);
  // (Strides over the larger of the two per dimension: every position
  // stays inside the zeros even where the shape is refused.)
  for (int64_t d = rank - 1; d >= 0; --d) {
    Value fits = m.cmp(arith::CmpIPredicate::sge, dims[d], m.c(inferred[d]));
    valid = m.both(valid, fits);
    toStride[d] = total;
    total = arith::MulIOp::create(nc.b, nc.loc, total, m.sel(fits, dims[d], m.c(inferred[d])));
  }
  dims[0] = m.sel(valid, dims[0], m.c(-1));
  int64_t count = xt.getNumElements();
  Expr e(nc, x);
  Type i64 = nc.b.getI64Type();
  Value flat = e.reshape(nc.castTo(indices, i64), {count});
  auto positions = tensor::GenerateOp::create(
      nc.b, nc.loc, RankedTensorType::get({count}, i64), ValueRange{},
      [&](OpBuilder &b, Location l, ValueRange k) {
        IndexMath bm{b, l};
        Value at = arith::IndexCastOp::create(
            b, l, b.getIndexType(), tensor::ExtractOp::create(b, l, flat, k).getResult());
        Value sum = bm.c(0);
        int64_t fromStride = 1;
        for (int64_t d = rank - 1; d >= 0; --d) {
          Value coordinate = arith::RemUIOp::create(
              b, l, arith::DivUIOp::create(b, l, at, bm.c(fromStride)), bm.c(inferred[d]));
          sum = bm.add(sum, arith::MulIOp::create(b, l, coordinate, toStride[d]));
          fromStride *= inferred[d];
        }
        tensor::YieldOp::create(b, l, arith::IndexCastOp::create(b, l, b.getI64Type(), sum)
                                          .getResult());
      });
  Type et = xt.getElementType();
  Value zero = arith::ConstantOp::create(nc.b, nc.loc, et, nc.b.getZeroAttr(et));
  auto flatType = RankedTensorType::get({ShapedType::kDynamic}, et);
  Value zeros = tensor::SplatOp::create(nc.b, nc.loc, flatType, zero, ValueRange{total});
  Value y = ScatterElementsOp::create(nc.b, nc.loc, flatType, zeros, positions,
                                      e.reshape(x, {count}), nc.b.getI64IntegerAttr(0),
                                      nc.b.getStringAttr("none"));
  auto outType = RankedTensorType::get(SmallVector<int64_t>(rank, ShapedType::kDynamic), et);
  Value out = ReshapeOp::create(nc.b, nc.loc, outType, y, dims);
  recordRuntimeDims(nc, out, dims);
  return nc.setOutput(0, out);
}

/// MaxUnpool: X scattered into zeros of the pooled input's shape, at
/// MaxPool's Indices (flat positions in that whole tensor).
LogicalResult maxUnpool(NodeContext &nc) {
  auto x = nc.input(0), indices = nc.input(1);
  if (failed(x) || failed(indices))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  size_t n = xt.getRank() - 2;
  if (xt.getRank() < 3)
    return nc.error("expects an input of rank 3 or more (N, C, spatial...)");
  auto kernel = nc.attrInts("kernel_shape");
  auto strides = nc.attrInts("strides", std::vector<int64_t>(n, 1));
  auto pads = nc.attrInts("pads", std::vector<int64_t>(2 * n, 0));
  if (kernel.size() != n || strides.size() != n || pads.size() != 2 * n)
    return nc.error("kernel_shape, strides and pads must have " + Twine(n) + ", " + Twine(n) +
                    " and " + Twine(2 * n) + " values");
  SmallVector<int64_t> inferred(xt.getShape().take_front(2));
  for (size_t i = 0; i < n; ++i)
    inferred.push_back((xt.getDimSize(2 + i) - 1) * strides[i] - pads[i] - pads[n + i] + kernel[i]);
  SmallVector<int64_t> shape = inferred;
  if (nc.has(2) && !nc.known(2))
    return maxUnpoolRuntime(nc, *x, *indices, inferred);
  if (nc.has(2)) {
    auto given = nc.constInts(2, "output_shape");
    if (failed(given))
      return failure();
    if (given->size() != shape.size())
      return nc.error("output_shape must have " + Twine(shape.size()) + " values");
    shape.assign(given->begin(), given->end());
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] < inferred[d])
        return nc.error("output_shape dimension " + Twine(d) + " (" + Twine(shape[d]) +
                        ") is smaller than the pooled input's " + Twine(inferred[d]));
  }
  int64_t total = 1;
  for (int64_t d : shape) {
    if (d < 1 || d > (int64_t(1) << 48) / total)
      return nc.error(
          "the output shape must have positive dimensions and fewer than 2^48 elements");
    total *= d;
  }
  Expr e(nc, *x);
  auto flatType = RankedTensorType::get({total}, xt.getElementType());
  Value zeros = ConstantOp::create(
      nc.b, nc.loc, DenseElementsAttr::get(flatType, nc.b.getZeroAttr(xt.getElementType())));
  Type i64 = nc.b.getI64Type();
  Value flatIndex = e.reshape(nc.castTo(*indices, i64), {xt.getNumElements()});
  if (shape != inferred) {
    // The indices are positions in the pooled input's shape; a larger
    // output_shape places each at the same coordinates in its own.
    Expr ie(nc, flatIndex);
    Value remapped;
    int64_t fromStride = 1, toStride = 1;
    for (int64_t d = shape.size() - 1; d >= 0; --d) {
      Value coordinate =
          ie.op<ModOp>({ie.op<DivOp>({flatIndex, ie.c(fromStride)}), ie.c(inferred[d])});
      Value term = ie.mul(coordinate, ie.c(toStride));
      remapped = remapped ? ie.add(remapped, term) : term;
      fromStride *= inferred[d];
      toStride *= shape[d];
    }
    flatIndex = remapped;
  }
  Value y = e.op<ScatterElementsOp>({zeros, flatIndex, e.reshape(*x, {xt.getNumElements()})});
  return nc.setOutput(0, e.reshape(y, shape));
}

LogicalResult globalAvgPool(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  return nc.emit<GlobalAvgPoolOp>({*x});
}

LogicalResult globalMaxPool(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  auto rank = cast<RankedTensorType>(x->getType()).getRank();
  SmallVector<int64_t> axes;
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  return nc.emit<ReduceMaxOp>(
      {*x}, {i64s(nc, "axes", axes), nc.b.getNamedAttr("keepdims", nc.b.getBoolAttr(true))});
}

} // namespace

FailureOr<Value> buildAvgPool(NodeContext &nc, Value x) { return buildPool<false>(nc, x); }

void registerPoolHandlers(HandlerTable &t) {
  t["MaxPool"] = pool<true>;
  t["AveragePool"] = pool<false>;
  t["GlobalAveragePool"] = globalAvgPool;
  t["MaxUnpool"] = maxUnpool;
  t["GlobalMaxPool"] = globalMaxPool;
}

} // namespace kiln

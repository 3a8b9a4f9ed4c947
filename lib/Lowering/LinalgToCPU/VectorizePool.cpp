//===- VectorizePool.cpp - kiln-vectorize-pool -----------------------------===//
//
//   linalg.pooling_nchw_max {strides = [s, s]} ins(%x, %window : [KH, KW]) outs(%y)
// =>
//   scf.parallel (n, c, oh):  for columns ow0 in chunks of L:
//     acc = y[n, c, oh, ow0..]
//     for kh, kw:  acc = max(acc, x[n, c, oh*s + kh, (ow0..)*s + kw])
//     y[n, c, oh, ow0..] = acc
//
// As loops, LLVM unrolled a pool's window and kept one output element at
// a time (ResNet-50's 3x3 stride-2 max pool at batch 8: 1.8 ms, 7
// GFLOP/s). Here a vector of L outputs of a row takes each window tap at
// once; with a stride of 2, a tap's inputs are the even lanes of two
// contiguous vectors (a deinterleaving shuffle). The pool's body (a
// maximum, or a sum for an average pool) is applied lane-wise.
//
// kiln-implicit-padding emits the same loop (emitPaddedPool) for a pool
// reading a pad of its reduction's identity, reading the image itself.
//
//===----------------------------------------------------------------------===//

#include "ConvEpilogue.h"
#include "StridedRows.h"

#include "kiln/Lowering/Passes.h"
#include "kiln/Lowering/VectorRows.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNVECTORIZEPOOL
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Static f32 rows but for the batch, unit dilations, strides of 1 or 2.
template <typename PoolOp>
std::optional<int64_t> poolStride(PoolOp op) {
  if (!op.hasPureBufferSemantics() ||
      !llvm::all_of(op.getDilations().template getValues<int64_t>(), [](int64_t d) { return d == 1; }))
    return std::nullopt;
  auto strides = llvm::to_vector(op.getStrides().template getValues<int64_t>());
  if (strides[1] != 1 && strides[1] != 2)
    return std::nullopt;
  for (Value v : {op.getInputs()[0], op.getOutputs()[0]}) {
    auto t = cast<MemRefType>(v.getType());
    if (!t.getElementType().isF32() || !t.isLastDimUnitStride() ||
        llvm::any_of(llvm::seq<int64_t>(1, 4), [&](int64_t d) { return t.isDynamicDim(d); }))
      return std::nullopt;
  }
  if (!rows::isElementwiseBody(op.getRegion().front()))
    return std::nullopt;
  return strides[1];
}

/// A tap's `count` input columns from static column `start` of `row` (a
/// 1-D view of W), those outside [0, W) `pad` (a vector of count lanes).
Value loadPadded(OpBuilder &b, Location loc, Value row, int64_t start, int64_t count, int64_t W,
                 Value pad) {
  int64_t from = std::max<int64_t>(start, 0), to = std::min(start + count, W);
  if (to <= from)
    return pad;
  auto type = cast<VectorType>(pad.getType());
  Value at = arith::ConstantIndexOp::create(b, loc, from);
  Value v = to - from == count
                ? vector::LoadOp::create(b, loc, type, row, at).getResult()
                : vector::MaskedLoadOp::create(
                      b, loc, type, row, at,
                      vector::ConstantMaskOp::create(
                          b, loc, VectorType::get({count}, b.getI1Type()), to - from),
                      pad)
                      .getResult();
  int64_t shift = from - start; // lanes left of the image: the pad's
  if (shift == 0)
    return v;
  SmallVector<int64_t> lanes;
  for (int64_t l = 0; l < count; ++l)
    lanes.push_back(l < shift ? count + l : l - shift);
  return vector::ShuffleOp::create(b, loc, v, pad, lanes);
}

/// With `pad` (kiln-implicit-padding), reading the image it describes:
/// rows outside it are the pad's row, columns outside it the pad's value
/// (shifted in at the row's first chunks, a masked load's pass-through at
/// its last); the chunks whose taps all read inside the row run in a
/// loop, unmasked.
template <typename PoolOp>
void lower(PoolOp op, unsigned vectorBits, const ImplicitPad *pad = nullptr) {
  std::optional<int64_t> stride = poolStride(op);
  auto window = cast<MemRefType>(op.getInputs()[1].getType());
  if (!stride || !window.hasStaticShape())
    return;
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value x = op.getInputs()[0], y = op.getOutputs()[0];
  auto yType = cast<MemRefType>(y.getType());
  int64_t C = yType.getDimSize(1), OH = yType.getDimSize(2), OW = yType.getDimSize(3);
  int64_t KH = window.getDimSize(0), KW = window.getDimSize(1);
  int64_t sh = op.getStrides().template getValues<int64_t>()[0], sw = *stride;
  StridedRows e{b, loc, StridedRows::lanesFor(OW, vectorBits)};
  int64_t L = e.lanes, count = sw == 1 ? L : 2 * L;
  auto vec = VectorType::get({L}, b.getF32Type()), wide = VectorType::get({count}, b.getF32Type());
  Value padVec = pad ? arith::ConstantOp::create(
                           b, loc, wide, DenseElementsAttr::get(wide, b.getF32FloatAttr(pad->value)))
                     : Value();
  int64_t W = pad ? cast<MemRefType>(pad->source.getType()).getDimSize(3) : 0;
  int64_t low = pad ? pad->lowColumns : 0;
  SmallVector<int64_t> even;
  for (int64_t l = 0; l < L; ++l)
    even.push_back(sw * l);
  Block &body = op.getRegion().front();
  e.parallel({memref::getMixedSize(b, loc, y, 0), b.getIndexAttr(C), b.getIndexAttr(OH)},
             [&](ArrayRef<Value> iv) {
    Value n = iv[0], c = iv[1], oh = iv[2];
    SmallVector<Value> rowsRead; // with the pad: each kh's row, a 1-D view
    for (int64_t kh = 0; pad && kh < KH; ++kh)
      rowsRead.push_back(implicitRow(b, loc, *pad, n, c, e.add(e.times(oh, sh), kh)));
    auto tap = [&](int64_t kh, int64_t kw, Value ow0, std::optional<int64_t> staticOw0,
                   int64_t valid) -> Value {
      if (!pad) {
        SmallVector<Value> at{n, c, e.add(e.times(oh, sh), kh), e.add(e.times(ow0, sw), kw)};
        if (sw == 1)
          return rows::load(b, loc, x, at, L, valid);
        auto [lo, hi] = e.loadPair(x, at, 2 * valid - 1);
        return e.pick(lo, hi, 0, 2);
      }
      Value v = staticOw0 ? loadPadded(b, loc, rowsRead[kh], *staticOw0 * sw + kw - low, count, W,
                                       padVec)
                          : vector::LoadOp::create(b, loc, wide, rowsRead[kh],
                                                   e.add(e.times(ow0, sw), kw - low))
                                .getResult();
      return sw == 1 ? v : vector::ShuffleOp::create(b, loc, v, v, even).getResult();
    };
    // Chunk `ow0` (static where `staticOw0`: a padded row's ends) of
    // `valid` columns.
    auto chunk = [&](Value ow0, std::optional<int64_t> staticOw0, int64_t valid) {
      SmallVector<Value> at{n, c, oh, ow0};
      Value acc = rows::load(b, loc, y, at, L, valid);
      Value unused = arith::ConstantOp::create(b, loc, vec, b.getZeroAttr(vec));
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw)
          acc = rows::applyBody(b, loc, body, {tap(kh, kw, ow0, staticOw0, valid), unused, acc},
                                L)[0];
      rows::store(b, loc, acc, y, at, valid);
    };
    if (!pad) {
      e.chunks(OW, [&](Value ow0, int64_t valid) { chunk(ow0, std::nullopt, valid); });
      return;
    }
    auto inside = [&](int64_t k) {
      return (k + 1) * L <= OW && k * L * sw - low >= 0 && k * L * sw + KW - 1 - low + count <= W;
    };
    int64_t chunks = (OW + L - 1) / L, begin = 0;
    while (begin < chunks && !inside(begin))
      ++begin;
    int64_t end = begin;
    while (end < chunks && inside(end))
      ++end;
    for (int64_t k = 0; k < chunks; ++k) {
      if (k == begin && end > begin) {
        rows::forRange(b, loc, (end - begin) * L, L,
                       [&](Value i) { chunk(e.add(i, begin * L), std::nullopt, L); });
        k = end - 1;
        continue;
      }
      chunk(e.index(k * L), k * L, std::min(L, OW - k * L));
    }
  });
  op.erase();
}

struct KilnVectorizePoolPass final : impl::KilnVectorizePoolBase<KilnVectorizePoolPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<Operation *> pools;
    getOperation().walk([&](Operation *op) {
      if (isa<linalg::PoolingNchwMaxOp, linalg::PoolingNchwSumOp>(op))
        pools.push_back(op);
    });
    for (Operation *op : pools) {
      if (auto max = dyn_cast<linalg::PoolingNchwMaxOp>(op))
        lower(max, vectorBits);
      else
        lower(cast<linalg::PoolingNchwSumOp>(op), vectorBits);
    }
  }
};

} // namespace

bool isVectorizedPool(linalg::LinalgOp op) {
  auto windowIsStatic = [](auto pool) {
    return cast<MemRefType>(pool.getInputs()[1].getType()).hasStaticShape();
  };
  if (auto max = dyn_cast<linalg::PoolingNchwMaxOp>(op.getOperation()))
    return poolStride(max) && windowIsStatic(max);
  if (auto sum = dyn_cast<linalg::PoolingNchwSumOp>(op.getOperation()))
    return poolStride(sum) && windowIsStatic(sum);
  return false;
}

void emitPaddedPool(linalg::LinalgOp op, unsigned vectorBits, const ImplicitPad &pad) {
  if (auto max = dyn_cast<linalg::PoolingNchwMaxOp>(op.getOperation()))
    lower(max, vectorBits, &pad);
  else
    lower(cast<linalg::PoolingNchwSumOp>(op.getOperation()), vectorBits, &pad);
}

} // namespace kiln

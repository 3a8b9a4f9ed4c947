//===- VectorizeConv.cpp - kiln-vectorize-conv: register-tiled convolutions ===//
//
//   linalg.conv_2d_nchw_fchw ins(%in, %w) outs(%out)       (memrefs)
// =>
//   for n, oh0 step OHB, f0 step FB, chunks of columns ow0:
//     acc[FB][OHB][NV] = out[n, f0+i, oh0+r, ow0 + j*VW ...]
//     for c, kh:                            (acc in registers: iter_args)
//       for kw (unrolled):
//         x[r][j] = in[n, c, (oh0+r)*sh + kh, (ow0 + j*VW)*sw + kw ...]
//         acc[i][r][j] = fma(broadcast(w[f0+i, c, kh, kw]), x[r][j], acc[i][r][j])
//     out[...] = acc
//
// Lowered to loops, a convolution's innermost loop updated one output row in
// memory per weight: a load and a store per FMA, about a quarter of the
// FMA units' rate. Here a block of output channels times a few rows of
// output columns stays in vector registers over the whole reduction: each
// input vector feeds FB FMAs and each broadcast weight OHB x NV (the direct
// convolution of ../shared/reading/conv-codegen.md, kept in NCHW: per
// (c, kh, kw) step OHB x NV row loads and FB broadcasts). Stride 2 loads twice the lanes and keeps the
// even ones. The last chunk of a row is masked instead of padded, so any
// width works. Only the row ends of the last chunk read or write under a
// mask; the other chunks run unmasked in a loop.
//
// Kernel formation leaves a convolution's epilogue (bias, ReLU, a residual
// add) right after it in the tile, reading its result from a tile-sized
// temporary. When that is all the temporary is for, the epilogue's body is
// applied to the accumulators in registers and stored to its output, and
// the temporary, its zero fill and the epilogue loop are gone (LLVM would
// vectorize that loop across channels, with gathers and scatters).
//
//===----------------------------------------------------------------------===//

#include "ConvEpilogue.h"
#include "kiln/Lowering/ConvTiles.h"
#include "kiln/Lowering/Passes.h"
#include "kiln/Lowering/VectorRows.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNVECTORIZECONV
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {

namespace {
/// The (row, column) strides and dilations of either convolution.
std::pair<SmallVector<int64_t>, SmallVector<int64_t>> stridesAndDilations(Operation *op) {
  if (auto d = dyn_cast<linalg::DepthwiseConv2DNchwChwOp>(op))
    return {llvm::to_vector(d.getStrides().getValues<int64_t>()),
            llvm::to_vector(d.getDilations().getValues<int64_t>())};
  auto c = cast<linalg::Conv2DNchwFchwOp>(op);
  return {llvm::to_vector(c.getStrides().getValues<int64_t>()),
          llvm::to_vector(c.getDilations().getValues<int64_t>())};
}
} // namespace

bool hasStaticF32ConvOperands(Operation *op) {
  for (Value v : op->getOperands()) {
    auto t = dyn_cast<ShapedType>(v.getType());
    if (!t || !t.getElementType().isF32())
      return false;
    // On tensors a dynamic batch is fine: kernel formation tiles it by one
    // image. The register tile itself (on buffers) needs every size.
    bool staticShape = isa<RankedTensorType>(t)
                           ? llvm::none_of(llvm::seq<int64_t>(1, t.getRank()),
                                           [&](int64_t d) { return t.isDynamicDim(d); })
                           : t.hasStaticShape();
    if (!staticShape)
      return false;
    if (auto m = dyn_cast<MemRefType>(t); m && !m.isLastDimUnitStride())
      return false;
  }
  return true;
}

bool isRegisterTiledConv(Operation *op) {
  bool packed = matchPackedConv(op).has_value();
  if (!packed && !isa_and_present<linalg::Conv2DNchwFchwOp, linalg::DepthwiseConv2DNchwChwOp>(op))
    return false;
  if (!hasStaticF32ConvOperands(op))
    return false;
  if (packed)
    return true;
  auto [strides, dilations] = stridesAndDilations(op);
  return llvm::all_of(dilations, [](int64_t d) { return d == 1; }) &&
         strides[0] >= 1 && (strides[1] == 1 || strides[1] == 2);
}

namespace {

struct ConvShape {
  int64_t N, F, OH, OW, C, KH, KW;
  int64_t H, W; // the rows and columns of the image read (the source with implicit padding)
  int64_t sh, sw;
  bool depthwise; // output channel f reads input channel f alone (C = 1)
};

class ConvEmitter {
public:
  ConvEmitter(RewriterBase &b, Location loc, linalg::LinalgOp op, ConvShape s,
              ConvRegisterTile t, std::optional<Epilogue> epilogue, const ImplicitPad *pad)
      : b(b), loc(loc), in(pad ? pad->source : op.getDpsInputs()[0]), w(op.getDpsInputs()[1]),
        out(op.getDpsInits()[0]), s(s), t(t),
        vec(VectorType::get({t.width}, b.getF32Type())), epilogue(epilogue), pad(pad) {}

  /// The whole convolution: loops over images, rows and channel blocks,
  /// then the columns in chunks of NV vectors.
  void emit() {
    // Images, row blocks and channel blocks are independent: one parallel
    // loop (split over the thread pool when the convolution is not already
    // a tile of a parallel kernel).
    int64_t full = s.OH / t.rows * t.rows;
    rows::forParallel(b, loc, {s.N, full, s.F}, {1, t.rows, t.channels},
                      [&](ArrayRef<Value> iv) { emitColumns(iv[0], iv[1], t.rows, iv[2]); });
    if (full < s.OH) // the rows left, a smaller block
      rows::forParallel(b, loc, {s.N, s.F}, {1, t.channels}, [&](ArrayRef<Value> iv) {
        emitColumns(iv[0], index(full), s.OH - full, iv[1]);
      });
  }

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value a, int64_t c) { return c ? arith::AddIOp::create(b, loc, a, index(c)) : a; }
  Value add(Value a, Value c) { return arith::AddIOp::create(b, loc, a, c); }
  Value mul(Value a, int64_t c) { return c == 1 ? a : arith::MulIOp::create(b, loc, a, index(c)); }

  /// An input row: a memref and the indices before the column's.
  struct Row {
    Value base;
    SmallVector<Value, 3> at;
  };

  /// The input row read by output row `oh` and kernel row `kh` of channel
  /// `c` of image `n` (tile indices); with implicit padding a 1-D view.
  Row inputRow(Value n, Value c, Value oh, Value kh) {
    Value row = add(mul(oh, s.sh), kh);
    if (!pad)
      return {in, {n, c, row}};
    return {implicitRow(b, loc, *pad, n, c, row), {}};
  }

  /// `lanes` elements of `row` from column `col`, the first `readable`.
  Value loadRow(const Row &row, Value col, int64_t lanes, int64_t readable) {
    SmallVector<Value, 4> idx(row.at.begin(), row.at.end());
    idx.push_back(col);
    return rows::load(b, loc, row.base, idx, lanes, readable);
  }

  /// One row block's columns: the chunks whose reads are inside the row in
  /// a loop, those at either end (the image's edge with implicit padding,
  /// the last, partial chunk) one by one, masked where their reads leave
  /// the row.
  void emitColumns(Value n, Value oh0, int64_t rows, Value f0) {
    int64_t chunk = t.width * t.vectors, chunks = (s.OW + chunk - 1) / chunk;
    int64_t lanes = s.sw == 1 ? t.width : 2 * t.width, low = pad ? pad->lowColumns : 0;
    auto inside = [&](int64_t k) {
      int64_t ow0 = k * chunk;
      int64_t end = (ow0 + chunk - t.width) * s.sw + s.KW - 1 - low + lanes;
      return ow0 + chunk <= s.OW && ow0 * s.sw - low >= 0 && end <= s.W;
    };
    int64_t begin = 0;
    while (begin < chunks && !inside(begin))
      ++begin;
    int64_t end = begin;
    while (end < chunks && inside(end))
      ++end;
    auto single = [&](int64_t k) {
      emitChunk(n, oh0, rows, f0, index(k * chunk), k * chunk,
                std::min(chunk, s.OW - k * chunk));
    };
    for (int64_t k = 0; k < begin; ++k)
      single(k);
    rows::forRange(b, loc, (end - begin) * chunk, chunk, [&](Value i) {
      emitChunk(n, oh0, rows, f0, add(i, begin * chunk), std::nullopt, chunk);
    });
    for (int64_t k = std::max(begin, end); k < chunks; ++k)
      single(k);
  }

  /// One chunk of columns from `ow0` in `rows` output rows from `oh0`;
  /// `staticOw0` set for a chunk whose reads may leave the row (`valid`
  /// columns of it exist). A slot is one vector of one row: each input
  /// vector feeds the block's channels, each weight all slots.
  void emitChunk(Value n, Value oh0, int64_t rows, Value f0, Value ow0,
                 std::optional<int64_t> staticOw0, int64_t valid) {
    int64_t FB = t.channels, VW = t.width;
    SmallVector<int64_t> validOf; // columns per vector of this chunk
    for (int64_t j = 0; j < t.vectors && j * VW < valid; ++j)
      validOf.push_back(std::min(VW, valid - j * VW));
    int64_t NV = validOf.size(), NS = rows * NV;

    SmallVector<Value> channel, column, oh;
    for (int64_t i = 0; i < FB; ++i)
      channel.push_back(add(f0, i));
    for (int64_t j = 0; j < NV; ++j)
      column.push_back(add(ow0, j * VW));
    for (int64_t r = 0; r < rows; ++r)
      oh.push_back(add(oh0, r));
    auto rowOf = [&](int64_t slot) { return slot / NV; };
    auto vecOf = [&](int64_t slot) { return slot % NV; };

    SmallVector<Value> init;
    for (int64_t i = 0; i < FB; ++i)
      for (int64_t q = 0; q < NS; ++q)
        if (epilogue && epilogue->fill) // the fill the accumulators replace
          init.push_back(arith::ConstantOp::create(
              b, loc, vec, DenseElementsAttr::get(vec, b.getF32FloatAttr(*epilogue->fill))));
        else
          init.push_back(toStridedOrder(rows::load(
              b, loc, out, {n, channel[i], oh[rowOf(q)], column[vecOf(q)]}, VW,
              validOf[vecOf(q)])));

    SmallVector<Value> sums = reduceOverChannelRows(
        b, loc, index(0), s.C, s.KH, init, [&](Value c, Value kh, ArrayRef<Value> carried) {
          // Depthwise, each channel reads its own input rows; else every
          // channel the same ones.
          SmallVector<Row> inRows; // [channel of the block][row]
          for (int64_t i = 0; i < (s.depthwise ? FB : 1); ++i)
            for (int64_t r = 0; r < rows; ++r)
              inRows.push_back(inputRow(n, s.depthwise ? channel[i] : c, oh[r], kh));
          SmallVector<Value> acc(carried);
          for (int64_t kw = 0; kw < s.KW; ++kw) {
            SmallVector<Value> x;
            for (int64_t i = 0; i < (s.depthwise ? FB : 1); ++i)
              for (int64_t q = 0; q < NS; ++q)
                x.push_back(loadInput(inRows[i * rows + rowOf(q)], column[vecOf(q)], staticOw0,
                                      vecOf(q), kw, validOf[vecOf(q)]));
            for (int64_t i = 0; i < FB; ++i) {
              Value wi = s.depthwise
                             ? memref::LoadOp::create(b, loc, w, ValueRange{channel[i], kh, index(kw)})
                             : memref::LoadOp::create(b, loc, w,
                                                      ValueRange{channel[i], c, kh, index(kw)});
              Value bw = vector::BroadcastOp::create(b, loc, vec, wi);
              for (int64_t q = 0; q < NS; ++q)
                acc[i * NS + q] = vector::FMAOp::create(
                    b, loc, bw, x[s.depthwise ? i * NS + q : q], acc[i * NS + q]);
            }
          }
          return acc;
        });

    Value dest = epilogue ? epilogue->op.getDpsInits()[0] : out;
    for (int64_t i = 0; i < FB; ++i)
      for (int64_t q = 0; q < NS; ++q) {
        Value v = fromStridedOrder(sums[i * NS + q]);
        SmallVector<Value, 4> idx{n, channel[i], oh[rowOf(q)], column[vecOf(q)]};
        if (epilogue)
          v = applyEpilogue(b, loc, *epilogue, v, idx, validOf[vecOf(q)]);
        rows::store(b, loc, v, dest, idx, validOf[vecOf(q)]);
      }
  }

  /// The input columns under vector j of the chunk for tap kw: VW
  /// consecutive ones for stride 1; for stride 2, 2*VW loaded and the even
  /// lanes kept. A chunk in the loop reads inside the row; one by itself
  /// (static `staticOw0`) reads the columns inside the image and gets
  /// zeros for the others: the left edge's by a shuffle, the right edge's
  /// (and a partial chunk's) by a masked load.
  Value loadInput(const Row &row, Value column, std::optional<int64_t> staticOw0, int64_t j,
                  int64_t kw, int64_t valid) {
    int64_t VW = t.width, lanes = s.sw == 1 ? VW : 2 * VW, low = pad ? pad->lowColumns : 0;
    SmallVector<int64_t> kept; // result lane -> loaded lane
    for (int64_t l = 0; l < VW; ++l)
      kept.push_back(s.sw * columnOfLane(l));
    if (!staticOw0) {
      Value v = loadRow(row, add(mul(column, s.sw), kw - low), lanes, lanes);
      return s.sw == 1 ? v : vector::ShuffleOp::create(b, loc, v, v, kept);
    }
    int64_t start = (*staticOw0 + j * VW) * s.sw + kw - low;
    int64_t from = std::max<int64_t>(start, 0);
    int64_t to = std::min(start + (s.sw == 1 ? valid : lanes), s.W);
    if (to <= from)
      return arith::ConstantOp::create(b, loc, vec, b.getZeroAttr(vec));
    Value v = loadRow(row, index(from), lanes, to - from);
    int64_t shift = from - start; // lanes left of the image: zeros
    if (shift == 0)
      return s.sw == 1 ? v : vector::ShuffleOp::create(b, loc, v, v, kept);
    auto wide = VectorType::get({lanes}, b.getF32Type());
    Value zeros = arith::ConstantOp::create(b, loc, wide, b.getZeroAttr(wide));
    SmallVector<int64_t> picked;
    for (int64_t m : kept)
      picked.push_back(m < shift ? lanes : m - shift);
    return vector::ShuffleOp::create(b, loc, v, zeros, picked);
  }

  /// The output column held by accumulator lane `l`. With stride 2 the
  /// even lanes of two loaded vectors are one in-lane shuffle (vshufps)
  /// when kept in its order: per 128-bit block, two columns from the
  /// first vector, then two from the second. The natural order took a
  /// cross-lane permute per tap as well (vpermpd, 2 uops at half rate on
  /// Zen 2: a 3x3 stride-2 depthwise ran at a third of the FMA rate);
  /// now the accumulators pay it once, at their load and store.
  int64_t columnOfLane(int64_t l) const {
    int64_t VW = t.width, q = l / 4, r = l % 4;
    if (!stridedOrder())
      return l;
    return r < 2 ? 2 * q + r : VW / 2 + 2 * q + r - 2;
  }
  bool stridedOrder() const { return s.sw == 2 && t.width % 8 == 0; }

  Value permute(Value v, bool toStrided) {
    if (!stridedOrder())
      return v;
    SmallVector<int64_t> mask(t.width);
    for (int64_t l = 0; l < t.width; ++l) {
      if (toStrided)
        mask[l] = columnOfLane(l);
      else
        mask[columnOfLane(l)] = l;
    }
    return vector::ShuffleOp::create(b, loc, v, v, mask);
  }
  Value toStridedOrder(Value v) { return permute(v, true); }
  Value fromStridedOrder(Value v) { return permute(v, false); }

  RewriterBase &b;
  Location loc;
  Value in, w, out;
  ConvShape s;
  ConvRegisterTile t;
  VectorType vec;
  std::optional<Epilogue> epilogue;
  const ImplicitPad *pad;
};

struct RegisterTileConv : OpInterfaceRewritePattern<linalg::LinalgOp> {
  RegisterTileConv(MLIRContext *ctx, unsigned vectorBits)
      : OpInterfaceRewritePattern(ctx), vectorBits(vectorBits) {}

  LogicalResult matchAndRewrite(linalg::LinalgOp op, PatternRewriter &rewriter) const override {
    if (!op.hasPureBufferSemantics() || !isRegisterTiledConv(op) || matchPackedConv(op))
      return rewriter.notifyMatchFailure(op, "not a static f32 conv with unit dilation");
    emitConvRegisterTile(rewriter, op, vectorBits, nullptr);
    return success();
  }

  unsigned vectorBits;
};

} // namespace

Value implicitRow(OpBuilder &b, Location loc, const ImplicitPad &pad, Value n, Value c, Value row) {
  auto type = cast<MemRefType>(pad.source.getType());
  int64_t H = type.getDimSize(2), W = type.getDimSize(3);
  auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  auto add = [&](Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); };
  n = add(n, pad.offsets[0]);
  c = add(c, pad.offsets[1]);
  row = arith::SubIOp::create(b, loc, add(row, pad.offsets[2]), index(pad.lowRows));
  // (unsigned) row < H: inside at both ends.
  Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row, index(H));
  row = arith::SelectOp::create(b, loc, inside, row, index(0));
  SmallVector<OpFoldResult> offsets{n, c, row, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes{b.getIndexAttr(1), b.getIndexAttr(1), b.getIndexAttr(1),
                                  b.getIndexAttr(W)};
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  auto rowType = cast<MemRefType>(
      memref::SubViewOp::inferRankReducedResultType({W}, type, offsets, sizes, strides));
  Value view = memref::SubViewOp::create(b, loc, rowType, pad.source, offsets, sizes, strides);
  Value outside = pad.padRow;
  if (outside.getType() != rowType)
    outside = memref::CastOp::create(b, loc, rowType, outside);
  return arith::SelectOp::create(b, loc, inside, view, outside);
}

void emitConvRegisterTile(RewriterBase &rewriter, linalg::LinalgOp op, unsigned vectorBits,
                          const ImplicitPad *pad) {
  bool depthwise = isa<linalg::DepthwiseConv2DNchwChwOp>(op.getOperation());
  Value input = pad ? pad->source : op.getDpsInputs()[0];
  auto inShape = cast<MemRefType>(input.getType()).getShape();
  auto wShape = cast<MemRefType>(op.getDpsInputs()[1].getType()).getShape();
  auto outShape = cast<MemRefType>(op.getDpsInits()[0].getType()).getShape();
  auto strides = stridesAndDilations(op).first;
  // Depthwise weights are [C, KH, KW]: one input channel per output one.
  ConvShape s{outShape[0],
              outShape[1],
              outShape[2],
              outShape[3],
              depthwise ? 1 : wShape[1],
              wShape[wShape.size() - 2],
              wShape.back(),
              inShape[2],
              inShape[3],
              strides[0],
              strides[1],
              depthwise};
  ConvRegisterTile tile = chooseConvRegisterTile(s.F, s.OH, s.OW, vectorBits, depthwise);
  std::optional<Epilogue> epilogue = matchEpilogue(op);
  OpBuilder::InsertionGuard g(rewriter);
  rewriter.setInsertionPoint(epilogue ? epilogue->op.getOperation() : op.getOperation());
  ConvEmitter(rewriter, op.getLoc(), op, s, tile, epilogue, pad).emit();
  eraseWithEpilogue(rewriter, op, epilogue);
}

namespace {

struct KilnVectorizeConvPass final : impl::KilnVectorizeConvBase<KilnVectorizeConvPass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RegisterTileConv>(&getContext(), vectorBits);
    populatePackedConvPatterns(patterns, vectorBits);
    populateChannelsLastDepthwisePatterns(patterns, vectorBits);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      getOperation().emitError("kiln-vectorize-conv: rewriting did not converge");
      return signalPassFailure();
    }
    // The packed tiles' accumulator transposes, as one shuffle each.
    RewritePatternSet transposes(&getContext());
    vector::populateVectorTransposeLoweringPatterns(transposes,
                                                    vector::VectorTransposeLowering::Shuffle1D);
    if (failed(applyPatternsGreedily(getOperation(), std::move(transposes))))
      return signalPassFailure();
  }
};

} // namespace
} // namespace kiln

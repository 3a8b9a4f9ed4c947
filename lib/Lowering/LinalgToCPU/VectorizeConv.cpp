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

bool isRegisterTiledConv(Operation *op) {
  bool packed = matchPackedConv(op).has_value();
  if (!packed && !isa_and_present<linalg::Conv2DNchwFchwOp, linalg::DepthwiseConv2DNchwChwOp>(op))
    return false;
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
  if (packed)
    return true;
  auto [strides, dilations] = stridesAndDilations(op);
  return llvm::all_of(dilations, [](int64_t d) { return d == 1; }) &&
         strides[0] >= 1 && (strides[1] == 1 || strides[1] == 2);
}

namespace {

struct ConvShape {
  int64_t N, F, OH, OW, C, KH, KW, W, sh, sw;
  bool depthwise; // output channel f reads input channel f alone (C = 1)
};

class ConvEmitter {
public:
  ConvEmitter(PatternRewriter &b, Location loc, linalg::LinalgOp op, ConvShape s,
              ConvRegisterTile t, std::optional<Epilogue> epilogue)
      : b(b), loc(loc), in(op.getDpsInputs()[0]), w(op.getDpsInputs()[1]),
        out(op.getDpsInits()[0]), s(s), t(t),
        vec(VectorType::get({t.width}, b.getF32Type())), epilogue(epilogue) {}

  /// The whole convolution: loops over images, rows and channel blocks,
  /// then the columns in chunks of NV vectors.
  void emit() {
    auto columns = [&](Value n, Value oh0, int64_t rows, Value f0) {
      int64_t chunk = t.width * t.vectors;
      int64_t chunks = (s.OW + chunk - 1) / chunk;
      // All but the last chunk: whole vectors, in bounds.
      forRange((chunks - 1) * chunk, chunk, [&](Value ow0) {
        emitChunk(n, oh0, rows, f0, ow0, std::nullopt, chunk);
      });
      int64_t last = (chunks - 1) * chunk;
      emitChunk(n, oh0, rows, f0, index(last), last, s.OW - last);
    };
    // Images, row blocks and channel blocks are independent: one parallel
    // loop (split over the thread pool when the convolution is not already
    // a tile of a parallel kernel).
    int64_t full = s.OH / t.rows * t.rows;
    rows::forParallel(b, loc, {s.N, full, s.F}, {1, t.rows, t.channels},
                      [&](ArrayRef<Value> iv) { columns(iv[0], iv[1], t.rows, iv[2]); });
    if (full < s.OH) // the rows left, a smaller block
      rows::forParallel(b, loc, {s.N, s.F}, {1, t.channels}, [&](ArrayRef<Value> iv) {
        columns(iv[0], index(full), s.OH - full, iv[1]);
      });
  }

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value a, int64_t c) { return c ? arith::AddIOp::create(b, loc, a, index(c)) : a; }
  Value mul(Value a, int64_t c) { return c == 1 ? a : arith::MulIOp::create(b, loc, a, index(c)); }
  void forRange(int64_t extent, int64_t step, llvm::function_ref<void(Value)> body) {
    rows::forRange(b, loc, extent, step, body);
  }

  Value load(Value base, ValueRange idx, int64_t lanes, int64_t valid) {
    return rows::load(b, loc, base, idx, lanes, valid);
  }

  /// One chunk of columns from `ow0` in `rows` output rows from `oh0`;
  /// `staticOw0` set for the last chunk, whose row end may fall inside it
  /// (`valid` columns of it exist). A slot is one vector of one row: each
  /// input vector feeds the block's channels, each weight all slots.
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
          init.push_back(load(out, {n, channel[i], oh[rowOf(q)], column[vecOf(q)]}, VW,
                              validOf[vecOf(q)]));

    SmallVector<Value> sums = reduceOverChannelRows(
        b, loc, index(0), s.C, s.KH, init, [&](Value c, Value kh, ArrayRef<Value> carried) {
          SmallVector<Value> inRow;
          for (int64_t r = 0; r < rows; ++r)
            inRow.push_back(arith::AddIOp::create(b, loc, mul(oh[r], s.sh), kh));
          SmallVector<Value> acc(carried);
          for (int64_t kw = 0; kw < s.KW; ++kw) {
            // Depthwise, each channel reads its own input rows; else every
            // channel the same ones.
            SmallVector<Value> x;
            for (int64_t i = 0; i < (s.depthwise ? FB : 1); ++i)
              for (int64_t q = 0; q < NS; ++q)
                x.push_back(loadInput(n, s.depthwise ? channel[i] : c, inRow[rowOf(q)],
                                      column[vecOf(q)], staticOw0, vecOf(q), kw,
                                      validOf[vecOf(q)]));
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
        Value v = sums[i * NS + q];
        SmallVector<Value, 4> idx{n, channel[i], oh[rowOf(q)], column[vecOf(q)]};
        if (epilogue)
          v = applyEpilogue(b, loc, *epilogue, v, idx, validOf[vecOf(q)]);
        rows::store(b, loc, v, dest, idx, validOf[vecOf(q)]);
      }
  }

  /// The input columns under vector j of the chunk for tap kw: VW
  /// consecutive ones for stride 1; for stride 2, 2*VW loaded and the even
  /// lanes kept. Reads stay inside the row (masked in the last chunk).
  Value loadInput(Value n, Value c, Value row, Value column, std::optional<int64_t> staticOw0,
                  int64_t j, int64_t kw, int64_t valid) {
    int64_t VW = t.width;
    Value col = add(mul(column, s.sw), kw);
    if (s.sw == 1)
      return load(in, {n, c, row, col}, VW, valid);
    int64_t lanes = 2 * VW, readable = lanes;
    if (staticOw0) // columns left in the row from this vector's first
      readable = std::min(lanes, s.W - ((*staticOw0 + j * VW) * 2 + kw));
    Value wide = load(in, {n, c, row, col}, lanes, readable);
    SmallVector<int64_t> even;
    for (int64_t l = 0; l < VW; ++l)
      even.push_back(2 * l);
    return vector::ShuffleOp::create(b, loc, wide, wide, even);
  }

  PatternRewriter &b;
  Location loc;
  Value in, w, out;
  ConvShape s;
  ConvRegisterTile t;
  VectorType vec;
  std::optional<Epilogue> epilogue;
};

struct RegisterTileConv : OpInterfaceRewritePattern<linalg::LinalgOp> {
  RegisterTileConv(MLIRContext *ctx, unsigned vectorBits)
      : OpInterfaceRewritePattern(ctx), vectorBits(vectorBits) {}

  LogicalResult matchAndRewrite(linalg::LinalgOp op, PatternRewriter &rewriter) const override {
    if (!op.hasPureBufferSemantics() || !isRegisterTiledConv(op) || matchPackedConv(op))
      return rewriter.notifyMatchFailure(op, "not a static f32 conv with unit dilation");
    bool depthwise = isa<linalg::DepthwiseConv2DNchwChwOp>(op.getOperation());
    auto inShape = cast<MemRefType>(op.getDpsInputs()[0].getType()).getShape();
    auto wShape = cast<MemRefType>(op.getDpsInputs()[1].getType()).getShape();
    auto outShape = cast<MemRefType>(op.getDpsInits()[0].getType()).getShape();
    auto strides = stridesAndDilations(op).first;
    // Depthwise weights are [C, KH, KW]: one input channel per output one.
    ConvShape s{outShape[0], outShape[1], outShape[2], outShape[3],
                depthwise ? 1 : wShape[1], wShape[wShape.size() - 2], wShape.back(),
                inShape[3], strides[0], strides[1], depthwise};
    ConvRegisterTile tile = chooseConvRegisterTile(s.F, s.OH, s.OW, vectorBits, depthwise);
    std::optional<Epilogue> epilogue = matchEpilogue(op);
    rewriter.setInsertionPoint(epilogue ? epilogue->op.getOperation() : op.getOperation());
    ConvEmitter(rewriter, op.getLoc(), op, s, tile, epilogue).emit();
    eraseWithEpilogue(rewriter, op, epilogue);
    return success();
  }

  unsigned vectorBits;
};

struct KilnVectorizeConvPass final : impl::KilnVectorizeConvBase<KilnVectorizeConvPass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RegisterTileConv>(&getContext(), vectorBits);
    populatePackedConvPatterns(patterns, vectorBits);
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

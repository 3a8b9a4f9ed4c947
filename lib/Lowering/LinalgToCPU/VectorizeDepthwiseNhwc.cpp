//===- VectorizeDepthwiseNhwc.cpp - channels-last depthwise register tile -===//
//
//   linalg.depthwise_conv_2d_nhwc_hwc ins(%in : [N, IH, IW, C], %w : [KH, KW, C])
//                                     outs(%out : [N, OH, OW, C])       (memrefs)
// =>
//   for n, oh, vectors of channels c0, groups of P output columns ow0:
//     acc[P] = fill (or out[n, oh, ow0 + j, c0 ..])
//     for kh:                                           (acc: iter_args)
//       for kw (unrolled):
//         wv = w[kh, kw, c0 ..]
//         acc[j] = fma(in[n, oh*sh + kh, (ow0 + j)*sw + kw, c0 ..], wv, acc[j])
//     out[n, oh, ow0 + j, c0 ..] = epilogue(acc[j])
//
// Channels last, a depthwise convolution is elementwise along its vectors:
// each lane is its own channel, each FMA a pixel's tap times that tap's
// weights. P pixels' accumulators stay in registers over the whole window
// (KH x KW taps), each weight vector loaded once per tap and shared by
// them; every input vector is one load (an FMA's memory operand). The
// channel vector loop is outside the pixel groups, so the KH rows of one
// vector of channels that a group reads (7 x 62 x 32 bytes for ConvNeXt's
// 7x7) stay in L1 for the next group. No lane is padding whatever the
// image's width (NCHW's 7-wide rows of ConvNeXt-T's last stage filled 7
// of 8 lanes, 21 GFLOP/s). A convolution's epilogue (its bias) is applied
// to the accumulators, as kiln-vectorize-conv's other tiles do.
//
//===----------------------------------------------------------------------===//

#include "ConvEpilogue.h"
#include "kiln/Lowering/ConvTiles.h"
#include "kiln/Lowering/VectorRows.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace kiln {

bool isChannelsLastDepthwise(Operation *op) {
  auto conv = dyn_cast_or_null<linalg::DepthwiseConv2DNhwcHwcOp>(op);
  if (!conv || !llvm::all_of(conv.getDilations().getValues<int64_t>(),
                             [](int64_t d) { return d == 1; }))
    return false;
  return hasStaticF32ConvOperands(op);
}

namespace {

class NhwcEmitter {
public:
  NhwcEmitter(RewriterBase &b, linalg::DepthwiseConv2DNhwcHwcOp op, unsigned vectorBits,
              std::optional<Epilogue> epilogue, std::optional<double> fill,
              const ImplicitPad *pad)
      : b(b), loc(op.getLoc()), in(pad ? pad->source : op.getDpsInputs()[0]),
        w(op.getDpsInputs()[1]), out(op.getDpsInits()[0]), epilogue(epilogue), fill(fill),
        pad(pad) {
    auto shape = cast<MemRefType>(out.getType()).getShape();
    auto wShape = cast<MemRefType>(w.getType()).getShape();
    auto inShape = cast<MemRefType>(in.getType()).getShape();
    N = shape[0], OH = shape[1], OW = shape[2], C = shape[3];
    KH = wShape[0], KW = wShape[1];
    H = inShape[1], W = inShape[2];
    auto strides = llvm::to_vector(op.getStrides().getValues<int64_t>());
    sh = strides[0], sw = strides[1];
    VW = std::max<unsigned>(vectorBits / 32, 1);
    vec = VectorType::get({VW}, b.getF32Type());
    // Accumulators as wide as the registers allow beside a weight vector
    // and an input's (AVX-512's 32 hold 14 pixels, AVX2's and SSE's 16
    // hold 8), in groups of equal size (28 columns: 4 x 7, not 3 x 8 + 4).
    int64_t most = vectorBits >= 512 ? 14 : 8;
    int64_t groups = (OW + most - 1) / most;
    P = (OW + groups - 1) / groups;
  }

  void emit() {
    rows::forParallel(b, loc, {N, OH}, {1, 1}, [&](ArrayRef<Value> iv) {
      int64_t full = C / VW * VW;
      rows::forRange(b, loc, full, VW, [&](Value c0) { emitColumns(iv[0], iv[1], c0, VW); });
      if (full < C) // the channels left, under a mask
        emitColumns(iv[0], iv[1], index(full), C - full);
    });
  }

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value a, int64_t c) { return c ? arith::AddIOp::create(b, loc, a, index(c)) : a; }
  Value add(Value a, Value c) { return arith::AddIOp::create(b, loc, a, c); }
  Value mul(Value a, int64_t c) { return c == 1 ? a : arith::MulIOp::create(b, loc, a, index(c)); }

  /// The groups of a row whose reads stay inside the image in a loop;
  /// those at its ends (with implicit padding, the taps left or right of
  /// the image dropped) and the last, narrower group one by one.
  void emitColumns(Value n, Value oh, Value c0, int64_t valid) {
    int64_t groups = (OW + P - 1) / P, low = pad ? pad->lowColumns : 0;
    auto inside = [&](int64_t g) {
      int64_t ow0 = g * P;
      return ow0 + P <= OW && ow0 * sw - low >= 0 && (ow0 + P - 1) * sw + KW - 1 - low < W;
    };
    int64_t begin = 0;
    while (begin < groups && !inside(begin))
      ++begin;
    int64_t end = begin;
    while (end < groups && inside(end))
      ++end;
    auto single = [&](int64_t g) {
      emitGroup(n, oh, c0, valid, index(g * P), g * P, std::min(P, OW - g * P));
    };
    for (int64_t g = 0; g < begin; ++g)
      single(g);
    rows::forRange(b, loc, (end - begin) * P, P, [&](Value i) {
      emitGroup(n, oh, c0, valid, add(i, begin * P), std::nullopt, P);
    });
    for (int64_t g = std::max(begin, end); g < groups; ++g)
      single(g);
  }

  /// Whether input row `row` (of the tile's padded input) is inside the
  /// image: always without implicit padding.
  Value rowInside(Value row) {
    if (!pad)
      return {};
    Value r = arith::SubIOp::create(b, loc, add(row, pad->offsets[1]), index(pad->lowRows));
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, r, index(H));
  }

  /// The indices of the input vector of tap (row, column) of the tile's
  /// padded input, image n and channels from c0.
  SmallVector<Value, 4> inputAt(Value n, Value row, Value column, Value c0) {
    if (!pad)
      return {n, row, column, c0};
    return {arith::AddIOp::create(b, loc, n, pad->offsets[0]),
            arith::SubIOp::create(b, loc, add(row, pad->offsets[1]), index(pad->lowRows)),
            column, arith::AddIOp::create(b, loc, c0, pad->offsets[2])};
  }

  /// `pixels` output columns from `ow0` of row `oh`, `valid` channels from
  /// `c0`. `staticOw0` for a group at the row's ends: with implicit
  /// padding, its taps outside the image are dropped.
  void emitGroup(Value n, Value oh, Value c0, int64_t valid, Value ow0,
                 std::optional<int64_t> staticOw0, int64_t pixels) {
    int64_t low = pad ? pad->lowColumns : 0;
    SmallVector<Value> column, init;
    for (int64_t j = 0; j < pixels; ++j)
      column.push_back(add(ow0, j));
    for (int64_t j = 0; j < pixels; ++j)
      init.push_back(fill ? arith::ConstantOp::create(
                                b, loc, vec, DenseElementsAttr::get(vec, b.getF32FloatAttr(*fill)))
                                .getResult()
                          : rows::load(b, loc, out, {n, oh, column[j], c0}, VW, valid));
    auto khLoop = scf::ForOp::create(b, loc, index(0), index(KH), index(1), init);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(khLoop.getBody());
      Value kh = khLoop.getInductionVar();
      Value row = arith::AddIOp::create(b, loc, mul(oh, sh), kh);
      SmallVector<Value> carried(khLoop.getRegionIterArgs());
      auto taps = [&]() {
        SmallVector<Value> acc(carried);
        for (int64_t kw = 0; kw < KW; ++kw) {
          Value wv;
          for (int64_t j = 0; j < pixels; ++j) {
            if (staticOw0) { // a column left or right of the image reads zeros
              int64_t col = (*staticOw0 + j) * sw + kw - low;
              if (col < 0 || col >= W)
                continue;
            }
            if (!wv)
              wv = rows::load(b, loc, w, {kh, index(kw), c0}, VW, valid);
            Value col = add(mul(column[j], sw), kw - low);
            Value x = rows::load(b, loc, in, inputAt(n, row, col, c0), VW, valid);
            acc[j] = vector::FMAOp::create(b, loc, x, wv, acc[j]);
          }
        }
        return acc;
      };
      // A row above or below the image adds nothing (implicit padding).
      if (Value inside = rowInside(row)) {
        auto branch = scf::IfOp::create(b, loc, TypeRange(ValueRange(carried)), inside,
                                        /*withElseRegion=*/true);
        {
          OpBuilder::InsertionGuard g2(b);
          b.setInsertionPointToStart(branch.thenBlock());
          scf::YieldOp::create(b, loc, taps());
          b.setInsertionPointToStart(branch.elseBlock());
          scf::YieldOp::create(b, loc, carried);
        }
        scf::YieldOp::create(b, loc, branch.getResults());
      } else {
        scf::YieldOp::create(b, loc, taps());
      }
    }
    Value dest = epilogue ? epilogue->op.getDpsInits()[0] : out;
    for (int64_t j = 0; j < pixels; ++j) {
      Value v = khLoop.getResult(j);
      SmallVector<Value, 4> idx{n, oh, column[j], c0};
      if (epilogue)
        v = applyEpilogue(b, loc, *epilogue, v, idx, valid);
      rows::store(b, loc, v, dest, idx, valid);
    }
  }

  RewriterBase &b;
  Location loc;
  Value in, w, out;
  std::optional<Epilogue> epilogue;
  std::optional<double> fill;
  const ImplicitPad *pad;
  int64_t N, OH, OW, C, KH, KW, H, W, sh, sw, VW, P;
  VectorType vec;
};

/// The constant fill of `op`'s output right before it, which the
/// accumulators' start replaces.
linalg::FillOp fillBefore(linalg::LinalgOp op, std::optional<double> &value) {
  auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
  if (!fill || fill.getOutputs()[0] != op.getDpsInits()[0])
    return {};
  auto c = fill.getInputs()[0].getDefiningOp<arith::ConstantOp>();
  auto f = c ? dyn_cast<FloatAttr>(c.getValue()) : FloatAttr();
  if (!f)
    return {};
  value = f.getValueAsDouble();
  return fill;
}

struct ChannelsLastDepthwiseTile : OpRewritePattern<linalg::DepthwiseConv2DNhwcHwcOp> {
  ChannelsLastDepthwiseTile(MLIRContext *ctx, unsigned vectorBits)
      : OpRewritePattern(ctx), vectorBits(vectorBits) {}

  LogicalResult matchAndRewrite(linalg::DepthwiseConv2DNhwcHwcOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureBufferSemantics() || !isChannelsLastDepthwise(op))
      return rewriter.notifyMatchFailure(op, "not a static f32 NHWC depthwise conv");
    emitChannelsLastDepthwise(rewriter, op, vectorBits, nullptr);
    return success();
  }

  unsigned vectorBits;
};

} // namespace

void emitChannelsLastDepthwise(RewriterBase &rewriter, linalg::LinalgOp op, unsigned vectorBits,
                               const ImplicitPad *pad) {
  auto conv = cast<linalg::DepthwiseConv2DNhwcHwcOp>(op.getOperation());
  std::optional<Epilogue> epilogue = matchEpilogue(op, /*columnVectors=*/true);
  std::optional<double> fill = epilogue ? epilogue->fill : std::nullopt;
  linalg::FillOp ownFill;
  if (!epilogue)
    ownFill = fillBefore(op, fill);
  OpBuilder::InsertionGuard g(rewriter);
  rewriter.setInsertionPoint(epilogue ? epilogue->op.getOperation() : op.getOperation());
  NhwcEmitter(rewriter, conv, vectorBits, epilogue, fill, pad).emit();
  eraseWithEpilogue(rewriter, op, epilogue);
  if (ownFill)
    rewriter.eraseOp(ownFill);
}

void populateChannelsLastDepthwisePatterns(RewritePatternSet &patterns, unsigned vectorBits) {
  patterns.add<ChannelsLastDepthwiseTile>(patterns.getContext(), vectorBits);
}

} // namespace kiln

//===- VectorizePackedConv.cpp - register tiles of packed convolutions ----===//
//
//   linalg.generic ins(in(n, c, oh*sh + kh, ow*sw + kw),
//                      Wp(f floordiv L, c, kh, kw, f mod L)) outs(out(n, f, oh, ow))
// =>
//   for n, channel vectors fv step V, output pixels q0 step P (row-major):
//     acc[V][P] (vectors of L channels) = 0
//     for c, kh:
//       for kw (unrolled):
//         w[v] = Wp[fv + v, c, kh, kw, 0:L]
//         acc[v][p] = fma(w[v], broadcast(in[n, c, ih(q0+p) + kh, iw(q0+p) + kw]), acc[v][p])
//     transpose each acc[v] to L rows of P pixels; epilogue; store
//
// The blocked-channel kernel of MLAS and oneDNN on NCHW activations
// (kiln-pack-conv-weights explains the choice). A tile's pixels run on
// across row ends, so a 7-wide image fills the tile as well as a 56-wide
// one, and a stride only changes where each pixel's input element is. The
// accumulators hold channels in their lanes; NCHW stores pixels
// contiguously, so each block is transposed once, after the reduction
// (C x KH x KW steps), and the epilogue (bias, ReLU, a residual add) runs
// on the transposed rows before they are stored. With kiln-implicit-
// padding's image (a zero pad removed), tiles at the image's border read
// each element through a row view and a column test, the others directly.
//
//===----------------------------------------------------------------------===//

#include "ConvEpilogue.h"
#include "kiln/Lowering/ConvTiles.h"
#include "kiln/Lowering/VectorRows.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace kiln {
namespace {

const ReassociationIndices kRows[] = {{0}, {1}, {2, 3}};

bool flattens(Value m) {
  return memref::CollapseShapeOp::isGuaranteedCollapsible(cast<MemRefType>(m.getType()), kRows);
}

/// `m` [N, F, H, W] as [N, F, H*W] (its rows contiguous: `flattens`).
Value flatten(OpBuilder &b, Location loc, Value m) {
  return memref::CollapseShapeOp::create(b, loc, m, kRows);
}

/// Whether the output, and the epilogue's output and inputs that vary
/// over the pixels (in place, through identity maps), have contiguous rows.
bool viewsFlatten(linalg::GenericOp conv, const std::optional<Epilogue> &epilogue) {
  if (!flattens(conv.getDpsInits()[0]))
    return false;
  if (!epilogue)
    return true;
  linalg::GenericOp g = epilogue->op;
  if (!flattens(g.getDpsInits()[0]))
    return false;
  for (OpOperand *operand : g.getDpsInputOperands()) {
    AffineMap m = g.getMatchingIndexingMap(operand);
    if (operand->getOperandNumber() != epilogue->accInput &&
        (m.isFunctionOfDim(2) || m.isFunctionOfDim(3)) &&
        (!m.isIdentity() || !flattens(operand->get())))
      return false;
  }
  return true;
}

class PackedConvEmitter {
public:
  PackedConvEmitter(RewriterBase &b, Location loc, linalg::GenericOp op, PackedConv conv,
                    PackedConvTile t, std::optional<Epilogue> epilogue, const ImplicitPad *pad)
      : b(b), loc(loc), in(pad ? pad->source : op.getDpsInputs()[0]), w(op.getDpsInputs()[1]),
        conv(conv), t(t), vec(VectorType::get({t.lanes}, b.getF32Type())), epilogue(epilogue),
        pad(pad) {
    auto outType = cast<MemRefType>(op.getDpsInits()[0].getType());
    auto wType = cast<MemRefType>(w.getType());
    N = outType.getDimSize(0);
    F = outType.getDimSize(1);
    OW = outType.getDimSize(3);
    pixels = outType.getDimSize(2) * OW;
    C = wType.getDimSize(1);
    KH = wType.getDimSize(2);
    KW = wType.getDimSize(3);
    width = 1;
    while (width < t.pixels)
      width *= 2;
    out = flatten(b, loc, op.getDpsInits()[0]);
  }

  /// The flattened views the stores and the epilogue read and write
  /// (viewsFlatten holds).
  void prepare() {
    dest = out;
    if (!epilogue)
      return;
    linalg::GenericOp g = epilogue->op;
    dest = flatten(b, loc, g.getDpsInits()[0]);
    for (OpOperand *operand : g.getDpsInputOperands()) {
      AffineMap m = g.getMatchingIndexingMap(operand);
      if (operand->getOperandNumber() != epilogue->accInput &&
          (m.isFunctionOfDim(2) || m.isFunctionOfDim(3)))
        operandViews[operand->getOperandNumber()] = flatten(b, loc, operand->get());
    }
  }

  /// Per image and block of channel vectors: the input channels in blocks
  /// whose weight panels stay in L1 (`channelBlock`), each block over all
  /// the pixels, partial sums parked in a stack buffer between blocks.
  /// Unblocked, every pixel tile streamed all of its panels from L2
  /// (2 x 128 x 9 x 16 floats for ResNet-50's 128-channel 3x3): a stride-2
  /// layer ran at 160-210 GFLOP/s against 290 at stride 1.
  void emit() {
    int64_t vectorsOfF = F / t.lanes, block = channelBlock();
    // One slice per iteration of the parallel loop, allocated before it
    // (an alloca inside would grow the stack at every iteration).
    Value parked;
    if (block < C)
      parked = memref::AllocaOp::create(
          b, loc, MemRefType::get({N, vectorsOfF, pixels, t.lanes}, b.getF32Type()),
          b.getI64IntegerAttr(64));
    rows::forParallel(b, loc, {N, vectorsOfF}, {1, t.vectors}, [&](ArrayRef<Value> iv) {
      Value n = iv[0], fv = iv[1];
      double start = epilogue && epilogue->fill ? *epilogue->fill : 0.0;
      Value init = arith::ConstantOp::create(b, loc, vec,
                                             DenseElementsAttr::get(vec, b.getF32FloatAttr(start)));
      if (block == C) {
        forPixelTiles([&](Value q0, int64_t P) {
          SmallVector<Value> inits(t.vectors * P, init);
          finish(n, fv, q0, P, reduce(n, fv, q0, P, index(0), C, inits));
        });
        return;
      }
      auto park = [&](Value q0, int64_t P, ArrayRef<Value> acc) {
        for (int64_t v = 0; v < t.vectors; ++v)
          for (int64_t p = 0; p < P; ++p)
            vector::StoreOp::create(b, loc, acc[v * P + p], parked,
                                    ValueRange{n, add(fv, v), add(q0, p), index(0)});
      };
      auto unpark = [&](Value q0, int64_t P) {
        SmallVector<Value> acc;
        for (int64_t v = 0; v < t.vectors; ++v)
          for (int64_t p = 0; p < P; ++p)
            acc.push_back(vector::LoadOp::create(b, loc, vec, parked,
                                                 ValueRange{n, add(fv, v), add(q0, p), index(0)}));
        return acc;
      };
      // The first block from the initial value, the middle ones from and
      // to the stack, the last one stored.
      forPixelTiles([&](Value q0, int64_t P) {
        SmallVector<Value> inits(t.vectors * P, init);
        park(q0, P, reduce(n, fv, q0, P, index(0), block, inits));
      });
      if (C > 2 * block)
        rows::forRange(b, loc, C - 2 * block, block, [&](Value c) {
          Value c0 = add(c, block);
          forPixelTiles([&](Value q0, int64_t P) {
            park(q0, P, reduce(n, fv, q0, P, c0, block, unpark(q0, P)));
          });
        });
      forPixelTiles([&](Value q0, int64_t P) {
        finish(n, fv, q0, P, reduce(n, fv, q0, P, index(C - block), block, unpark(q0, P)));
      });
    });
  }

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value a, int64_t c) { return c ? arith::AddIOp::create(b, loc, a, index(c)) : a; }
  Value mul(Value a, int64_t c) { return c == 1 ? a : arith::MulIOp::create(b, loc, a, index(c)); }

  /// Input channels per block: the most dividing C whose weight panels
  /// (vectors x KH x KW vectors a channel) fit 20 KiB, beside the input
  /// rows in a 32 KiB L1; all of them when the partial sums would take
  /// more than 64 KiB of stack (a convolution outside a kernel tile).
  int64_t channelBlock() {
    int64_t perChannel = t.vectors * KH * KW * t.lanes * 4;
    if (N * F * pixels * 4 > (64 << 10) || C * perChannel <= (20 << 10))
      return C;
    int64_t block = 1;
    for (int64_t d = 1; d <= C; ++d)
      if (C % d == 0 && d * perChannel <= (20 << 10))
        block = d;
    return block;
  }

  /// body(q0, P) for each tile of P pixels: the whole ones in a loop, then
  /// the narrower last one.
  void forPixelTiles(llvm::function_ref<void(Value, int64_t)> body) {
    int64_t P = t.pixels, full = pixels / P * P;
    rows::forRange(b, loc, full, P, [&](Value q0) { body(q0, P); });
    if (full < pixels)
      body(index(full), pixels - full);
  }

  /// The sums over input channels c0 .. c0+count of output pixels
  /// q0 .. q0+P for channel vectors fv .. fv+V of image n, from `inits`.
  SmallVector<Value> reduce(Value n, Value fv, Value q0, int64_t P, Value c0, int64_t count,
                            ArrayRef<Value> inits) {
    int64_t V = t.vectors;
    SmallVector<Value> ih, iw; // each pixel's first input row and column
    for (int64_t p = 0; p < P; ++p) {
      Value q = add(q0, p);
      Value oh = arith::DivUIOp::create(b, loc, q, index(OW));
      Value ow = arith::RemUIOp::create(b, loc, q, index(OW));
      ih.push_back(mul(oh, conv.sh));
      iw.push_back(mul(ow, conv.sw));
    }
    // checked: every element read through its row view and column test
    // (a tile at the image's border, with kiln-implicit-padding's image).
    auto sums = [&](bool checked) {
      return reduceOverChannelRows(
          b, loc, c0, count, KH, inits, [&](Value c, Value kh, ArrayRef<Value> carried) {
            SmallVector<Value> rowOf, rowView;
            for (int64_t p = 0; p < P; ++p) {
              rowOf.push_back(arith::AddIOp::create(b, loc, ih[p], kh));
              if (checked)
                rowView.push_back(implicitRow(b, loc, *pad, n, c, rowOf[p]));
            }
            SmallVector<Value> acc(carried);
            for (int64_t kw = 0; kw < KW; ++kw) {
              SmallVector<Value> wv;
              for (int64_t v = 0; v < V; ++v)
                wv.push_back(vector::LoadOp::create(
                    b, loc, vec, w, ValueRange{add(fv, v), c, kh, index(kw), index(0)}));
              for (int64_t p = 0; p < P; ++p) {
                Value x = checked ? checkedLoad(rowView[p], add(iw[p], kw))
                                  : memref::LoadOp::create(b, loc, in,
                                                           inputAt(n, c, rowOf[p], add(iw[p], kw)));
                Value bx = vector::BroadcastOp::create(b, loc, vec, x);
                for (int64_t v = 0; v < V; ++v)
                  acc[v * P + p] = vector::FMAOp::create(b, loc, wv[v], bx, acc[v * P + p]);
              }
            }
            return acc;
          });
    };
    if (!pad)
      return sums(false);
    auto branch = scf::IfOp::create(b, loc, TypeRange(ValueRange(inits)), interior(q0, P),
                                    /*withElseRegion=*/true);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(branch.thenBlock());
    scf::YieldOp::create(b, loc, sums(false));
    b.setInsertionPointToStart(branch.elseBlock());
    scf::YieldOp::create(b, loc, sums(true));
    return SmallVector<Value>(branch.getResults());
  }

  /// The input element at (n, c, row, column) of the padded image the
  /// convolution reads: with `pad`, of the image itself, the tile's offsets
  /// added and the pad's taken off (inside it: an interior tile).
  SmallVector<Value> inputAt(Value n, Value c, Value row, Value column) {
    if (!pad)
      return {n, c, row, column};
    auto sub = [&](Value x, int64_t v) { return arith::SubIOp::create(b, loc, x, index(v)); };
    return {arith::AddIOp::create(b, loc, n, pad->offsets[0]),
            arith::AddIOp::create(b, loc, c, pad->offsets[1]),
            sub(arith::AddIOp::create(b, loc, row, pad->offsets[2]), pad->lowRows),
            sub(column, pad->lowColumns)};
  }

  /// Padded column `column` of `row` (implicitRow's view): the pad's value
  /// left or right of the image.
  Value checkedLoad(Value row, Value column) {
    int64_t W = cast<MemRefType>(pad->source.getType()).getDimSize(3);
    Value col = arith::SubIOp::create(b, loc, column, index(pad->lowColumns));
    Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, col, index(W));
    Value x = memref::LoadOp::create(
        b, loc, row, ValueRange{arith::SelectOp::create(b, loc, inside, col, index(0))});
    return arith::SelectOp::create(b, loc, inside, x,
                                   arith::ConstantOp::create(b, loc, b.getF32FloatAttr(pad->value)));
  }

  /// Whether pixels q0 .. q0+P read only inside the image (`pad`'s): their
  /// rows' windows within its rows, their columns' within its columns (a
  /// tile across a row's end takes both ends of the row).
  Value interior(Value q0, int64_t P) {
    auto source = cast<MemRefType>(pad->source.getType());
    int64_t H = source.getDimSize(2), W = source.getDimSize(3);
    auto cmp = [&](arith::CmpIPredicate p, Value x, int64_t v) {
      return arith::CmpIOp::create(b, loc, p, x, index(v));
    };
    auto both = [&](Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); };
    Value last = add(q0, P - 1);
    Value ohFirst = arith::DivUIOp::create(b, loc, q0, index(OW));
    Value ohLast = arith::DivUIOp::create(b, loc, last, index(OW));
    Value oneRow = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, ohFirst, ohLast);
    Value owFirst = arith::SelectOp::create(b, loc, oneRow,
                                            arith::RemUIOp::create(b, loc, q0, index(OW)), index(0));
    Value owLast = arith::SelectOp::create(
        b, loc, oneRow, arith::RemUIOp::create(b, loc, last, index(OW)), index(OW - 1));
    Value top = arith::AddIOp::create(b, loc, mul(ohFirst, conv.sh), pad->offsets[2]);
    Value bottom = arith::AddIOp::create(b, loc, mul(ohLast, conv.sh), pad->offsets[2]);
    Value rows = both(cmp(arith::CmpIPredicate::sge, top, pad->lowRows),
                      cmp(arith::CmpIPredicate::slt, bottom, H + pad->lowRows - (KH - 1)));
    Value columns =
        both(cmp(arith::CmpIPredicate::sge, mul(owFirst, conv.sw), pad->lowColumns),
             cmp(arith::CmpIPredicate::slt, mul(owLast, conv.sw), W + pad->lowColumns - (KW - 1)));
    return both(rows, columns);
  }

  /// Stores the sums `acc` of pixels q0 .. q0+P, channel vectors fv ..
  /// fv+V: each channel vector's P pixels as L rows of pixels, through the
  /// epilogue.
  void finish(Value n, Value fv, Value q0, int64_t P, ArrayRef<Value> acc) {
    int64_t V = t.vectors;
    auto block = VectorType::get({width, t.lanes}, b.getF32Type());
    auto rowsType = VectorType::get({t.lanes, width}, b.getF32Type());
    for (int64_t v = 0; v < V; ++v) {
      Value m = arith::ConstantOp::create(b, loc, block, b.getZeroAttr(block));
      for (int64_t p = 0; p < P; ++p)
        m = vector::InsertOp::create(b, loc, acc[v * P + p], m, p);
      Value tr = vector::TransposeOp::create(b, loc, rowsType, m, ArrayRef<int64_t>{1, 0});
      Value f0 = mul(add(fv, v), t.lanes);
      for (int64_t l = 0; l < t.lanes; ++l) {
        Value row = vector::ExtractOp::create(b, loc, tr, l);
        Value f = add(f0, l);
        SmallVector<Value, 3> idx{n, f, q0};
        if (!(epilogue && epilogue->fill)) // accumulate onto what the output held
          row = arith::AddFOp::create(b, loc, rows::load(b, loc, out, idx, width, P), row);
        if (epilogue)
          row = applyEpilogueToRow(row, n, f, q0, P);
        rows::store(b, loc, row, dest, idx, P);
      }
    }
  }

  /// The epilogue's body on one channel's row of P pixels: inputs that
  /// vary over the pixels from their flattened views, the others one
  /// element per channel (or image) broadcast.
  Value applyEpilogueToRow(Value row, Value n, Value f, Value q0, int64_t P) {
    Value dims[] = {n, f};
    return applyEpilogue(b, loc, *epilogue, row, [&](OpOperand *operand) -> Value {
      if (Value flat = operandViews.lookup(operand->getOperandNumber()))
        return rows::load(b, loc, flat, {n, f, q0}, width, P);
      SmallVector<Value> at;
      for (AffineExpr e : epilogue->op.getMatchingIndexingMap(operand).getResults())
        at.push_back(dims[cast<AffineDimExpr>(e).getPosition()]);
      Value x = memref::LoadOp::create(b, loc, operand->get(), at);
      return vector::BroadcastOp::create(b, loc, row.getType(), x);
    });
  }

  RewriterBase &b;
  Location loc;
  Value in, w, out, dest;
  PackedConv conv;
  PackedConvTile t;
  VectorType vec;
  std::optional<Epilogue> epilogue;
  const ImplicitPad *pad; // the image a zero pad was made of, or null
  llvm::DenseMap<unsigned, Value> operandViews; // epilogue inputs, flattened
  int64_t N = 1, F = 1, OW = 1, pixels = 1, C = 1, KH = 1, KW = 1, width = 1;
};

/// The tile, epilogue and whether `op` is taken (with the reason why not).
struct PackedConvPlan {
  PackedConv conv;
  PackedConvTile tile;
  std::optional<Epilogue> epilogue;
};
FailureOr<PackedConvPlan> planPackedConv(linalg::GenericOp op, unsigned vectorBits,
                                         std::string &why) {
  std::optional<PackedConv> conv = matchPackedConv(op);
  if (!conv || !op.hasPureBufferSemantics() || !isRegisterTiledConv(op)) {
    why = "not a static f32 packed convolution";
    return failure();
  }
  auto outShape = cast<MemRefType>(op.getDpsInits()[0].getType()).getShape();
  PackedConvTile tile = choosePackedConvTile(outShape[1], outShape[2], outShape[3], vectorBits);
  if (tile.lanes != conv->lanes || (outShape[1] / tile.lanes) % tile.vectors) {
    why = "packed for another vector width";
    return failure();
  }
  std::optional<Epilogue> epilogue = matchEpilogue(op);
  // A view that is not contiguous leaves the epilogue to run on its own,
  // or the convolution to the generic lowering.
  if (epilogue && !viewsFlatten(op, epilogue))
    epilogue.reset();
  if (!viewsFlatten(op, epilogue)) {
    why = "output rows not contiguous";
    return failure();
  }
  return PackedConvPlan{*conv, tile, epilogue};
}

void emitPlanned(RewriterBase &rewriter, linalg::GenericOp op, PackedConvPlan plan,
                 const ImplicitPad *pad) {
  rewriter.setInsertionPoint(plan.epilogue ? plan.epilogue->op.getOperation() : op.getOperation());
  PackedConvEmitter emitter(rewriter, op.getLoc(), op, plan.conv, plan.tile, plan.epilogue, pad);
  emitter.prepare();
  emitter.emit();
  eraseWithEpilogue(rewriter, op, plan.epilogue);
}

struct RegisterTilePackedConv : OpRewritePattern<linalg::GenericOp> {
  RegisterTilePackedConv(MLIRContext *ctx, unsigned vectorBits)
      : OpRewritePattern(ctx), vectorBits(vectorBits) {}

  LogicalResult matchAndRewrite(linalg::GenericOp op, PatternRewriter &rewriter) const override {
    std::string why;
    FailureOr<PackedConvPlan> plan = planPackedConv(op, vectorBits, why);
    if (failed(plan))
      return rewriter.notifyMatchFailure(op, why);
    emitPlanned(rewriter, op, *plan, nullptr);
    return success();
  }

  unsigned vectorBits;
};

} // namespace

bool takesPackedConv(linalg::LinalgOp op, unsigned vectorBits) {
  auto g = dyn_cast<linalg::GenericOp>(op.getOperation());
  std::string why;
  return g && succeeded(planPackedConv(g, vectorBits, why));
}

void emitPackedConvRegisterTile(RewriterBase &rewriter, linalg::LinalgOp op, unsigned vectorBits,
                                const ImplicitPad *pad) {
  auto g = cast<linalg::GenericOp>(op.getOperation());
  std::string why;
  FailureOr<PackedConvPlan> plan = planPackedConv(g, vectorBits, why);
  // kiln-implicit-padding asks takesPackedConv before removing the pad.
  if (failed(plan))
    llvm::report_fatal_error(llvm::Twine("kiln: packed convolution tile not taken: ") + why);
  emitPlanned(rewriter, g, *plan, pad);
}

void populatePackedConvPatterns(RewritePatternSet &patterns, unsigned vectorBits) {
  patterns.add<RegisterTilePackedConv>(patterns.getContext(), vectorBits);
}

} // namespace kiln

//===- Recurrent.cpp - ONNX RNN, GRU and LSTM as loops --------------------===//
//
// The recurrence is one loop over the sequence (scf.for carrying the
// states and the output's buffer), its body the cell's matmuls and gate
// math on kiln ops (as ONNX's function bodies define them), so compile time
// does not grow with the length. Every direction (forward, reverse,
// bidirectional: the second direction runs the sequence backwards, its
// outputs at their own time steps), default activations; peepholes and
// initial states are read; sequence_lens stops each sequence's state at
// its length (its later outputs 0; a reverse direction starts each at its
// own end). The input
// projection of all steps is one matmul before the loop.
//
//===----------------------------------------------------------------------===//

#include "Expr.h"
#include "kiln/Dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace kiln {
namespace {

enum class Cell { RNN, GRU, LSTM };

NamedAttribute i64s(NodeContext &nc, StringRef name, ArrayRef<int64_t> v) {
  return nc.b.getNamedAttr(name, nc.b.getDenseI64ArrayAttr(v));
}

/// v[start:end] along `axis`.
Value slice(NodeContext &nc, Expr &e, Value v, int64_t axis, int64_t start, int64_t end) {
  return e.op<SliceOp>({v}, {i64s(nc, "starts", {start}), i64s(nc, "ends", {end}),
                             i64s(nc, "axes", {axis}), i64s(nc, "steps", {1})});
}

/// A direction's recurrent weights: R^T, R's bias, the LSTM's peepholes.
struct CellWeights {
  Value rt, rb, peep;
  int64_t hidden;
};

/// Gate g of a [batch, gates * H] row (or of a [gates * H] vector, axis 0).
Value gate(NodeContext &nc, Expr &e, Value v, int64_t g, int64_t hidden, int64_t axis = 1) {
  return slice(nc, e, v, axis, g * hidden, (g + 1) * hidden);
}

/// One LSTM step (gates i, o, f, c): the new h, with `c` updated.
Value lstmStep(NodeContext &nc, Expr &e, const CellWeights &w, Value xwt, Value h, Value &c) {
  int64_t H = w.hidden;
  auto sigmoid = [&](Value v) { return e.op<SigmoidOp>({v}); };
  Value g4 = e.add(xwt, e.op<MatmulOp>({h, w.rt}));
  if (w.rb)
    g4 = e.add(g4, w.rb);
  Value i = gate(nc, e, g4, 0, H), o = gate(nc, e, g4, 1, H), f = gate(nc, e, g4, 2, H),
        cc = gate(nc, e, g4, 3, H);
  if (w.peep) {
    i = e.add(i, e.mul(gate(nc, e, w.peep, 0, H, 0), c));
    f = e.add(f, e.mul(gate(nc, e, w.peep, 2, H, 0), c));
  }
  i = sigmoid(i);
  f = sigmoid(f);
  c = e.add(e.mul(f, c), e.mul(i, e.tanh(cc)));
  if (w.peep)
    o = e.add(o, e.mul(gate(nc, e, w.peep, 1, H, 0), c));
  return e.mul(sigmoid(o), e.tanh(c));
}

/// One GRU step (gates z, r, h): the new h.
Value gruStep(NodeContext &nc, Expr &e, const CellWeights &w, Value xwt, Value h) {
  int64_t H = w.hidden, gh = 3 * H;
  auto sigmoid = [&](Value v) { return e.op<SigmoidOp>({v}); };
  Value rz = slice(nc, e, w.rt, 1, 0, 2 * H), rh = slice(nc, e, w.rt, 1, 2 * H, gh);
  Value hzr = e.op<MatmulOp>({h, rz});
  if (w.rb)
    hzr = e.add(hzr, slice(nc, e, w.rb, 0, 0, 2 * H));
  Value z = sigmoid(e.add(gate(nc, e, xwt, 0, H), gate(nc, e, hzr, 0, H)));
  Value rg = sigmoid(e.add(gate(nc, e, xwt, 1, H), gate(nc, e, hzr, 1, H)));
  Value rbh = w.rb ? slice(nc, e, w.rb, 0, 2 * H, gh) : Value();
  Value hh;
  if (nc.attrInt("linear_before_reset", 0)) {
    Value lin = e.op<MatmulOp>({h, rh});
    if (rbh)
      lin = e.add(lin, rbh);
    hh = e.tanh(e.add(gate(nc, e, xwt, 2, H), e.mul(rg, lin)));
  } else {
    Value lin = e.op<MatmulOp>({e.mul(rg, h), rh});
    if (rbh)
      lin = e.add(lin, rbh);
    hh = e.tanh(e.add(gate(nc, e, xwt, 2, H), lin));
  }
  return e.add(e.mul(e.sub(e.c(1), z), hh), e.mul(z, h));
}

/// A recurrence's sizes: steps, batch, hidden and gates x hidden.
struct RecurrentSizes {
  int64_t seq, batch, hidden, gh; // seq may be dynamic
  Value steps;                    // seq as an index value
};

/// Y from every direction's outputs ([seq, batch, H] each), Y_h from the
/// last h's, Y_c (LSTM) from the last c's.
void setRecurrentOutputs(NodeContext &nc, Expr &e, ArrayRef<Value> ys, ArrayRef<Value> lastH,
                         ArrayRef<Value> lastC, bool batchFirst, const RecurrentSizes &n) {
  int64_t batch = n.batch, hidden = n.hidden;
  auto concat = [&](ArrayRef<Value> vs, int64_t axis) {
    return vs.size() == 1
               ? vs[0]
               : e.op<ConcatOp>(vs, {nc.b.getNamedAttr("axis", nc.b.getI64IntegerAttr(axis))});
  };
  if (nc.hasOutput(0)) { // Y: [seq, dirs, batch, H]
    SmallVector<Value> perDir;
    for (Value y : ys)
      perDir.push_back(
          ShapedType::isDynamic(n.seq)
              ? ReshapeOp::create(nc.b, nc.loc,
                                  RankedTensorType::get({n.seq, 1, batch, hidden},
                                                        cast<RankedTensorType>(y.getType())
                                                            .getElementType()),
                                  y, ValueRange{n.steps})
                    .getResult()
              : e.reshape(y, {n.seq, 1, batch, hidden}));
    Value y = concat(perDir, 1);
    if (batchFirst) // [seq, dirs, batch, H] => [batch, seq, dirs, H]
      y = e.op<TransposeOp>({y}, {i64s(nc, "perm", {2, 0, 1, 3})});
    (void)nc.setOutput(0, y);
  }
  // Y_h, Y_c: [dirs, batch, H] ([batch, dirs, H] batch-first).
  auto states = [&](ArrayRef<Value> vs) {
    SmallVector<Value> parts;
    for (Value v : vs)
      parts.push_back(batchFirst ? e.reshape(v, {batch, 1, hidden})
                                 : e.reshape(v, {1, batch, hidden}));
    return concat(parts, batchFirst ? 1 : 0);
  };
  (void)nc.setOutput(1, states(lastH));
  if (!lastC.empty())
    (void)nc.setOutput(2, states(lastC));
}


/// Sequence `b`'s last step, lens[b] - 1, with the length held to [0,
/// steps]: a length past the sequence (which ONNX forbids) reads no row
/// past it; a negative one none at all.
Value lastStep(OpBuilder &b, Location loc, Value lens, Value batchIndex, Value steps) {
  Value len = arith::IndexCastOp::create(
      b, loc, b.getIndexType(), tensor::ExtractOp::create(b, loc, lens, batchIndex).getResult());
  len = arith::MinSIOp::create(
      b, loc, arith::MaxSIOp::create(b, loc, len, arith::ConstantIndexOp::create(b, loc, 0)),
      steps);
  return arith::SubIOp::create(b, loc, len, arith::ConstantIndexOp::create(b, loc, 1));
}

/// Step `s`'s input rows of a reverse direction with lengths `lens`
/// ([batch] i64): each sequence starts at its own end, so row b is
/// xw[(lens[b] - 1 - s) * batch + b] (row b of step 0 once past its start:
/// masked anyway).
Value reverseRows(OpBuilder &b, Location loc, Value xw, Value lens, Value s, Value steps,
                  int64_t batch, int64_t gh) {
  Type et = cast<RankedTensorType>(xw.getType()).getElementType();
  return tensor::GenerateOp::create(
      b, loc, RankedTensorType::get({batch, gh}, et), ValueRange{},
      [&](OpBuilder &gb, Location l, ValueRange idx) {
        Value zero = arith::ConstantIndexOp::create(gb, l, 0);
        Value t = arith::SubIOp::create(gb, l, lastStep(gb, l, lens, idx[0], steps), s);
        t = arith::MaxSIOp::create(gb, l, t, zero);
        Value row = arith::AddIOp::create(
            gb, l,
            arith::MulIOp::create(gb, l, t, arith::ConstantIndexOp::create(gb, l, batch)),
            idx[0]);
        tensor::YieldOp::create(gb, l,
                                tensor::ExtractOp::create(gb, l, xw, ValueRange{row, idx[1]})
                                    .getResult());
      });
}

/// A reverse direction's outputs from the order it ran them in: `ran`
/// [seq, batch, H] holds sequence b's step s at row s; its time step is
/// lens[b] - 1 - s, and rows past its length are 0 (`ran`'s, masked).
Value unreverse(OpBuilder &b, Location loc, Value ran, Value lens, Value steps) {
  auto type = cast<RankedTensorType>(ran.getType());
  SmallVector<Value> dynamic;
  if (type.isDynamicDim(0))
    dynamic.push_back(steps);
  return tensor::GenerateOp::create(
      b, loc, type, dynamic, [&](OpBuilder &gb, Location l, ValueRange idx) {
        Value zero = arith::ConstantIndexOp::create(gb, l, 0);
        Value s = arith::SubIOp::create(gb, l, lastStep(gb, l, lens, idx[1], steps), idx[0]);
        // Past the length: no step ran it (s < 0), so 0.
        Value inside = arith::CmpIOp::create(gb, l, arith::CmpIPredicate::sge, s, zero);
        s = arith::MaxSIOp::create(gb, l, s, zero);
        Value v = tensor::ExtractOp::create(gb, l, ran, ValueRange{s, idx[1], idx[2]});
        Value z = arith::ConstantOp::create(gb, l, type.getElementType(),
                                            gb.getZeroAttr(type.getElementType()));
        tensor::YieldOp::create(gb, l, arith::SelectOp::create(gb, l, inside, v, z).getResult());
      });
}

/// One direction's loop over the sequence: the cell on each step's slice of
/// the input projection `xw` ([seq * batch, gh]), from states h (and c);
/// returns its outputs [seq, batch, H] and its last h and c. With
/// `lensColumn` ([batch, 1] lengths) a sequence past its length keeps its
/// states and outputs `zeroState`; a reverse one starts at its own end.
template <Cell cell>
std::tuple<Value, Value, Value> stepLoop(NodeContext &nc, Expr &e, const CellWeights &cw,
                                          Value xw, Value h, Value c, Value lensColumn,
                                          Value zeroState, bool reverse, RecurrentSizes n) {
  auto [seq, batch, hidden, gh, steps] = n;
  Value rt = cw.rt, rb = cw.rb;
  Type et = cast<RankedTensorType>(h.getType()).getElementType();
  Location loc = nc.loc;
  SmallVector<Value> dynamicSeq;
  if (ShapedType::isDynamic(seq))
    dynamicSeq.push_back(steps);
  Value yInit =
      tensor::EmptyOp::create(nc.b, loc, ArrayRef<int64_t>{seq, batch, hidden}, et, dynamicSeq);
  SmallVector<Value> carried{h};
  if (c)
    carried.push_back(c);
  carried.push_back(yInit);
  Value zero = arith::ConstantIndexOp::create(nc.b, loc, 0);
  Value one = arith::ConstantIndexOp::create(nc.b, loc, 1);
  // One step at nc's builder's point (Expr builds there): the next
  // states and output buffer from step `s`'s.
  // A reverse direction with lengths runs each sequence from its own end:
  // step s is time lens[b] - 1 - s of sequence b, written at row s and put
  // in time order after the loop (unreverse).
  Value lens = reverse && lensColumn ? e.reshape(lensColumn, {batch}) : Value();
  auto step = [&](Value s, ValueRange args) -> SmallVector<Value> {
    OpBuilder &ib = nc.b;
    Location l = nc.loc;
    Value last = arith::SubIOp::create(ib, l, steps, arith::ConstantIndexOp::create(ib, l, 1));
    Value t = reverse && !lens ? arith::SubIOp::create(ib, l, last, s).getResult() : s;
    Value row = arith::MulIOp::create(ib, l, t, arith::ConstantIndexOp::create(ib, l, batch));
    SmallVector<OpFoldResult> offs{row, ib.getIndexAttr(0)},
        sizes{ib.getIndexAttr(batch), ib.getIndexAttr(gh)},
        unit{ib.getIndexAttr(1), ib.getIndexAttr(1)};
    Value xwt = lens ? reverseRows(ib, l, xw, lens, s, steps, batch, gh)
                     : tensor::ExtractSliceOp::create(ib, l, xw, offs, sizes, unit).getResult();
    Value hPrev = args[0], cPrev = c ? args[1] : Value(), y = args.back();
    Value cNew = cPrev, hNew;
    if (cell == Cell::RNN) {
      Value hr = e.op<MatmulOp>({hPrev, rt});
      hNew = e.tanh(rb ? e.add(e.add(xwt, hr), rb) : e.add(xwt, hr));
    } else if (cell == Cell::LSTM) {
      hNew = lstmStep(nc, e, cw, xwt, hPrev, cNew);
    } else {
      hNew = gruStep(nc, e, cw, xwt, hPrev);
    }
    Value out = hNew;
    if (lensColumn) {
      // Past its length a sequence keeps its state and outputs 0.
      Value ti = tensor::FromElementsOp::create(
          ib, l, RankedTensorType::get({}, ib.getI64Type()),
          ValueRange{arith::IndexCastOp::create(ib, l, ib.getI64Type(), t)});
      Value live = e.op<LessOp>({ti, lensColumn});
      out = e.where(live, hNew, zeroState);
      hNew = e.where(live, hNew, hPrev);
      if (c)
        cNew = e.where(live, cNew, cPrev);
    }
    SmallVector<OpFoldResult> yOffs{t, ib.getIndexAttr(0), ib.getIndexAttr(0)},
        ySizes{ib.getIndexAttr(1), ib.getIndexAttr(batch), ib.getIndexAttr(hidden)},
        yUnit(3, ib.getIndexAttr(1));
    y = tensor::InsertSliceOp::create(ib, l, out, y, yOffs, ySizes, yUnit);
    SmallVector<Value> next{hNew};
    if (c)
      next.push_back(cNew);
    next.push_back(y);
    return next;
  };
  auto loop = scf::ForOp::create(
      nc.b, loc, zero, steps, one, carried,
      [&](OpBuilder &lb, Location l, Value s, ValueRange args) {
        // The body's ops through nc's builder, at the loop's point.
        OpBuilder::InsertionGuard guard(nc.b);
        nc.b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
        scf::YieldOp::create(nc.b, l, step(s, args));
      });
  Value y = loop.getResults().back();
  if (lens)
    y = unreverse(nc.b, loc, y, lens, steps);
  return {y, loop.getResult(0), c ? loop.getResult(1) : Value()};
}

template <Cell cell> LogicalResult recurrent(NodeContext &nc) {
  constexpr int64_t gates = cell == Cell::RNN ? 1 : cell == Cell::GRU ? 3 : 4;
  auto x = nc.input(0), w = nc.input(1), r = nc.input(2);
  if (failed(x) || failed(w) || failed(r))
    return failure();
  std::string direction = nc.attrString("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return nc.error("direction must be forward, reverse or bidirectional, not '" + direction + "'");
  if (nc.hasAttr("activations") || nc.hasAttr("clip"))
    return nc.error("custom activations and clip are not supported");
  if (cell == Cell::LSTM && nc.attrInt("input_forget", 0))
    return nc.error("input_forget is not supported");
  bool batchFirst = nc.attrInt("layout", 0);
  int64_t hidden = nc.attrInt("hidden_size", 0);
  auto xt = cast<RankedTensorType>(x->getType());
  if (xt.getRank() != 3 || hidden < 1)
    return nc.error("expects a 3-D input and hidden_size");
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  int64_t seq = xt.getDimSize(batchFirst ? 1 : 0), batch = xt.getDimSize(batchFirst ? 0 : 1);
  int64_t in = xt.getDimSize(2), gh = gates * hidden;
  // The sequence may be known only at run time: the loop runs to it.
  if (ShapedType::isDynamic(batch) || ShapedType::isDynamic(in))
    return nc.error("takes a sequence length known only at run time, not a batch or input "
                    "size (" + shapeText(xt.getShape()) + ")");
  Value steps = tensor::DimOp::create(nc.b, nc.loc, *x, batchFirst ? 1 : 0);
  // Each weight and state as ONNX defines it for this direction count.
  auto expectShape = [&](Value v, StringRef what, ArrayRef<int64_t> want) -> LogicalResult {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (t && t.getShape() == want)
      return success();
    auto str = [](ArrayRef<int64_t> dims) {
      std::string out = "[";
      for (auto [i, d] : llvm::enumerate(dims))
        out += (i ? ", " : "") + std::to_string(d);
      return out + "]";
    };
    return nc.error(Twine(what) + " must be " + str(want) + " for direction " + direction +
                    ", got " + (t ? str(t.getShape()) : std::string("an unranked tensor")));
  };
  if (failed(expectShape(*w, "W (input 1)", {dirs, gh, in})) ||
      failed(expectShape(*r, "R (input 2)", {dirs, gh, hidden})))
    return failure();
  // sequence_lens: known and full, nothing to do; else a mask per step
  // (and a reverse direction starts each sequence at its own end).
  Value lens;
  if (nc.has(4)) {
    const KnownTensor *k = nc.known(4);
    bool full = k && llvm::all_of(k->values, [&](double l) { return l == seq; });
    if (!full) {
      auto l = nc.input(4);
      if (failed(l))
        return failure();
      lens = *l;
    }
  }
  Value b, h0, c0, p;
  for (auto [i, v] : llvm::enumerate(std::array<Value *, 4>{&b, &h0, &c0, &p})) {
    size_t input = i == 0 ? 3 : 4 + i;
    if ((i == 2 || i == 3) && cell != Cell::LSTM)
      continue;
    if (!nc.has(input))
      continue;
    auto value = nc.input(input);
    if (failed(value))
      return failure();
    *v = *value;
  }
  SmallVector<int64_t> stateShape = batchFirst ? SmallVector<int64_t>{batch, dirs, hidden}
                                               : SmallVector<int64_t>{dirs, batch, hidden};
  if ((b && failed(expectShape(b, "B (input 3)", {dirs, 2 * gh}))) ||
      (h0 && failed(expectShape(h0, "initial_h (input 5)", stateShape))) ||
      (c0 && failed(expectShape(c0, "initial_c (input 6)", stateShape))) ||
      (p && failed(expectShape(p, "P (input 7)", {dirs, 3 * hidden}))))
    return failure();
  Expr e(nc, *x);
  // x as [seq * batch, in], every step's input projection one matmul.
  Value xs = batchFirst ? e.op<TransposeOp>({*x}, {i64s(nc, "perm", {1, 0, 2})}) : *x;
  xs = ShapedType::isDynamic(seq)
           ? ReshapeOp::create(nc.b, nc.loc,
                               RankedTensorType::get({ShapedType::kDynamic, in},
                                                     xt.getElementType()),
                               xs,
                               ValueRange{arith::MulIOp::create(
                                   nc.b, nc.loc, steps,
                                   arith::ConstantIndexOp::create(nc.b, nc.loc, batch))})
                 .getResult()
           : e.reshape(xs, {seq * batch, in});
  auto stateType = RankedTensorType::get({batch, hidden}, xt.getElementType());
  Value zeroState = ConstantOp::create(
      nc.b, nc.loc, DenseElementsAttr::get(stateType, nc.b.getZeroAttr(xt.getElementType())));
  // Per direction: its outputs [seq, batch, H] (in sequence order) and
  // its last states.
  SmallVector<Value> ys, lastH, lastC;
  nc.ctx()->getOrLoadDialect<scf::SCFDialect>();
  // Each sequence's length as a [batch, 1] column, for the masks.
  Value lensColumn;
  if (lens)
    lensColumn = e.reshape(nc.castTo(lens, nc.b.getI64Type()), {batch, 1});
  for (int64_t d = 0; d < dirs; ++d) {
    bool reverse = direction == "reverse" || d == 1;
    // Direction d of a weight, or of an initial state ([dirs, batch, H],
    // batch-first [batch, dirs, H]).
    auto ofDirection = [&](Value v, ArrayRef<int64_t> shape, int64_t axis = 0) {
      return e.reshape(slice(nc, e, v, axis, d, d + 1), shape);
    };
    // Weights transposed for x @ W^T.
    Value wt = e.op<TransposeOp>({ofDirection(*w, {gh, in})}, {i64s(nc, "perm", {1, 0})});
    Value rt = e.op<TransposeOp>({ofDirection(*r, {gh, hidden})}, {i64s(nc, "perm", {1, 0})});
    Value wb, rb;
    if (b) {
      Value bias = ofDirection(b, {2 * gh});
      wb = slice(nc, e, bias, 0, 0, gh);
      rb = slice(nc, e, bias, 0, gh, 2 * gh);
    }
    int64_t stateAxis = batchFirst ? 1 : 0;
    Value h = h0 ? ofDirection(h0, {batch, hidden}, stateAxis) : zeroState;
    Value c = cell == Cell::LSTM ? (c0 ? ofDirection(c0, {batch, hidden}, stateAxis) : zeroState)
                                 : Value();
    Value peep = p ? ofDirection(p, {3 * hidden}) : Value();
    CellWeights cw{rt, rb, peep, hidden};
    Value xw = e.op<MatmulOp>({xs, wt});
    if (wb)
      xw = e.add(xw, wb);
    auto [y, hLast, cLast] = stepLoop<cell>(nc, e, cw, xw, h, c, lensColumn, zeroState, reverse,
                                            {seq, batch, hidden, gh, steps});
    ys.push_back(y);
    lastH.push_back(hLast);
    lastC.push_back(cLast);
  }
  if (nc.hasFailed())
    return failure();
  setRecurrentOutputs(nc, e, ys, lastH, cell == Cell::LSTM ? lastC : ArrayRef<Value>(),
                      batchFirst, {seq, batch, hidden, gh, steps});
  return success();
}

} // namespace

void registerRecurrentHandlers(HandlerTable &t) {
  t["RNN"] = recurrent<Cell::RNN>;
  t["GRU"] = recurrent<Cell::GRU>;
  t["LSTM"] = recurrent<Cell::LSTM>;
}

} // namespace kiln

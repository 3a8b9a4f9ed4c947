//===- Recurrent.cpp - ONNX RNN, GRU and LSTM, unrolled -------------------===//
//
// Shapes are static, so the recurrence is unrolled over the sequence into
// matmuls and gate math on kiln ops (as ONNX's function bodies define them).
// Every direction (forward, reverse, bidirectional: the second direction
// runs the sequence backwards, its outputs at their own time steps), default
// activations; peepholes and initial states are read; sequence_lens must
// equal the full length. The input projection of all steps is one matmul.
//
//===----------------------------------------------------------------------===//

#include "Expr.h"

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

/// Y from every direction's steps, Y_h from the last h's, Y_c (LSTM) from
/// the last c's.
void setRecurrentOutputs(NodeContext &nc, Expr &e, ArrayRef<SmallVector<Value>> steps,
                         ArrayRef<Value> lastH, ArrayRef<Value> lastC, bool batchFirst,
                         int64_t batch, int64_t hidden) {
  int64_t dirs = steps.size(), seq = steps.front().size();
  auto concat = [&](ArrayRef<Value> vs, int64_t axis) {
    return vs.size() == 1
               ? vs[0]
               : e.op<ConcatOp>(vs, {nc.b.getNamedAttr("axis", nc.b.getI64IntegerAttr(axis))});
  };
  if (nc.hasOutput(0)) { // Y: [seq, dirs, batch, H], each direction's steps in one concat
    SmallVector<Value> perDir;
    for (int64_t d = 0; d < dirs; ++d) {
      SmallVector<Value> rows;
      for (int64_t t = 0; t < seq; ++t)
        rows.push_back(e.reshape(steps[d][t], {1, 1, batch, hidden}));
      perDir.push_back(concat(rows, 0));
    }
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
  if (nc.has(4)) { // accepted when every sequence has the full length
    auto lens = nc.constInts(4, "sequence_lens");
    if (failed(lens))
      return failure();
    if (llvm::any_of(*lens, [&](int64_t l) { return l != seq; }))
      return nc.error("sequence_lens shorter than the sequence are not supported");
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
  xs = e.reshape(xs, {seq * batch, in});
  auto stateType = RankedTensorType::get({batch, hidden}, xt.getElementType());
  Value zeroState = ConstantOp::create(
      nc.b, nc.loc, DenseElementsAttr::get(stateType, nc.b.getZeroAttr(xt.getElementType())));
  // Per direction: its hidden state after each step (in sequence order)
  // and its last states.
  SmallVector<SmallVector<Value>> steps(dirs, SmallVector<Value>(seq));
  SmallVector<Value> lastH, lastC;
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
    for (int64_t s = 0; s < seq; ++s) {
      int64_t t = reverse ? seq - 1 - s : s;
      Value xwt = slice(nc, e, xw, 0, t * batch, (t + 1) * batch);
      if (cell == Cell::RNN) {
        Value hr = e.op<MatmulOp>({h, rt});
        h = e.tanh(rb ? e.add(e.add(xwt, hr), rb) : e.add(xwt, hr));
      } else if (cell == Cell::LSTM) {
        h = lstmStep(nc, e, cw, xwt, h, c);
      } else {
        h = gruStep(nc, e, cw, xwt, h);
      }
      steps[d][t] = h;
    }
    lastH.push_back(h);
    lastC.push_back(c);
  }
  setRecurrentOutputs(nc, e, steps, lastH, cell == Cell::LSTM ? lastC : ArrayRef<Value>(),
                      batchFirst, batch, hidden);
  return success();
}

} // namespace

void registerRecurrentHandlers(HandlerTable &t) {
  t["RNN"] = recurrent<Cell::RNN>;
  t["GRU"] = recurrent<Cell::GRU>;
  t["LSTM"] = recurrent<Cell::LSTM>;
}

} // namespace kiln

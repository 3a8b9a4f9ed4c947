//===- Recurrent.cpp - ONNX RNN, GRU and LSTM, unrolled -------------------===//
//
// Shapes are static, so the recurrence is unrolled over the sequence into
// matmuls and gate math on kiln ops (as ONNX's function bodies define them).
// Forward direction, default activations; peepholes and initial states are
// read; sequence_lens must equal the full length.
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

template <Cell cell>
LogicalResult recurrent(NodeContext &nc) {
  constexpr int64_t gates = cell == Cell::RNN ? 1 : cell == Cell::GRU ? 3 : 4;
  auto x = nc.input(0), w = nc.input(1), r = nc.input(2);
  if (failed(x) || failed(w) || failed(r))
    return failure();
  if (nc.attrString("direction", "forward") != "forward")
    return nc.error("only the forward direction is supported");
  if (nc.hasAttr("activations") || nc.hasAttr("clip"))
    return nc.error("custom activations and clip are not supported");
  if (cell == Cell::LSTM && nc.attrInt("input_forget", 0))
    return nc.error("input_forget is not supported");
  bool batchFirst = nc.attrInt("layout", 0);
  int64_t hidden = nc.attrInt("hidden_size", 0);
  auto xt = cast<RankedTensorType>(x->getType());
  if (xt.getRank() != 3 || hidden < 1)
    return nc.error("expects a 3-D input and hidden_size");
  int64_t seq = xt.getDimSize(batchFirst ? 1 : 0), batch = xt.getDimSize(batchFirst ? 0 : 1);
  int64_t in = xt.getDimSize(2), gh = gates * hidden;
  if (nc.has(4)) { // accepted when every sequence has the full length
    auto lens = nc.constInts(4, "sequence_lens");
    if (failed(lens))
      return failure();
    if (llvm::any_of(*lens, [&](int64_t l) { return l != seq; }))
      return nc.error("sequence_lens shorter than the sequence are not supported");
  }
  Expr e(nc, *x);
  // Weights of direction 0, transposed for x @ W^T.
  Value wt = e.op<TransposeOp>({e.reshape(*w, {gh, in})}, {i64s(nc, "perm", {1, 0})});
  Value rt = e.op<TransposeOp>({e.reshape(*r, {gh, hidden})}, {i64s(nc, "perm", {1, 0})});
  Value wb, rb;
  if (nc.has(3)) {
    auto b = nc.input(3);
    if (failed(b))
      return failure();
    Value bias = e.reshape(*b, {2 * gh});
    wb = slice(nc, e, bias, 0, 0, gh);
    rb = slice(nc, e, bias, 0, gh, 2 * gh);
  }
  Value h, c;
  if (nc.has(5)) {
    auto h0 = nc.input(5);
    if (failed(h0))
      return failure();
    h = e.reshape(*h0, {batch, hidden});
  }
  if (cell == Cell::LSTM && nc.has(6)) {
    auto c0 = nc.input(6);
    if (failed(c0))
      return failure();
    c = e.reshape(*c0, {batch, hidden});
  }
  auto stateType = RankedTensorType::get({batch, hidden}, xt.getElementType());
  Value zeroState = ConstantOp::create(
      nc.b, nc.loc, DenseElementsAttr::get(stateType, nc.b.getZeroAttr(xt.getElementType())));
  if (!h)
    h = zeroState;
  if (cell == Cell::LSTM && !c)
    c = zeroState;
  Value peep;
  if (cell == Cell::LSTM && nc.has(7)) {
    auto p = nc.input(7);
    if (failed(p))
      return failure();
    peep = e.reshape(*p, {3 * hidden});
  }
  auto gate = [&](Value v, int64_t g) { return slice(nc, e, v, 1, g * hidden, (g + 1) * hidden); };
  auto vecGate = [&](Value v, int64_t g) { return slice(nc, e, v, 0, g * hidden, (g + 1) * hidden); };
  auto sigmoid = [&](Value v) { return e.op<SigmoidOp>({v}); };
  SmallVector<Value> outputs;
  for (int64_t t = 0; t < seq; ++t) {
    Value xs = e.reshape(slice(nc, e, *x, batchFirst ? 1 : 0, t, t + 1), {batch, in});
    Value xw = e.op<MatmulOp>({xs, wt});
    if (wb)
      xw = e.add(xw, wb);
    if (cell == Cell::RNN) {
      Value hr = e.op<MatmulOp>({h, rt});
      h = e.tanh(rb ? e.add(e.add(xw, hr), rb) : e.add(xw, hr));
    } else if (cell == Cell::LSTM) {
      Value g4 = e.add(xw, e.op<MatmulOp>({h, rt}));
      if (rb)
        g4 = e.add(g4, rb);
      Value i = gate(g4, 0), o = gate(g4, 1), f = gate(g4, 2), cc = gate(g4, 3);
      if (peep) {
        i = e.add(i, e.mul(vecGate(peep, 0), c));
        f = e.add(f, e.mul(vecGate(peep, 2), c));
      }
      i = sigmoid(i);
      f = sigmoid(f);
      c = e.add(e.mul(f, c), e.mul(i, e.tanh(cc)));
      if (peep)
        o = e.add(o, e.mul(vecGate(peep, 1), c));
      h = e.mul(sigmoid(o), e.tanh(c));
    } else { // GRU: gates z, r, h
      Value rz = slice(nc, e, rt, 1, 0, 2 * hidden), rh = slice(nc, e, rt, 1, 2 * hidden, gh);
      Value hzr = e.op<MatmulOp>({h, rz});
      if (rb)
        hzr = e.add(hzr, slice(nc, e, rb, 0, 0, 2 * hidden));
      Value z = sigmoid(e.add(gate(xw, 0), gate(hzr, 0)));
      Value rg = sigmoid(e.add(gate(xw, 1), gate(hzr, 1)));
      Value rbh = rb ? slice(nc, e, rb, 0, 2 * hidden, gh) : Value();
      Value hh;
      if (nc.attrInt("linear_before_reset", 0)) {
        Value lin = e.op<MatmulOp>({h, rh});
        if (rbh)
          lin = e.add(lin, rbh);
        hh = e.tanh(e.add(gate(xw, 2), e.mul(rg, lin)));
      } else {
        Value lin = e.op<MatmulOp>({e.mul(rg, h), rh});
        if (rbh)
          lin = e.add(lin, rbh);
        hh = e.tanh(e.add(gate(xw, 2), lin));
      }
      h = e.add(e.mul(e.sub(e.c(1), z), hh), e.mul(z, h));
    }
    outputs.push_back(e.reshape(h, {1, 1, batch, hidden}));
  }
  if (nc.hasOutput(0)) {
    Value y = outputs.size() == 1
                  ? outputs[0]
                  : e.op<ConcatOp>(outputs, {nc.b.getNamedAttr("axis", nc.b.getI64IntegerAttr(0))});
    if (batchFirst) // [seq, 1, batch, H] => [batch, seq, 1, H]
      y = e.op<TransposeOp>({y}, {i64s(nc, "perm", {2, 0, 1, 3})});
    (void)nc.setOutput(0, y);
  }
  auto state = [&](Value v) {
    return batchFirst ? e.reshape(v, {batch, 1, hidden}) : e.reshape(v, {1, batch, hidden});
  };
  (void)nc.setOutput(1, state(h));
  if (cell == Cell::LSTM)
    (void)nc.setOutput(2, state(c));
  return success();
}

} // namespace

void registerRecurrentHandlers(HandlerTable &t) {
  t["RNN"] = recurrent<Cell::RNN>;
  t["GRU"] = recurrent<Cell::GRU>;
  t["LSTM"] = recurrent<Cell::LSTM>;
}

} // namespace kiln

//===- Loss.cpp - NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss ---===//
//
// The class of each element is selected with a one-hot mask built by
// comparing the targets with an iota over the class axis (1), so the loss is
// elementwise math plus reductions, with ONNX's ignore_index, per-class
// weights and none/sum/mean reductions.
//
//===----------------------------------------------------------------------===//

#include "Expr.h"

using namespace mlir;

namespace kiln {
namespace {

/// Builds -input[n, target[n, d...], d...] with weighting and reduction.
FailureOr<Value> nllLoss(NodeContext &nc, Value input, Value target, Value weight) {
  auto it = cast<RankedTensorType>(input.getType());
  auto tt = cast<RankedTensorType>(target.getType());
  if (it.getRank() < 2 || tt.getRank() != it.getRank() - 1)
    return nc.error("expects input [N, C, d...] and target [N, d...]");
  int64_t classes = it.getDimSize(1), rank = it.getRank();
  Expr e(nc, input);
  auto &b = nc.b;
  // iota over classes shaped [1, C, 1...], compared with target [N, 1, d...].
  KnownTensor iota;
  iota.elementType = tt.getElementType();
  iota.shape.assign(rank, 1);
  iota.shape[1] = classes;
  for (int64_t c = 0; c < classes; ++c)
    iota.values.push_back(c);
  Value classIds = nc.constant(iota);
  SmallVector<int64_t> tshape(tt.getShape());
  tshape.insert(tshape.begin() + 1, 1);
  Value t = e.reshape(target, tshape);
  Value onehotBool = e.op<EqualOp>({classIds, t});
  Type ft = it.getElementType();
  Value onehot = nc.castTo(onehotBool, ft);
  SmallVector<int64_t> classAxis{1};
  auto squeezeClass = [&](Value v) {
    auto vt = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(vt.getShape());
    shape.erase(shape.begin() + 1);
    return e.reshape(v, shape);
  };
  Value loss = e.sub(e.c(0), squeezeClass(e.reduce<ReduceSumOp>(e.mul(input, onehot), classAxis)));

  // Per-element weights: weight[target], zero where target == ignore_index.
  Value w;
  if (weight) {
    SmallVector<int64_t> wshape(rank, 1);
    wshape[1] = classes;
    w = squeezeClass(e.reduce<ReduceSumOp>(e.mul(e.reshape(weight, wshape), onehot), classAxis));
  }
  if (const onnx::AttributeProto *ignore = nc.attr("ignore_index")) {
    KnownTensor k;
    k.elementType = tt.getElementType();
    k.values = {(double)ignore->i()};
    Value keep = nc.castTo(e.op<NotOp>({e.op<EqualOp>({target, nc.constant(k)})}), ft);
    w = w ? e.mul(w, keep) : keep;
  }
  if (w)
    loss = e.mul(loss, w);
  std::string reduction = nc.attrString("reduction", "mean");
  SmallVector<int64_t> all;
  auto reduceAll = [&](Value v) {
    return e.op<ReduceSumOp>({v}, {b.getNamedAttr("axes", b.getDenseI64ArrayAttr(all)),
                                   b.getNamedAttr("keepdims", b.getBoolAttr(false))});
  };
  if (reduction == "none")
    return loss;
  if (reduction == "sum")
    return reduceAll(loss);
  if (reduction != "mean")
    return nc.error("unknown reduction '" + reduction + "'");
  if (w)
    return e.div(reduceAll(loss), reduceAll(w));
  return e.op<ReduceMeanOp>({loss}, {b.getNamedAttr("axes", b.getDenseI64ArrayAttr(all)),
                                     b.getNamedAttr("keepdims", b.getBoolAttr(false))});
}

LogicalResult nll(NodeContext &nc) {
  auto input = nc.input(0), target = nc.input(1);
  if (failed(input) || failed(target))
    return failure();
  Value weight;
  if (nc.has(2)) {
    auto w = nc.input(2);
    if (failed(w))
      return failure();
    weight = *w;
  }
  auto loss = nllLoss(nc, *input, *target, weight);
  if (failed(loss))
    return failure();
  return nc.setOutput(0, *loss);
}

LogicalResult softmaxCrossEntropy(NodeContext &nc) {
  auto scores = nc.input(0), labels = nc.input(1);
  if (failed(scores) || failed(labels))
    return failure();
  Expr e(nc, *scores);
  SmallVector<int64_t> classAxis{1};
  Value shifted = e.sub(*scores, e.reduce<ReduceMaxOp>(*scores, classAxis));
  Value logProb = e.sub(shifted, e.log(e.reduce<ReduceSumOp>(e.exp(shifted), classAxis)));
  Value weight;
  if (nc.has(2)) {
    auto w = nc.input(2);
    if (failed(w))
      return failure();
    weight = *w;
  }
  auto loss = nllLoss(nc, logProb, *labels, weight);
  if (failed(loss))
    return failure();
  (void)nc.setOutput(1, logProb);
  return nc.setOutput(0, *loss);
}

} // namespace

void registerLossHandlers(HandlerTable &t) {
  t["NegativeLogLikelihoodLoss"] = nll;
  t["SoftmaxCrossEntropyLoss"] = softmaxCrossEntropy;
}

} // namespace kiln

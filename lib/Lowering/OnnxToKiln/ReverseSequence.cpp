//===- ReverseSequence.cpp - ONNX ReverseSequence as a gather --------------===//
//
// Each batch entry b reverses its first sequence_lens[b] time steps:
//   y = GatherElements(x, idx, axis = time_axis),
//   idx[t, b] = t < len[b] ? len[b] - 1 - t : t    (broadcast to x's shape)
// The lengths are data (known only at run time); the index is computed
// from them in the graph.
//
//===----------------------------------------------------------------------===//

#include "Expr.h"

using namespace mlir;

namespace kiln {
namespace {

LogicalResult reverseSequence(NodeContext &nc) {
  auto x = nc.input(0), lens = nc.input(1);
  if (failed(x) || failed(lens))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  auto lt = cast<RankedTensorType>(lens->getType());
  int64_t timeAxis = nc.attrInt("time_axis", 0), batchAxis = nc.attrInt("batch_axis", 1);
  if (xt.getRank() < 2)
    return nc.error("expects an input of rank 2 or more, not " + Twine(xt.getRank()));
  if (timeAxis < 0 || timeAxis > 1 || batchAxis < 0 || batchAxis > 1 || timeAxis == batchAxis)
    return nc.error("time_axis and batch_axis must be 0 and 1, or 1 and 0");
  int64_t T = xt.getDimSize(timeAxis), B = xt.getDimSize(batchAxis);
  if (!isa<IntegerType>(lt.getElementType()) || lt.getRank() != 1 || lt.getDimSize(0) != B)
    return nc.error("sequence_lens must hold " + Twine(B) + " integers (one per batch entry)");
  if (T > (int64_t(1) << 26))
    return nc.error("a time axis of " + Twine(T) + " steps is past what a constant index may hold");
  Type i64 = nc.b.getI64Type();
  SmallVector<int64_t> timeShape{1, 1}, batchShape{1, 1};
  timeShape[timeAxis] = T;
  batchShape[batchAxis] = B;
  KnownTensor steps;
  steps.shape = timeShape;
  steps.elementType = i64;
  for (int64_t t = 0; t < T; ++t)
    steps.values.push_back(t);
  Value t = nc.constant(steps);
  Expr e(nc, t);
  // A length past the time axis reverses all of it.
  Value len = e.min(e.reshape(nc.castTo(*lens, i64), batchShape), e.c(T));
  Value idx = e.where(e.less(t, len), e.sub(e.sub(len, e.c(1)), t), t);
  // To x's shape: [T, B] or [B, T], then trailing 1s, plus a zero splat.
  SmallVector<int64_t> shape(xt.getRank(), 1);
  shape[0] = xt.getDimSize(0);
  shape[1] = xt.getDimSize(1);
  idx = e.broadcastTo(e.reshape(idx, shape), xt.getShape());
  return nc.emit<GatherElementsOp>({*x, idx},
                                   {nc.b.getNamedAttr("axis", nc.b.getI64IntegerAttr(timeAxis))});
}

} // namespace

void registerReverseSequenceHandlers(HandlerTable &t) { t["ReverseSequence"] = reverseSequence; }

} // namespace kiln

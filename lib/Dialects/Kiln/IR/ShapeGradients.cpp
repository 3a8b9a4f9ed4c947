//===- ShapeGradients.cpp - gradient rules of reductions and data movement ===//
//
// Reductions broadcast the gradient back (max/min split it among ties, as
// PyTorch's amax/amin); data movement moves it back: reshapes reshape,
// slices pad, gathers scatter-add, concat slices and split concatenates.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Dialects/Kiln/IR/ShapeUtils.h"

#include <limits>

using namespace mlir;
using namespace kiln;

using Grads = SmallVectorImpl<Value>;

namespace {
/// The input's shape with the reduced axes as size 1.
SmallVector<int64_t> keptShape(Value x, ArrayRef<int64_t> axes) {
  SmallVector<int64_t> shape(shapeOf(x));
  int64_t rank = shape.size();
  for (int64_t i = 0; i < rank; ++i)
    if (axes.empty() || llvm::any_of(axes, [&](int64_t a) { return *normalizeAxis(a, rank) == i; }))
      shape[i] = 1;
  return shape;
}

Value toI64(GradBuilder &g, Value indices) {
  return g.cast(indices, g.b.getI64Type());
}

LogicalResult reductionGradient(GradBuilder &g, Operation *op, Value dy, Grads &operandGrads) {
  Value x = op->getOperand(0), y = op->getResult(0);
  if (!isFloatTensor(x)) {
    operandGrads.push_back(Value());
    return success();
  }
  auto axes = cast<DenseI64ArrayAttr>(op->getAttr("axes")).asArrayRef();
  SmallVector<int64_t> kept = keptShape(x, axes);
  Value dyk = g.reshape(dy, kept);
  Value dx;
  if (isa<ReduceSumOp>(op)) {
    dx = g.broadcastLike(dyk, x);
  } else if (isa<ReduceMeanOp>(op)) {
    // The count is read at run time over a dynamic batch.
    if (cast<RankedTensorType>(x.getType()).hasStaticShape())
      dx = g.broadcastTo(g.mul(dyk, 1.0 / (numElements(shapeOf(x)) / numElements(kept))),
                         shapeOf(x));
    else
      dx = g.broadcastLike(g.div(dyk, g.countOf(x, axes)), x);
  } else if (isa<ReduceMaxOp, ReduceMinOp>(op)) {
    Value hit = g.op<EqualOp>({x, g.reshape(y, kept)});
    Value hits = g.reduceSum(g.cast(hit, cast<RankedTensorType>(x.getType()).getElementType()),
                             axes, true);
    dx = g.where(hit, g.div(dyk, hits), g.scalar(0, dy));
  } else {
    // Product: y / x (inputs that are exactly zero get NaN/Inf, a known gap).
    dx = g.div(g.mul(dyk, g.reshape(y, kept)), x);
  }
  operandGrads.push_back(dx);
  return success();
}
} // namespace

#define KILN_REDUCTION_GRADIENT(OP)                                                      \
  LogicalResult OP::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,          \
                                   Grads &operandGrads) {                                \
    return reductionGradient(g, getOperation(), resultGrads[0], operandGrads);           \
  }
KILN_REDUCTION_GRADIENT(ReduceSumOp)
KILN_REDUCTION_GRADIENT(ReduceMeanOp)
KILN_REDUCTION_GRADIENT(ReduceMaxOp)
KILN_REDUCTION_GRADIENT(ReduceMinOp)
KILN_REDUCTION_GRADIENT(ReduceProdOp)

LogicalResult CumSumOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                       Grads &operandGrads) {
  // Each input reaches the outputs after it (before it, reversed).
  operandGrads.push_back(g.op<CumSumOp>(
      {resultGrads[0]}, {g.attr("axis", (int64_t)getAxis()), g.attr("exclusive", getExclusive()),
                         g.attr("reverse", !getReverse())}));
  return success();
}

#define KILN_RESHAPE_GRADIENT(OP)                                                        \
  LogicalResult OP::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,          \
                                   Grads &operandGrads) {                                \
    operandGrads.push_back(g.reshapeLike(resultGrads[0], getInput()));                   \
    /* A reshape's run-time sizes (index operands) take no gradient. */                  \
    operandGrads.resize(getOperation()->getNumOperands());                               \
    return success();                                                                    \
  }
KILN_RESHAPE_GRADIENT(ReshapeOp)
KILN_RESHAPE_GRADIENT(FlattenOp)
KILN_RESHAPE_GRADIENT(SqueezeOp)
KILN_RESHAPE_GRADIENT(UnsqueezeOp)

LogicalResult TransposeOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                          Grads &operandGrads) {
  ArrayRef<int64_t> perm = getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[perm[i]] = i;
  operandGrads.push_back(g.transpose(resultGrads[0], inverse));
  return success();
}

LogicalResult PadOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                    Grads &operandGrads) {
  ArrayRef<int64_t> pads = getPads();
  if (getMode() == "constant") {
    // Padding by -pads crops (and zero-fills what the forward pass cropped).
    SmallVector<int64_t> inverse;
    for (int64_t p : pads)
      inverse.push_back(-p);
    operandGrads.push_back(g.pad(resultGrads[0], inverse));
    return success();
  }
  if (getMode() != "reflect" && getMode() != "edge")
    return emitOpError() << "has no gradient rule for mode '" << getMode() << "'";
  // Reflect and edge read input index src(o) for output index o, one
  // dimension at a time: the gradient sums dy back through a 0/1 matrix
  // S[o][i] = (src(o) == i) per padded dimension (a matmul over that axis).
  Value v = resultGrads[0];
  ArrayRef<int64_t> xs = shapeOf(getInput());
  int64_t rank = xs.size();
  bool reflect = getMode() == "reflect";
  auto et = cast<FloatType>(cast<RankedTensorType>(v.getType()).getElementType());
  for (int64_t d = 0; d < rank; ++d) {
    int64_t begin = pads[d], end = pads[rank + d], n = xs[d], out = n + begin + end;
    if (begin == 0 && end == 0)
      continue;
    SmallVector<APFloat> select(out * n, APFloat::getZero(et.getFloatSemantics()));
    for (int64_t o = 0; o < out; ++o) {
      int64_t s = o - begin;
      if (reflect && n > 1) {
        int64_t period = 2 * (n - 1);
        s = ((s % period) + period) % period;
        s = s < n ? s : period - s;
      }
      s = std::max<int64_t>(0, std::min(s, n - 1));
      select[o * n + s] = APFloat::getOne(et.getFloatSemantics());
    }
    Value matrix = ConstantOp::create(
        g.b, g.loc, DenseElementsAttr::get(RankedTensorType::get({out, n}, et), select));
    SmallVector<int64_t> toLast;
    for (int64_t i = 0; i < rank; ++i)
      if (i != d)
        toLast.push_back(i);
    toLast.push_back(d);
    SmallVector<int64_t> back(rank);
    for (int64_t i = 0; i < rank; ++i)
      back[toLast[i]] = i;
    v = g.transpose(g.op<MatmulOp>({g.transpose(v, toLast), matrix}), back);
  }
  operandGrads.push_back(v);
  return success();
}

LogicalResult ConcatOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                       Grads &operandGrads) {
  int64_t axis = *normalizeAxis(getAxis(), shapeOf(getResult()).size()), offset = 0;
  for (Value in : getInputs()) {
    int64_t size = shapeOf(in)[axis];
    operandGrads.push_back(g.slice(resultGrads[0], {offset}, {offset + size}, {axis}, {1}));
    offset += size;
  }
  return success();
}

LogicalResult SplitOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                      Grads &operandGrads) {
  SmallVector<Value> pieces;
  for (auto [r, dr] : llvm::zip(getResults(), resultGrads))
    pieces.push_back(dr ? dr : g.zerosLike(r));
  int64_t axis = *normalizeAxis(getAxis(), shapeOf(getInput()).size());
  operandGrads.push_back(g.op<ConcatOp>(pieces, {g.attr("axis", axis)}));
  return success();
}

LogicalResult SliceOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                      Grads &operandGrads) {
  ArrayRef<int64_t> xs = shapeOf(getInput());
  auto dims = resolveSlice(xs, getStarts(), getEnds(), getAxes(), getSteps());
  Value v = resultGrads[0];
  if (numElements(shapeOf(v)) == 0) {
    operandGrads.push_back(g.zerosLike(getInput()));
    return success();
  }
  int64_t rank = xs.size(), big = std::numeric_limits<int64_t>::min() / 2;
  for (int64_t d = 0; d < rank; ++d) {
    SliceDim s = (*dims)[d];
    if (s.start == 0 && s.step == 1 && s.size == xs[d])
      continue;
    int64_t first = s.start, stride = s.step;
    if (s.step < 0) {
      // Elements were taken downwards: reverse, then they ascend from first.
      v = g.slice(v, {-1}, {big}, {d}, {-1});
      first = s.start + (s.size - 1) * s.step;
      stride = -s.step;
    }
    v = g.dilate(v, d, stride);
    int64_t len = (s.size - 1) * stride + 1;
    SmallVector<int64_t> pads(2 * rank, 0);
    pads[d] = first;
    pads[rank + d] = xs[d] - first - len;
    v = g.pad(v, pads);
  }
  operandGrads.push_back(v);
  return success();
}

LogicalResult GatherOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                       Grads &operandGrads) {
  Value data = getData(), dy = resultGrads[0];
  ArrayRef<int64_t> ds = shapeOf(data);
  int64_t rank = ds.size(), axis = *normalizeAxis(getAxis(), rank);
  int64_t count = numElements(shapeOf(getIndices()));
  // dy as [pre, count, post]; each of its rows added back at its index.
  SmallVector<int64_t> flat(ds.begin(), ds.begin() + axis);
  flat.push_back(count);
  flat.append(ds.begin() + axis + 1, ds.end());
  SmallVector<int64_t> idxShape(rank, 1);
  idxShape[axis] = count;
  Value idx = g.reshape(toI64(g, getIndices()), idxShape), rows;
  if (cast<RankedTensorType>(data.getType()).hasStaticShape()) {
    idx = g.broadcastTo(idx, flat);
  } else { // the rows' dynamic sizes are data's
    rows = g.reshape(dy, flat);
    idx = g.broadcastLike(idx, rows);
  }
  Value zeros = g.zerosLike(data);
  operandGrads.push_back(g.op<ScatterElementsOp>(
      {zeros, idx, rows ? rows : g.reshape(dy, flat)},
      {g.attr("axis", axis), g.attr("reduction", g.b.getStringAttr("add"))}));
  operandGrads.push_back(Value());
  return success();
}

LogicalResult GatherElementsOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                               Grads &operandGrads) {
  operandGrads.push_back(g.op<ScatterElementsOp>(
      {g.zerosLike(getData()), toI64(g, getIndices()), resultGrads[0]},
      {g.attr("axis", (int64_t)getAxis()), g.attr("reduction", g.b.getStringAttr("add"))}));
  operandGrads.push_back(Value());
  return success();
}

LogicalResult GatherNDOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                         Grads &operandGrads) {
  if (getBatchDims() != 0)
    return emitOpError("has no gradient rule with batch_dims > 0");
  operandGrads.push_back(g.op<ScatterNDOp>({g.zerosLike(getData()), getIndices(), resultGrads[0]},
                                           {g.attr("reduction", g.b.getStringAttr("add"))}));
  operandGrads.push_back(Value());
  return success();
}

LogicalResult ScatterElementsOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                                Grads &operandGrads) {
  Value dy = resultGrads[0];
  StringRef reduction = getReduction();
  if (reduction != "none" && reduction != "add")
    return emitOpError() << "has no gradient rule for reduction '" << reduction << "'";
  auto axis = g.attr("axis", (int64_t)getAxis());
  // Overwritten positions take no gradient back to `data`.
  operandGrads.push_back(reduction == "add"
                             ? dy
                             : g.op<ScatterElementsOp>({dy, getIndices(), g.zerosLike(getUpdates())},
                                                       {axis}));
  operandGrads.push_back(Value());
  operandGrads.push_back(g.op<GatherElementsOp>({dy, getIndices()}, {axis}));
  return success();
}

LogicalResult ScatterNDOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                          Grads &operandGrads) {
  Value dy = resultGrads[0];
  StringRef reduction = getReduction();
  if (reduction != "none" && reduction != "add")
    return emitOpError() << "has no gradient rule for reduction '" << reduction << "'";
  operandGrads.push_back(reduction == "add"
                             ? dy
                             : g.op<ScatterNDOp>({dy, getIndices(), g.zerosLike(getUpdates())}));
  operandGrads.push_back(Value());
  operandGrads.push_back(g.op<GatherNDOp>({dy, getIndices()}));
  return success();
}

LogicalResult TriluOp::buildGradients(GradBuilder &g, ArrayRef<Value> resultGrads,
                                      Grads &operandGrads) {
  operandGrads.push_back(g.op<TriluOp>(
      {resultGrads[0]}, {g.attr("upper", getUpper()), g.attr("k", (int64_t)getK())}));
  return success();
}

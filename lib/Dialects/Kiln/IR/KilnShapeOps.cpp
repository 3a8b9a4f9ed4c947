//===- KilnShapeOps.cpp - type inference of reductions and data movement --===//
//
// The kiln ops that reshape, move or reduce data: their result types and
// verifiers (op classes are defined in KilnOps.cpp).
//
//===----------------------------------------------------------------------===//

#include "KilnOpsUtils.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::detail;

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

#define KILN_REDUCE_INFER(OP)                                                  \
  LogicalResult OP::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,  \
                                     Types &results) {                         \
    auto t = tensorOf(adaptor.getInput());                                     \
    SmallVector<int64_t> shape;                                                \
    if (!t || failed(reducedShape(loc, t, adaptor.getAxes(),                   \
                                  adaptor.getKeepdims(), shape)))              \
      return failure();                                                        \
    results.push_back(RankedTensorType::get(shape, t.getElementType()));       \
    return success();                                                          \
  }
KILN_REDUCE_INFER(ReduceSumOp)
KILN_REDUCE_INFER(ReduceMeanOp)
KILN_REDUCE_INFER(ReduceMaxOp)
KILN_REDUCE_INFER(ReduceMinOp)
KILN_REDUCE_INFER(ReduceProdOp)
#undef KILN_REDUCE_INFER

#define KILN_ARG_INFER(OP)                                                     \
  LogicalResult OP::inferReturnTypes(MLIRContext *ctx, Loc loc, Adaptor adaptor, \
                                     Types &results) {                         \
    auto t = tensorOf(adaptor.getInput());                                     \
    SmallVector<int64_t> shape;                                                \
    int64_t axis = adaptor.getAxis();                                          \
    if (!t || failed(reducedShape(loc, t, ArrayRef<int64_t>(axis),             \
                                  adaptor.getKeepdims(), shape)))              \
      return failure();                                                        \
    if (t.getDimSize(*normalizeAxis(axis, t.getRank())) == 0)                  \
      return fail(loc, "cannot take the index of an empty dimension");         \
    results.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 64))); \
    return success();                                                          \
  }
KILN_ARG_INFER(ArgMaxOp)
KILN_ARG_INFER(ArgMinOp)
#undef KILN_ARG_INFER

LogicalResult CumSumOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                         Types &results) {
  auto t = tensorOf(adaptor.getInput());
  // The custom parser infers before the attributes become properties: no
  // axis to check yet (the verifier re-infers with it).
  if (adaptor.getAxisAttr() && !normalizeAxis(adaptor.getAxis(), t.getRank()))
    return badAxis(loc, "cumsum", adaptor.getAxis(), t.getRank());
  return inferSame(adaptor.getInput(), results);
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                      Types &results) {
  auto t = tensorOf(adaptor.getInput());
  auto pads = adaptor.getPads();
  int64_t rank = t.getRank();
  if ((int64_t)pads.size() != 2 * rank)
    return fail(loc, "pad needs " + Twine(2 * rank) + " amounts, got " + Twine(pads.size()));
  StringRef mode = adaptor.getMode();
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return fail(loc, "unknown pad mode '" + mode + "'");
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (t.isDynamicDim(d)) { // kept whole: the input's size at run time
      if (pads[d] != 0 || pads[d + rank] != 0)
        return fail(loc, "pad of dynamic dimension " + Twine(d) + " (only known sizes are padded)");
      shape.push_back(ShapedType::kDynamic);
      continue;
    }
    int64_t size = t.getDimSize(d) + pads[d] + pads[d + rank];
    if (size < 0)
      return fail(loc, "pad crops dimension " + Twine(d) + " below zero");
    if (mode == "reflect" && (pads[d] >= t.getDimSize(d) || pads[d + rank] >= t.getDimSize(d)) &&
        (pads[d] > 0 || pads[d + rank] > 0))
      return fail(loc, "reflect pad of " + Twine(std::max(pads[d], pads[d + rank])) +
                           " needs dimension " + Twine(d) + " larger than that");
    if (mode == "edge" && t.getDimSize(d) == 0 && size > 0)
      return fail(loc, "edge pad of an empty dimension");
    shape.push_back(size);
  }
  results.push_back(RankedTensorType::get(shape, t.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("element type must not change");
  if (!getSizes().empty()) {
    if (getSizes().size() != (size_t)out.getNumDynamicDims())
      return emitOpError("has ") << getSizes().size() << " sizes for "
                                 << out.getNumDynamicDims() << " dynamic dimensions";
    if (in.hasStaticShape() && out.hasStaticShape())
      return emitOpError("has sizes, but no dynamic dimension");
    return success(); // the element count holds at run time
  }
  // No sizes: the result's dynamic dimensions are the input's leading
  // ones, kept in place, and the static rest must hold the same elements;
  // or the result is static, and so the input's dynamic sizes at run time.
  if (!in.hasStaticShape() && out.hasStaticShape())
    return success();
  if (!in.hasStaticShape() || !out.hasStaticShape()) {
    int64_t lead = 0;
    while (lead < in.getRank() && in.isDynamicDim(lead))
      ++lead;
    bool ok = out.getRank() >= lead;
    for (int64_t i = 0; ok && i < out.getRank(); ++i)
      ok = out.isDynamicDim(i) == (i < lead);
    if (!ok || numElements(in.getShape().drop_front(lead)) !=
                   numElements(out.getShape().drop_front(lead)))
      return emitOpError("cannot reshape ")
             << shapeStr(in.getShape()) << " to " << shapeStr(out.getShape())
             << ": dynamic dimensions must lead, in place, and the rest hold as many elements";
    return success();
  }
  if (numElements(in.getShape()) != numElements(out.getShape()))
    return emitOpError("cannot reshape ")
           << shapeStr(in.getShape()) << " (" << numElements(in.getShape())
           << " elements) to " << shapeStr(out.getShape()) << " ("
           << numElements(out.getShape()) << " elements)";
  return success();
}

LogicalResult FlattenOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                          Types &results) {
  auto t = tensorOf(adaptor.getInput());
  int64_t rank = t.getRank(), axis = adaptor.getAxis();
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank)
    return badAxis(loc, "flatten", adaptor.getAxis(), rank);
  auto product = [](ArrayRef<int64_t> dims) {
    return llvm::any_of(dims, ShapedType::isDynamic) ? ShapedType::kDynamic : numElements(dims);
  };
  int64_t outer = product(t.getShape().take_front(axis));
  int64_t inner = product(t.getShape().drop_front(axis));
  results.push_back(RankedTensorType::get({outer, inner}, t.getElementType()));
  return success();
}

LogicalResult SqueezeOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                          Types &results) {
  auto t = tensorOf(adaptor.getInput());
  int64_t rank = t.getRank();
  SmallVector<bool> drop(rank, false);
  if (adaptor.getAxes().empty()) {
    for (int64_t d = 0; d < rank; ++d)
      drop[d] = t.getDimSize(d) == 1;
  }
  for (int64_t a : adaptor.getAxes()) {
    auto n = normalizeAxis(a, rank);
    if (!n)
      return fail(loc, "squeeze axis " + Twine(a) + " out of range");
    if (t.isDynamicDim(*n))
      return fail(loc, "squeeze axis " + Twine(a) + " has a size known only at run time, "
                       "expected 1; pin it with --shape or --dim");
    if (t.getDimSize(*n) != 1)
      return fail(loc, "squeeze axis " + Twine(a) + " has size " +
                           Twine(t.getDimSize(*n)) + ", expected 1");
    drop[*n] = true;
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d)
    if (!drop[d])
      shape.push_back(t.getDimSize(d));
  results.push_back(RankedTensorType::get(shape, t.getElementType()));
  return success();
}

LogicalResult UnsqueezeOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                            Types &results) {
  auto t = tensorOf(adaptor.getInput());
  int64_t rank = t.getRank() + adaptor.getAxes().size();
  SmallVector<bool> inserted(rank, false);
  for (int64_t a : adaptor.getAxes()) {
    auto n = normalizeAxis(a, rank);
    if (!n || inserted[*n])
      return fail(loc, "unsqueeze axis " + Twine(a) + " out of range or repeated");
    inserted[*n] = true;
  }
  SmallVector<int64_t> shape;
  auto src = t.getShape();
  for (int64_t d = 0, i = 0; d < rank; ++d)
    shape.push_back(inserted[d] ? 1 : src[i++]);
  results.push_back(RankedTensorType::get(shape, t.getElementType()));
  return success();
}

LogicalResult Im2ColOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                         Types &results) {
  auto t = tensorOf(adaptor.getInput());
  auto kernel = adaptor.getKernelShape(), strides = adaptor.getStrides(),
       dilations = adaptor.getDilations();
  if (t.getRank() != 4 || kernel.size() != 2 || strides.size() != 2 || dilations.size() != 2)
    return fail(loc, "im2col takes an NHWC image and 2-D windows");
  for (int64_t d = 1; d < 4; ++d)
    if (t.isDynamicDim(d))
      return fail(loc, "im2col needs static sizes but the batch");
  SmallVector<int64_t> shape{t.getDimSize(0)};
  for (int d = 0; d < 2; ++d) {
    if (kernel[d] < 1 || strides[d] < 1 || dilations[d] < 1)
      return fail(loc, "im2col's kernel, strides and dilations must be positive");
    int64_t span = t.getDimSize(d + 1) - dilations[d] * (kernel[d] - 1) - 1;
    if (span < 0)
      return fail(loc, "im2col's window is larger than the image");
    shape.push_back(span / strides[d] + 1);
  }
  shape.push_back(kernel[0] * kernel[1] * t.getDimSize(3));
  results.push_back(RankedTensorType::get(shape, t.getElementType()));
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                            Types &results) {
  auto t = tensorOf(adaptor.getInput());
  auto perm = adaptor.getPerm();
  int64_t rank = t.getRank();
  if ((int64_t)perm.size() != rank)
    return fail(loc, "transpose perm has " + Twine(perm.size()) +
                         " entries for rank " + Twine(rank));
  SmallVector<bool> used(rank, false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || used[p])
      return fail(loc, "transpose perm is not a permutation");
    used[p] = true;
    shape.push_back(t.getDimSize(p));
  }
  results.push_back(RankedTensorType::get(shape, t.getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                         Types &results) {
  auto inputs = adaptor.getInputs();
  if (inputs.empty())
    return fail(loc, "concat needs at least one input");
  auto first = tensorOf(inputs[0]);
  auto axis = normalizeAxis(adaptor.getAxis(), first.getRank());
  if (!axis)
    return badAxis(loc, "concat", adaptor.getAxis(), first.getRank());
  SmallVector<int64_t> shape(first.getShape());
  shape[*axis] = 0;
  for (Value v : inputs) {
    auto t = tensorOf(v);
    if (t.getRank() != first.getRank())
      return fail(loc, "concat inputs differ in rank");
    // A dynamic size meets anything (equal at run time); a static one
    // wins over it.
    for (int64_t d = 0; d < t.getRank(); ++d) {
      if (d == *axis || t.isDynamicDim(d))
        continue;
      if (!ShapedType::isDynamic(shape[d]) && t.getDimSize(d) != shape[d])
        return fail(loc, "concat inputs differ in dimension " + Twine(d) + ": " +
                             shapeStr(first.getShape()) + " vs " +
                             shapeStr(t.getShape()));
      shape[d] = t.getDimSize(d);
    }
    if (!ShapedType::isDynamic(shape[*axis]))
      shape[*axis] = t.isDynamicDim(*axis) ? ShapedType::kDynamic
                                            : shape[*axis] + t.getDimSize(*axis);
  }
  results.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                        Types &results) {
  auto t = tensorOf(adaptor.getInput());
  auto axis = normalizeAxis(adaptor.getAxis(), t.getRank());
  if (!axis)
    return badAxis(loc, "split", adaptor.getAxis(), t.getRank());
  if (t.isDynamicDim(*axis))
    return fail(loc, "split axis " + Twine(*axis) + " has a size known only at run time");
  int64_t total = 0;
  for (int64_t s : adaptor.getSizes()) {
    if (s < 0)
      return fail(loc, "split sizes must be non-negative");
    if (s > t.getDimSize(*axis) - total) // (a sum that could overflow)
      return fail(loc, "split sizes add up to more than the dimension, " +
                           Twine(t.getDimSize(*axis)));
    total += s;
    SmallVector<int64_t> shape(t.getShape());
    shape[*axis] = s;
    results.push_back(RankedTensorType::get(shape, t.getElementType()));
  }
  if (total != t.getDimSize(*axis))
    return fail(loc, "split sizes add up to " + Twine(total) + ", dimension is " +
                         Twine(t.getDimSize(*axis)));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                        Types &results) {
  auto t = tensorOf(adaptor.getInput());
  auto dims = resolveSlice(t.getShape(), adaptor.getStarts(), adaptor.getEnds(),
                           adaptor.getAxes(), adaptor.getSteps());
  if (!dims)
    return fail(loc, "invalid slice parameters (axes out of range, repeated or of dynamic "
                     "size, zero step, or lengths differ)");
  SmallVector<int64_t> shape;
  for (auto &d : *dims)
    shape.push_back(d.size);
  results.push_back(RankedTensorType::get(shape, t.getElementType()));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                         Types &results) {
  auto data = tensorOf(adaptor.getData()), idx = tensorOf(adaptor.getIndices());
  auto axis = normalizeAxis(adaptor.getAxis(), data.getRank());
  if (!axis)
    return badAxis(loc, "gather", adaptor.getAxis(), data.getRank());
  SmallVector<int64_t> shape(data.getShape().take_front(*axis));
  llvm::append_range(shape, idx.getShape());
  llvm::append_range(shape, data.getShape().drop_front(*axis + 1));
  results.push_back(RankedTensorType::get(shape, data.getElementType()));
  return success();
}

LogicalResult GatherElementsOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                                 Types &results) {
  auto data = tensorOf(adaptor.getData()), idx = tensorOf(adaptor.getIndices());
  if (data.getRank() != idx.getRank() || data.getRank() == 0)
    return fail(loc, "gather_elements: data and indices must have the same non-zero rank");
  if (!normalizeAxis(adaptor.getAxis(), data.getRank()))
    return badAxis(loc, "gather_elements", adaptor.getAxis(), data.getRank());
  results.push_back(RankedTensorType::get(idx.getShape(), data.getElementType()));
  return success();
}

LogicalResult GatherNDOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                           Types &results) {
  auto data = tensorOf(adaptor.getData()), idx = tensorOf(adaptor.getIndices());
  int64_t b = adaptor.getBatchDims();
  if (idx.getRank() < 1 || b < 0 || b >= idx.getRank() || b >= data.getRank())
    return fail(loc, "gather_nd: bad batch_dims or index rank");
  int64_t k = idx.getDimSize(idx.getRank() - 1);
  if (k < 1 || b + k > data.getRank())
    return fail(loc, "gather_nd: index tuples of " + Twine(k) + " do not fit data of rank " +
                         Twine(data.getRank()));
  SmallVector<int64_t> shape(idx.getShape().drop_back());
  llvm::append_range(shape, data.getShape().drop_front(b + k));
  results.push_back(RankedTensorType::get(shape, data.getElementType()));
  return success();
}

namespace {
LogicalResult checkReduction(Loc loc, StringRef r) {
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min")
    return fail(loc, "unknown scatter reduction '" + r + "'");
  return success();
}
} // namespace

LogicalResult ScatterElementsOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                                  Types &results) {
  auto data = tensorOf(adaptor.getData()), idx = tensorOf(adaptor.getIndices()),
       upd = tensorOf(adaptor.getUpdates());
  if (idx.getShape() != upd.getShape() || idx.getRank() != data.getRank() ||
      !normalizeAxis(adaptor.getAxis(), data.getRank()))
    return fail(loc, "scatter_elements: indices and updates must match, with data's rank");
  if (failed(checkReduction(loc, adaptor.getReduction())))
    return failure();
  return inferSame(adaptor.getData(), results);
}

LogicalResult ScatterNDOp::inferReturnTypes(MLIRContext *, Loc loc, Adaptor adaptor,
                                            Types &results) {
  auto data = tensorOf(adaptor.getData()), idx = tensorOf(adaptor.getIndices()),
       upd = tensorOf(adaptor.getUpdates());
  if (idx.getRank() < 1)
    return fail(loc, "scatter_nd: indices need rank >= 1");
  int64_t k = idx.getDimSize(idx.getRank() - 1);
  SmallVector<int64_t> want(idx.getShape().drop_back());
  if (k > data.getRank())
    return fail(loc, "scatter_nd: index tuples longer than data's rank");
  llvm::append_range(want, data.getShape().drop_front(k));
  if (ArrayRef<int64_t>(want) != upd.getShape())
    return fail(loc, "scatter_nd: updates have the wrong shape");
  if (failed(checkReduction(loc, adaptor.getReduction())))
    return failure();
  return inferSame(adaptor.getData(), results);
}

LogicalResult TriluOp::inferReturnTypes(MLIRContext *, Loc, Adaptor adaptor,
                                        Types &results) {
  return inferSame(adaptor.getInput(), results);
}

LogicalResult TriluOp::verify() {
  if (getInput().getType().getRank() < 2)
    return emitOpError("input must have rank >= 2");
  return success();
}

//===- GradBuilder.cpp - kiln expressions for gradient rules --------------===//

#include "kiln/Dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;

#include "kiln/Dialects/Kiln/IR/KilnInterfaces.cpp.inc"

namespace kiln {

Value GradBuilder::op(StringRef opName, ValueRange operands, ArrayRef<NamedAttribute> attrs) {
  OperationState state(loc, opName);
  state.addOperands(operands);
  state.addAttributes(attrs);
  // A placeholder type until inference (which reads the properties) ran.
  state.addTypes(operands.empty() ? (Type)b.getNoneType() : operands[0].getType());
  Operation *created = b.create(state);
  auto infer = dyn_cast<InferTypeOpInterface>(created);
  SmallVector<Type> types;
  if (!infer ||
      mlir::failed(infer.inferReturnTypes(b.getContext(), loc, created->getOperands(),
                                          created->getRawDictionaryAttrs(),
                                          created->getPropertiesStorage(),
                                          created->getRegions(), types)) ||
      types.size() != 1) {
    created->erase();
    if (!hadError)
      emitError(loc) << "internal error: a gradient rule built an invalid '" << opName << "'";
    hadError = true;
    return operands.empty() ? Value() : operands[0];
  }
  created->getResult(0).setType(types[0]);
  return created->getResult(0);
}

Value GradBuilder::scalar(double v, Type elementType) {
  return splat(v, RankedTensorType::get({}, elementType));
}

Value GradBuilder::scalar(double v, Value like) {
  return scalar(v, mlir::cast<RankedTensorType>(like.getType()).getElementType());
}

Value GradBuilder::splat(double v, RankedTensorType type) {
  Type et = type.getElementType();
  Attribute value;
  if (auto ft = dyn_cast<FloatType>(et))
    value = FloatAttr::get(ft, v);
  else
    value = IntegerAttr::get(et, (int64_t)v);
  return ConstantOp::create(b, loc, DenseElementsAttr::get(type, value));
}

Value GradBuilder::zerosLike(Value v) { return splat(0.0, mlir::cast<RankedTensorType>(v.getType())); }

Value GradBuilder::add(Value a, Value c) { return op<AddOp>({a, c}); }
Value GradBuilder::sub(Value a, Value c) { return op<SubOp>({a, c}); }
Value GradBuilder::mul(Value a, Value c) { return op<MulOp>({a, c}); }
Value GradBuilder::div(Value a, Value c) { return op<DivOp>({a, c}); }
Value GradBuilder::neg(Value a) { return op<NegOp>({a}); }
Value GradBuilder::where(Value cond, Value a, Value c) { return op<WhereOp>({cond, a, c}); }

Value GradBuilder::cast(Value v, Type elementType) {
  auto t = mlir::cast<RankedTensorType>(v.getType());
  if (t.getElementType() == elementType)
    return v;
  return CastOp::create(b, loc, RankedTensorType::get(t.getShape(), elementType), v);
}

Value GradBuilder::reshape(Value x, ArrayRef<int64_t> shape) {
  auto t = mlir::cast<RankedTensorType>(x.getType());
  if (t.getShape() == shape)
    return x;
  return ReshapeOp::create(b, loc, RankedTensorType::get(shape, t.getElementType()), x);
}

Value GradBuilder::transpose(Value x, ArrayRef<int64_t> perm) {
  return op<TransposeOp>({x}, {attr("perm", perm)});
}

Value GradBuilder::transposeLast2(Value x) {
  int64_t rank = shapeOf(x).size();
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    perm.push_back(i);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return transpose(x, perm);
}

Value GradBuilder::reduceSum(Value x, ArrayRef<int64_t> axes, bool keepdims) {
  return op<ReduceSumOp>({x}, {attr("axes", axes), attr("keepdims", keepdims)});
}

Value GradBuilder::reduceMean(Value x, ArrayRef<int64_t> axes, bool keepdims) {
  return op<ReduceMeanOp>({x}, {attr("axes", axes), attr("keepdims", keepdims)});
}

Value GradBuilder::sumTo(Value grad, Type type) {
  auto target = mlir::cast<RankedTensorType>(type);
  ArrayRef<int64_t> from = shapeOf(grad), to = target.getShape();
  if (from == to)
    return grad;
  int64_t lead = (int64_t)from.size() - (int64_t)to.size();
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < (int64_t)from.size(); ++i)
    if (i < lead || (to[i - lead] == 1 && from[i] != 1))
      axes.push_back(i);
  Value summed = axes.empty() ? grad : reduceSum(grad, axes, /*keepdims=*/true);
  return reshape(summed, to);
}

Value GradBuilder::broadcastTo(Value x, ArrayRef<int64_t> shape) {
  if (shapeOf(x) == shape)
    return x;
  auto et = mlir::cast<RankedTensorType>(x.getType()).getElementType();
  return add(x, splat(0.0, RankedTensorType::get(shape, et)));
}

Value GradBuilder::pad(Value x, ArrayRef<int64_t> pads, double value) {
  if (llvm::all_of(pads, [](int64_t p) { return p == 0; }))
    return x;
  return op<PadOp>({x}, {attr("pads", pads), attr("mode", b.getStringAttr("constant")),
                         attr("value", b.getF64FloatAttr(value))});
}

Value GradBuilder::slice(Value x, ArrayRef<int64_t> starts, ArrayRef<int64_t> ends,
                         ArrayRef<int64_t> axes, ArrayRef<int64_t> steps) {
  return op<SliceOp>({x}, {attr("starts", starts), attr("ends", ends), attr("axes", axes),
                           attr("steps", steps)});
}

Value GradBuilder::dilate(Value x, int64_t axis, int64_t stride) {
  if (stride == 1)
    return x;
  SmallVector<int64_t> shape(shapeOf(x));
  int64_t n = shape[axis], rank = shape.size();
  // [.., n, ..] -> [.., n, 1, ..] -> pad to [.., n, stride, ..] -> [.., n*stride, ..]
  SmallVector<int64_t> split(shape);
  split.insert(split.begin() + axis + 1, 1);
  SmallVector<int64_t> pads(2 * (rank + 1), 0);
  pads[(rank + 1) + axis + 1] = stride - 1;
  Value v = pad(reshape(x, split), pads);
  shape[axis] = n * stride;
  v = reshape(v, shape);
  return slice(v, {0}, {(n - 1) * stride + 1}, {axis}, {1});
}

} // namespace kiln

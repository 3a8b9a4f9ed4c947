//===- GradBuilder.cpp - kiln expressions for gradient rules --------------===//

#include "kiln/Dialects/Kiln/IR/KilnOps.h"

#include "kiln/Dialects/Kiln/IR/ShapeUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
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
  if (!type.hasStaticShape()) {
    emitError(loc) << "a gradient needs a constant of dynamic shape " << type
                   << "; this op's gradient takes static shapes so far (pin the dynamic "
                      "dimensions with --shape or --dim)";
    hadError = true;
  }
  Type et = type.getElementType();
  if (hadError) // a placeholder of the right type, never used
    type = RankedTensorType::get(SmallVector<int64_t>(type.getRank(), 1), et);
  Attribute value;
  if (auto ft = dyn_cast<FloatType>(et))
    value = FloatAttr::get(ft, v);
  else
    value = IntegerAttr::get(et, (int64_t)v);
  return ConstantOp::create(b, loc, DenseElementsAttr::get(type, value));
}

/// Zeros of `type`, its dynamic sizes those of `shaped` (of the same shape).
static Value zerosShaped(GradBuilder &g, RankedTensorType type, Value shaped) {
  if (type.hasStaticShape())
    return g.splat(0.0, type);
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      sizes.push_back(tensor::DimOp::create(g.b, g.loc, shaped, d));
  return tensor::SplatOp::create(g.b, g.loc, type, g.scalarValue(0.0, type.getElementType()),
                                 sizes);
}

Value GradBuilder::zerosLike(Value v) {
  return zerosShaped(*this, mlir::cast<RankedTensorType>(v.getType()), v);
}

Value GradBuilder::scalarValue(double v, Type et) {
  if (auto ft = dyn_cast<FloatType>(et))
    return arith::ConstantOp::create(b, loc, FloatAttr::get(ft, v));
  return arith::ConstantOp::create(b, loc, IntegerAttr::get(et, (int64_t)v));
}

Value GradBuilder::countOf(Value x, ArrayRef<int64_t> axes) {
  auto type = mlir::cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank(), known = 1;
  Value dynamic;
  for (int64_t d = 0; d < rank; ++d) {
    if (!axes.empty() && llvm::none_of(axes, [&](int64_t a) { return *normalizeAxis(a, rank) == d; }))
      continue;
    if (!type.isDynamicDim(d)) {
      known *= type.getDimSize(d);
      continue;
    }
    Value size = tensor::DimOp::create(b, loc, x, d);
    dynamic = dynamic ? arith::MulIOp::create(b, loc, dynamic, size).getResult() : size;
  }
  Type et = type.getElementType();
  if (!dynamic)
    return scalar((double)known, et);
  if (known != 1)
    dynamic = arith::MulIOp::create(b, loc, dynamic, arith::ConstantIndexOp::create(b, loc, known));
  Value n = arith::IndexCastUIOp::create(b, loc, b.getI64Type(), dynamic);
  Value v = isa<FloatType>(et) ? arith::UIToFPOp::create(b, loc, et, n).getResult()
                               : arith::TruncIOp::create(b, loc, et, n).getResult();
  return tensor::FromElementsOp::create(b, loc, RankedTensorType::get({}, et), ValueRange{v});
}

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
  auto type = RankedTensorType::get(shape, t.getElementType());
  if (type.hasStaticShape())
    return ReshapeOp::create(b, loc, type, x);
  // Dynamic dimensions kept in order, 1s added or dropped (a reduction's
  // kept axes): each dynamic size is the input's.
  int64_t staticIn = 1, staticOut = 1;
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < t.getRank(); ++d)
    if (t.isDynamicDim(d))
      sizes.push_back(tensor::DimOp::create(b, loc, x, d));
    else
      staticIn *= t.getDimSize(d);
  for (int64_t s : shape)
    staticOut *= ShapedType::isDynamic(s) ? 1 : s;
  if (sizes.size() != (size_t)type.getNumDynamicDims() || staticIn != staticOut) {
    emitError(loc) << "a gradient reshapes " << t << " to " << type
                   << ", which needs sizes computed at run time; not supported yet (pin the "
                      "dynamic dimensions with --shape or --dim)";
    hadError = true;
    return x;
  }
  return ReshapeOp::create(b, loc, type, x, sizes);
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

Value GradBuilder::broadcastLike(Value x, Value like) {
  auto type = mlir::cast<RankedTensorType>(like.getType());
  if (type.hasStaticShape())
    return broadcastTo(x, type.getShape());
  if (shapeOf(x) == type.getShape() && !mlir::cast<RankedTensorType>(x.getType()).hasStaticShape())
    return x;
  auto et = mlir::cast<RankedTensorType>(x.getType()).getElementType();
  return add(x, zerosShaped(*this, RankedTensorType::get(type.getShape(), et), like));
}

Value GradBuilder::reshapeLike(Value x, Value like) {
  auto type = mlir::cast<RankedTensorType>(like.getType());
  if (type.hasStaticShape() || shapeOf(x) == type.getShape())
    return reshape(x, type.getShape());
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      sizes.push_back(tensor::DimOp::create(b, loc, like, d));
  auto et = mlir::cast<RankedTensorType>(x.getType()).getElementType();
  return ReshapeOp::create(b, loc, RankedTensorType::get(type.getShape(), et), x, sizes);
}

Value GradBuilder::collapse(Value x, ArrayRef<int64_t> starts) {
  auto type = mlir::cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  SmallVector<int64_t> shape;
  SmallVector<Value> sizes;
  for (int64_t i = 0, e = starts.size(); i < e; ++i) {
    int64_t end = i + 1 < e ? starts[i + 1] : rank, known = 1;
    Value size;
    for (int64_t d = starts[i]; d < end; ++d) {
      if (!type.isDynamicDim(d)) {
        known *= type.getDimSize(d);
        continue;
      }
      Value s = tensor::DimOp::create(b, loc, x, d);
      size = size ? arith::MulIOp::create(b, loc, size, s).getResult() : s;
    }
    if (size && known != 1)
      size = arith::MulIOp::create(b, loc, size, arith::ConstantIndexOp::create(b, loc, known));
    shape.push_back(size ? ShapedType::kDynamic : known);
    if (size)
      sizes.push_back(size);
  }
  if (sizes.empty())
    return reshape(x, shape);
  return ReshapeOp::create(b, loc, RankedTensorType::get(shape, type.getElementType()), x, sizes);
}

Value GradBuilder::flattenRows(Value x) {
  int64_t rank = shapeOf(x).size();
  return collapse(x, {0, rank - 1});
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

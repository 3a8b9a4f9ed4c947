//===- KilnOpsUtils.h - helpers of the kiln op implementations -*- C++ -*-===//
//
// Shared by KilnOps.cpp (elementwise, contractions, normalization) and
// KilnShapeOps.cpp (reductions, data movement).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_DIALECTS_KILN_IR_KILNOPSUTILS_H
#define KILN_LIB_DIALECTS_KILN_IR_KILNOPSUTILS_H

#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Dialects/Kiln/IR/ShapeUtils.h"

#include "mlir/IR/Diagnostics.h"

#include <string>

namespace kiln::detail {
using namespace mlir;

using Loc = std::optional<Location>;
using Types = SmallVectorImpl<Type>;

inline RankedTensorType tensorOf(Value v) {
  return dyn_cast_or_null<RankedTensorType>(v ? v.getType() : Type());
}

inline LogicalResult fail(Loc loc, const Twine &msg) {
  return emitOptionalError(loc, msg);
}

/// "concat axis -5 out of range for rank 2".
inline LogicalResult badAxis(Loc loc, StringRef op, int64_t axis, int64_t rank) {
  return fail(loc, op + " axis " + Twine(axis) + " out of range for rank " + Twine(rank));
}

inline std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + (ShapedType::isDynamic(shape[i]) ? std::string("?") : std::to_string(shape[i]));
  return s.empty() ? "scalar" : s;
}

inline LogicalResult inferBroadcast(Loc loc, ArrayRef<Value> operands, Type elementType,
                             Types &results) {
  SmallVector<int64_t> shape;
  for (Value v : operands) {
    auto t = tensorOf(v);
    if (!t)
      return fail(loc, "expected ranked tensor operands");
    auto b = broadcastShapes(shape, t.getShape());
    if (!b)
      return fail(loc, "shapes " + shapeStr(shape) + " and " +
                           shapeStr(t.getShape()) + " do not broadcast");
    shape = *b;
  }
  results.push_back(RankedTensorType::get(
      shape, elementType ? elementType : tensorOf(operands[0]).getElementType()));
  return success();
}

inline LogicalResult inferSame(Value input, Types &results) {
  results.push_back(input.getType());
  return success();
}

/// Shape with the reduced axes removed or kept as 1.
inline LogicalResult reducedShape(Loc loc, RankedTensorType t, ArrayRef<int64_t> axes,
                           bool keepdims, SmallVectorImpl<int64_t> &out) {
  int64_t rank = t.getRank();
  SmallVector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) {
    auto n = normalizeAxis(a, rank);
    if (!n)
      return fail(loc, "axis " + Twine(a) + " out of range for rank " + Twine(rank));
    reduced[*n] = true;
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d])
      out.push_back(t.getDimSize(d));
    else if (keepdims)
      out.push_back(1);
  }
  return success();
}

} // namespace kiln::detail

#endif // KILN_LIB_DIALECTS_KILN_IR_KILNOPSUTILS_H

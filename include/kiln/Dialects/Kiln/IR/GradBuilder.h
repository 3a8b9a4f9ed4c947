//===- GradBuilder.h - terse kiln expressions for gradient rules -*- C++ -*-===//
//
// What the gradient rules (and the autograd, loss and optimizer passes) build
// with: kiln ops by name, with inferred result types, at one location.
// Scalars take the element type of the value they combine with.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECTS_KILN_IR_GRADBUILDER_H
#define KILN_DIALECTS_KILN_IR_GRADBUILDER_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace kiln {

class GradBuilder {
public:
  GradBuilder(mlir::OpBuilder &b, mlir::Location loc) : b(b), loc(loc) {}

  mlir::OpBuilder &b;
  mlir::Location loc;

  /// Set when a rule built an op whose types don't infer (a bug in the
  /// rule, reported at `loc`); what was built then is not used.
  bool failed() const { return hadError; }

  /// Creates `opName` with these operands and attributes, inferring its
  /// result types; returns the first result.
  mlir::Value op(llvm::StringRef opName, mlir::ValueRange operands,
                 llvm::ArrayRef<mlir::NamedAttribute> attrs = {});
  template <typename OpTy>
  mlir::Value op(mlir::ValueRange operands, llvm::ArrayRef<mlir::NamedAttribute> attrs = {}) {
    return op(OpTy::getOperationName(), operands, attrs);
  }

  // Constants.
  /// A 0-d tensor holding `v`, of `like`'s element type.
  mlir::Value scalar(double v, mlir::Value like);
  mlir::Value scalar(double v, mlir::Type elementType);
  /// A tensor of `type` filled with `v` (static shapes; a dynamic one is
  /// an error: use zerosLike).
  mlir::Value splat(double v, mlir::RankedTensorType type);
  /// Zeros of `v`'s type, sized by `v` at run time where it is dynamic.
  mlir::Value zerosLike(mlir::Value v);
  /// The 0-d count of `x`'s elements along `axes` (all: empty), of its
  /// element type: a constant, or read at run time when one is dynamic.
  mlir::Value countOf(mlir::Value x, llvm::ArrayRef<int64_t> axes);
  /// An arith constant `v` of element type `et`.
  mlir::Value scalarValue(double v, mlir::Type et);

  // Elementwise (broadcasting).
  mlir::Value add(mlir::Value a, mlir::Value b);
  mlir::Value sub(mlir::Value a, mlir::Value b);
  mlir::Value mul(mlir::Value a, mlir::Value b);
  mlir::Value div(mlir::Value a, mlir::Value b);
  mlir::Value neg(mlir::Value a);
  mlir::Value mul(mlir::Value a, double c) { return mul(a, scalar(c, a)); }
  mlir::Value add(mlir::Value a, double c) { return add(a, scalar(c, a)); }
  mlir::Value square(mlir::Value a) { return mul(a, a); }
  mlir::Value unary(llvm::StringRef opName, mlir::Value a) { return op(opName, {a}); }
  mlir::Value where(mlir::Value cond, mlir::Value a, mlir::Value b);
  mlir::Value compare(llvm::StringRef opName, mlir::Value a, mlir::Value b) {
    return op(opName, {a, b});
  }
  /// `v` with element type `elementType`.
  mlir::Value cast(mlir::Value v, mlir::Type elementType);

  // Shapes.
  mlir::Value reshape(mlir::Value x, llvm::ArrayRef<int64_t> shape);
  mlir::Value transpose(mlir::Value x, llvm::ArrayRef<int64_t> perm);
  /// Swaps the last two dimensions.
  mlir::Value transposeLast2(mlir::Value x);
  mlir::Value reduceSum(mlir::Value x, llvm::ArrayRef<int64_t> axes, bool keepdims);
  mlir::Value reduceMean(mlir::Value x, llvm::ArrayRef<int64_t> axes, bool keepdims);
  /// Sums a broadcast gradient back to `type`'s shape (numpy broadcasting
  /// in reverse: leading dimensions and stretched size-1 dimensions).
  mlir::Value sumTo(mlir::Value grad, mlir::Type type);
  /// `x` broadcast to `shape` (x + zeros).
  mlir::Value broadcastTo(mlir::Value x, llvm::ArrayRef<int64_t> shape);
  /// `x` broadcast to `like`'s shape, dynamic dimensions included.
  mlir::Value broadcastLike(mlir::Value x, mlir::Value like);
  /// `x` reshaped to `like`'s shape, its dynamic sizes read from `like`.
  mlir::Value reshapeLike(mlir::Value x, mlir::Value like);
  /// `x` [d0, ..., dn-2, K] as rows [d0 * ... * dn-2, K], the product read
  /// at run time when a dimension is dynamic.
  mlir::Value flattenRows(mlir::Value x);
  /// `x` with each run of dimensions from `starts[i]` to the next start
  /// (the last: to the end) merged into one, sizes read at run time where
  /// a dimension is dynamic.
  mlir::Value collapse(mlir::Value x, llvm::ArrayRef<int64_t> starts);
  mlir::Value pad(mlir::Value x, llvm::ArrayRef<int64_t> pads, double value = 0.0);
  mlir::Value slice(mlir::Value x, llvm::ArrayRef<int64_t> starts, llvm::ArrayRef<int64_t> ends,
                    llvm::ArrayRef<int64_t> axes, llvm::ArrayRef<int64_t> steps);
  /// Spreads `x` along `axis` with `stride - 1` zeros between elements
  /// (length (n - 1) * stride + 1).
  mlir::Value dilate(mlir::Value x, int64_t axis, int64_t stride);

  // Attributes.
  mlir::NamedAttribute attr(llvm::StringRef name, llvm::ArrayRef<int64_t> values) {
    return b.getNamedAttr(name, b.getDenseI64ArrayAttr(values));
  }
  mlir::NamedAttribute attr(llvm::StringRef name, int64_t value) {
    return b.getNamedAttr(name, b.getI64IntegerAttr(value));
  }
  mlir::NamedAttribute attr(llvm::StringRef name, bool value) {
    return b.getNamedAttr(name, b.getBoolAttr(value));
  }
  mlir::NamedAttribute attr(llvm::StringRef name, mlir::Attribute value) {
    return b.getNamedAttr(name, value);
  }

private:
  bool hadError = false;
};

/// The static shape of a ranked tensor value.
inline llvm::ArrayRef<int64_t> shapeOf(mlir::Value v) {
  return mlir::cast<mlir::RankedTensorType>(v.getType()).getShape();
}
inline bool isFloatTensor(mlir::Value v) {
  auto t = mlir::dyn_cast<mlir::RankedTensorType>(v.getType());
  return t && mlir::isa<mlir::FloatType>(t.getElementType());
}

} // namespace kiln

#endif // KILN_DIALECTS_KILN_IR_GRADBUILDER_H

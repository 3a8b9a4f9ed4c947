//===- Expr.h - terse kiln expressions for ONNX decompositions --*- C++ -*-===//
//
// ONNX ops defined as compositions (Elu, Softplus, LogSoftmax...) are built
// from kiln ops with these helpers. Operands broadcast. When a model's
// shapes make a piece invalid (inference fails, the error is reported at
// the node), the node is marked failed and the first operand stands in, so
// building can go on safely; the importer then stops at this node.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_ONNXTOKILN_EXPR_H
#define KILN_LIB_LOWERING_ONNXTOKILN_EXPR_H

#include "NodeContext.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"

namespace kiln {

class Expr {
public:
  /// Scalars made by c() take the element type of `like`.
  Expr(NodeContext &nc, mlir::Value like)
      : nc(nc),
        elementType(mlir::cast<mlir::RankedTensorType>(like.getType()).getElementType()) {}

  mlir::Value c(double v) {
    KnownTensor k;
    k.elementType = elementType;
    k.values = {v};
    return nc.constant(k);
  }
  template <typename OpTy>
  mlir::Value op(mlir::ValueRange operands, llvm::ArrayRef<mlir::NamedAttribute> attrs = {}) {
    auto r = nc.build<OpTy>(operands, attrs);
    if (mlir::succeeded(r))
      return (*r)->getResult(0);
    nc.markFailed();
    return operands.empty() ? c(0) : operands[0];
  }
  mlir::Value add(mlir::Value a, mlir::Value b) { return op<AddOp>({a, b}); }
  mlir::Value sub(mlir::Value a, mlir::Value b) { return op<SubOp>({a, b}); }
  mlir::Value mul(mlir::Value a, mlir::Value b) { return op<MulOp>({a, b}); }
  mlir::Value div(mlir::Value a, mlir::Value b) { return op<DivOp>({a, b}); }
  mlir::Value max(mlir::Value a, mlir::Value b) { return op<MaxOp>({a, b}); }
  mlir::Value min(mlir::Value a, mlir::Value b) { return op<MinOp>({a, b}); }
  mlir::Value pow(mlir::Value a, mlir::Value b) { return op<PowOp>({a, b}); }
  mlir::Value exp(mlir::Value a) { return op<ExpOp>({a}); }
  mlir::Value log(mlir::Value a) { return op<LogOp>({a}); }
  mlir::Value abs(mlir::Value a) { return op<AbsOp>({a}); }
  mlir::Value sqrt(mlir::Value a) { return op<SqrtOp>({a}); }
  mlir::Value tanh(mlir::Value a) { return op<TanhOp>({a}); }
  mlir::Value less(mlir::Value a, mlir::Value b) { return op<LessOp>({a, b}); }
  mlir::Value greater(mlir::Value a, mlir::Value b) { return op<GreaterOp>({a, b}); }
  mlir::Value lessEq(mlir::Value a, mlir::Value b) { return op<LessEqualOp>({a, b}); }
  mlir::Value where(mlir::Value cond, mlir::Value a, mlir::Value b) {
    return op<WhereOp>({cond, a, b});
  }
  /// A reduction over `axes`, keeping them as size 1.
  template <typename OpTy>
  mlir::Value reduce(mlir::Value x, llvm::ArrayRef<int64_t> axes) {
    return op<OpTy>({x}, {nc.b.getNamedAttr("axes", nc.b.getDenseI64ArrayAttr(axes)),
                          nc.b.getNamedAttr("keepdims", nc.b.getBoolAttr(true))});
  }
  /// `x` broadcast to `shape` (x op an identity splat of that shape: no
  /// data is copied, fusion reads x through the broadcast).
  mlir::Value broadcastTo(mlir::Value x, llvm::ArrayRef<int64_t> shape) {
    mlir::Type et = mlir::cast<mlir::RankedTensorType>(x.getType()).getElementType();
    auto type = mlir::RankedTensorType::get(shape, et);
    mlir::Attribute zero = mlir::isa<mlir::FloatType>(et)
                               ? (mlir::Attribute)mlir::FloatAttr::get(et, 0.0)
                               : (mlir::Attribute)mlir::IntegerAttr::get(et, 0);
    mlir::Value splat =
        ConstantOp::create(nc.b, nc.loc, mlir::DenseElementsAttr::get(type, zero));
    return et.isInteger(1) ? op<OrOp>({x, splat}) : op<AddOp>({x, splat});
  }
  mlir::Value reshape(mlir::Value x, llvm::ArrayRef<int64_t> shape) {
    auto t = mlir::cast<mlir::RankedTensorType>(x.getType());
    return ReshapeOp::create(nc.b, nc.loc, mlir::RankedTensorType::get(shape, t.getElementType()),
                             x);
  }

private:
  NodeContext &nc;
  mlir::Type elementType;
};

} // namespace kiln

#endif // KILN_LIB_LOWERING_ONNXTOKILN_EXPR_H

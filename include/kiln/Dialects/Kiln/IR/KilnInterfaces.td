//===- KilnInterfaces.td - kiln op interfaces --------------*- tablegen -*-===//
//
// The gradient rule of every differentiable kiln op, as PyTorch's
// derivatives.yaml holds one formula per op: kiln-autograd walks the graph
// backwards and asks each op for the gradients of its operands.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_INTERFACES_TD
#define KILN_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Kiln_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::kiln";
  let description = [{
    Reverse-mode differentiation of one op: given the gradient of the loss
    with respect to each result, build (with the kiln ops of `g`, at the
    op's location) the gradient with respect to each operand. Gradients have
    the operand's exact type: broadcasting is summed back out.
  }];
  let methods = [
    InterfaceMethod<[{
        Appends one value per operand to `operandGrads`: its gradient, or null
        where the operand has none (integer indices, booleans, or an operand
        the rule treats as constant). `resultGrads[i]` is null when result i
        does not reach the loss (only multi-result ops see nulls). Fails,
        with a diagnostic on the op, when the op's attributes take it
        outside what the rule covers.
      }], "::mlir::LogicalResult", "buildGradients",
      (ins "::kiln::GradBuilder &":$g, "::mlir::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

// Attached to each differentiable op in KilnOps.td.
defvar Kiln_Differentiable = DeclareOpInterfaceMethods<Kiln_GradientOpInterface>;

#endif // KILN_INTERFACES_TD

//===- KilnElementwiseOps.td - kiln elementwise operations -*- tablegen -*-===//
//
// Unary, binary (numpy broadcasting), comparison and select ops, included
// by KilnOps.td after the tensor types they take.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_ELEMENTWISE_OPS_TD
#define KILN_ELEMENTWISE_OPS_TD

class Kiln_UnaryOp<string mnemonic, Type T = Kiln_Tensor, list<Trait> traits = []>
    : Kiln_Op<mnemonic, !listconcat(traits, [Pure, InferTypeOpAdaptor, Kiln_Differentiable])> {
  let arguments = (ins T:$input);
  let results = (outs T:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Kiln_NegOp : Kiln_UnaryOp<"neg"> { let summary = "-x"; let hasFolder = 1; }
def Kiln_AbsOp : Kiln_UnaryOp<"abs"> { let summary = "|x|"; }
def Kiln_ExpOp : Kiln_UnaryOp<"exp", Kiln_FloatTensor> { let summary = "e^x"; }
def Kiln_LogOp : Kiln_UnaryOp<"log", Kiln_FloatTensor> { let summary = "natural logarithm"; }
def Kiln_SqrtOp : Kiln_UnaryOp<"sqrt", Kiln_FloatTensor> { let summary = "square root"; }
def Kiln_ReciprocalOp : Kiln_UnaryOp<"reciprocal", Kiln_FloatTensor> { let summary = "1/x"; }
def Kiln_ErfOp : Kiln_UnaryOp<"erf", Kiln_FloatTensor> { let summary = "Gauss error function"; }
def Kiln_TanhOp : Kiln_UnaryOp<"tanh", Kiln_FloatTensor> { let summary = "hyperbolic tangent"; }
def Kiln_SigmoidOp : Kiln_UnaryOp<"sigmoid", Kiln_FloatTensor> { let summary = "1/(1+e^-x)"; }
def Kiln_ReluOp : Kiln_UnaryOp<"relu"> { let summary = "max(x, 0)"; }
def Kiln_FloorOp : Kiln_UnaryOp<"floor", Kiln_FloatTensor> { let summary = "round down"; }
def Kiln_CeilOp : Kiln_UnaryOp<"ceil", Kiln_FloatTensor> { let summary = "round up"; }
def Kiln_NotOp : Kiln_UnaryOp<"not", Kiln_BoolTensor> { let summary = "logical not"; }
def Kiln_SinOp : Kiln_UnaryOp<"sin", Kiln_FloatTensor> { let summary = "sine"; }
def Kiln_CosOp : Kiln_UnaryOp<"cos", Kiln_FloatTensor> { let summary = "cosine"; }
def Kiln_TanOp : Kiln_UnaryOp<"tan", Kiln_FloatTensor> { let summary = "tangent"; }
def Kiln_AsinOp : Kiln_UnaryOp<"asin", Kiln_FloatTensor> { let summary = "arcsine"; }
def Kiln_AcosOp : Kiln_UnaryOp<"acos", Kiln_FloatTensor> { let summary = "arccosine"; }
def Kiln_AtanOp : Kiln_UnaryOp<"atan", Kiln_FloatTensor> { let summary = "arctangent"; }
def Kiln_SinhOp : Kiln_UnaryOp<"sinh", Kiln_FloatTensor> { let summary = "hyperbolic sine"; }
def Kiln_CoshOp : Kiln_UnaryOp<"cosh", Kiln_FloatTensor> { let summary = "hyperbolic cosine"; }
def Kiln_AsinhOp : Kiln_UnaryOp<"asinh", Kiln_FloatTensor> { let summary = "inverse hyperbolic sine"; }
def Kiln_AcoshOp : Kiln_UnaryOp<"acosh", Kiln_FloatTensor> { let summary = "inverse hyperbolic cosine"; }
def Kiln_AtanhOp : Kiln_UnaryOp<"atanh", Kiln_FloatTensor> { let summary = "inverse hyperbolic tangent"; }
def Kiln_RoundOp : Kiln_UnaryOp<"round", Kiln_FloatTensor> {
  let summary = "round to nearest, ties to even";
}

def Kiln_IsNaNOp : Kiln_Op<"is_nan", [Pure, InferTypeOpAdaptor]> {
  let summary = "true where the input is NaN";
  let arguments = (ins Kiln_FloatTensor:$input);
  let results = (outs Kiln_BoolTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Kiln_IsInfOp : Kiln_Op<"is_inf", [Pure, InferTypeOpAdaptor]> {
  let summary = "true where the input is an infinity of the selected signs";
  let arguments = (ins Kiln_FloatTensor:$input,
                       DefaultValuedAttr<BoolAttr, "true">:$detect_positive,
                       DefaultValuedAttr<BoolAttr, "true">:$detect_negative);
  let results = (outs Kiln_BoolTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Kiln_ClipOp : Kiln_Op<"clip", [Pure, InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "clamps to [min, max]; a missing bound is unbounded";
  let description = [{
    ```mlir
    %y = kiln.clip %x {min = 0.0 : f64, max = 6.0 : f64} : tensor<8xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, OptionalAttr<F64Attr>:$min,
                       OptionalAttr<F64Attr>:$max);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

class Kiln_BinaryOp<string mnemonic, Type T = Kiln_Tensor, list<Trait> traits = []>
    : Kiln_Op<mnemonic, !listconcat(traits, [Pure, InferTypeOpAdaptor,
                                             SameOperandsElementType, Kiln_Differentiable])> {
  let description = [{
    Numpy broadcasting: shapes are aligned at the right, a size-1 dimension
    stretches.
    ```mlir
    %z = kiln.add %x, %b : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins T:$lhs, T:$rhs);
  let results = (outs T:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
}

def Kiln_AddOp : Kiln_BinaryOp<"add", Kiln_Tensor, [Commutative]> {
  let summary = "x + y"; let hasFolder = 1;
}
def Kiln_SubOp : Kiln_BinaryOp<"sub"> { let summary = "x - y"; let hasFolder = 1; }
def Kiln_MulOp : Kiln_BinaryOp<"mul", Kiln_Tensor, [Commutative]> {
  let summary = "x * y"; let hasFolder = 1;
}
def Kiln_DivOp : Kiln_BinaryOp<"div"> {
  let summary = "x / y (integers truncate toward zero)"; let hasFolder = 1;
}
def Kiln_PowOp : Kiln_BinaryOp<"pow", Kiln_FloatTensor> { let summary = "x ^ y"; }
def Kiln_MaxOp : Kiln_BinaryOp<"max", Kiln_Tensor, [Commutative]> {
  let summary = "elementwise maximum (NaN propagates)";
}
def Kiln_MinOp : Kiln_BinaryOp<"min", Kiln_Tensor, [Commutative]> {
  let summary = "elementwise minimum (NaN propagates)";
}
def Kiln_ModOp : Kiln_BinaryOp<"mod"> {
  let summary = "remainder: sign of the divisor (integers), or of the dividend with `fmod`";
  let arguments = (ins Kiln_Tensor:$lhs, Kiln_Tensor:$rhs,
                       DefaultValuedAttr<BoolAttr, "false">:$fmod);
  let hasVerifier = 1;
}
def Kiln_BitShiftOp : Kiln_BinaryOp<"bitshift"> {
  let summary = "x << y or x >> y (logical), per element; 0 when y >= width";
  let arguments = (ins RankedTensorOf<[AnyInteger]>:$lhs, RankedTensorOf<[AnyInteger]>:$rhs,
                       BoolAttr:$left);
}
def Kiln_AndOp : Kiln_BinaryOp<"and", Kiln_BoolTensor, [Commutative]> { let summary = "logical and"; }
def Kiln_OrOp : Kiln_BinaryOp<"or", Kiln_BoolTensor, [Commutative]> { let summary = "logical or"; }
def Kiln_XorOp : Kiln_BinaryOp<"xor", Kiln_BoolTensor, [Commutative]> { let summary = "logical xor"; }

class Kiln_CompareOp<string mnemonic>
    : Kiln_Op<mnemonic, [Pure, InferTypeOpAdaptor, SameOperandsElementType]> {
  let description = [{
    Broadcasting comparison with a boolean (i1) result.
    ```mlir
    %m = kiln.less %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$lhs, Kiln_Tensor:$rhs);
  let results = (outs Kiln_BoolTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
}

def Kiln_EqualOp : Kiln_CompareOp<"equal"> { let summary = "x == y"; }
def Kiln_LessOp : Kiln_CompareOp<"less"> { let summary = "x < y"; }
def Kiln_LessEqualOp : Kiln_CompareOp<"less_equal"> { let summary = "x <= y"; }
def Kiln_GreaterOp : Kiln_CompareOp<"greater"> { let summary = "x > y"; }
def Kiln_GreaterEqualOp : Kiln_CompareOp<"greater_equal"> { let summary = "x >= y"; }

def Kiln_WhereOp : Kiln_Op<"where", [Pure, InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "cond ? x : y, broadcasting all three";
  let description = [{
    ```mlir
    %r = kiln.where %c, %x, %y : tensor<4x4xi1>, tensor<4x4xf32>, tensor<f32> -> tensor<4x4xf32>
    ```
  }];
  let arguments = (ins Kiln_BoolTensor:$condition, Kiln_Tensor:$x, Kiln_Tensor:$y);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$condition `,` $x `,` $y attr-dict `:` type($condition) `,` "
                       "type($x) `,` type($y) `->` type($result)";
}

#endif // KILN_ELEMENTWISE_OPS_TD

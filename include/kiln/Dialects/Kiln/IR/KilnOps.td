//===- KilnOps.td - kiln dialect operations ----------------*- tablegen -*-===//
//
// Ops grouped by family: constants and casts, elementwise (numpy
// broadcasting; in KilnElementwiseOps.td), contractions, normalization and
// pooling, reductions, and data movement. Result types are inferred
// (InferTypeOpAdaptor) except where the result type itself is the op's
// parameter (cast, reshape).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_OPS_TD
#define KILN_OPS_TD

include "kiln/Dialects/Kiln/IR/KilnDialect.td"
include "kiln/Dialects/Kiln/IR/KilnInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Kiln_Tensor : RankedTensorOf<[AnyType]>;
def Kiln_FloatTensor : RankedTensorOf<[AnyFloat]>;
def Kiln_BoolTensor : RankedTensorOf<[I1]>;
def Kiln_IndexTensor : RankedTensorOf<[I32, I64]>;

//===----------------------------------------------------------------------===//
// Constants, identity and casts
//===----------------------------------------------------------------------===//

def Kiln_ConstantOp : Kiln_Op<"constant", [ConstantLike, Pure, InferTypeOpAdaptor]> {
  let summary = "a constant tensor (weights live in dense_resource blobs)";
  let description = [{
    ```mlir
    %w = kiln.constant dense_resource<fc1.weight> : tensor<16x8xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Kiln_IdentityOp : Kiln_Op<"identity", [Pure, InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "returns its input";
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasFolder = 1;
}

def Kiln_CastOp : Kiln_Op<"cast", [Pure, Kiln_Differentiable]> {
  let summary = "elementwise conversion to the result's element type";
  let description = [{
    Floats round to nearest on narrowing, truncate toward zero when converted
    to integers; any non-zero value becomes true for i1.
    ```mlir
    %y = kiln.cast %x : tensor<4xf32> -> tensor<4xi64>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

include "kiln/Dialects/Kiln/IR/KilnElementwiseOps.td"

//===----------------------------------------------------------------------===//
// Randomness (counter-based: a pure function of seed, counter and position)
//===----------------------------------------------------------------------===//

def Kiln_RandomUniformOp : Kiln_Op<"random_uniform", [Pure]> {
  let summary = "uniform [0, 1) numbers, a pure function of (seed, counter, index)";
  let description = [{
    Counter-based: element i is a hash (splitmix64) of `seed`, the one-element
    integer `counter` and i, so the same counter gives the same numbers --
    a recomputed dropout mask equals the original -- and a training step
    passes its step counter to get fresh ones.
    ```mlir
    %u = kiln.random_uniform %step {seed = 7 : i64} : tensor<i64> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[AnyInteger]>:$counter, I64Attr:$seed);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$counter attr-dict `:` type($counter) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_DropoutOp : Kiln_Op<"dropout", [Pure, InferTypeOpAdaptor]> {
  let summary = "training-mode dropout: zeroes elements with probability `ratio`";
  let description = [{
    Kept elements are scaled by 1 / (1 - ratio); the second result is the
    mask (true = kept). kiln-dropout-training decomposes it into
    random_uniform over the training step's counter (a constant counter
    outside training), so it never reaches the lowering.
    ```mlir
    %y, %mask = kiln.dropout %x {ratio = 0.5 : f64, seed = 3 : i64} : tensor<4xf32> -> tensor<4xf32>, tensor<4xi1>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, F64Attr:$ratio, I64Attr:$seed);
  let results = (outs Kiln_FloatTensor:$output, Kiln_BoolTensor:$mask);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output) `,` type($mask)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def Kiln_MatmulOp : Kiln_Op<"matmul", [Pure, InferTypeOpAdaptor, SameOperandsElementType, Kiln_Differentiable]> {
  let summary = "numpy matmul: batched, broadcasting batch dimensions";
  let description = [{
    1-D operands are promoted as numpy does (and the added dimension removed).
    ```mlir
    %c = kiln.matmul %a, %b : tensor<2x4x8xf32>, tensor<8x16xf32> -> tensor<2x4x16xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$lhs, Kiln_Tensor:$rhs);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
}

def Kiln_MatmulIntegerOp : Kiln_Op<"matmul_integer", [Pure, InferTypeOpAdaptor]> {
  let summary = "8-bit integer products summed in i32: A's bytes unsigned, B's signed";
  let description = [{
    `result[.., m, n] = sum_k zext(lhs[.., m, k]) * sext(rhs[k, n])`, exact in
    i32: the operand types of x86's `vpdpbusd`, which the CPU tile runs it
    with. The importer builds it for quantized products (uint8 activations,
    int8 weights), the zero points applied around it.
    ```mlir
    %c = kiln.matmul_integer %a, %b : tensor<4x64xui8>, tensor<64x16xi8> -> tensor<4x16xi32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I8, UI8, SI8]>:$lhs, RankedTensorOf<[I8, SI8]>:$rhs);
  let results = (outs RankedTensorOf<[I32]>:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
}

def Kiln_GemmOp : Kiln_Op<"gemm", [Pure, InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "alpha * op(A) * op(B) + beta * C (ONNX Gemm)";
  let description = [{
    ```mlir
    %y = kiln.gemm %x, %w, %b {trans_b = true} : tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<4x16xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$a, Kiln_FloatTensor:$b,
                       Optional<Kiln_FloatTensor>:$c,
                       DefaultValuedAttr<F32Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F32Attr, "1.0">:$beta,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_a,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_b);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$a `,` $b (`,` $c^)? attr-dict `:` type($a) `,` type($b) "
                       "(`,` type($c)^)? `->` type($result)";
  let hasCanonicalizer = 1;
}

def Kiln_ConvOp : Kiln_Op<"conv", [Pure, InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "2-D or 3-D convolution, NC(D)HW input, FC(D)HW weight";
  let description = [{
    `pads` holds the begin amounts of each spatial dimension, then the end
    amounts (2-D: [top, left, bottom, right]); `group` splits the channels.
    ```mlir
    %y = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>,
           dilations = array<i64: 1, 1>, group = 1 : i64}
         : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> -> tensor<1x4x8x8xf32>
    ```
    With `channels_last` (2-D only, the importer never sets it) the input
    is NHWC, the weight HWIO ([KH, KW, C / group, F]) and the result NHWC:
    kiln-sink-transposes runs a depthwise convolution so where its image
    is channels last already (ConvNeXt's blocks), and the permutes around
    it cancel. Such a convolution is either ungrouped or depthwise (one
    input and one output channel per group).
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$weight,
                       Optional<Kiln_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group,
                       UnitAttr:$channels_last);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input `,` $weight (`,` $bias^)? attr-dict `:` type($input) `,` "
                       "type($weight) (`,` type($bias)^)? `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Normalization and pooling
//===----------------------------------------------------------------------===//

def Kiln_BatchNormOp : Kiln_Op<"batch_norm", [Pure, InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "inference batch normalization over dimension 1";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * scale + bias`, per channel.
    `momentum` is ONNX's (running = running * momentum + batch * (1 -
    momentum)); only training (kiln-batch-norm-training) reads it.
    ```mlir
    %y = kiln.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f32}
         : tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<1x4x8x8xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$scale,
                       Kiln_FloatTensor:$bias, Kiln_FloatTensor:$mean,
                       Kiln_FloatTensor:$variance,
                       DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon,
                       DefaultValuedAttr<F32Attr, "0.9">:$momentum);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input `,` $scale `,` $bias `,` $mean `,` $variance attr-dict `:` "
                       "type($input) `,` type($scale) `,` type($bias) `,` type($mean) `,` "
                       "type($variance) `->` type($result)";
}

def Kiln_LayerNormOp : Kiln_Op<"layer_norm", [Pure, InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "layer normalization over the dimensions from `axis` on";
  let description = [{
    ```mlir
    %y = kiln.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32}
         : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$scale,
                       Optional<Kiln_FloatTensor>:$bias,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input `,` $scale (`,` $bias^)? attr-dict `:` type($input) `,` "
                       "type($scale) (`,` type($bias)^)? `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_SoftmaxOp : Kiln_Op<"softmax", [Pure, InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "softmax along one axis (opset 13 semantics)";
  let arguments = (ins Kiln_FloatTensor:$input, DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

class Kiln_PoolOp<string mnemonic> : Kiln_Op<mnemonic, [Pure, InferTypeOpAdaptor, Kiln_Differentiable]> {
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Kiln_MaxPoolOp : Kiln_PoolOp<"max_pool"> {
  let summary = "2-D or 3-D max pooling, NC(D)HW";
  let description = [{
    ```mlir
    %y = kiln.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>,
           pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
         : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
}

def Kiln_AvgPoolOp : Kiln_PoolOp<"avg_pool"> {
  let summary = "2-D or 3-D average pooling, NC(D)HW";
  let arguments = (ins Kiln_FloatTensor:$input, DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                       DefaultValuedAttr<BoolAttr, "false">:$count_include_pad);
}

def Kiln_GlobalAvgPoolOp : Kiln_PoolOp<"global_avg_pool"> {
  let summary = "mean over every dimension after N and C (kept as size 1)";
  let arguments = (ins Kiln_FloatTensor:$input);
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class Kiln_ReduceOp<string mnemonic> : Kiln_Op<mnemonic, [Pure, InferTypeOpAdaptor, Kiln_Differentiable]> {
  let description = [{
    Reduces over `axes` (all dimensions when empty); `keepdims` keeps them as
    size 1.
    ```mlir
    %s = kiln.reduce_sum %x {axes = array<i64: 1>, keepdims = true} : tensor<2x8xf32> -> tensor<2x1xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Kiln_ReduceSumOp : Kiln_ReduceOp<"reduce_sum"> { let summary = "sum over axes"; }
def Kiln_ReduceMeanOp : Kiln_ReduceOp<"reduce_mean"> { let summary = "mean over axes"; }
def Kiln_ReduceMaxOp : Kiln_ReduceOp<"reduce_max"> { let summary = "maximum over axes"; }
def Kiln_ReduceMinOp : Kiln_ReduceOp<"reduce_min"> { let summary = "minimum over axes"; }
def Kiln_ReduceProdOp : Kiln_ReduceOp<"reduce_prod"> { let summary = "product over axes"; }

def Kiln_CumSumOp : Kiln_Op<"cumsum", [Pure, InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "running sum along `axis` (optionally exclusive and/or reversed)";
  let arguments = (ins Kiln_Tensor:$input, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$exclusive,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

class Kiln_ArgReduceOp<string mnemonic> : Kiln_Op<mnemonic, [Pure, InferTypeOpAdaptor]> {
  let description = [{
    Index (i64) of the extreme value along `axis`; ties pick the first index,
    or the last with `select_last_index`.
  }];
  let arguments = (ins Kiln_Tensor:$input, DefaultValuedAttr<I64Attr, "0">:$axis,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims,
                       DefaultValuedAttr<BoolAttr, "false">:$select_last_index);
  let results = (outs RankedTensorOf<[I64]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}
def Kiln_ArgMaxOp : Kiln_ArgReduceOp<"argmax"> { let summary = "index of the maximum"; }
def Kiln_ArgMinOp : Kiln_ArgReduceOp<"argmin"> { let summary = "index of the minimum"; }

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Kiln_PadOp : Kiln_Op<"pad", [Pure, InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "pads every dimension: constant, reflect or edge mode";
  let description = [{
    `pads` holds the begin amounts of every dimension, then the end amounts
    (ONNX order); negative amounts crop.
    ```mlir
    %y = kiln.pad %x {pads = array<i64: 0, 1, 0, 1>, mode = "reflect"} : tensor<2x4xf32> -> tensor<2x6xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<StrAttr, "\"constant\"">:$mode,
                       DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Kiln_Im2ColOp : Kiln_Op<"im2col", [Pure, InferTypeOpAdaptor]> {
  let summary = "a channels-last image's convolution windows, a row per output pixel";
  let description = [{
    `result[n, oh, ow, (kh * KW + kw) * C + c] = input[n, oh * sh + kh * dh, ow * sw + kw * dw, c]`
    of an NHWC `input` already padded: a convolution's columns as the rows
    of a matrix product over KH x KW x C, each pixel's channels contiguous
    (the importer's channels-last 8-bit convolutions).
    ```mlir
    %c = kiln.im2col %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>,
           dilations = array<i64: 1, 1>} : tensor<1x9x9x4xui8> -> tensor<1x7x7x36xui8>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Kiln_ReshapeOp : Kiln_Op<"reshape", [Pure, Kiln_Differentiable]> {
  let summary = "same elements, row-major, in the result's shape";
  let description = [{
    A dynamic result dimension's size is one of `sizes` (in order), as the
    importer computed it from the model's shape arithmetic. Without
    `sizes`, the result's dynamic dimensions are the input's leading
    dynamic ones, kept in place.
  }];
  let arguments = (ins Kiln_Tensor:$input, Variadic<Index>:$sizes);
  let results = (outs Kiln_Tensor:$result);
  let builders = [OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$input), [{
    build($_builder, $_state, result, input, ::mlir::ValueRange{});
  }]>];
  let assemblyFormat =
      "$input (`sizes` `(` $sizes^ `)`)? attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Kiln_FlattenOp : Kiln_Op<"flatten", [Pure, InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "to 2-D: dimensions before `axis` and from `axis` on";
  let arguments = (ins Kiln_Tensor:$input, DefaultValuedAttr<I64Attr, "1">:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasCanonicalizer = 1;
}

def Kiln_SqueezeOp : Kiln_Op<"squeeze", [Pure, InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "removes size-1 dimensions (`axes`, or all when empty)";
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasCanonicalizer = 1;
}

def Kiln_UnsqueezeOp : Kiln_Op<"unsqueeze", [Pure, InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "inserts size-1 dimensions at `axes` of the result";
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasCanonicalizer = 1;
}

def Kiln_TransposeOp : Kiln_Op<"transpose", [Pure, InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "permutes dimensions: result dim i is input dim perm[i]";
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Kiln_ConcatOp : Kiln_Op<"concat", [Pure, InferTypeOpAdaptor, SameOperandsElementType, Kiln_Differentiable]> {
  let summary = "joins tensors along `axis`";
  let arguments = (ins Variadic<Kiln_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($result)";
  let hasFolder = 1;
}

def Kiln_SplitOp : Kiln_Op<"split", [Pure, InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "cuts a tensor along `axis` into pieces of `sizes`";
  let arguments = (ins Kiln_Tensor:$input, I64Attr:$axis, DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<Kiln_Tensor>:$results);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($results)";
}

def Kiln_SliceOp : Kiln_Op<"slice", [Pure, InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "strided slice with ONNX semantics (clamped, negative indices)";
  let description = [{
    ```mlir
    %y = kiln.slice %x {starts = array<i64: 0>, ends = array<i64: 4>, axes = array<i64: 1>,
           steps = array<i64: 2>} : tensor<2x8xf32> -> tensor<2x2xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$axes,
                       DenseI64ArrayAttr:$steps);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasCanonicalizer = 1;
}

def Kiln_GatherOp : Kiln_Op<"gather", [Pure, InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "takes slices of `data` along `axis` at `indices` (negative wrap)";
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` type($data) `,` type($indices) "
                       "`->` type($result)";
}

def Kiln_GatherElementsOp : Kiln_Op<"gather_elements", [Pure, InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "result[i] = data[i with index[i] along `axis`] (negative indices wrap)";
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` type($data) `,` type($indices) "
                       "`->` type($result)";
}

def Kiln_GatherNDOp : Kiln_Op<"gather_nd", [Pure, InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "slices of `data` addressed by index tuples (the last dim of `indices`)";
  let arguments = (ins Kiln_Tensor:$data, RankedTensorOf<[I64]>:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$batch_dims);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` type($data) `,` type($indices) "
                       "`->` type($result)";
}

class Kiln_ScatterOp<string mnemonic> : Kiln_Op<mnemonic, [Pure, InferTypeOpAdaptor, Kiln_Differentiable]> {
  let description = [{
    A copy of `data` with `updates` written (or combined with `reduction`:
    "none", "add", "mul", "max", "min") at the positions `indices` name,
    applied in order.
  }];
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$data `,` $indices `,` $updates attr-dict `:` type($data) `,` "
                       "type($indices) `,` type($updates) `->` type($result)";
}

def Kiln_ScatterElementsOp : Kiln_ScatterOp<"scatter_elements"> {
  let summary = "result[i with indices[j] along axis] = updates[j]";
  let arguments = (ins Kiln_Tensor:$data, RankedTensorOf<[I64]>:$indices, Kiln_Tensor:$updates,
                       DefaultValuedAttr<I64Attr, "0">:$axis,
                       DefaultValuedAttr<StrAttr, "\"none\"">:$reduction);
}

def Kiln_ScatterNDOp : Kiln_ScatterOp<"scatter_nd"> {
  let summary = "result[indices[j]] = updates[j] for index tuples";
  let arguments = (ins Kiln_Tensor:$data, RankedTensorOf<[I64]>:$indices, Kiln_Tensor:$updates,
                       DefaultValuedAttr<StrAttr, "\"none\"">:$reduction);
}

def Kiln_TriluOp : Kiln_Op<"trilu", [Pure, InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "keeps the upper or lower triangle of the last two dimensions";
  let description = [{
    Elements with `j - i >= k` (upper) or `j - i <= k` (lower) are kept, the
    rest set to zero.
  }];
  let arguments = (ins Kiln_Tensor:$input, DefaultValuedAttr<BoolAttr, "true">:$upper,
                       DefaultValuedAttr<I64Attr, "0">:$k);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives (data-parallel training, kiln-data-parallel)
//===----------------------------------------------------------------------===//

def Kiln_AllReduceOp : Kiln_Op<"all_reduce",
    [Pure, AllTypesMatch<["input", "result"]>, Kiln_Differentiable]> {
  let summary = "the sum or mean of a tensor over the ranks of a data-parallel run";
  let description = [{
    Every rank runs the same artifact on its shard of the batch; this op
    combines `input` across them through the communicator the runtime lends
    the run (the host's all_reduce, ArtifactFormat.h). A run without one is a
    single rank: the result is the input. The gradient of a sum over ranks is
    the sum over ranks of the gradient (SyncBatchNorm's backward).
    ```mlir
    %g = kiln.all_reduce "mean" %dw : tensor<16x8xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, StrAttr:$reduction);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$reduction $input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Kiln_AllReduceInPlaceOp : Kiln_Op<"all_reduce_in_place"> {
  let summary = "kiln.all_reduce on a buffer, in place";
  let description = [{
    What kiln.all_reduce bufferizes to; kiln-lower-collectives turns it into
    a call of the runtime's all_reduce on the buffer's (dense, static)
    elements.
    ```mlir
    kiln.all_reduce_in_place "mean" %buf : memref<16x8xf32>
    ```
  }];
  let arguments = (ins Arg<StaticShapeMemRefOf<[AnyFloat]>, "the data, replaced by the result",
                           [MemRead, MemWrite]>:$buffer,
                       StrAttr:$reduction);
  let assemblyFormat = "$reduction $buffer attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def Kiln_AllReduceStartOp : Kiln_Op<"all_reduce_start"> {
  let summary = "starts kiln.all_reduce_in_place; the buffer is the runtime's until the wait";
  let description = [{
    kiln-schedule-collectives splits a reduction in two, so that it runs
    while the step goes on: the start where the value is computed, the wait
    (kiln.all_reduce_wait) right before the buffer is next touched.
    ```mlir
    kiln.all_reduce_start "mean" %buf : memref<16x8xf32>
    ```
  }];
  let arguments = (ins Arg<StaticShapeMemRefOf<[AnyFloat]>, "the data, replaced by the result",
                           [MemRead, MemWrite]>:$buffer,
                       StrAttr:$reduction);
  let assemblyFormat = "$reduction $buffer attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def Kiln_AllReduceWaitOp : Kiln_Op<"all_reduce_wait"> {
  let summary = "returns once the reduction kiln.all_reduce_start began on the buffer is done";
  let arguments = (ins Arg<StaticShapeMemRefOf<[AnyFloat]>, "the reduced data",
                           [MemRead, MemWrite]>:$buffer);
  let assemblyFormat = "$buffer attr-dict `:` type($buffer)";
}

#endif // KILN_OPS_TD

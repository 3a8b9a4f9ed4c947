// RUN: kiln-opt %s -canonicalize -split-input-file | FileCheck %s

// Tests that adding a zero splat of the same type folds away.
// CHECK-LABEL: func @add_zero
// CHECK-NEXT: return %arg0
func.func @add_zero(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = kiln.constant dense<0.0> : tensor<4xf32>
  %0 = kiln.add %x, %z : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that a broadcasting add of zero is kept: it changes the shape.
// CHECK-LABEL: func @add_zero_broadcast
// CHECK: kiln.add
func.func @add_zero_broadcast(%x: tensor<4xf32>) -> tensor<2x4xf32> {
  %z = kiln.constant dense<0.0> : tensor<2x4xf32>
  %0 = kiln.add %x, %z : tensor<4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// Tests that x * 1 and x / 1 fold and --x cancels.
// CHECK-LABEL: func @mul_div_one_neg_neg
// CHECK-NEXT: return %arg0
func.func @mul_div_one_neg_neg(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = kiln.constant dense<1.0> : tensor<4xf32>
  %0 = kiln.mul %one, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = kiln.div %0, %one : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %2 = kiln.neg %1 : tensor<4xf32>
  %3 = kiln.neg %2 : tensor<4xf32>
  return %3 : tensor<4xf32>
}

// -----

// Tests that flatten/unsqueeze become reshapes and reshape chains collapse.
// CHECK-LABEL: func @reshape_chain
// CHECK-NEXT: %[[R:.*]] = kiln.reshape %arg0 : tensor<2x3x4xf32> -> tensor<1x24xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_chain(%x: tensor<2x3x4xf32>) -> tensor<1x24xf32> {
  %0 = kiln.flatten %x {axis = 1 : i64} : tensor<2x3x4xf32> -> tensor<2x12xf32>
  %1 = kiln.reshape %0 : tensor<2x12xf32> -> tensor<24xf32>
  %2 = kiln.unsqueeze %1 {axes = array<i64: 0>} : tensor<24xf32> -> tensor<1x24xf32>
  return %2 : tensor<1x24xf32>
}

// -----

// Tests that two transposes compose and an identity permutation folds.
// CHECK-LABEL: func @transposes
// CHECK-NEXT: return %arg0
func.func @transposes(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = kiln.transpose %x {perm = array<i64: 1, 2, 0>} : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %1 = kiln.transpose %0 {perm = array<i64: 2, 0, 1>} : tensor<3x4x2xf32> -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

// -----

// Tests that a transpose moving only unit dimensions (torch's
// MultiheadAttention at batch 1: [1, 197, 768] -> [197, 1, 768]) is a
// reshape, and what stays a transpose: one that reorders other dimensions
// too, and one with a dimension known only at run time.
// CHECK-LABEL: func @unit_transposes
// CHECK-NEXT: %[[R:.*]] = kiln.reshape %arg0 : tensor<1x197x768xf32> -> tensor<197x1x768xf32>
// CHECK-NEXT: kiln.transpose %arg1 {perm = array<i64: 1, 0, 2>} : tensor<4x197x768xf32>
// CHECK-NEXT: kiln.transpose %arg2 {perm = array<i64: 0, 2, 1, 3>} : tensor<?x1x2x32xf32>
// CHECK-NEXT: return %[[R]]
func.func @unit_transposes(%x: tensor<1x197x768xf32>, %b: tensor<4x197x768xf32>, %d: tensor<?x1x2x32xf32>)
    -> (tensor<197x1x768xf32>, tensor<197x4x768xf32>, tensor<?x2x1x32xf32>) {
  %0 = kiln.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<1x197x768xf32> -> tensor<197x1x768xf32>
  %1 = kiln.transpose %b {perm = array<i64: 1, 0, 2>} : tensor<4x197x768xf32> -> tensor<197x4x768xf32>
  %2 = kiln.transpose %d {perm = array<i64: 0, 2, 1, 3>} : tensor<?x1x2x32xf32> -> tensor<?x2x1x32xf32>
  return %0, %1, %2 : tensor<197x1x768xf32>, tensor<197x4x768xf32>, tensor<?x2x1x32xf32>
}

// -----

// Tests that identity, same-type cast and single-input concat fold.
// CHECK-LABEL: func @trivial
// CHECK-NEXT: return %arg0
func.func @trivial(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.identity %x : tensor<4xf32>
  %1 = kiln.cast %0 : tensor<4xf32> -> tensor<4xf32>
  %2 = kiln.concat %1 {axis = 0 : i64} : tensor<4xf32> -> tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// Tests that reshaping an inline constant folds into the constant.
// CHECK-LABEL: func @reshape_constant
// CHECK-NEXT: kiln.constant dense<{{\[}}[1, 2], [3, 4]]> : tensor<2x2xi64>
func.func @reshape_constant() -> tensor<2x2xi64> {
  %c = kiln.constant dense<[1, 2, 3, 4]> : tensor<4xi64>
  %0 = kiln.reshape %c : tensor<4xi64> -> tensor<2x2xi64>
  return %0 : tensor<2x2xi64>
}

// -----

// Tests that constant Gemm weights stored [N, K] (PyTorch's Linear, trans_b)
// are transposed at compile time, so the contraction reads rows of W^T.
// CHECK-LABEL: func.func @gemm_pretranspose
// CHECK: %[[W:.*]] = kiln.constant dense_resource<pretransposed> : tensor<3x2xf32>
// CHECK: kiln.gemm %arg0, %[[W]] : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
func.func @gemm_pretranspose(%x: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %w = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %y = kiln.gemm %x, %w {trans_b = true} : tensor<4x3xf32>, tensor<2x3xf32> -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// Tests that weights that are not constants (parameters being trained) are
// left as they are.
// CHECK-LABEL: func.func @gemm_param
// CHECK: kiln.gemm %arg0, %arg1 {trans_b = true}
func.func @gemm_param(%x: tensor<4x3xf32>, %w: tensor<2x3xf32>) -> tensor<4x2xf32> {
  %y = kiln.gemm %x, %w {trans_b = true} : tensor<4x3xf32>, tensor<2x3xf32> -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// Tests that a transpose (through a reshape) of a constant only it reads is
// done at compile time: an RNN's W^T, which the CPU then packs.
// [[1, 2, 3], [4, 5, 6]] transposed is [[1, 4], [2, 5], [3, 6]].
// CHECK-LABEL: func.func @constant_transpose
// CHECK-NEXT: %[[W:.*]] = kiln.constant dense_resource<transposed> : tensor<3x2xf32>
// CHECK-NEXT: return %[[W]]
// CHECK: transposed: "0x100000000000803F00008040000000400000A040000040400000C040"
func.func @constant_transpose() -> tensor<3x2xf32> {
  %w = kiln.constant dense<[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]]> : tensor<1x2x3xf32>
  %r = kiln.reshape %w : tensor<1x2x3xf32> -> tensor<2x3xf32>
  %t = kiln.transpose %r {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  return %t : tensor<3x2xf32>
}

// -----

// Tests that a bidirectional RNN's weights, read only by slices (one per
// direction), become a constant per slice; a constant also read whole
// keeps its slices.
// CHECK-LABEL: func.func @constant_slices
// CHECK-DAG: kiln.constant dense_resource<sliced> : tensor<1x3xf32>
// CHECK-DAG: kiln.constant dense_resource<sliced{{.*}}> : tensor<1x3xf32>
// CHECK-NOT: kiln.slice
// CHECK-LABEL: func.func @constant_read_whole
// CHECK: kiln.slice
// CHECK: sliced: "0x100000000000803F0000004000004040"
// CHECK: sliced_1: "0x10000000000080400000A0400000C040"
func.func @constant_slices() -> (tensor<1x3xf32>, tensor<1x3xf32>) {
  %w = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %a = kiln.slice %w {starts = array<i64: 0>, ends = array<i64: 1>, axes = array<i64: 0>, steps = array<i64: 1>} : tensor<2x3xf32> -> tensor<1x3xf32>
  %b = kiln.slice %w {starts = array<i64: 1>, ends = array<i64: 2>, axes = array<i64: 0>, steps = array<i64: 1>} : tensor<2x3xf32> -> tensor<1x3xf32>
  return %a, %b : tensor<1x3xf32>, tensor<1x3xf32>
}
func.func @constant_read_whole(%x: tensor<2x3xf32>) -> (tensor<1x3xf32>, tensor<2x3xf32>) {
  %w = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %a = kiln.slice %w {starts = array<i64: 1>, ends = array<i64: 2>, axes = array<i64: 0>, steps = array<i64: 1>} : tensor<2x3xf32> -> tensor<1x3xf32>
  %s = kiln.add %x, %w : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  return %a, %s : tensor<1x3xf32>, tensor<2x3xf32>
}

// -----

// Tests that overlapping slices of a constant (4 rows out of 3) stay slices:
// folding them would add weights.
// CHECK-LABEL: func.func @constant_overlapping_slices
// CHECK-COUNT-2: kiln.slice
func.func @constant_overlapping_slices() -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %w = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %a = kiln.slice %w {starts = array<i64: 0>, ends = array<i64: 2>, axes = array<i64: 0>, steps = array<i64: 1>} : tensor<3x2xf32> -> tensor<2x2xf32>
  %b = kiln.slice %w {starts = array<i64: 1>, ends = array<i64: 3>, axes = array<i64: 0>, steps = array<i64: 1>} : tensor<3x2xf32> -> tensor<2x2xf32>
  return %a, %b : tensor<2x2xf32>, tensor<2x2xf32>
}

// -----

// Tests that one element read through one-element arithmetic and reshapes
// (a Loop body's Slice end, its counter plus one) is scalar arithmetic,
// which the CUDA host program computes without reading a kernel's result.
// CHECK-LABEL: func @read_through_arith
// CHECK-SAME: (%[[I:.*]]: i64, %[[F:.*]]: f32)
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[TWO:.*]] = arith.constant 2.0{{.*}} : f32
// CHECK: %[[N:.*]] = arith.addi %[[I]], %[[ONE]] : i64
// CHECK: %[[M:.*]] = arith.mulf %[[F]], %[[TWO]] : f32
// CHECK: return %[[N]], %[[M]]
func.func @read_through_arith(%i: i64, %f: f32) -> (i64, f32) {
  %c0 = arith.constant 0 : index
  %t = tensor.from_elements %i : tensor<i64>
  %one = kiln.constant dense<1> : tensor<i64>
  %s = kiln.add %t, %one : tensor<i64>, tensor<i64> -> tensor<i64>
  %r = kiln.reshape %s : tensor<i64> -> tensor<1xi64>
  %e = tensor.extract %r[%c0] : tensor<1xi64>
  %u = tensor.from_elements %f : tensor<1xf32>
  %two = kiln.constant dense<2.0> : tensor<1xf32>
  %p = kiln.mul %u, %two : tensor<1xf32>, tensor<1xf32> -> tensor<1xf32>
  %g = tensor.extract %p[%c0] : tensor<1xf32>
  return %e, %g : i64, f32
}

// -----

// Tests that a read of one element of a larger result is left alone.
// CHECK-LABEL: func @read_of_many
// CHECK: kiln.add
// CHECK: tensor.extract
func.func @read_of_many(%x: tensor<4xi64>, %y: tensor<4xi64>) -> i64 {
  %c0 = arith.constant 0 : index
  %s = kiln.add %x, %y : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  %e = tensor.extract %s[%c0] : tensor<4xi64>
  return %e : i64
}

// -----

// Tests that an 8-bit integer through f32 and back folds to itself (every
// value exact on the way), and that a 32-bit one, which f32 rounds, and
// a float through an integer do not.
// CHECK-LABEL: func.func @cast_round_trip
// CHECK-NEXT: %[[W:.*]] = kiln.cast %arg1 : tensor<4xi32> -> tensor<4xf32>
// CHECK-NEXT: %[[N:.*]] = kiln.cast %[[W]] : tensor<4xf32> -> tensor<4xi32>
// CHECK-NEXT: %[[I:.*]] = kiln.cast %arg2 : tensor<4xf32> -> tensor<4xui8>
// CHECK-NEXT: %[[F:.*]] = kiln.cast %[[I]] : tensor<4xui8> -> tensor<4xf32>
// CHECK-NEXT: return %arg0, %[[N]], %[[F]]
func.func @cast_round_trip(%x: tensor<4xui8>, %y: tensor<4xi32>, %z: tensor<4xf32>) -> (tensor<4xui8>, tensor<4xi32>, tensor<4xf32>) {
  %a = kiln.cast %x : tensor<4xui8> -> tensor<4xf32>
  %b = kiln.cast %a : tensor<4xf32> -> tensor<4xui8>
  %c = kiln.cast %y : tensor<4xi32> -> tensor<4xf32>
  %d = kiln.cast %c : tensor<4xf32> -> tensor<4xi32>
  %e = kiln.cast %z : tensor<4xf32> -> tensor<4xui8>
  %f = kiln.cast %e : tensor<4xui8> -> tensor<4xf32>
  return %b, %d, %f : tensor<4xui8>, tensor<4xi32>, tensor<4xf32>
}

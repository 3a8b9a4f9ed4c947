// RUN: kiln-opt %s -split-input-file -kiln-privatize-entry | FileCheck %s

// Tests that @main becomes private, loses its kiln.* attributes (already in
// the signature), and that its inputs are marked read-only for bufferization:
// a scatter into an input once changed the caller's buffer.
// CHECK: func.func private @main(%arg0: tensor<2xf32> {bufferization.writable = false}, %arg1: tensor<2xf32> {bufferization.writable = false}) -> tensor<2xf32>
func.func @main(%x: tensor<2xf32> {kiln.name = "x"}, %w: tensor<2xf32> {kiln.name = "w", kiln.param, kiln.update = 1 : i64}) -> (tensor<2xf32> {kiln.name = "y", kiln.grad_of = 1 : i64}) {
  return %x : tensor<2xf32>
}

// -----

// Tests that a model with dynamic inputs gets each input dimension's
// largest size (its symbol's maximum from kiln.dim_ranges; -1 for none)
// before the kiln.dims go.
// CHECK-LABEL: module attributes {kiln.dim_ranges = {b = array<i64: 1, 8>, s = array<i64: 1, -1>}, kiln.input_dim_max = [array<i64: 8, -1, 4>, array<i64: 3>]}
module attributes {kiln.dim_ranges = {b = array<i64: 1, 8>, s = array<i64: 1, -1>}} {
  func.func @main(%x: tensor<?x?x4xf32> {kiln.dims = ["b", "s", 4]}, %y: tensor<3xf32>) -> tensor<3xf32> {
    return %y : tensor<3xf32>
  }
}

// -----

// Tests that a value returned twice gets its own allocation for the repeat
// (dynamic sizes too): a copy into tensor.empty was folded back into the
// first output's buffer by eliminate-empty-tensors.
// CHECK-LABEL: func.func private @main(%arg0: tensor<?x4xf32>
// CHECK: %[[C:.+]] = bufferization.alloc_tensor() copy(%arg0) : tensor<?x4xf32>
// CHECK: %[[D:.+]] = bufferization.alloc_tensor() copy(%arg0) : tensor<?x4xf32>
// CHECK: return %arg0, %[[C]], %[[D]]
func.func @main(%x: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) {
  return %x, %x, %x : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
}

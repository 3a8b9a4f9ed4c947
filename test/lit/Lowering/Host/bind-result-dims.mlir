// RUN: kiln-opt %s -split-input-file -kiln-bind-result-dims -verify-diagnostics | FileCheck %s

// Tests that each dynamic dimension of a result is traced through
// destination operands, tensor.empty sizes and tensor.dim to the argument
// dimension it equals, and gets that argument's symbol.
// CHECK: func.func @main(%arg0: tensor<?x4xf32> {kiln.dims = ["batch", 4]}, %arg1: tensor<3x?xf32> {kiln.dims = [3, "n"]}) -> (tensor<?x?xf32> {kiln.dims = ["batch", "n"]}, tensor<?x4xf32> {kiln.dims = ["batch", 4]})
func.func @main(%x: tensor<?x4xf32> {kiln.dims = ["batch", 4]}, %w: tensor<3x?xf32> {kiln.dims = [3, "n"]}) -> (tensor<?x?xf32>, tensor<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %x, %c0 : tensor<?x4xf32>
  %n = tensor.dim %w, %c1 : tensor<3x?xf32>
  %e = tensor.empty(%m, %n) : tensor<?x?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %c = tensor.cast %f : tensor<?x?xf32> to tensor<?x?xf32>
  return %c, %x : tensor<?x?xf32>, tensor<?x4xf32>
}

// -----

// A dimension computed from the symbols (here batch * 4) is not one of
// them: an error naming the output, for now.
func.func @main(%x: tensor<?x4xf32> {kiln.dims = ["batch", 4]}) -> (tensor<?xf32> {kiln.name = "flat"}) {
  // expected-error @-1 {{output 'flat': dimension 0 is computed from the dynamic dimensions rather than equal to one of them}}
  %r = tensor.collapse_shape %x [[0, 1]] : tensor<?x4xf32> into tensor<?xf32>
  return %r : tensor<?xf32>
}

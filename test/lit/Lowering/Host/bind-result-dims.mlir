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

// A dimension the IR computes from the symbols gets a derived symbol named
// by its polynomial: a concatenation's summed sizes, a collapsed group's
// product, and constants folded in.
// CHECK: module attributes {kiln.dim_exprs = {"4*batch" = [0, [4, "batch"]], "batch*n-1" = [-1, [1, "batch", "n"]], "n+past" = [0, [1, "n"], [1, "past"]]}}
// CHECK: -> (tensor<?xf32> {kiln.dims = ["4*batch"], kiln.name = "flat"}, tensor<3x?xf32> {kiln.dims = [3, "n+past"]}, tensor<?xf32> {kiln.dims = ["batch*n-1"]})
func.func @main(%x: tensor<?x4xf32> {kiln.dims = ["batch", 4]}, %p: tensor<3x?xf32> {kiln.dims = [3, "past"]}, %w: tensor<3x?xf32> {kiln.dims = [3, "n"]}) -> (tensor<?xf32> {kiln.name = "flat"}, tensor<3x?xf32>, tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %r = tensor.collapse_shape %x [[0, 1]] : tensor<?x4xf32> into tensor<?xf32>
  %past = tensor.dim %p, %c1 : tensor<3x?xf32>
  %n = tensor.dim %w, %c1 : tensor<3x?xf32>
  %sum = arith.addi %n, %past : index
  %e = tensor.empty(%sum) : tensor<3x?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<3x?xf32>) -> tensor<3x?xf32>
  %b = tensor.dim %x, %c0 : tensor<?x4xf32>
  %bn = arith.muli %b, %n : index
  %bn1 = arith.subi %bn, %c1 : index
  %e2 = tensor.empty(%bn1) : tensor<?xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<?xf32>) -> tensor<?xf32>
  return %r, %f, %f2 : tensor<?xf32>, tensor<3x?xf32>, tensor<?xf32>
}

// -----

// A size divided (a reshape's -1 of a dynamic dimension) is no sum of
// products: a value symbol, computed by @__kiln_output_dims from the
// slice of @main that sizes it.
// CHECK-LABEL: module attributes {kiln.dim_values = ["halves[0]"]}
// CHECK: func.func @main({{.*}}) -> (tensor<?x8xf32> {kiln.dims = ["halves[0]", 8], kiln.name = "halves"})
// CHECK: func.func @__kiln_output_dims(%[[X:.*]]: tensor<?x4xf32>) -> index {
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK: %[[B:.*]] = tensor.dim %[[X]], %[[C0]]
// CHECK: %[[H:.*]] = arith.divui %[[B]], %[[C2]]
// CHECK-NEXT: return %[[H]] : index
func.func @main(%x: tensor<?x4xf32> {kiln.dims = ["batch", 4]}) -> (tensor<?x8xf32> {kiln.name = "halves"}) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %b = tensor.dim %x, %c0 : tensor<?x4xf32>
  %h = arith.divui %b, %c2 : index
  %r = tensor.expand_shape %x [[0, 1], [2]] output_shape [%h, 2, 4] : tensor<?x4xf32> into tensor<?x2x4xf32>
  %c = tensor.collapse_shape %r [[0], [1, 2]] : tensor<?x2x4xf32> into tensor<?x8xf32>
  return %c : tensor<?x8xf32>
}

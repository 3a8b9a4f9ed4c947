// RUN: kiln-opt %s -split-input-file -kiln-data-parallel -verify-diagnostics | FileCheck %s

// Tests that the loss and each gradient become their mean over ranks, each
// right after its producer (so the runtime can start it while the backward
// pass goes on), marked as backward ops; a value returned twice is reduced
// once; other results are left alone.
// CHECK-LABEL: func.func @main
// CHECK: %[[DW:.*]] = kiln.mul %arg1, %arg0
// CHECK-NEXT: %[[DWM:.*]] = kiln.all_reduce "mean" %[[DW]] {kiln.backward} : tensor<3xf32>
// CHECK: %[[L:.*]] = kiln.reduce_sum
// CHECK-NEXT: %[[LM:.*]] = kiln.all_reduce "mean" %[[L]] {kiln.backward} : tensor<f32>
// CHECK: return %[[LM]], %[[DWM]], %[[DWM]], %arg1
func.func @main(%w: tensor<3xf32> {kiln.name = "w", kiln.param}, %x: tensor<3xf32>)
    -> (tensor<f32> {kiln.name = "loss"}, tensor<3xf32> {kiln.name = "grad:w", kiln.grad_of = 0 : i64},
        tensor<3xf32> {kiln.name = "grad:v", kiln.grad_of = 0 : i64}, tensor<3xf32> {kiln.name = "other"}) {
  %dw = kiln.mul %x, %w : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %l = kiln.reduce_sum %dw {axes = array<i64>, keepdims = false} : tensor<3xf32> -> tensor<f32>
  return %l, %dw, %dw, %x : tensor<f32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// expected-error @+1 {{kiln-data-parallel expects @main to return the loss first}}
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  return %x : tensor<3xf32>
}

// RUN: kiln-opt %s -kiln-autograd -kiln-partition | FileCheck %s
// RUN: kiln-opt %s -kiln-autograd -kiln-partition=recompute=false | FileCheck %s --check-prefix=ALL

// y = sum(exp(tanh(x @ w))): the backward reads tanh's and exp's outputs;
// the matmul's output is saved instead (matmuls are never recomputed) and
// both are recomputed from it: one tensor crosses instead of two.
// CHECK: module attributes {kiln.partition = {recomputed_ops = 2 : i64, save_all_bytes = 64 : i64, saved_bytes = 32 : i64}}
// CHECK-LABEL: func.func @main
// CHECK: %[[F:.*]]:2 = call @kiln_forward(%arg0, %arg1)
// CHECK: %[[B:.*]] = call @kiln_backward(%arg0, %arg1, %[[F]]#1)
// CHECK: return %[[F]]#0, %[[B]]
// CHECK-LABEL: func.func private @kiln_forward
// CHECK: %[[MM:.*]] = kiln.matmul
// CHECK: return %{{.*}}, %[[MM]] : tensor<f32>, tensor<2x4xf32>
// CHECK-LABEL: func.func private @kiln_backward(%arg0: tensor<2x3xf32>, %arg1: tensor<3x4xf32>, %arg2: tensor<2x4xf32>)
// CHECK: %[[T:.*]] = kiln.tanh %arg2 {kiln.recompute}
// CHECK: kiln.exp %[[T]] {kiln.recompute}
// CHECK: kiln.matmul
// CHECK-NOT: kiln.backward
// CHECK: return

// ALL: module attributes {kiln.partition = {recomputed_ops = 0 : i64, save_all_bytes = 64 : i64, saved_bytes = 64 : i64}}
// ALL-LABEL: func.func private @kiln_backward(%arg0: tensor<2x3xf32>, %arg1: tensor<3x4xf32>, %arg2: tensor<2x4xf32>, %arg3: tensor<2x4xf32>)
// ALL-NOT: kiln.recompute
func.func @main(%x: tensor<2x3xf32> {kiln.name = "x"}, %w: tensor<3x4xf32> {kiln.name = "w", kiln.param}) -> tensor<f32> {
  %m = kiln.matmul %x, %w : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %t = kiln.tanh %m : tensor<2x4xf32>
  %s = kiln.exp %t : tensor<2x4xf32>
  %l = kiln.reduce_sum %s {axes = array<i64>, keepdims = false} : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

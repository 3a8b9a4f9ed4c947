// RUN: kiln-opt %s -split-input-file -kiln-batch-norm-training -verify-diagnostics | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-batch-norm-training="sync=true" -verify-diagnostics | FileCheck %s --check-prefix=SYNC

// Batch statistics over N, H, W feed the batch_norm; the running statistics
// (buffers) are updated with momentum 0.9 (ONNX's) and the unbiased
// variance (n = 2*2*2 = 8: 8/7), returned and marked as replacing them.
// CHECK-LABEL: func.func @main
// CHECK-SAME: %arg1: tensor<3xf32> {kiln.buffer, kiln.name = "bn.running_mean", kiln.update = 1 : i64}
// CHECK-SAME: %arg2: tensor<3xf32> {kiln.buffer, kiln.name = "bn.running_var", kiln.update = 2 : i64}
// CHECK-SAME: -> (tensor<2x3x2x2xf32>, tensor<3xf32> {kiln.name = "bn.running_mean"}, tensor<3xf32> {kiln.name = "bn.running_var"})
// CHECK: %[[M:.*]] = kiln.reduce_mean %arg0 {axes = array<i64: 0, 2, 3>, keepdims = false}
// CHECK: %[[V:.*]] = kiln.reduce_mean %{{.*}} {axes = array<i64: 0, 2, 3>, keepdims = false}
// CHECK: %[[Y:.*]] = kiln.batch_norm %arg0, %arg3, %arg4, %[[M]], %[[V]]
// CHECK: kiln.constant dense<1.14285719> : tensor<f32>
// CHECK: kiln.mul %arg1
// CHECK: return %[[Y]], %{{.*}}, %{{.*}}
// Synchronized (SyncBatchNorm): the mean and the variance about it are the
// means over ranks of the rank's own; n of the running variance is the
// local count times the ranks (an all_reduce sum of 1).
// SYNC-LABEL: func.func @main
// SYNC: %[[LM:.*]] = kiln.reduce_mean %arg0 {axes = array<i64: 0, 2, 3>, keepdims = false}
// SYNC: %[[M:.*]] = kiln.all_reduce "mean" %[[LM]] : tensor<3xf32>
// SYNC: %[[LV:.*]] = kiln.reduce_mean %{{.*}} {axes = array<i64: 0, 2, 3>, keepdims = false}
// SYNC: %[[V:.*]] = kiln.all_reduce "mean" %[[LV]] : tensor<3xf32>
// SYNC: %[[ONE:.*]] = kiln.constant dense<1.000000e+00> : tensor<f32>
// SYNC: %[[R:.*]] = kiln.all_reduce "sum" %[[ONE]] : tensor<f32>
// SYNC: kiln.batch_norm %arg0, %arg3, %arg4, %[[M]], %[[V]]
// SYNC: kiln.mul %{{.*}}, %[[R]]
func.func @main(%x: tensor<2x3x2x2xf32>, %rm: tensor<3xf32> {kiln.name = "bn.running_mean", kiln.buffer},
                %rv: tensor<3xf32> {kiln.name = "bn.running_var", kiln.buffer},
                %s: tensor<3xf32> {kiln.param}, %b: tensor<3xf32> {kiln.param}) -> tensor<2x3x2x2xf32> {
  %y = kiln.batch_norm %x, %s, %b, %rm, %rv : tensor<2x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<2x3x2x2xf32>
  return %y : tensor<2x3x2x2xf32>
}

// -----

func.func @main(%x: tensor<2x3x2x2xf32>, %rm: tensor<3xf32> {kiln.buffer}, %rv: tensor<3xf32> {kiln.buffer},
                %s: tensor<3xf32>) -> tensor<2x3x2x2xf32> {
  %y = kiln.batch_norm %x, %s, %s, %rm, %rv : tensor<2x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<2x3x2x2xf32>
  // expected-error @+1 {{shares its running statistics with another batch_norm}}
  %z = kiln.batch_norm %y, %s, %s, %rm, %rv : tensor<2x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<2x3x2x2xf32>
  return %z : tensor<2x3x2x2xf32>
}

// -----

// Under a dynamic batch n is read at run time: the variance is scaled by
// n / max(n - 1, 1), n = N * 2 * 2.
// CHECK-LABEL: func.func @main
// CHECK: %[[N:.*]] = tensor.dim %arg0, %c0
// CHECK: arith.muli %[[N]], %c4
// CHECK: arith.uitofp
// CHECK: %[[CNT:.*]] = tensor.from_elements
// CHECK: %[[LESS:.*]] = kiln.sub %[[CNT]]
// CHECK: %[[DEN:.*]] = kiln.max %[[LESS]]
// CHECK: kiln.div %[[CNT]], %[[DEN]]
func.func @main(%x: tensor<?x3x2x2xf32>, %rm: tensor<3xf32> {kiln.name = "bn.running_mean", kiln.buffer},
                %rv: tensor<3xf32> {kiln.name = "bn.running_var", kiln.buffer},
                %s: tensor<3xf32> {kiln.param}, %b: tensor<3xf32> {kiln.param}) -> tensor<?x3x2x2xf32> {
  %y = kiln.batch_norm %x, %s, %b, %rm, %rv : tensor<?x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<?x3x2x2xf32>
  return %y : tensor<?x3x2x2xf32>
}

// RUN: kiln-opt %s -kiln-decompose-dropout=step-counter=true | FileCheck %s
// RUN: kiln-opt %s -kiln-decompose-dropout | FileCheck %s --check-prefix=INFER

// Training: the mask comes from a counter-based generator over a new i64
// step counter (state, incremented each step); kept values are scaled.
// CHECK-LABEL: func.func @main
// CHECK-SAME: %arg1: tensor<i64> {kiln.name = "rng_counter", kiln.state, kiln.update = 2 : i64}
// CHECK-SAME: -> (tensor<2x8xf32>, tensor<2x8xi1>, tensor<i64> {kiln.name = "rng_counter"})
// CHECK: %[[U:.*]] = kiln.random_uniform %arg1 {seed = 7 : i64} : tensor<i64> -> tensor<2x8xf32>
// CHECK: %[[KEEP:.*]] = kiln.greater_equal %[[U]]
// CHECK: kiln.constant dense<1.33333337> : tensor<f32>
// CHECK: kiln.where %[[KEEP]]
// CHECK: %[[NEXT:.*]] = kiln.add %arg1
// CHECK: return %{{.*}}, %[[KEEP]], %[[NEXT]]

// Outside training the counter is 0: the same mask every run.
// INFER: %[[ZERO:.*]] = kiln.constant dense<0> : tensor<i64>
// INFER: kiln.random_uniform %[[ZERO]] {seed = 7 : i64}
func.func @main(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xi1>) {
  %y, %m = kiln.dropout %x {ratio = 0.25 : f64, seed = 7 : i64} : tensor<2x8xf32> -> tensor<2x8xf32>, tensor<2x8xi1>
  return %y, %m : tensor<2x8xf32>, tensor<2x8xi1>
}

// RUN: kiln-opt %s -split-input-file -kiln-add-loss=loss=mse | FileCheck %s --check-prefix=MSE
// RUN: kiln-opt %s -split-input-file -kiln-add-loss="loss=cross_entropy label-name=target" | FileCheck %s --check-prefix=CE
// RUN: not kiln-opt %s -split-input-file -kiln-add-loss=loss=output 2>&1 | FileCheck %s --check-prefix=OUT

// The label goes after the model's inputs, before the parameters.
// MSE-LABEL: func.func @main
// MSE-SAME: (%arg0: tensor<2x3xf32> {kiln.name = "x"}, %arg1: tensor<2x3xf32> {kiln.label, kiln.name = "label"}, %arg2: tensor<3xf32> {kiln.name = "w", kiln.param})
// MSE-SAME: -> (tensor<f32> {kiln.name = "loss"})
// MSE: %[[D:.*]] = kiln.sub %{{.*}}, %arg1
// MSE: %[[SQ:.*]] = kiln.mul %[[D]], %[[D]]
// MSE: kiln.reduce_mean %[[SQ]] {axes = array<i64>, keepdims = false}

// Cross-entropy: integer labels [N] (their class count recorded for the
// runtime to check), logsumexp minus the label's logit.
// CE-LABEL: func.func @main
// CE-SAME: %arg1: tensor<2xi64> {kiln.classes = 3 : i64, kiln.label, kiln.name = "target"}
// CE: kiln.reduce_max %{{.*}} {axes = array<i64: 1>}
// CE: kiln.exp
// CE: kiln.log
// CE: kiln.gather_elements %{{.*}} {axis = 1 : i64}
// CE: kiln.reduce_mean

// OUT: error: --loss=output needs a one-element output (the loss), not 'tensor<2x3xf32>'
func.func @main(%x: tensor<2x3xf32> {kiln.name = "x"}, %w: tensor<3xf32> {kiln.name = "w", kiln.param}) -> tensor<2x3xf32> {
  %y = kiln.mul %x, %w : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

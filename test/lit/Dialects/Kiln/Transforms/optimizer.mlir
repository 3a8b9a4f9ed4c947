// RUN: kiln-opt %s -kiln-optimizer="optimizer=sgd lr=0.1 momentum=0.9 weight-decay=0.01" | FileCheck %s --check-prefix=SGD
// RUN: kiln-opt %s -kiln-optimizer="optimizer=adamw lr=0.001" | FileCheck %s --check-prefix=ADAMW
// RUN: not kiln-opt %s -kiln-optimizer="optimizer=sgd nesterov=true" 2>&1 | FileCheck %s --check-prefix=BAD

// SGD with momentum: the buffer starts as the gradient at step 0; every
// updated argument names the result that replaces it (kiln.update); the
// learning rate is a hyperparameter input initialized to --lr.
// SGD-LABEL: func.func @main
// SGD-SAME: %arg0: tensor<3xf32> {kiln.name = "w", kiln.param, kiln.update = 2 : i64}
// SGD-SAME: %arg2: tensor<f32> {kiln.name = "step", kiln.state, kiln.update = 4 : i64}
// SGD-SAME: %arg3: tensor<f32> {kiln.hyper, kiln.initial = dense_resource<learning_rate> : tensor<f32>, kiln.name = "learning_rate", kiln.update = 5 : i64}
// SGD-SAME: %arg4: tensor<3xf32> {kiln.name = "w.momentum_buffer", kiln.state, kiln.update = 3 : i64}
// SGD-SAME: -> (tensor<f32> {kiln.name = "loss"}, tensor<3xf32> {kiln.grad_of = 0 : i64, kiln.name = "grad:w"}, tensor<3xf32> {kiln.name = "w"}, tensor<3xf32> {kiln.name = "w.momentum_buffer"}, tensor<f32> {kiln.name = "step"}, tensor<f32> {kiln.name = "learning_rate"})
// SGD: %[[FIRST:.*]] = kiln.equal %arg2
// SGD: %[[WD:.*]] = kiln.add %arg1
// SGD: kiln.where %[[FIRST]], %[[WD]]
// The learning rate is an input (a schedule sets it), passed through.
// SGD: kiln.mul %{{.*}}, %arg3
// SGD: return {{.*}}, %arg3 :

// AdamW: decoupled decay (p * (1 - lr * wd)), bias corrections from the step.
// ADAMW-LABEL: func.func @main
// ADAMW-SAME: kiln.name = "w.exp_avg"
// ADAMW-SAME: kiln.name = "w.exp_avg_sq"
// ADAMW: kiln.mul %arg0, %{{.*}} : tensor<3xf32>, tensor<f32>
// ADAMW: kiln.pow
// ADAMW: kiln.sqrt

// BAD: error: invalid optimizer settings
func.func @main(%w: tensor<3xf32> {kiln.name = "w", kiln.param}, %g: tensor<3xf32>) -> (tensor<f32> {kiln.name = "loss"}, tensor<3xf32> {kiln.name = "grad:w", kiln.grad_of = 0 : i64}) {
  %l = kiln.reduce_sum %w {axes = array<i64>, keepdims = false} : tensor<3xf32> -> tensor<f32>
  return %l, %g : tensor<f32>, tensor<3xf32>
}

// RUN: kiln-opt %s -kiln-lift-parameters | FileCheck %s
// RUN: kiln-opt %s -kiln-lift-parameters=freeze=fc.bias | FileCheck %s --check-prefix=FROZEN
// RUN: kiln-opt %s -kiln-lift-parameters=batch-norm-stats=false | FileCheck %s --check-prefix=EVAL
// RUN: not kiln-opt %s -kiln-lift-parameters=freeze=nope 2>&1 | FileCheck %s --check-prefix=BAD

// Float initializers become parameters (after the inputs), except what
// --freeze names; batch_norm's running statistics become buffers (or stay
// constants with batch-norm-stats=false); inline scalars become blobs.
// CHECK-LABEL: func.func @main
// CHECK-SAME: %{{.*}}: tensor<2x3xf32> {kiln.name = "x"}
// CHECK-SAME: tensor<4x3xf32> {kiln.initial = dense_resource<fc.weight> : tensor<4x3xf32>, kiln.name = "fc.weight", kiln.param}
// CHECK-SAME: tensor<4xf32> {kiln.initial = dense_resource<fc.bias> : tensor<4xf32>, kiln.name = "fc.bias", kiln.param}
// CHECK-SAME: tensor<f32> {kiln.initial = dense_resource<scale> : tensor<f32>, kiln.name = "scale", kiln.param}
// CHECK-SAME: tensor<4xf32> {kiln.buffer, kiln.initial = dense_resource<bn.mean> : tensor<4xf32>, kiln.name = "bn.mean"}
// CHECK-SAME: tensor<4xf32> {kiln.buffer, kiln.initial = dense_resource<bn.var> : tensor<4xf32>, kiln.name = "bn.var"}
// CHECK-NOT: kiln.initializer
// EVAL: kiln.constant {kiln.initializer = "bn.mean"}
// EVAL: kiln.constant {kiln.initializer = "bn.var"}
// FROZEN: kiln.constant {kiln.initializer = "fc.bias"}
// FROZEN-NOT: kiln.name = "fc.bias"
// BAD: error: --freeze nope: the model has no floating-point initializer of that name
func.func @main(%x: tensor<2x3xf32> {kiln.name = "x"}) -> tensor<2x4xf32> {
  %w = kiln.constant {kiln.initializer = "fc.weight"} dense_resource<fc.weight> : tensor<4x3xf32>
  %b = kiln.constant {kiln.initializer = "fc.bias"} dense_resource<fc.bias> : tensor<4xf32>
  %s = kiln.constant {kiln.initializer = "scale"} dense<2.0> : tensor<f32>
  %m = kiln.constant {kiln.initializer = "bn.mean"} dense<0.0> : tensor<4xf32>
  %v = kiln.constant {kiln.initializer = "bn.var"} dense<1.0> : tensor<4xf32>
  %y = kiln.gemm %x, %w, %b {trans_b = true} : tensor<2x3xf32>, tensor<4x3xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %z = kiln.mul %y, %s : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  %r = kiln.reshape %z : tensor<2x4xf32> -> tensor<2x4x1x1xf32>
  %n = kiln.batch_norm %r, %b, %b, %m, %v : tensor<2x4x1x1xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4x1x1xf32>
  %o = kiln.reshape %n : tensor<2x4x1x1xf32> -> tensor<2x4xf32>
  return %o : tensor<2x4xf32>
}

{-#
  dialect_resources: {
    builtin: {
      fc.weight: "0x10000000000000000000803F0000004000004040000080400000A0400000C0400000E0400000004100001041000020410000304100004041",
      fc.bias: "0x100000000000803F0000803F0000803F0000803F"
    }
  }
#-}

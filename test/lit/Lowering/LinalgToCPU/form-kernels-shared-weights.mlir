// RUN: kiln-opt %s -kiln-form-kernels=conv-vector-bits=256 | FileCheck %s
// RUN: kiln-opt %s -kiln-form-kernels="conv-vector-bits=256 max-shared-bytes=12288" | FileCheck %s --check-prefix=SPLIT

// Tests that two linear layers in a row share one kernel while their
// weights together (8 KB each here) stay within max-shared-bytes, and are
// kernels of their own past it: every tile of rows streams all of each
// layer's weights. The ReLU between them goes with the consumer's kernel.
// CHECK-LABEL: func.func @mlp
// CHECK: scf.forall (
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x32xf32>, tensor<32x64xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x64xf32>, tensor<64x32xf32>)
// CHECK-NOT: scf.forall (
// SPLIT-LABEL: func.func @mlp
// SPLIT: scf.forall (
// SPLIT: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x32xf32>, tensor<32x64xf32>)
// SPLIT-NOT: tensor<64x32xf32>
// SPLIT: scf.forall (
// SPLIT: arith.maximumf
// SPLIT: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x64xf32>, tensor<64x32xf32>)
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>
func.func @mlp(%x: tensor<16x32xf32>, %w1: tensor<32x64xf32>, %w2: tensor<64x32xf32>) -> tensor<16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<16x64xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<16x64xf32>) -> tensor<16x64xf32>
  %h = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w1 : tensor<16x32xf32>, tensor<32x64xf32>) outs(%f1 : tensor<16x64xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<16x64xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<16x64xf32>) outs(%e1 : tensor<16x64xf32>) {
  ^bb0(%v: f32, %out: f32):
    %y = arith.maximumf %v, %zero : f32
    linalg.yield %y : f32
  } -> tensor<16x64xf32>
  %e2 = tensor.empty() : tensor<16x32xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %o = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%r, %w2 : tensor<16x64xf32>, tensor<64x32xf32>) outs(%f2 : tensor<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<16x32xf32>
  return %o : tensor<16x32xf32>
}

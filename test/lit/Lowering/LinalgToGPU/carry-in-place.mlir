// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-gpu-carry-in-place))' | FileCheck %s

// Tests that a loop's new state is copied into its iteration argument (so
// bufferization keeps one buffer), but a state the body already writes in
// place (an insert into it) is left alone.
// CHECK-LABEL: func.func @loop
// CHECK: scf.for {{.*}} iter_args(%[[H:.*]] = %{{.*}}, %[[Y:.*]] = %{{.*}})
// CHECK: %[[N:.*]] = linalg.generic
// CHECK: %[[I:.*]] = tensor.insert_slice %[[N]] into %[[Y]]
// CHECK: %[[C:.*]] = linalg.copy ins(%[[N]] : tensor<4xf32>) outs(%[[H]] : tensor<4xf32>)
// CHECK: scf.yield %[[C]], %[[I]]
#map = affine_map<(d0) -> (d0)>
func.func @loop(%h0: tensor<4xf32>, %y0: tensor<8x4xf32>) -> (tensor<4xf32>, tensor<8x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %r:2 = scf.for %t = %c0 to %c8 step %c1 iter_args(%h = %h0, %y = %y0) -> (tensor<4xf32>, tensor<8x4xf32>) {
    %e = tensor.empty() : tensor<4xf32>
    %n = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%h : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%a: f32, %b: f32):
      %s = arith.mulf %a, %a : f32
      linalg.yield %s : f32
    } -> tensor<4xf32>
    %i = tensor.insert_slice %n into %y[%t, 0] [1, 4] [1, 1] : tensor<4xf32> into tensor<8x4xf32>
    scf.yield %n, %i : tensor<4xf32>, tensor<8x4xf32>
  }
  return %r#0, %r#1 : tensor<4xf32>, tensor<8x4xf32>
}

// -----

// Tests that both branches of an If copy their results into one
// destination made before it.
// CHECK-LABEL: func.func @branch
// CHECK: %[[D:.*]] = tensor.empty() : tensor<4xf32>
// CHECK: scf.if
// CHECK: linalg.copy ins(%arg1 : tensor<4xf32>) outs(%[[D]] : tensor<4xf32>)
// CHECK: } else {
// CHECK: linalg.copy ins(%arg2 : tensor<4xf32>) outs(%[[D]] : tensor<4xf32>)
func.func @branch(%c: i1, %a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %r = scf.if %c -> tensor<4xf32> {
    scf.yield %a : tensor<4xf32>
  } else {
    scf.yield %b : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

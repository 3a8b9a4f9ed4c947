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

// -----

// Tests that a while loop whose condition does not pass its flag on is
// rebuilt to pass on every argument in order, so its state (copied into
// the after region's argument) is the before region's argument too; a
// state of a size the body computes is left to a new buffer.
// CHECK-LABEL: func.func @until
// CHECK: %[[W:.*]]:4 = scf.while (%[[I:.*]] = %{{.*}}, %[[GO:.*]] = %{{.*}}, %[[V:.*]] = %{{.*}}, %[[D:.*]] = %{{.*}})
// CHECK: scf.condition(%{{.*}}) %[[I]], %[[GO]], %[[V]], %[[D]] : i64, i1, tensor<3xf32>, tensor<?xf32>
// CHECK: ^bb0(%[[I2:.*]]: i64, %{{.*}}: i1, %[[V2:.*]]: tensor<3xf32>, %[[D2:.*]]: tensor<?xf32>):
// CHECK: %[[N:.*]] = linalg.generic
// CHECK: %[[G:.*]] = tensor.concat
// CHECK: %[[C:.*]] = linalg.copy ins(%[[N]] : tensor<3xf32>) outs(%[[V2]] : tensor<3xf32>)
// CHECK: scf.yield %{{.*}}, %{{.*}}, %[[C]], %[[G]]
// CHECK: return %[[W]]#0, %[[W]]#2, %[[W]]#3
#map1 = affine_map<(d0) -> (d0)>
func.func @until(%v0: tensor<3xf32>, %d0: tensor<?xf32>, %limit: f32) -> (i64, tensor<3xf32>, tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %i0 = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %true = arith.constant true
  %r:3 = scf.while (%i = %i0, %go = %true, %v = %v0, %d = %d0) : (i64, i1, tensor<3xf32>, tensor<?xf32>) -> (i64, tensor<3xf32>, tensor<?xf32>) {
    scf.condition(%go) %i, %v, %d : i64, tensor<3xf32>, tensor<?xf32>
  } do {
  ^bb0(%i: i64, %v: tensor<3xf32>, %d: tensor<?xf32>):
    %e = tensor.empty() : tensor<3xf32>
    %n = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel"]} ins(%v : tensor<3xf32>) outs(%e : tensor<3xf32>) {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %a : f32
      linalg.yield %s : f32
    } -> tensor<3xf32>
    %x = tensor.extract %n[%c0] : tensor<3xf32>
    %more = arith.cmpf olt, %x, %limit : f32
    %g = tensor.concat dim(0) %d, %n : (tensor<?xf32>, tensor<3xf32>) -> tensor<?xf32>
    %next = arith.addi %i, %one : i64
    scf.yield %next, %more, %n, %g : i64, i1, tensor<3xf32>, tensor<?xf32>
  }
  return %r#0, %r#1, %r#2 : i64, tensor<3xf32>, tensor<?xf32>
}

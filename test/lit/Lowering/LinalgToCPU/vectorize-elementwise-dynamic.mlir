// RUN: kiln-opt %s -kiln-vectorize-elementwise=vector-bits=512 | FileCheck %s

// Tests rows of a static length under a dynamic outer dimension (a bias
// add and ReLU over a batch known at run time): one parallel loop to the
// batch's size, each row in vectors.
// CHECK-LABEL: func.func @bias_relu
// CHECK-NOT: linalg.generic
// CHECK: %[[N:.*]] = memref.dim %arg0, %c0
// CHECK: scf.parallel (%[[I:.*]]) = (%c0) to (%[[N]]) step (%c1)
// CHECK: vector.load %arg0[%[[I]], %{{.*}}] : memref<?x64xf32>, vector<16xf32>
// CHECK: arith.maximumf {{.*}} : vector<16xf32>
// CHECK: vector.store {{.*}}, %arg2[%[[I]], %{{.*}}] : memref<?x64xf32>, vector<16xf32>
#id = affine_map<(d0, d1) -> (d0, d1)>
#bias = affine_map<(d0, d1) -> (d1)>
func.func @bias_relu(%x: memref<?x64xf32>, %b: memref<64xf32>, %y: memref<?x64xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : memref<?x64xf32>, memref<64xf32>) outs(%y : memref<?x64xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A row reduction whose rows and row length are known at run time
// (softmax's sum over attention's keys): the rows in one parallel loop;
// along each, four vector accumulators over whole steps of 4 x 16, then
// one vector at a time masked to the row's end; one reduction at the end.
// CHECK-LABEL: func.func @dynamic_row_sum
// CHECK-DAG: %[[W:.*]] = memref.dim %arg0, %c1 : memref<?x?xf32>
// CHECK-DAG: %[[R:.*]] = memref.dim %arg0, %c0 : memref<?x?xf32>
// CHECK: scf.parallel (%[[I:.*]]) = (%c0) to (%[[R]]) step (%c1)
// CHECK: %[[Q:.*]] = arith.divui %[[W]], %c64 : index
// CHECK: %[[LOOPED:.*]] = arith.muli %[[Q]], %c64 : index
// CHECK: %[[ACC:.*]]:4 = scf.for %{{.*}} = %c0 to %[[LOOPED]] step %c64
// CHECK-COUNT-4: arith.addf %{{.*}} : vector<16xf32>
// CHECK: scf.for %[[K:.*]] = %[[LOOPED]] to %[[W]] step %c16 iter_args
// CHECK: %[[LEFT:.*]] = arith.subi %[[W]], %[[K]] : index
// CHECK: %[[M:.*]] = vector.create_mask %[[LEFT]] : vector<16xi1>
// CHECK: vector.maskedload %arg0[%[[I]], %[[K]]], %[[M]]
// CHECK: arith.select %[[M]]
// CHECK: vector.reduction <add>
// CHECK-NOT: linalg.generic
func.func @dynamic_row_sum(%x: memref<?x?xf32>, %s: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x?xf32>) outs(%s : memref<?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.addf %acc, %a : f32
    linalg.yield %y : f32
  }
  return
}

// An elementwise op over rows of a length known at run time (softmax's
// scaling of attention's keys): whole vectors in a loop, then, if any
// columns are left, one vector masked to them.
// CHECK-LABEL: func.func @dynamic_row_scale
// CHECK: %[[W:.*]] = memref.dim %arg0, %c1 : memref<?x?xf32>
// CHECK: scf.parallel
// CHECK: %[[Q:.*]] = arith.divui %[[W]], %c16 : index
// CHECK: %[[WHOLE:.*]] = arith.muli %[[Q]], %c16 : index
// CHECK: scf.for %[[K:.*]] = %c0 to %[[WHOLE]] step %c16
// CHECK: vector.load %arg0[%{{.*}}, %[[K]]]
// CHECK: arith.mulf %{{.*}} : vector<16xf32>
// CHECK: vector.store
// CHECK: %[[REST:.*]] = arith.subi %[[W]], %[[WHOLE]] : index
// CHECK: scf.if
// CHECK: %[[M:.*]] = vector.create_mask %[[REST]] : vector<16xi1>
// CHECK: vector.maskedload %arg0[%{{.*}}, %[[WHOLE]]], %[[M]]
// CHECK: vector.maskedstore %arg2[%{{.*}}, %[[WHOLE]]], %[[M]]
// CHECK-NOT: linalg.generic
func.func @dynamic_row_scale(%x: memref<?x?xf32>, %s: memref<?xf32>, %y: memref<?x?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>,
                                   affine_map<(i, k) -> (i, k)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : memref<?x?xf32>, memref<?xf32>) outs(%y : memref<?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  }
  return
}

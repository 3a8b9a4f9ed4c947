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

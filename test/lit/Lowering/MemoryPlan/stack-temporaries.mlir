// RUN: kiln-opt %s -kiln-stack-temporaries=max-bytes=1024 | FileCheck %s

// Tests that a small temporary in a parallel loop body becomes an alloca in
// a scope per iteration (its dealloc gone), and that a big one keeps its
// heap allocation.
// CHECK-LABEL: func.func @temporaries
// CHECK: scf.parallel
// CHECK-NEXT: memref.alloca_scope {
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<64xf32>
// CHECK-NOT: memref.dealloc %{{.*}} : memref<64xf32>
// CHECK: memref.alloc() : memref<1024xf32>
// CHECK: memref.dealloc %{{.*}} : memref<1024xf32>
func.func @temporaries(%out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %t = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
    %big = memref.alloc() : memref<1024xf32>
    memref.store %one, %t[%c0] : memref<64xf32>
    memref.store %one, %big[%c0] : memref<1024xf32>
    %v = memref.load %t[%c0] : memref<64xf32>
    memref.store %v, %out[%i] : memref<8xf32>
    memref.dealloc %t : memref<64xf32>
    memref.dealloc %big : memref<1024xf32>
    scf.reduce
  }
  return
}

// Tests a temporary sized at run time: a partial tile of at most 8 rows
// goes on the stack with its run-time size; one with no bound stays.
// CHECK-LABEL: func.func @bounded
// CHECK: memref.alloca_scope {
// CHECK: %[[N:.*]] = affine.min
// CHECK: memref.alloca(%[[N]]) {alignment = 64 : i64} : memref<?x16xf32>
// CHECK: memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK: memref.dealloc %{{.*}} : memref<?xf32>
func.func @bounded(%out: memref<?x16xf32>, %m: index) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %dim = memref.dim %out, %c0 : memref<?x16xf32>
  scf.parallel (%i) = (%c0) to (%dim) step (%c8) {
    %n = affine.min affine_map<(d0)[s0] -> (8, s0 - d0)>(%i)[%dim]
    %t = memref.alloc(%n) {alignment = 64 : i64} : memref<?x16xf32>
    %u = memref.alloc(%m) : memref<?xf32>
    %sub = memref.subview %out[%i, 0] [%n, 16] [1, 1] : memref<?x16xf32> to memref<?x16xf32, strided<[16, 1], offset: ?>>
    memref.copy %t, %sub : memref<?x16xf32> to memref<?x16xf32, strided<[16, 1], offset: ?>>
    memref.dealloc %t : memref<?x16xf32>
    memref.dealloc %u : memref<?xf32>
    scf.reduce
  }
  return
}

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

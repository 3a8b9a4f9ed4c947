// RUN: kiln-opt %s -kiln-stack-temporaries=max-bytes=1024 | FileCheck %s

// Tests temporaries sized by a dynamic dimension of @main's inputs: a row
// of %x's sequence, at most 256 floats (kiln.input_dim_max: 1 KiB), goes on
// the stack with its run-time size; a row of %z's, whose sequence has no
// maximum, keeps its heap allocation (a row per head and feature, malloc'd
// and freed, had cost a dynamic BERT's key transpose 17 us a layer).
// CHECK-LABEL: func.func @main
// CHECK: memref.alloca_scope {
// CHECK: memref.alloca(%[[S:.*]]) {alignment = 64 : i64} : memref<?xf32>
// CHECK-NOT: memref.dealloc %{{.*}} : memref<?xf32>
// CHECK: }
// CHECK: scf.parallel
// CHECK: memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK: memref.dealloc %{{.*}} : memref<?xf32>
module attributes {kiln.input_dim_max = [array<i64: 8, 256>, array<i64: 8, -1>]} {
  func.func @main(%x: memref<?x?xf32>, %z: memref<?x?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %one = arith.constant 1.0 : f32
    %b = memref.dim %x, %c0 : memref<?x?xf32>
    %s = memref.dim %x, %c1 : memref<?x?xf32>
    scf.parallel (%i) = (%c0) to (%b) step (%c1) {
      %row = memref.alloc(%s) {alignment = 64 : i64} : memref<?xf32>
      memref.store %one, %row[%c0] : memref<?xf32>
      %v = memref.load %row[%c0] : memref<?xf32>
      memref.store %v, %x[%i, %c0] : memref<?x?xf32>
      memref.dealloc %row : memref<?xf32>
      scf.reduce
    }
    %t = memref.dim %z, %c1 : memref<?x?xf32>
    scf.parallel (%i) = (%c0) to (%b) step (%c1) {
      %row = memref.alloc(%t) : memref<?xf32>
      memref.store %one, %row[%c0] : memref<?xf32>
      %v = memref.load %row[%c0] : memref<?xf32>
      memref.store %v, %z[%i, %c0] : memref<?x?xf32>
      memref.dealloc %row : memref<?xf32>
      scf.reduce
    }
    return
  }
}

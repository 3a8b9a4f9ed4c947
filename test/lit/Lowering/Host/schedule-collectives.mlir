// RUN: kiln-opt %s -split-input-file -kiln-schedule-collectives | FileCheck %s

// Tests that a reduction starts where it was and waits right before the
// next op that touches its buffer (making a view of it counts), so the ops
// between (another buffer's) run while it is reduced.
// CHECK-LABEL: func.func @through_view
// CHECK: kiln.all_reduce_start "mean" %[[G:.*]] : memref<4x8xf32>
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<16xf32>)
// CHECK-NEXT: kiln.all_reduce_wait %[[G]] : memref<4x8xf32>
// CHECK-NEXT: memref.collapse_shape %[[G]]
func.func @through_view(%g: memref<4x8xf32>, %other: memref<16xf32>) {
  %c = arith.constant 1.0 : f32
  kiln.all_reduce_in_place "mean" %g : memref<4x8xf32>
  linalg.fill ins(%c : f32) outs(%other : memref<16xf32>)
  %v = memref.collapse_shape %g [[0, 1]] : memref<4x8xf32> into memref<32xf32>
  linalg.fill ins(%c : f32) outs(%v : memref<32xf32>)
  return
}

// -----

// Tests that a view made before the start counts (the buffer is touched
// through it), and that a buffer nothing touches again waits at the end.
// CHECK-LABEL: func.func @view_first
// CHECK: kiln.all_reduce_start "sum" %[[V:.*]] : memref<32xf32>
// CHECK-NEXT: kiln.all_reduce_start "mean" %[[B:.*]] : memref<2xf32>
// CHECK-NEXT: kiln.all_reduce_wait %[[V]]
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%arg0 : memref<4x8xf32>)
// CHECK-NEXT: kiln.all_reduce_wait %[[B]]
// CHECK-NEXT: return
func.func @view_first(%g: memref<4x8xf32>, %b: memref<2xf32>) {
  %c = arith.constant 1.0 : f32
  %v = memref.collapse_shape %g [[0, 1]] : memref<4x8xf32> into memref<32xf32>
  kiln.all_reduce_in_place "sum" %v : memref<32xf32>
  kiln.all_reduce_in_place "mean" %b : memref<2xf32>
  linalg.fill ins(%c : f32) outs(%g : memref<4x8xf32>)
  return
}

// RUN: kiln-opt %s -split-input-file -kiln-results-in-place | FileCheck %s

// Tests that a result computed with its unit dimension folded away (a
// batch-1 output) is computed in the out-parameter: the allocation becomes
// a view of it and the copy at the end goes.
// CHECK-LABEL: func.func @folded(%arg0: memref<10xf32>, %arg1: memref<1x10xf32>)
// CHECK-NOT: memref.alloc
// CHECK: %[[V:.*]] = memref.collapse_shape %arg1
// CHECK: linalg.copy ins(%arg0 : memref<10xf32>) outs(%[[V]] : memref<10xf32>)
// CHECK-NOT: memref.copy
func.func @folded(%x: memref<10xf32>, %out: memref<1x10xf32>) {
  %a = memref.alloc() : memref<10xf32>
  linalg.copy ins(%x : memref<10xf32>) outs(%a : memref<10xf32>)
  %e = memref.expand_shape %a [[0, 1]] output_shape [1, 10] : memref<10xf32> into memref<1x10xf32>
  memref.copy %e, %out : memref<1x10xf32> to memref<1x10xf32>
  return
}

// -----

// Tests that a buffer read after the copy (through a view) keeps its own
// allocation and the copy.
// CHECK-LABEL: func.func @read_after
// CHECK: memref.alloc
// CHECK: memref.copy
func.func @read_after(%x: memref<10xf32>, %out: memref<1x10xf32>, %more: memref<10xf32>) {
  %a = memref.alloc() : memref<10xf32>
  linalg.copy ins(%x : memref<10xf32>) outs(%a : memref<10xf32>)
  %e = memref.expand_shape %a [[0, 1]] output_shape [1, 10] : memref<10xf32> into memref<1x10xf32>
  memref.copy %e, %out : memref<1x10xf32> to memref<1x10xf32>
  %c = memref.collapse_shape %e [[0, 1]] : memref<1x10xf32> into memref<10xf32>
  linalg.copy ins(%c : memref<10xf32>) outs(%more : memref<10xf32>)
  return
}

// -----

// Tests that a dynamic model's output is computed in the out-parameter
// (its buffer and the result have one dynamic type; the copy says their
// sizes agree), while a dynamic buffer of another type keeps its copy.
// CHECK-LABEL: func.func @dynamic(%arg0: memref<?x8xf32>, %arg1: memref<?x8xf32>)
// CHECK-NOT: memref.alloc
// CHECK: linalg.copy ins(%arg0 : memref<?x8xf32>) outs(%arg1 : memref<?x8xf32>)
// CHECK-NOT: memref.copy
func.func @dynamic(%x: memref<?x8xf32>, %out: memref<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x8xf32>
  %a = memref.alloc(%n) : memref<?x8xf32>
  linalg.copy ins(%x : memref<?x8xf32>) outs(%a : memref<?x8xf32>)
  memref.copy %a, %out : memref<?x8xf32> to memref<?x8xf32>
  return
}

// -----

// CHECK-LABEL: func.func @dynamic_reshaped
// CHECK: memref.alloc
// CHECK: memref.copy
func.func @dynamic_reshaped(%x: memref<?x8xf32>, %out: memref<?x2x4xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x8xf32>
  %a = memref.alloc(%n) : memref<?x8xf32>
  linalg.copy ins(%x : memref<?x8xf32>) outs(%a : memref<?x8xf32>)
  %e = memref.expand_shape %a [[0], [1, 2]] output_shape [%n, 2, 4] : memref<?x8xf32> into memref<?x2x4xf32>
  memref.copy %e, %out : memref<?x2x4xf32> to memref<?x2x4xf32>
  return
}

// RUN: kiln-opt %s -split-input-file -kiln-plan-memory="dynamic-at-max=true" -verify-diagnostics | FileCheck %s

// Tests that with dynamic-at-max a buffer sized at run time is placed too,
// at the bytes of its largest sizes: its rows are the rows of a collapse of
// the input, bounded by the input's maximum (8, kiln.input_dim_max) times
// 2: 16 rows of 4 floats, 256 bytes; its view keeps the run-time size.
// CHECK-LABEL: module attributes {kiln.arena_bytes = 256 : i64
// CHECK: func.func @main(%{{.*}}: memref<?x2x4xf32>, %{{.*}}: memref<?x4xf32>, %[[ARENA:.*]]: memref<256xi8>)
// CHECK: %[[N:.*]] = memref.dim %collapse_shape, %c0
// CHECK: memref.view %[[ARENA]][%{{.*}}][%[[N]]] : memref<256xi8> to memref<?x4xf32>
// CHECK-NOT: memref.alloc
module attributes {kiln.input_dim_max = [array<i64: 8, 2, 4>]} {
  func.func @main(%x: memref<?x2x4xf32>, %y: memref<?x4xf32>) {
    %c0 = arith.constant 0 : index
    %flat = memref.collapse_shape %x [[0, 1], [2]] : memref<?x2x4xf32> into memref<?x4xf32>
    %n = memref.dim %flat, %c0 : memref<?x4xf32>
    %a = memref.alloc(%n) {alignment = 64 : i64} : memref<?x4xf32>
    memref.copy %flat, %a : memref<?x4xf32> to memref<?x4xf32>
    memref.copy %a, %y : memref<?x4xf32> to memref<?x4xf32>
    memref.dealloc %a : memref<?x4xf32>
    return
  }
}

// -----

// Tests that a size with no maximum (the input's -1) is an error naming
// the flag, not a buffer left outside the arena.
module attributes {kiln.input_dim_max = [array<i64: -1, 4>]} {
  func.func @main(%x: memref<?x4xf32>, %y: memref<?x4xf32>) {
    %c0 = arith.constant 0 : index
    %b = memref.dim %x, %c0 : memref<?x4xf32>
    // expected-error @+1 {{cannot bound this buffer's dynamic sizes (every dynamic input dimension needs a maximum: --dim SYMBOL=MIN..MAX)}}
    %a = memref.alloc(%b) {alignment = 64 : i64} : memref<?x4xf32>
    memref.copy %x, %a : memref<?x4xf32> to memref<?x4xf32>
    memref.copy %a, %y : memref<?x4xf32> to memref<?x4xf32>
    memref.dealloc %a : memref<?x4xf32>
    return
  }
}

// -----

// Tests a size computed by affine.apply (how the tensor dialect's shape
// reification writes a reshape's sizes): 4 x the input's rows, at most
// 4 x 8 = 32 rows of 4 floats, 512 bytes.
// CHECK-LABEL: module attributes {kiln.arena_bytes = 512 : i64
// CHECK-NOT: memref.alloc
module attributes {kiln.input_dim_max = [array<i64: 8, 4>]} {
  func.func @main(%x: memref<?x4xf32>, %y: memref<?x4xf32>) {
    %c0 = arith.constant 0 : index
    %n = memref.dim %x, %c0 : memref<?x4xf32>
    %m = affine.apply affine_map<()[s0] -> (s0 * 4)>()[%n]
    %a = memref.alloc(%m) {alignment = 64 : i64} : memref<?x4xf32>
    memref.copy %a, %y : memref<?x4xf32> to memref<?x4xf32>
    memref.dealloc %a : memref<?x4xf32>
    return
  }
}

// RUN: kiln-opt %s -split-input-file -kiln-plan-memory="dynamic-at-max=true require-bounds=false" | FileCheck %s

// Tests the CPU's mode: a buffer whose sizes have a maximum (x's rows, at
// most 8) is placed in the arena at its largest, 8 x 4 floats = 128 bytes;
// one sized by a dimension without a maximum (z's rows, -1) stays a
// run-time allocation (the session's allocator).
// CHECK-LABEL: module attributes {kiln.arena_bytes = 128 : i64
// CHECK: func.func @main(%[[X:.*]]: memref<?x4xf32>, %[[Z:.*]]: memref<?x4xf32>, %{{.*}}: memref<?x4xf32>, %{{.*}}: memref<?x4xf32>, %[[ARENA:.*]]: memref<128xi8>)
// CHECK: %[[N:.*]] = memref.dim %[[X]], %c0
// CHECK: memref.view %[[ARENA]][%{{.*}}][%[[N]]] : memref<128xi8> to memref<?x4xf32>
// CHECK: %[[M:.*]] = memref.dim %[[Z]], %c0
// CHECK: memref.alloc(%[[M]])
// CHECK: memref.dealloc
module attributes {kiln.input_dim_max = [array<i64: 8, 4>, array<i64: -1, 4>]} {
  func.func @main(%x: memref<?x4xf32>, %z: memref<?x4xf32>, %y: memref<?x4xf32>, %w: memref<?x4xf32>) {
    %c0 = arith.constant 0 : index
    %n = memref.dim %x, %c0 : memref<?x4xf32>
    %a = memref.alloc(%n) {alignment = 64 : i64} : memref<?x4xf32>
    memref.copy %x, %a : memref<?x4xf32> to memref<?x4xf32>
    memref.copy %a, %y : memref<?x4xf32> to memref<?x4xf32>
    memref.dealloc %a : memref<?x4xf32>
    %m = memref.dim %z, %c0 : memref<?x4xf32>
    %b = memref.alloc(%m) {alignment = 64 : i64} : memref<?x4xf32>
    memref.copy %z, %b : memref<?x4xf32> to memref<?x4xf32>
    memref.copy %b, %w : memref<?x4xf32> to memref<?x4xf32>
    memref.dealloc %b : memref<?x4xf32>
    return
  }
}

// -----

// Tests that with dynamic-max-bytes a bounded buffer past the limit at its
// largest (up to 1024 rows of 4 floats, 16 KiB, against 4 KiB) stays a
// run-time allocation too: a wide declared range reserves nothing.
// RUN: kiln-opt %s -split-input-file -kiln-plan-memory="dynamic-at-max=true require-bounds=false dynamic-max-bytes=4096" | FileCheck %s --check-prefix=CAP
// CAP-LABEL: module attributes {kiln.arena_bytes = 0 : i64
// CAP: memref.alloc(
module attributes {kiln.input_dim_max = [array<i64: 1024, 4>]} {
  func.func @main(%x: memref<?x4xf32>, %y: memref<?x4xf32>) {
    %c0 = arith.constant 0 : index
    %n = memref.dim %x, %c0 : memref<?x4xf32>
    %a = memref.alloc(%n) {alignment = 64 : i64} : memref<?x4xf32>
    memref.copy %x, %a : memref<?x4xf32> to memref<?x4xf32>
    memref.copy %a, %y : memref<?x4xf32> to memref<?x4xf32>
    memref.dealloc %a : memref<?x4xf32>
    return
  }
}

// -----

// Tests that a run-time allocation is given back right after its last use
// (a view's included), not where bufferization left its deallocation:
// the next allocation can then take its block, still in cache.
// CHECK-LABEL: module attributes {kiln.arena_bytes = 0 : i64, kiln.input_dim_max = [array<i64: -1, 4>]
// CHECK: %[[B:.*]] = memref.alloc(
// CHECK: %[[V:.*]] = memref.subview %[[B]]
// CHECK: memref.copy %[[V]], %{{.*}}
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK: %[[C:.*]] = memref.alloc(
// CHECK: memref.copy %[[C]]
// CHECK-NEXT: memref.dealloc %[[C]]
// CHECK-NEXT: return
module attributes {kiln.input_dim_max = [array<i64: -1, 4>]} {
  func.func @main(%z: memref<?x4xf32>, %w: memref<?x4xf32>, %v: memref<?x4xf32>) {
    %c0 = arith.constant 0 : index
    %m = memref.dim %z, %c0 : memref<?x4xf32>
    %b = memref.alloc(%m) {alignment = 64 : i64} : memref<?x4xf32>
    memref.copy %z, %b : memref<?x4xf32> to memref<?x4xf32>
    %view = memref.subview %b[0, 0] [%m, 4] [1, 1] : memref<?x4xf32> to memref<?x4xf32, strided<[4, 1]>>
    memref.copy %view, %w : memref<?x4xf32, strided<[4, 1]>> to memref<?x4xf32>
    %c = memref.alloc(%m) {alignment = 64 : i64} : memref<?x4xf32>
    memref.copy %w, %c : memref<?x4xf32> to memref<?x4xf32>
    memref.copy %c, %v : memref<?x4xf32> to memref<?x4xf32>
    memref.dealloc %b : memref<?x4xf32>
    memref.dealloc %c : memref<?x4xf32>
    return
  }
}

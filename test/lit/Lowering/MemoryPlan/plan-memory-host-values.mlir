// RUN: kiln-opt %s -kiln-plan-memory="dynamic-at-max=true" | FileCheck %s

// Tests CUDA's mode (every buffer bounded) with a buffer sized by a value
// read before the run (kiln-host-values: a call of @__kiln_host_value): it
// has no largest size, so it stays a run-time allocation (the session's
// device allocator), while the one sized by x's rows (at most 8) goes into
// the arena at its largest, 8 x 4 floats.
// CHECK-LABEL: module attributes {kiln.arena_bytes = 128 : i64
// CHECK: memref.view
// CHECK: %[[V:.*]] = call @__kiln_host_value
// CHECK: %[[N:.*]] = arith.index_cast %[[V]]
// CHECK: memref.alloc(%[[N]])
// CHECK: memref.dealloc
module attributes {kiln.input_dim_max = [array<i64: 8, 4>]} {
  func.func private @__kiln_host_value(i64) -> i64
  func.func @main(%x: memref<?x4xf32>, %y: memref<?x4xf32>, %w: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %n = memref.dim %x, %c0 : memref<?x4xf32>
    %a = memref.alloc(%n) {alignment = 64 : i64} : memref<?x4xf32>
    memref.copy %x, %a : memref<?x4xf32> to memref<?x4xf32>
    memref.copy %a, %y : memref<?x4xf32> to memref<?x4xf32>
    memref.dealloc %a : memref<?x4xf32>
    %k = arith.constant 0 : i64
    %v = func.call @__kiln_host_value(%k) : (i64) -> i64
    %m = arith.index_cast %v : i64 to index
    %b = memref.alloc(%m) {alignment = 64 : i64} : memref<?xf32>
    memref.copy %b, %w : memref<?xf32> to memref<?xf32>
    memref.dealloc %b : memref<?xf32>
    return
  }
}

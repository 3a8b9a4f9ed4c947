// RUN: kiln-opt %s -split-input-file -kiln-plan-memory="dynamic-at-max=true" | FileCheck %s

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

// -----

// Tests in-loops (CUDA): a buffer made in the host program's loop is
// placed in the arena too, live for the whole loop (each iteration's kernels
// run after the last's), while one made in a parallel loop (a thread's) and
// one whose size the loop computes stay allocations.
// RUN: kiln-opt %s -split-input-file -kiln-plan-memory="dynamic-at-max=true in-loops=true" | FileCheck %s --check-prefix=LOOPS
// LOOPS-LABEL: module attributes {kiln.arena_bytes = 64 : i64
// LOOPS: scf.for
// LOOPS: memref.view
// LOOPS: memref.alloc(%{{.*}}) : memref<?xf32>
// LOOPS: scf.parallel
// LOOPS: memref.alloc() : memref<4xf32>
module {
  func.func @main(%x: memref<16xf32>, %y: memref<16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    scf.for %i = %c0 to %c4 step %c1 {
      %t = memref.alloc() : memref<16xf32>
      memref.copy %x, %t : memref<16xf32> to memref<16xf32>
      memref.copy %t, %y : memref<16xf32> to memref<16xf32>
      memref.dealloc %t : memref<16xf32>
      %n = arith.addi %i, %c1 : index
      %d = memref.alloc(%n) : memref<?xf32>
      memref.dealloc %d : memref<?xf32>
    }
    scf.parallel (%j) = (%c0) to (%c4) step (%c1) {
      %p = memref.alloc() : memref<4xf32>
      memref.dealloc %p : memref<4xf32>
      scf.reduce
    }
    return
  }
}

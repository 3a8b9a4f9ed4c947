// RUN: kiln-opt %s -split-input-file -kiln-plan-memory | FileCheck %s --check-prefix=PLAIN
// RUN: kiln-opt %s -split-input-file -kiln-plan-memory="epilogue-reach=2" | FileCheck %s --check-prefix=REACH

// Tests that with epilogue-reach, a matmul's inputs stay live through the
// elementwise ops after it (a GPU kernel may run them as its epilogue while
// other blocks still read A): plain liveness lets the transpose's output
// take A's bytes (A dies at the matmul), the reach keeps them apart.
// PLAIN: kiln.arena_bytes = 8192
// PLAIN: memref.view %{{.*}}[%c0][] : memref<8192xi8> to memref<32x32xf32>
// PLAIN: memref.view %{{.*}}[%c4096][] : memref<8192xi8> to memref<32x32xf32>
// PLAIN: %[[T:.*]] = memref.view %{{.*}}[%c0_{{[0-9]+}}][] : memref<8192xi8> to memref<32x32xf32>
// PLAIN: linalg.transpose ins(%{{.*}} : memref<32x32xf32>) outs(%[[T]]
// REACH: kiln.arena_bytes = 12288
// REACH: memref.view %{{.*}}[%c0][] : memref<12288xi8> to memref<32x32xf32>
// REACH-NOT: [%c0_
// REACH: linalg.transpose
func.func @main(%x: memref<32x32xf32>, %w: memref<32x32xf32>, %out: memref<32x32xf32>) {
  %a = memref.alloc() {alignment = 64 : i64} : memref<32x32xf32>
  %c = memref.alloc() {alignment = 64 : i64} : memref<32x32xf32>
  %t = memref.alloc() {alignment = 64 : i64} : memref<32x32xf32>
  linalg.exp ins(%x : memref<32x32xf32>) outs(%a : memref<32x32xf32>)
  linalg.matmul ins(%a, %w : memref<32x32xf32>, memref<32x32xf32>) outs(%c : memref<32x32xf32>)
  linalg.transpose ins(%c : memref<32x32xf32>) outs(%t : memref<32x32xf32>) permutation = [1, 0]
  memref.copy %t, %out : memref<32x32xf32> to memref<32x32xf32>
  memref.dealloc %a : memref<32x32xf32>
  memref.dealloc %c : memref<32x32xf32>
  memref.dealloc %t : memref<32x32xf32>
  return
}

// -----

// Tests that a matmul input made by copying another buffer into it (a
// padded operand: a fill, then the data copied into its interior) keeps
// that buffer live through the epilogue too, since a GPU kernel may read the
// data in place of the padded copy: plain, the epilogue's output reuses the
// data's bytes; with the reach it does not (16640 = all four buffers; the
// reach without the copy's source would give 12544).
// PLAIN: kiln.arena_bytes = 8448
// REACH: kiln.arena_bytes = 16640
func.func @main(%x: memref<32x32xf32>, %w: memref<34x32xf32>, %out: memref<32x32xf32>) {
  %cst = arith.constant 0.0 : f32
  %d = memref.alloc() {alignment = 64 : i64} : memref<32x32xf32>
  %p = memref.alloc() {alignment = 64 : i64} : memref<32x34xf32>
  %c = memref.alloc() {alignment = 64 : i64} : memref<32x32xf32>
  %t = memref.alloc() {alignment = 64 : i64} : memref<32x32xf32>
  linalg.exp ins(%x : memref<32x32xf32>) outs(%d : memref<32x32xf32>)
  linalg.fill ins(%cst : f32) outs(%p : memref<32x34xf32>)
  %interior = memref.subview %p[0, 1] [32, 32] [1, 1] : memref<32x34xf32> to memref<32x32xf32, strided<[34, 1], offset: 1>>
  memref.copy %d, %interior : memref<32x32xf32> to memref<32x32xf32, strided<[34, 1], offset: 1>>
  linalg.matmul ins(%p, %w : memref<32x34xf32>, memref<34x32xf32>) outs(%c : memref<32x32xf32>)
  linalg.exp ins(%c : memref<32x32xf32>) outs(%t : memref<32x32xf32>)
  memref.copy %t, %out : memref<32x32xf32> to memref<32x32xf32>
  memref.dealloc %d : memref<32x32xf32>
  memref.dealloc %p : memref<32x34xf32>
  memref.dealloc %c : memref<32x32xf32>
  memref.dealloc %t : memref<32x32xf32>
  return
}

// -----

// Tests that the ops marked with one kiln.fused_span id (one GPU kernel,
// kiln-gpu-mark-row-groups) keep every buffer they use live to the last of
// them: without the marks %t (read only by the matmul) is dead when %e is
// written, and %e would take its bytes (8192 in all, as the first test);
// in the span all three are apart. The marks go.
// PLAIN: kiln.arena_bytes = 12288
// PLAIN-NOT: kiln.fused_span
// PLAIN: memref.view %{{.*}}[%c{{[0-9]+}}][] : memref<12288xi8> to memref<32x32xf32>
// PLAIN-NOT: kiln.fused_span
// PLAIN: return
func.func @main(%x: memref<32x32xf32>, %w: memref<32x32xf32>, %out: memref<32x32xf32>) {
  %t = memref.alloc() {alignment = 64 : i64} : memref<32x32xf32>
  %s = memref.alloc() {alignment = 64 : i64} : memref<32x32xf32>
  %e = memref.alloc() {alignment = 64 : i64} : memref<32x32xf32>
  linalg.transpose ins(%w : memref<32x32xf32>) outs(%t : memref<32x32xf32>) permutation = [1, 0]
  linalg.matmul {kiln.fused_span = 0 : i64} ins(%x, %t : memref<32x32xf32>, memref<32x32xf32>) outs(%s : memref<32x32xf32>)
  linalg.exp {kiln.fused_span = 0 : i64} ins(%s : memref<32x32xf32>) outs(%e : memref<32x32xf32>)
  linalg.add {kiln.fused_span = 0 : i64} ins(%e, %s : memref<32x32xf32>, memref<32x32xf32>) outs(%out : memref<32x32xf32>)
  memref.dealloc %t : memref<32x32xf32>
  memref.dealloc %s : memref<32x32xf32>
  memref.dealloc %e : memref<32x32xf32>
  return
}

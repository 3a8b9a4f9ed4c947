// RUN: kiln-opt %s -split-input-file -kiln-plan-memory | FileCheck %s

// Tests liveness-based placement: %a dies before %c is first written, so %c
// reuses %a's bytes; %b is live across both and gets its own. The arena
// becomes the last argument and the deallocs go away.
// CHECK-LABEL: module attributes {kiln.arena_bytes = 512 : i64, kiln.weight_bytes = 0 : i64}
// CHECK: func.func @main(%[[IN:.*]]: memref<64xf32>, %[[OUT:.*]]: memref<64xf32>, %[[ARENA:.*]]: memref<512xi8>)
// CHECK: memref.view %[[ARENA]][%c0][] : memref<512xi8> to memref<64xf32>
// CHECK: memref.view %[[ARENA]][%c256][] : memref<512xi8> to memref<64xf32>
// CHECK: memref.view %[[ARENA]][%c0_{{[0-9]+}}][] : memref<512xi8> to memref<64xf32>
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.dealloc
// CHECK: return
func.func @main(%in: memref<64xf32>, %out: memref<64xf32>) {
  %a = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
  %b = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
  %c = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
  memref.copy %in, %a : memref<64xf32> to memref<64xf32>
  memref.copy %a, %b : memref<64xf32> to memref<64xf32>
  memref.copy %b, %c : memref<64xf32> to memref<64xf32>
  memref.copy %c, %out : memref<64xf32> to memref<64xf32>
  memref.copy %b, %out : memref<64xf32> to memref<64xf32>
  memref.dealloc %a : memref<64xf32>
  memref.dealloc %b : memref<64xf32>
  memref.dealloc %c : memref<64xf32>
  return
}

// -----

// Tests that a use through a view counts for liveness (%a is live until the
// last read of its reshaped view, so %b can't share it), that sizes are
// rounded up to the alignment (i1 takes a byte), and that weights are
// counted from constant globals.
// CHECK-LABEL: module attributes {kiln.arena_bytes = 128 : i64, kiln.weight_bytes = 24 : i64}
// CHECK: memref.view %{{.*}}[%{{.*}}][] : memref<128xi8> to memref<2x3xf32>
// CHECK: memref.view %{{.*}}[%{{.*}}][] : memref<128xi8> to memref<6xi1>
memref.global "private" constant @w : memref<6xf32> = dense<1.0>
func.func @main(%out: memref<6xf32>) {
  %w = memref.get_global @w : memref<6xf32>
  %a = memref.alloc() : memref<2x3xf32>
  %b = memref.alloc() : memref<6xi1>
  %flat = memref.collapse_shape %a [[0, 1]] : memref<2x3xf32> into memref<6xf32>
  memref.copy %w, %flat : memref<6xf32> to memref<6xf32>
  %t = arith.constant true
  %c0 = arith.constant 0 : index
  memref.store %t, %b[%c0] : memref<6xi1>
  memref.copy %flat, %out : memref<6xf32> to memref<6xf32>
  return
}

// -----

// Tests the refusals: a buffer that escapes into a call keeps its alloc; a
// buffer with no use but its dealloc takes no bytes.
// CHECK-LABEL: module attributes {kiln.arena_bytes = 0 : i64
// CHECK: %[[KEPT:.*]] = memref.alloc() : memref<4xf32>
// CHECK: call @consume(%[[KEPT]])
// CHECK-NOT: memref.alloc
func.func private @consume(memref<4xf32>)
func.func @main() {
  %kept = memref.alloc() : memref<4xf32>
  %unused = memref.alloc() : memref<16xf32>
  call @consume(%kept) : (memref<4xf32>) -> ()
  memref.dealloc %unused : memref<16xf32>
  memref.dealloc %kept : memref<4xf32>
  return
}

// -----

// Tests that a buffer written through memref.transpose (a permuted view: a
// row group writing attention's heads back in place) is placed like any
// other, the view over its bytes in the arena, live to the view's last use.
// CHECK-LABEL: module attributes {kiln.arena_bytes = 128 : i64
// CHECK: %[[T:.*]] = memref.view %{{.*}}[%c0][] : memref<128xi8> to memref<4x8xf32>
// CHECK: memref.transpose %[[T]] (d0, d1) -> (d1, d0)
// CHECK-NOT: memref.alloc
func.func @main(%in: memref<8x4xf32>, %out: memref<4x8xf32>) {
  %t = memref.alloc() {alignment = 64 : i64} : memref<4x8xf32>
  %v = memref.transpose %t (d0, d1) -> (d1, d0) : memref<4x8xf32> to memref<8x4xf32, strided<[1, 8]>>
  memref.copy %in, %v : memref<8x4xf32> to memref<8x4xf32, strided<[1, 8]>>
  memref.copy %t, %out : memref<4x8xf32> to memref<4x8xf32>
  memref.dealloc %t : memref<4x8xf32>
  return
}

// -----

// Tests an If's branches as steps after it: %t, used in the then branch
// only, and %e, in the else branch only, are never live together (one
// branch runs) and share bytes; %k, written before the If and read in the
// else branch, is live through the then branch too and keeps its own. %e's
// reshape and size, read before the If, do not make it live there.
// CHECK-LABEL: module attributes {kiln.arena_bytes = 512 : i64
// CHECK: %[[K:.*]] = memref.view %{{.*}}[%c0{{.*}}][] : memref<512xi8> to memref<64xf32>
// CHECK: %[[E:.*]] = memref.view %{{.*}}[%c256{{.*}}][] : memref<512xi8> to memref<64xf32>
// CHECK: %[[T:.*]] = memref.view %{{.*}}[%c256{{.*}}][] : memref<512xi8> to memref<64xf32>
func.func @main(%in: memref<64xf32>, %out: memref<64xf32>, %c: i1) {
  %c0 = arith.constant 0 : index
  %k = memref.alloc() : memref<64xf32>
  %e = memref.alloc() : memref<64xf32>
  %t = memref.alloc() : memref<64xf32>
  %e2 = memref.expand_shape %e [[0, 1]] output_shape [8, 8] : memref<64xf32> into memref<8x8xf32>
  %size = memref.dim %e2, %c0 : memref<8x8xf32>
  memref.copy %in, %k : memref<64xf32> to memref<64xf32>
  scf.if %c {
    memref.copy %in, %t : memref<64xf32> to memref<64xf32>
    memref.copy %t, %out : memref<64xf32> to memref<64xf32>
  } else {
    memref.copy %k, %e : memref<64xf32> to memref<64xf32>
    %r = memref.load %e2[%c0, %c0] : memref<8x8xf32>
    memref.store %r, %out[%c0] : memref<64xf32>
  }
  memref.dealloc %k : memref<64xf32>
  memref.dealloc %e : memref<64xf32>
  memref.dealloc %t : memref<64xf32>
  return
}

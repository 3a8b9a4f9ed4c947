// RUN: kiln-opt %s -kiln-forall-to-parallel | FileCheck %s

// Tests that a kernel's loop keeps its kiln.spread mark as an
// scf.parallel (upstream's conversion drops it), and a nested loop
// without one converts too.
// CHECK-LABEL: func.func @marked
// CHECK: scf.parallel (%[[G:.*]]) = (%c0) to (%c28) step (%c1)
// CHECK: scf.parallel (%{{.*}}) = (%c0{{.*}}) to (%c96) step (%c1{{.*}})
// CHECK: memref.store
// CHECK: } {kiln.spread}
// CHECK-NOT: scf.forall
func.func @marked(%p: memref<28x96xf32>) {
  %zero = arith.constant 0.0 : f32
  scf.forall (%g) in (28) {
    scf.forall (%c) in (96) {
      memref.store %zero, %p[%g, %c] : memref<28x96xf32>
    }
  } {kiln.spread}
  return
}

// Tests that a marked loop's unit loop (a batch of one) is dropped, its
// index the constant 0, so that the canonicalizer has no reason to
// rebuild the loop without its mark; an unmarked one keeps it.
// CHECK-LABEL: func.func @unit_batch
// CHECK: scf.parallel (%[[P:.*]], %[[K:.*]]) = (%c0{{.*}}, %c0{{.*}}) to (%c25{{.*}}, %c16{{.*}})
// CHECK: memref.store %{{.*}}, %arg0[%c0{{.*}}, %[[P]], %[[K]]]
// CHECK: } {kiln.spread}
// CHECK: scf.parallel (%{{.*}}, %{{.*}}, %{{.*}}) = (%c0{{.*}}, %c0{{.*}}, %c0{{.*}}) to (%c1{{.*}}, %c25{{.*}}, %c16{{.*}})
func.func @unit_batch(%p: memref<1x25x16xf32>) {
  %zero = arith.constant 0.0 : f32
  scf.forall (%n, %j, %k) in (1, 25, 16) {
    memref.store %zero, %p[%n, %j, %k] : memref<1x25x16xf32>
  } {kiln.spread}
  scf.forall (%n, %j, %k) in (1, 25, 16) {
    memref.store %zero, %p[%n, %j, %k] : memref<1x25x16xf32>
  }
  return
}

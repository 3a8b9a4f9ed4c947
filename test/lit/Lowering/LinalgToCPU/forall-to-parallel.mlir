// RUN: kiln-opt %s -kiln-forall-to-parallel | FileCheck %s

// Tests that a kernel's loop keeps its kiln.split_rows mark as an
// scf.parallel (upstream's conversion drops it), and a nested loop
// without one converts too.
// CHECK-LABEL: func.func @marked
// CHECK: scf.parallel (%[[G:.*]]) = (%c0) to (%c28) step (%c1)
// CHECK: scf.parallel (%{{.*}}) = (%c0{{.*}}) to (%c96) step (%c1{{.*}})
// CHECK: memref.store
// CHECK: } {kiln.split_rows}
// CHECK-NOT: scf.forall
func.func @marked(%p: memref<28x96xf32>) {
  %zero = arith.constant 0.0 : f32
  scf.forall (%g) in (28) {
    scf.forall (%c) in (96) {
      memref.store %zero, %p[%g, %c] : memref<28x96xf32>
    }
  } {kiln.split_rows}
  return
}

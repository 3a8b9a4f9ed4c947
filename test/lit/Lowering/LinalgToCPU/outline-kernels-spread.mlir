// RUN: kiln-opt %s -kiln-outline-kernels | FileCheck %s

// Tests that a loop marked kiln.spread (one image's row partials,
// 28 x 1024 stores, a tenth of the default threshold) becomes a task split
// over its 28 groups, while the same loop unmarked runs serially.
// (The first argument is the model's input, a single image: the loops
// do not run over a batch.)
// CHECK-LABEL: func.func @rows(%arg0: memref<1x8xf32>, %arg1: memref<28x1024xf32>, %arg2: memref<28x1024xf32>)
// CHECK: call @__kiln_parallel_0(%c28{{.*}}, %arg1)
// CHECK: call @rows_kernel1(%arg2)
// CHECK-LABEL: func.func private @rows_task0(
// CHECK-LABEL: func.func private @rows_kernel1(
func.func @rows(%image: memref<1x8xf32>, %marked: memref<28x1024xf32>, %plain: memref<28x1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c28 = arith.constant 28 : index
  %c1024 = arith.constant 1024 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%g) = (%c0) to (%c28) step (%c1) {
    scf.for %c = %c0 to %c1024 step %c1 {
      memref.store %zero, %marked[%g, %c] : memref<28x1024xf32>
    }
    scf.reduce
  } {kiln.spread}
  scf.parallel (%g) = (%c0) to (%c28) step (%c1) {
    scf.for %c = %c0 to %c1024 step %c1 {
      memref.store %zero, %plain[%g, %c] : memref<28x1024xf32>
    }
    scf.reduce
  }
  return
}

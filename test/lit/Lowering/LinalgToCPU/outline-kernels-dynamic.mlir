// RUN: kiln-opt %s -kiln-outline-kernels=min-work=2048 | FileCheck %s

// Tests a parallel loop whose upper bound is known only at run time (rows
// of a dynamic batch, in blocks of 4): a task all the same, its trip count
// computed before the dispatch, and the buffer with dynamic sizes captured
// whole. Its work is estimated as 64 trips of the body (32 stores, 8 each:
// 16384 >= min-work).
// CHECK-LABEL: func.func @main(%arg0: memref<?x32xf32>)
// CHECK: %[[M:.*]] = memref.dim %arg0, %c0
// CHECK: %[[SPAN:.*]] = arith.maxsi
// CHECK: %[[TRIPS:.*]] = arith.ceildivui %[[SPAN]], %c4
// CHECK: call @__kiln_parallel_0(%[[TRIPS]], %arg0) : (index, memref<?x32xf32>) -> ()
// CHECK-LABEL: func.func private @main_task0(%arg0: index, %arg1: index, %arg2: memref<?x32xf32> {llvm.noalias})
// CHECK: scf.for %[[I:.*]] = %arg0 to %arg1
// CHECK: arith.muli %[[I]], %c4
func.func @main(%buf: memref<?x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %one = arith.constant 1.0 : f32
  %m = memref.dim %buf, %c0 : memref<?x32xf32>
  scf.parallel (%i) = (%c0) to (%m) step (%c4) {
    scf.for %j = %c0 to %c32 step %c1 {
      memref.store %one, %buf[%i, %j] : memref<?x32xf32>
    }
    scf.reduce
  }
  return
}


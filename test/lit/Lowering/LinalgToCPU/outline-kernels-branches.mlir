// RUN: kiln-opt %s -kiln-outline-kernels=min-work=2048 | FileCheck %s

// Tests loops in the branches of an If (a dynamic batch's choice of image
// chains): each branch's parallel loops become tasks and its other nests
// kernels, called in the branch, where the If as one kernel would run
// them all on one thread. The condition stays in @main.
// CHECK-LABEL: func.func @main(%arg0: memref<?x32xf32>)
// CHECK: %[[M:.*]] = memref.dim %arg0, %c0
// CHECK: scf.if %{{.*}} {
// CHECK-NEXT: call @__kiln_parallel_0(%[[M]], %arg0)
// CHECK-NEXT: } else {
// CHECK-NEXT: call @__kiln_parallel_1(%[[M]], %arg0)
// CHECK-NEXT: call @main_kernel2(%arg0)
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-DAG: func.func private @main_task0(%arg0: index, %arg1: index, %arg2: memref<?x32xf32> {llvm.noalias})
// CHECK-DAG: func.func private @main_task1(%arg0: index, %arg1: index, %arg2: memref<?x32xf32> {llvm.noalias})
// CHECK-DAG: func.func private @main_kernel2(%arg0: memref<?x32xf32> {llvm.noalias})
func.func @main(%buf: memref<?x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %one = arith.constant 1.0 : f32
  %m = memref.dim %buf, %c0 : memref<?x32xf32>
  %enough = arith.cmpi sge, %m, %c4 : index
  scf.if %enough {
    scf.parallel (%i) = (%c0) to (%m) step (%c1) {
      scf.for %j = %c0 to %c32 step %c1 {
        memref.store %one, %buf[%i, %j] : memref<?x32xf32>
      }
      scf.reduce
    }
  } else {
    scf.parallel (%i) = (%c0) to (%m) step (%c1) {
      scf.for %j = %c0 to %c32 step %c1 {
        memref.store %one, %buf[%i, %j] : memref<?x32xf32>
      }
      scf.reduce
    }
    scf.for %j = %c0 to %c32 step %c1 {
      memref.store %one, %buf[%c0, %j] : memref<?x32xf32>
    }
  }
  return
}

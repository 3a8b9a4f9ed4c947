// RUN: kiln-opt %s -kiln-outline-kernels=min-work=2048 | FileCheck %s
// RUN: kiln-opt %s -kiln-outline-kernels=min-work=16384 | FileCheck %s --check-prefix=ESTIMATE

// Tests that a nest over a dynamic batch and static channel blocks, (n, c),
// is merged into one loop before it is split, so that one image's channel
// blocks still go to every thread.
// CHECK-LABEL: func.func @images(%arg0: memref<?x64xf32>)
// CHECK: %[[N:.*]] = memref.dim %arg0, %c0
// CHECK: %[[N1:.*]] = arith.muli %{{.*}}, %[[N]]
// CHECK: %[[T:.*]] = arith.muli %[[N1]], %c4
// CHECK: call @__kiln_parallel_0(%[[T]], %arg0)
// CHECK-LABEL: func.func private @images_task0(
// CHECK: arith.remsi
// CHECK: arith.divsi
// The merged loop's work is estimated as a batch (64 images, the estimate
// for an unknown size) times its 4 channel blocks, 64 x 4 x 16 stores:
// a task at a threshold one batch of images alone would not reach (it
// ran serially: MobileNetV2's pad copies under a dynamic batch).
// ESTIMATE: call @__kiln_parallel_0
// ESTIMATE-LABEL: func.func private @images_task0(
func.func @images(%buf: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  %n = memref.dim %buf, %c0 : memref<?x64xf32>
  scf.parallel (%i, %c) = (%c0, %c0) to (%n, %c64) step (%c1, %c16) {
    scf.for %j = %c0 to %c16 step %c1 {
      %k = arith.addi %c, %j : index
      memref.store %one, %buf[%i, %k] : memref<?x64xf32>
    }
    scf.reduce
  }
  return
}

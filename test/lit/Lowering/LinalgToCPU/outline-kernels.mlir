// RUN: kiln-opt %s -split-input-file -kiln-outline-kernels=min-work=64 | FileCheck %s

// Tests that an outermost parallel loop becomes a task over its first
// dimension: buffers cross as arguments, views and constants are recomputed.
// (The loop covers 8 of the 16 rows: a first loop over all of the first
// input's leading dimension, the batch, is merged with the next one, as
// @images below shows.)
// CHECK-LABEL: func.func @main(%arg0: memref<16x32xf32>)
// CHECK: %[[N:.*]] = arith.constant 8 : index
// CHECK: call @__kiln_parallel_0(%[[N]], %arg0) : (index, memref<16x32xf32>) -> ()
// CHECK-NOT: scf.parallel
// CHECK-LABEL: func.func private @main_task0(%arg0: index, %arg1: index, %arg2: memref<16x32xf32> {llvm.noalias})
// CHECK-SAME: kiln.cost = [0, 2048]
// CHECK: memref.subview %arg2
// CHECK: scf.for %[[I:.*]] = %arg0 to %arg1
// CHECK: scf.parallel (%[[J:.*]]) =
// CHECK: memref.store {{.*}}[%[[I]], %[[J]]]
// CHECK: func.func private @__kiln_parallel_0(index, memref<16x32xf32>) attributes {kiln.task = @main_task0}
func.func @main(%buf: memref<16x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %one = arith.constant 1.0 : f32
  %c8 = arith.constant 8 : index
  %view = memref.subview %buf[0, 0] [16, 32] [1, 1] : memref<16x32xf32> to memref<16x32xf32, strided<[32, 1]>>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c32) step (%c1, %c1) {
    memref.store %one, %view[%i, %j] : memref<16x32xf32, strided<[32, 1]>>
    scf.reduce
  }
  return
}

// -----

// Tests a task over a batch's images (the first input's leading
// dimension, 3) and blocks of 16 channels: the two loops merged into one
// of 3 x 4 iterations, so that 2 threads split 3 images evenly; each
// iteration recovers its image and block.
// CHECK-LABEL: func.func @images(%arg0: memref<3x64xf32>)
// CHECK: %[[B:.*]] = arith.muli %{{.*}}, %c3{{.*}} : index
// CHECK: %[[N:.*]] = arith.muli %[[B]], %c4 : index
// CHECK: call @__kiln_parallel_0(%[[N]], %arg0)
// CHECK-LABEL: func.func private @images_task0(
// CHECK: scf.for %[[I:.*]] = %arg0 to %arg1
// CHECK-DAG: arith.remsi %[[I]]
// CHECK-DAG: arith.divsi %[[I]]
func.func @images(%buf: memref<3x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i, %c) = (%c0, %c0) to (%c3, %c64) step (%c1, %c16) {
    scf.for %k = %c0 to %c16 step %c1 {
      %ck = arith.addi %c, %k : index
      memref.store %one, %buf[%i, %ck] : memref<3x64xf32>
    }
    scf.reduce
  }
  return
}

// -----

// Tests that loops below the work threshold stay serial: a kernel function
// called in place, its buffers noalias.
// CHECK-LABEL: func.func @small(%arg0: memref<4xf32>)
// CHECK: call @small_kernel0(%arg0) : (memref<4xf32>) -> ()
// CHECK-NEXT: return
// CHECK-LABEL: func.func private @small_kernel0(%arg0: memref<4xf32> {llvm.noalias})
// CHECK: scf.parallel
// CHECK-NOT: __kiln_parallel
func.func @small(%buf: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    memref.store %one, %buf[%i] : memref<4xf32>
    scf.reduce
  }
  return
}

// -----

// Tests serial kernels: each top-level loop nest is its own function, the
// buffers it touches pass once each (a view's source, not the view), and a
// nest that reads a scalar computed outside stays in place.
// CHECK-LABEL: func.func @serial(%arg0: memref<8xf32>, %arg1: memref<8xf32>, %arg2: index)
// CHECK: call @serial_kernel0(%arg1, %arg0) : (memref<8xf32>, memref<8xf32>) -> ()
// CHECK-NEXT: scf.for
// CHECK: return
// CHECK-LABEL: func.func private @serial_kernel0(%arg0: memref<8xf32> {llvm.noalias}, %arg1: memref<8xf32> {llvm.noalias})
// CHECK: memref.subview %arg0
// CHECK: scf.for
func.func @serial(%a: memref<8xf32>, %b: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %half = memref.subview %b[4] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 4>>
  scf.for %i = %c0 to %c4 step %c1 {
    %v = memref.load %a[%i] : memref<8xf32>
    memref.store %v, %half[%i] : memref<4xf32, strided<[1], offset: 4>>
  }
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %b[%i] : memref<8xf32>
    memref.store %v, %a[%i] : memref<8xf32>
  }
  return
}

// -----

// Tests the cost recorded for throughput figures: a vector FMA is two
// operations per lane (4 x 8 x 2 x 16 = 1024), an addf one per element
// (4 x 8 = 32); bytes count each buffer touched once (two of 4x16 floats,
// whatever the number of loads), not the kernel's own temporaries.
// CHECK-LABEL: func.func private @cost_kernel0
// CHECK-SAME: kiln.cost = [1056, 512]
func.func @cost(%a: memref<4x16xf32>, %b: memref<4x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %t = memref.alloca() : memref<16xf32>
    %x = vector.load %a[%i, %c0] : memref<4x16xf32>, vector<16xf32>
    %r = scf.for %k = %c0 to %c8 step %c1 iter_args(%acc = %x) -> (vector<16xf32>) {
      %f = vector.fma %x, %x, %acc : vector<16xf32>
      %s = memref.load %a[%i, %k] : memref<4x16xf32>
      %d = arith.addf %s, %s : f32
      memref.store %d, %t[%k] : memref<16xf32>
      scf.yield %f : vector<16xf32>
    }
    vector.store %r, %b[%i, %c0] : memref<4x16xf32>, vector<16xf32>
  }
  return
}

// -----

// Tests that a branch costs its costliest region, the one that may run,
// not their sum (a column tile's reduction with and without prefetches):
// 4 x 8 vector FMAs of 16 lanes each way, 4 x 8 x 2 x 16 = 1024, not 2048.
// CHECK-LABEL: func.func private @branch_cost_kernel0
// CHECK-SAME: kiln.cost = [1024, 512]
func.func @branch_cost(%a: memref<4x16xf32>, %b: memref<4x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %x = vector.load %a[%i, %c0] : memref<4x16xf32>, vector<16xf32>
    %p = arith.cmpi ult, %i, %c2 : index
    %r = scf.if %p -> (vector<16xf32>) {
      %y = scf.for %k = %c0 to %c8 step %c1 iter_args(%acc = %x) -> (vector<16xf32>) {
        memref.prefetch %a[%i, %k], read, locality<2>, data : memref<4x16xf32>
        %f = vector.fma %x, %x, %acc : vector<16xf32>
        scf.yield %f : vector<16xf32>
      }
      scf.yield %y : vector<16xf32>
    } else {
      %y = scf.for %k = %c0 to %c8 step %c1 iter_args(%acc = %x) -> (vector<16xf32>) {
        %f = vector.fma %x, %x, %acc : vector<16xf32>
        scf.yield %f : vector<16xf32>
      }
      scf.yield %y : vector<16xf32>
    }
    vector.store %r, %b[%i, %c0] : memref<4x16xf32>, vector<16xf32>
  }
  return
}

// -----

// Tests that a loop over the batch's images (the leading dimension of the
// first argument, 8 here) is split down to a 32nd of the work threshold, so
// that every kernel gives the same images to the same thread; a loop as
// small over something else stays serial.
// RUN: kiln-opt %s -split-input-file -kiln-outline-kernels=min-work=6400 | FileCheck %s --check-prefix=BATCH
// BATCH-LABEL: func.func @images
// BATCH: call @__kiln_parallel_0
// BATCH: call @images_kernel1
func.func @images(%x: memref<8x16xf32>, %y: memref<7x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c16) step (%c1, %c1) {
    memref.store %one, %x[%i, %j] : memref<8x16xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c7, %c16) step (%c1, %c1) {
    memref.store %one, %y[%i, %j] : memref<7x16xf32>
    scf.reduce
  }
  return
}

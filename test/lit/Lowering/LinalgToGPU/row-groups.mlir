// RUN: kiln-opt %s -split-input-file -kiln-outline-gpu-kernels | FileCheck %s

// Tests that softmax's steps (the max's init and reduction, exp, the sum's
// init and reduction, the division) over the same rows are ONE kernel: a
// block per row, the ops in order with barriers between, reductions through
// gpu.all_reduce, elementwise steps striding over the row, 16 bytes a
// thread.
// CHECK-LABEL: func.func @main
// CHECK: call @__kiln_launch_0(
// CHECK-NOT: call
// CHECK: @__kiln_launch_0({{.*}}) attributes {kiln.block = array<i32: 128, 1, 1>, kiln.grid = array<i32: 4, 1, 1>
// CHECK: gpu.func @main_kernel0
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: %[[ROW:.*]] = gpu.block_id x
// CHECK: scf.for %{{.*}} = %[[T]] to %c1
// CHECK: memref.store {{.*}}[%[[ROW]]]
// CHECK: gpu.barrier
// Rows of 300 f32: each thread takes 4 consecutive elements a step (one
// 16-byte load or store per operand), 128 threads x 4 apart.
// CHECK: %[[T4:.*]] = arith.muli %[[T]], %c4
// CHECK: scf.for %{{.*}} = %[[T4]] to %c300 step %c512{{.*}} iter_args
// CHECK: vector.load %{{.*}} : memref<4x300xf32>, vector<4xf32>
// CHECK-COUNT-4: arith.maximumf
// CHECK: gpu.all_reduce maximumf
// CHECK: gpu.barrier
// CHECK: vector.load
// CHECK-COUNT-4: math.exp
// CHECK: vector.store
// CHECK: gpu.barrier
// CHECK: gpu.barrier
// CHECK: gpu.all_reduce add
// CHECK: gpu.barrier
// CHECK: arith.divf
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return
#row = affine_map<(i, j) -> (i, j)>
#red = affine_map<(i, j) -> (i)>
func.func @main(%x: memref<4x300xf32>, %y: memref<4x300xf32>, %arena: memref<4096xi8>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %max = memref.view %arena[%c0][] : memref<4096xi8> to memref<4xf32>
  linalg.fill ins(%ninf : f32) outs(%max : memref<4xf32>)
  linalg.generic {indexing_maps = [#row, #red], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x300xf32>) outs(%max : memref<4xf32>) {
  ^bb0(%a: f32, %m: f32):
    %r = arith.maximumf %a, %m : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#row, #red, #row], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : memref<4x300xf32>, memref<4xf32>) outs(%y : memref<4x300xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %e = math.exp %d : f32
    linalg.yield %e : f32
  }
  %sum = memref.view %arena[%c64][] : memref<4096xi8> to memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<4xf32>)
  linalg.generic {indexing_maps = [#row, #red], iterator_types = ["parallel", "reduction"]}
      ins(%y : memref<4x300xf32>) outs(%sum : memref<4xf32>) {
  ^bb0(%a: f32, %s: f32):
    %r = arith.addf %a, %s : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#row, #red, #row], iterator_types = ["parallel", "parallel"]}
      ins(%y, %sum : memref<4x300xf32>, memref<4xf32>) outs(%y : memref<4x300xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %q = arith.divf %a, %s : f32
    linalg.yield %q : f32
  }
  return
}

// -----

// Tests that a group stops before an op that writes bytes another row may
// still read: the memory plan put %t over %max's bytes (dead in program
// order once the subtraction ran), but in one kernel another block could
// still be reading %max.
// CHECK-LABEL: func.func @main
// CHECK: call @__kiln_launch_0(
// CHECK: call @__kiln_launch_1(
// CHECK: gpu.func @main_kernel0
// CHECK: gpu.all_reduce maximumf
// CHECK: arith.subf
// CHECK-NOT: arith.mulf
// CHECK: gpu.return
// CHECK: gpu.func @main_kernel1
// CHECK: arith.mulf
#row = affine_map<(i, j) -> (i, j)>
#red = affine_map<(i, j) -> (i)>
func.func @main(%x: memref<4x300xf32>, %y: memref<4x300xf32>, %arena: memref<8192xi8>) {
  %c0 = arith.constant 0 : index
  %ninf = arith.constant 0xFF800000 : f32
  %max = memref.view %arena[%c0][] : memref<8192xi8> to memref<4xf32>
  linalg.fill ins(%ninf : f32) outs(%max : memref<4xf32>)
  linalg.generic {indexing_maps = [#row, #red], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x300xf32>) outs(%max : memref<4xf32>) {
  ^bb0(%a: f32, %m: f32):
    %r = arith.maximumf %a, %m : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#row, #red, #row], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : memref<4x300xf32>, memref<4xf32>) outs(%y : memref<4x300xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    linalg.yield %d : f32
  }
  %t = memref.view %arena[%c0][] : memref<8192xi8> to memref<4x300xf32>
  linalg.generic {indexing_maps = [#row, #row], iterator_types = ["parallel", "parallel"]}
      ins(%y : memref<4x300xf32>) outs(%t : memref<4x300xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// Tests that rows shorter than 16 keep a kernel per op.
// CHECK-LABEL: func.func @main
// CHECK: call @__kiln_launch_0(
// CHECK: call @__kiln_launch_1(
#row = affine_map<(i, j) -> (i, j)>
#red = affine_map<(i, j) -> (i)>
func.func @main(%x: memref<64x8xf32>, %s: memref<64xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<64xf32>)
  linalg.generic {indexing_maps = [#row, #red], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<64x8xf32>) outs(%s : memref<64xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  }
  return
}

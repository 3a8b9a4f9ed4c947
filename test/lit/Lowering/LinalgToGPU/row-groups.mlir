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
// CHECK: scf.for %{{.*}} = %[[T4]] to %c300{{(_[0-9]+)?}} step %c512{{.*}} iter_args
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

// -----

// Tests a softmax over rows known only at run time (a dynamic batch and
// sequence: at most 8 rows of 256 by kiln.input_dim_max): still ONE
// kernel. The host counts the rows for the grid (x = -1, at least one
// block); each block checks its row is one of them (the whole block takes
// the branch: its barriers stay uniform) and strides over a row length
// read from the kernel's buffer. The output %y has no bound of its own;
// the ops make its rows and length %x's, so the group's widest row is 256
// (128 threads).
// CHECK-LABEL: func.func @main
// CHECK: %[[N:.*]] = memref.dim %view{{.*}}, %c0
// CHECK: %[[G:.*]] = arith.maxui %[[N]], %c1
// CHECK: call @__kiln_launch_0(%[[G]],
// CHECK-NOT: call
// CHECK: kiln.block = array<i32: 128, 1, 1>, kiln.grid = array<i32: -1, 1, 1>
// CHECK: gpu.func @main_kernel0
// CHECK-NOT: known_grid_size
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: %[[ROW:.*]] = gpu.block_id x
// CHECK: %[[ROWS:.*]] = memref.dim
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[ROW]], %[[ROWS]]
// CHECK: scf.if %[[IN]] {
// CHECK: gpu.barrier
// CHECK: %[[LEN:.*]] = memref.dim %{{.*}}, %c1
// CHECK: scf.for %{{.*}} = %[[T]] to %[[LEN]] step %c128{{.*}} iter_args
// CHECK: gpu.all_reduce maximumf
// CHECK: math.exp
// CHECK: gpu.all_reduce add
// CHECK: arith.divf
// CHECK: }
// CHECK-NEXT: }
// CHECK-NEXT: gpu.return
#row = affine_map<(i, j) -> (i, j)>
#red = affine_map<(i, j) -> (i)>
module attributes {kiln.input_dim_max = [array<i64: 8, 256>]} {
  func.func @main(%x: memref<?x?xf32>, %y: memref<?x?xf32>, %arena: memref<4096xi8>) {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %ninf = arith.constant 0xFF800000 : f32
    %zero = arith.constant 0.0 : f32
    %n = memref.dim %x, %c0 : memref<?x?xf32>
    %max = memref.view %arena[%c0][%n] : memref<4096xi8> to memref<?xf32>
    linalg.fill ins(%ninf : f32) outs(%max : memref<?xf32>)
    linalg.generic {indexing_maps = [#row, #red], iterator_types = ["parallel", "reduction"]}
        ins(%x : memref<?x?xf32>) outs(%max : memref<?xf32>) {
    ^bb0(%a: f32, %m: f32):
      %r = arith.maximumf %a, %m : f32
      linalg.yield %r : f32
    }
    linalg.generic {indexing_maps = [#row, #red, #row], iterator_types = ["parallel", "parallel"]}
        ins(%x, %max : memref<?x?xf32>, memref<?xf32>) outs(%y : memref<?x?xf32>) {
    ^bb0(%a: f32, %m: f32, %o: f32):
      %d = arith.subf %a, %m : f32
      %e = math.exp %d : f32
      linalg.yield %e : f32
    }
    %sum = memref.view %arena[%c64][%n] : memref<4096xi8> to memref<?xf32>
    linalg.fill ins(%zero : f32) outs(%sum : memref<?xf32>)
    linalg.generic {indexing_maps = [#row, #red], iterator_types = ["parallel", "reduction"]}
        ins(%y : memref<?x?xf32>) outs(%sum : memref<?xf32>) {
    ^bb0(%a: f32, %s: f32):
      %r = arith.addf %a, %s : f32
      linalg.yield %r : f32
    }
    linalg.generic {indexing_maps = [#row, #red, #row], iterator_types = ["parallel", "parallel"]}
        ins(%y, %sum : memref<?x?xf32>, memref<?xf32>) outs(%y : memref<?x?xf32>) {
    ^bb0(%a: f32, %s: f32, %o: f32):
      %q = arith.divf %a, %s : f32
      linalg.yield %q : f32
    }
    return
  }
}

// -----

// Tests that an op over rows that may differ at run time stays out of the
// group: %w's rows are no dimension the ops before tie to %x's, so its
// scaling is a kernel of its own (a thread per element).
// CHECK-LABEL: func.func @main
// CHECK: call @__kiln_launch_0(
// CHECK: call @__kiln_launch_1(
// CHECK: kiln.block = array<i32: 128, 1, 1>, kiln.grid = array<i32: -1, 1, 1>
// CHECK: kiln.block = array<i32: 256, 1, 1>, kiln.grid = array<i32: -1, 1, 1>
#row = affine_map<(i, j) -> (i, j)>
#red = affine_map<(i, j) -> (i)>
module attributes {kiln.input_dim_max = [array<i64: 8, 256>, array<i64: 8, 256>]} {
  func.func @main(%x: memref<?x?xf32>, %w: memref<?x?xf32>, %s: memref<?xf32>, %v: memref<?x?xf32>) {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%s : memref<?xf32>)
    linalg.generic {indexing_maps = [#row, #red], iterator_types = ["parallel", "reduction"]}
        ins(%x : memref<?x?xf32>) outs(%s : memref<?xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %r = arith.addf %a, %acc : f32
      linalg.yield %r : f32
    }
    linalg.generic {indexing_maps = [#row, #row], iterator_types = ["parallel", "parallel"]}
        ins(%w : memref<?x?xf32>) outs(%v : memref<?x?xf32>) {
    ^bb0(%a: f32, %o: f32):
      %m = arith.mulf %a, %a : f32
      linalg.yield %m : f32
    }
    return
  }
}

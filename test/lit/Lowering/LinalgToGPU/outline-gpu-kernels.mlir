// RUN: kiln-opt %s -split-input-file -verify-diagnostics -kiln-outline-gpu-kernels | FileCheck %s

// Tests that a parallel nest becomes a kernel with one thread per iteration
// (linearized, the innermost dimension fastest, a range check when the
// blocks overshoot) and the host calls a launch declaration; views are
// recomputed inside, so only the root buffer is a parameter.
// CHECK-LABEL: func.func @main(%arg0: memref<10x30xf32>)
// CHECK: call @__kiln_launch_0(%arg0) : (memref<10x30xf32>) -> ()
// CHECK-NEXT: return
// CHECK: func.func private @__kiln_launch_0(memref<10x30xf32>)
// CHECK-SAME: kiln.block = array<i32: 256, 1, 1>
// CHECK-SAME: kiln.grid = array<i32: 2, 1, 1>
// CHECK-SAME: kiln.kernel_name = "main_kernel0"
// CHECK-SAME: kiln.ops = []
// CHECK: gpu.module @kiln_kernels [#nvvm.target<O = 3, chip = "sm_80", features = "+ptx80">]
// CHECK: gpu.func @main_kernel0(%arg0: memref<10x30xf32>) kernel
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK: memref.subview %arg0
// CHECK: %[[B:.*]] = gpu.block_id x
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: %[[L:.*]] = arith.addi {{.*}}, %[[T]]
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[L]], %c300
// CHECK: scf.if %[[IN]]
// CHECK: %[[J:.*]] = arith.remui %[[L]], %c30
// CHECK: %[[I:.*]] = arith.divui %[[L]], %c30
// CHECK: memref.store {{.*}}[%[[I]], %[[J]]]
// CHECK: gpu.return
func.func @main(%buf: memref<10x30xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %c30 = arith.constant 30 : index
  %one = arith.constant 1.0 : f32
  %view = memref.subview %buf[0, 0] [10, 30] [1, 1] : memref<10x30xf32> to memref<10x30xf32, strided<[30, 1]>>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c10, %c30) step (%c1, %c1) {
    memref.store %one, %view[%i, %j] : memref<10x30xf32, strided<[30, 1]>>
    scf.reduce
  }
  return
}

// -----

// Tests that small nests get a block of whole warps without a range check
// when it fits exactly, that constant globals are copied into the module,
// and that top-level work outside a parallel loop (a scalar computation)
// runs as a one-thread kernel, since the host must not touch device memory.
// CHECK-LABEL: func.func @main
// CHECK: call @__kiln_launch_0(%arg0)
// CHECK-NEXT: call @__kiln_launch_1(
// CHECK-NEXT: return
// CHECK: @__kiln_launch_0({{.*}}) attributes {kiln.block = array<i32: 64, 1, 1>, kiln.grid = array<i32: 1, 1, 1>
// CHECK: @__kiln_launch_1({{.*}}) attributes {kiln.block = array<i32: 1, 1, 1>, kiln.grid = array<i32: 1, 1, 1>
// CHECK: gpu.module @kiln_kernels
// CHECK: memref.global "private" constant @table
// CHECK: gpu.func @main_kernel0
// CHECK-NOT: scf.if
// CHECK: memref.get_global @table
// CHECK: gpu.func @main_kernel1
// CHECK: memref.load
// CHECK: arith.addf
// CHECK: memref.store
memref.global "private" constant @table : memref<64xf32> = dense<2.0>
func.func @main(%buf: memref<64xf32>, %out: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %t = memref.get_global @table : memref<64xf32>
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %v = memref.load %t[%i] : memref<64xf32>
    memref.store %v, %buf[%i] : memref<64xf32>
    scf.reduce
  }
  %x = memref.load %buf[%c0] : memref<64xf32>
  %y = arith.addf %x, %x : f32
  memref.store %y, %out[] : memref<f32>
  return
}

// -----

// Tests that a value computed on the device and used by the host program
// that is no scalar is refused with a clear error.
func.func @main(%buf: memref<64xf32>) -> vector<4xf32> {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{computes a value the host program uses, but on the CUDA target only kernels may read device memory}}
  %x = vector.load %buf[%c0] : memref<64xf32>, vector<4xf32>
  return %x : vector<4xf32>
}

// -----

// Tests a while loop of the host program whose condition a kernel computes
// (a Loop's condition computed in its body): the one-thread kernel stores
// it, as 64 bits, into a device slot allocated for the run, and the host
// reads it back after the launch (@__kiln_device_read) to decide.
// CHECK-LABEL: func.func @main(%arg0: memref<4xf32>, %arg1: f32)
// CHECK: %[[SLOT:.*]] = memref.alloc() : memref<1xi64>
// CHECK: scf.while
// CHECK: scf.condition
// CHECK: } do {
// CHECK: call @__kiln_launch_0(
// CHECK: call @__kiln_launch_1(%[[SLOT]],
// CHECK: %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[SLOT]]
// CHECK: %[[A:.*]] = arith.index_cast %[[P]] : index to i64
// CHECK: %[[B:.*]] = func.call @__kiln_device_read(%[[A]]) : (i64) -> i64
// CHECK: %[[GO:.*]] = arith.trunci %[[B]] : i64 to i1
// CHECK: scf.yield %[[GO]]
// CHECK: memref.dealloc %[[SLOT]]
// CHECK: gpu.func @main_kernel1
// CHECK: arith.cmpf olt
// CHECK: arith.extui %{{.*}} : i1 to i64
// CHECK: memref.store %{{.*}} : memref<1xi64>
// CHECK: func.func private @__kiln_device_read(i64) -> i64
#map_until = affine_map<(d0) -> (d0)>
func.func @main(%v: memref<4xf32>, %limit: f32) {
  %c0 = arith.constant 0 : index
  %true = arith.constant true
  scf.while (%go = %true) : (i1) -> () {
    scf.condition(%go)
  } do {
    linalg.generic {indexing_maps = [#map_until], iterator_types = ["parallel"]} outs(%v : memref<4xf32>) {
    ^bb0(%a: f32):
      %s = arith.addf %a, %a : f32
      linalg.yield %s : f32
    }
    %x = memref.load %v[%c0] : memref<4xf32>
    %more = arith.cmpf olt, %x, %limit : f32
    scf.yield %more : i1
  }
  return
}

// -----

// Tests that a reduction of a whole short tensor into one value (a loss's
// mean over a few elements, read across its rows) gets a warp, not one
// thread doing it all.
// CHECK-LABEL: func.func @main(%arg0: memref<3x4xf32>
// CHECK: @__kiln_launch_0({{.*}}) attributes {kiln.block = array<i32: 32, 1, 1>, kiln.grid = array<i32: 1, 1, 1>
// CHECK: gpu.func @main_kernel0
// CHECK: gpu.all_reduce add
func.func @main(%x: memref<3x4xf32>, %sum: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> ()>],
                  iterator_types = ["reduction", "reduction"]}
      ins(%x : memref<3x4xf32>) outs(%sum : memref<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests that one-element ops in a row (a loss's tail: its scale, its copy
// out) are one one-thread kernel, not a launch each.
// CHECK-LABEL: func.func @main(%arg0: memref<f32>, %arg1: memref<1x1xf32>)
// CHECK: call @__kiln_launch_0(
// CHECK-NOT: call @__kiln_launch_1
// CHECK: gpu.func @main_kernel0
// CHECK: arith.mulf
// CHECK: memref.store {{.*}} : memref<f32>
// CHECK: memref.load {{.*}} : memref<1x1xf32>
// CHECK: memref.store {{.*}} : memref<1x1xf32>
func.func @main(%loss: memref<f32>, %out: memref<1x1xf32>) {
  %half = arith.constant 0.5 : f32
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []}
      ins(%loss : memref<f32>) outs(%loss : memref<f32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.mulf %v, %half : f32
    linalg.yield %s : f32
  }
  %view = memref.expand_shape %loss [] output_shape [1, 1] : memref<f32> into memref<1x1xf32>
  linalg.copy ins(%view : memref<1x1xf32>) outs(%out : memref<1x1xf32>)
  return
}

// -----

// Tests that a row reduction with few rows gets a warp per row (rows under
// 1024 elements): lanes stride over the row, 4 elements (one 16-byte
// load) a step, gpu.all_reduce combines them, and one lane folds the
// result into the output's initial value.
// CHECK-LABEL: func.func @main
// CHECK: call @__kiln_launch_0(
// CHECK: @__kiln_launch_0({{.*}}) attributes {kiln.block = array<i32: 32, 1, 1>, kiln.grid = array<i32: 4, 1, 1>
// CHECK: gpu.func @main_kernel0
// CHECK: %[[ROW:.*]] = gpu.block_id x
// CHECK: %[[LANE:.*]] = gpu.thread_id x
// CHECK: %[[NEG:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[LANE4:.*]] = arith.muli %[[LANE]], %c4
// CHECK: %[[ACC:.*]] = scf.for %[[K:.*]] = %[[LANE4]] to %c300{{(_[0-9]+)?}} step %c128 iter_args(%[[A:.*]] = %[[NEG]])
// CHECK: %[[V:.*]] = vector.load %{{.*}}[%[[ROW]], %[[K]]] {alignment = 16 : i64} : memref<4x300xf32>, vector<4xf32>
// CHECK: %[[X0:.*]] = vector.extract %[[V]][0]
// CHECK: %[[X1:.*]] = vector.extract %[[V]][1]
// CHECK: %[[M0:.*]] = arith.maximumf %[[X0]], %[[A]]
// CHECK: arith.maximumf %[[X1]], %[[M0]]
// CHECK: %[[ALL:.*]] = gpu.all_reduce maximumf %[[ACC]] uniform
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %c0
// CHECK: scf.if %[[FIRST]]
// CHECK: %[[OLD:.*]] = memref.load %arg0[%[[ROW]]]
// CHECK: %[[NEW:.*]] = arith.maximumf %[[ALL]], %[[OLD]]
// CHECK: memref.store %[[NEW]], %arg0[%[[ROW]]]
func.func @main(%x: memref<4x300xf32>, %out: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x300xf32>) outs(%out : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.maximumf %a, %acc : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// Tests that a whole-tensor sum (one output, a long extent) gets one block
// of 256 threads, and a reduction with short rows keeps a thread per output.
// CHECK-LABEL: func.func @main
// CHECK: @__kiln_launch_0({{.*}}) attributes {kiln.block = array<i32: 256, 1, 1>, kiln.grid = array<i32: 1, 1, 1>
// CHECK: @__kiln_launch_1({{.*}}) attributes {kiln.block = array<i32: 32, 1, 1>, kiln.grid = array<i32: 1, 1, 1>
// CHECK: gpu.func @main_kernel0
// CHECK: gpu.all_reduce add
// CHECK: gpu.func @main_kernel1
// CHECK-NOT: gpu.all_reduce
// CHECK: scf.for
// CHECK: gpu.return
func.func @main(%x: memref<2048xf32>, %sum: memref<f32>, %y: memref<16x8xf32>, %rows: memref<16xf32>) {
  linalg.generic {indexing_maps = [affine_map<(k) -> (k)>, affine_map<(k) -> ()>],
                  iterator_types = ["reduction"]}
      ins(%x : memref<2048xf32>) outs(%sum : memref<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%y : memref<16x8xf32>) outs(%rows : memref<16xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests that an elementwise op gets 4 f32 per thread: a 16-byte aligned
// vector load for the operand contiguous along the innermost loop, one
// scalar load for the bias (invariant along it), the body once per lane,
// one 16-byte store; 16x64 elements are 256 threads, one block.
// CHECK-LABEL: func.func @main
// CHECK: @__kiln_launch_0({{.*}}) attributes {kiln.block = array<i32: 256, 1, 1>, kiln.grid = array<i32: 1, 1, 1>
// CHECK: gpu.func @main_kernel0
// CHECK-NOT: scf.if
// CHECK: %[[J:.*]] = arith.remui %{{.*}}, %c16
// CHECK: %[[I:.*]] = arith.divui %{{.*}}, %c16
// CHECK: %[[J4:.*]] = arith.muli %[[J]], %c4
// CHECK: %[[X:.*]] = vector.load %{{.*}}[%[[I]], %[[J4]]] {alignment = 16 : i64} : memref<16x64xf32>, vector<4xf32>
// CHECK-DAG: %[[B:.*]] = memref.load %{{.*}}[%[[I]]] : memref<16xf32>
// CHECK-DAG: %[[X0:.*]] = vector.extract %[[X]][0]
// CHECK-DAG: %[[X3:.*]] = vector.extract %[[X]][3]
// CHECK: %[[Y0:.*]] = arith.addf %[[X0]], %[[B]]
// CHECK: %[[Y3:.*]] = arith.addf %[[X3]], %[[B]]
// CHECK: %[[V:.*]] = vector.from_elements %[[Y0]], {{.*}}, %[[Y3]]
// CHECK: vector.store %[[V]], %{{.*}}[%[[I]], %[[J4]]] {alignment = 16 : i64}
func.func @main(%x: memref<16x64xf32>, %b: memref<16xf32>, %y: memref<16x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
                                   affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : memref<16x64xf32>, memref<16xf32>) outs(%y : memref<16x64xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests that an innermost extent that is not a multiple of 4 keeps one
// element per thread (scalar accesses, a range check).
// CHECK-LABEL: func.func @main(%arg0: memref<10x30xf32>, %arg1: memref<10x30xf32>)
// CHECK: gpu.func @main_kernel0
// CHECK-NOT: vector.load
// CHECK: scf.if
// CHECK: memref.load
// CHECK: memref.store
func.func @main(%x: memref<10x30xf32>, %y: memref<10x30xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<10x30xf32>) outs(%y : memref<10x30xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests that booleans keep one element per thread: a memref of i1 holds a
// byte per element, a vector<16xi1> in LLVM 16 bits (the causal mask of an
// attention read 16 bytes as bits).
// CHECK-LABEL: func.func @main(%arg0: memref<16x16xi1>, %arg1: memref<16x16xi1>)
// CHECK: gpu.func @main_kernel0
// CHECK-NOT: vector.load
// CHECK: memref.load {{.*}} : memref<16x16xi1>
// CHECK-NOT: vector.store
// CHECK: memref.store {{.*}} : memref<16x16xi1>
func.func @main(%x: memref<16x16xi1>, %y: memref<16x16xi1>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<16x16xi1>) outs(%y : memref<16x16xi1>) {
  ^bb0(%a: i1, %o: i1):
    %t = arith.constant true
    %s = arith.xori %a, %t : i1
    linalg.yield %s : i1
  }
  return
}

// -----

// Tests that an f32 matmul goes to tensor cores: 64x64 block tiles over a
// [N/64, M/64, 1] grid of 4 warps; A and B tiles staged by 16-byte cp.async
// into two stages of dynamic shared memory, rows padded against bank
// conflicts (A's by 4 floats, B's by 8; the launch asks for the bytes) (the
// next k step's copies overlap this step's math); 16x8x8 vector.contracts
// per warp (2 x 4 tiles, 2 k-steps) for kiln-gpu-lower-mma; the
// accumulators start from C.
// CHECK-LABEL: func.func @main(%arg0: memref<128x64xf32>, %arg1: memref<64x128xf32>, %arg2: memref<128x128xf32>)
// CHECK: @__kiln_launch_0({{.*}}) attributes {kiln.block = array<i32: 128, 1, 1>, kiln.grid = array<i32: 2, 2, 1>, {{.*}}kiln.shared = 19456 : i32
// CHECK: gpu.func @main_kernel0
// CHECK-SAME: kiln.mma
// CHECK: gpu.dynamic_shared_memory
// CHECK: memref.view {{.*}} to memref<2x64x20xf32, #gpu.address_space<workgroup>>
// CHECK: memref.view {{.*}} to memref<2x16x72xf32, #gpu.address_space<workgroup>>
// CHECK-COUNT-8: vector.transfer_read {{.*}} : memref<128x128xf32>, vector<16x8xf32>
// CHECK-COUNT-4: nvgpu.device_async_copy {{.*}}, 4 {bypassL1}
// CHECK: %[[FIRST:.*]] = nvgpu.device_async_create_group
// CHECK: scf.for {{.*}} -> (vector<16x8xf32>
// CHECK: affine.min
// CHECK-COUNT-4: nvgpu.device_async_copy
// CHECK: %[[NEXT:.*]] = nvgpu.device_async_create_group
// CHECK: nvgpu.device_async_wait %[[NEXT]] {numGroups = 1 : i32}
// CHECK: memref.subview
// CHECK: gpu.barrier
// CHECK-COUNT-16: vector.contract
// CHECK: gpu.barrier
// CHECK: nvgpu.device_async_wait %[[FIRST]] {numGroups = 0 : i32}
// CHECK-COUNT-8: vector.transfer_write {{.*}} : vector<16x8xf32>, memref<128x128xf32>
func.func @main(%a: memref<128x64xf32>, %b: memref<64x128xf32>, %c: memref<128x128xf32>) {
  linalg.matmul ins(%a, %b : memref<128x64xf32>, memref<64x128xf32>) outs(%c : memref<128x128xf32>)
  return
}

// -----

// Tests that a big f32 matmul (256 blocks of 128x128) gets 128x128 block
// tiles of four 64x64 warp tiles (4 x 8 accumulators each) and a 3-stage
// cp.async ring: steps 0 and 1 in flight before the loop, step k+2 copied
// into the stage step k-1 used, then all but the newest 2 groups awaited.
// CHECK-LABEL: func.func @main(%arg0: memref<2048x64xf32>
// CHECK: kiln.block = array<i32: 128, 1, 1>, kiln.grid = array<i32: 16, 16, 1>
// CHECK: gpu.func @main_kernel0
// CHECK: memref.view {{.*}} to memref<3x128x20xf32, #gpu.address_space<workgroup>>
// CHECK: memref.view {{.*}} to memref<3x16x136xf32, #gpu.address_space<workgroup>>
// CHECK: %[[FIRST:.*]] = nvgpu.device_async_create_group
// CHECK: nvgpu.device_async_create_group
// CHECK: scf.for {{.*}} -> (vector<16x8xf32>
// CHECK: affine.min #{{.*}}(%{{.*}})
// CHECK: %[[NEXT:.*]] = nvgpu.device_async_create_group
// CHECK: nvgpu.device_async_wait %[[NEXT]] {numGroups = 2 : i32}
// CHECK-COUNT-64: vector.contract
// CHECK: nvgpu.device_async_wait %[[FIRST]] {numGroups = 0 : i32}
// CHECK-COUNT-32: vector.transfer_write {{.*}} : vector<16x8xf32>, memref<2048x2048xf32>
func.func @main(%a: memref<2048x64xf32>, %b: memref<64x2048xf32>, %c: memref<2048x2048xf32>) {
  linalg.matmul ins(%a, %b : memref<2048x64xf32>, memref<64x2048xf32>) outs(%c : memref<2048x2048xf32>)
  return
}

// -----

// Tests that a bf16 matmul accumulates in f32 on tensor cores: its tiles
// are cp.async'd as bf16 and read through f16 views of the same shared
// bytes (upstream's fragment loads know f16 only; kiln-gpu-lower-mma gives
// the bf16 mma.sync); C, not zero-filled, is widened into an f32 tile in
// shared memory first, and narrowed back into C at the end, each by a
// device function over the block's tile (its rows padded to 72 floats,
// 8 banks apart, for the accumulator fragments' stores).
// CHECK-LABEL: func.func @main(%arg0: memref<128x64xbf16>
// CHECK: gpu.func @main_kernel0
// CHECK-SAME: kiln.mma
// CHECK-SAME: kiln.mma_bf16
// CHECK: memref.view {{.*}} to memref<2x64x40xbf16
// CHECK: memref.view {{.*}} to memref<2x64x40xf16
// CHECK: %[[STAGE:.*]] = memref.view {{.*}} to memref<64x72xf32
// CHECK: call @main_kernel0_load_c(
// CHECK: gpu.barrier
// CHECK-COUNT-8: vector.transfer_read %[[STAGE]]{{.*}} vector<16x8xf32>
// CHECK: nvgpu.device_async_copy {{.*}}, 8 {bypassL1} : memref<128x64xbf16> to memref<2x64x40xbf16
// CHECK: scf.for
// CHECK: vector.contract {{.*}} vector<16x16xf16>, vector<16x8xf16> into vector<16x8xf32>
// CHECK: vector.transfer_write {{.*}}, %[[STAGE]]
// CHECK: gpu.barrier
// CHECK: call @main_kernel0_epilogue(
// CHECK: func.func private @main_kernel0_load_c(
// CHECK: arith.extf {{.*}} : bf16 to f32
// CHECK: func.func private @main_kernel0_epilogue(
// CHECK: arith.truncf {{.*}} : f32 to bf16
func.func @main(%a: memref<128x64xbf16>, %b: memref<64x128xbf16>, %c: memref<128x128xbf16>) {
  linalg.matmul ins(%a, %b : memref<128x64xbf16>, memref<64x128xbf16>) outs(%c : memref<128x128xbf16>)
  return
}

// -----

// Tests tiles that overhang M and N (201 rows in 64-row tiles, 36 columns
// in 16-wide ones: a grid of 3 x 4): A's rows and B's columns past the end
// are clamped and copy no bytes (cp.async's source size, a value), the
// accumulators start and end in the f32 tile in shared memory (C, not
// zero-filled, is read into it), and only the elements inside C are read
// and written, behind a bounds check.
// CHECK-LABEL: func.func @main(%arg0: memref<201x64xf32>
// CHECK: kiln.block = array<i32: 64, 1, 1>, kiln.grid = array<i32: 3, 4, 1>
// CHECK: gpu.func @main_kernel0
// CHECK: %[[STAGE:.*]] = memref.view {{.*}} to memref<64x40xf32
// CHECK: call @main_kernel0_load_c(
// CHECK: vector.transfer_read %[[STAGE]]
// CHECK: affine.min
// CHECK: nvgpu.device_async_copy {{.*}}, 4, %{{.*}} {bypassL1} : memref<201x64xf32>
// CHECK: nvgpu.device_async_copy {{.*}}, 4, %{{.*}} {bypassL1} : memref<64x36xf32>
// CHECK: scf.for
// CHECK: vector.contract
// CHECK: vector.transfer_write {{.*}}, %[[STAGE]]
// CHECK: call @main_kernel0_epilogue(
// CHECK: func.func private @main_kernel0_load_c(
// CHECK: arith.cmpi slt, %{{.*}}, %c201
// CHECK: arith.cmpi slt, %{{.*}}, %c36
// CHECK: scf.if
// CHECK-NOT: arith.extf
// CHECK: func.func private @main_kernel0_epilogue(
// CHECK: scf.if
// CHECK: memref.store {{.*}} : memref<201x36xf32>
func.func @main(%a: memref<201x64xf32>, %b: memref<64x36xf32>, %c: memref<201x36xf32>) {
  linalg.matmul ins(%a, %b : memref<201x64xf32>, memref<64x36xf32>) outs(%c : memref<201x36xf32>)
  return
}

// -----

// Tests that a linear layer on [batch, seq, features] (B shared by every
// leading index) folds the leading indices into M: 32x64 tiles, 2 warps.
// CHECK-LABEL: func.func @main(%arg0: memref<2x16x64xf32>, %arg1: memref<64x192xf32>, %arg2: memref<2x16x192xf32>)
// CHECK: @__kiln_launch_0({{.*}}) attributes {kiln.block = array<i32: 64, 1, 1>, kiln.grid = array<i32: 3, 1, 1>
// CHECK: gpu.func @main_kernel0
// CHECK: memref.collapse_shape {{.*}} : memref<2x16x64xf32> into memref<32x64xf32>
// CHECK: memref.collapse_shape {{.*}} : memref<2x16x192xf32> into memref<32x192xf32>
// CHECK: vector.contract
func.func @main(%x: memref<2x16x64xf32>, %w: memref<64x192xf32>, %y: memref<2x16x192xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (k, n)>,
                                   affine_map<(b, m, n, k) -> (b, m, n)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<2x16x64xf32>, memref<64x192xf32>) outs(%y : memref<2x16x192xf32>) {
  ^bb0(%a: f32, %bv: f32, %o: f32):
    %p = arith.mulf %a, %bv : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests that attention's batched matmul over [batch, heads] folds both
// leading loops into the grid's z: 8 problems of 16x16x16.
// CHECK-LABEL: func.func @main(%arg0: memref<2x4x16x16xf32>
// CHECK: @__kiln_launch_0({{.*}}) attributes {kiln.block = array<i32: 32, 1, 1>, kiln.grid = array<i32: 1, 1, 8>
// CHECK: gpu.func @main_kernel0
// CHECK-COUNT-3: memref.collapse_shape {{.*}} : memref<2x4x16x16xf32> into memref<8x16x16xf32>
// CHECK: vector.contract
func.func @main(%q: memref<2x4x16x16xf32>, %kt: memref<2x4x16x16xf32>, %s: memref<2x4x16x16xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>,
                                   affine_map<(b, h, m, n, k) -> (b, h, k, n)>,
                                   affine_map<(b, h, m, n, k) -> (b, h, m, n)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kt : memref<2x4x16x16xf32>, memref<2x4x16x16xf32>) outs(%s : memref<2x4x16x16xf32>) {
  ^bb0(%a: f32, %bv: f32, %o: f32):
    %p = arith.mulf %a, %bv : f32
    %r = arith.addf %o, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Tests that a linear layer's zero fill and bias + ReLU fold into the
// tensor-core kernel: accumulators start at zero (no read of C, no fill
// kernel), and after a barrier the block's threads apply the epilogue to
// its tile in a device function (outside the kernel the vector-to-nvgpu
// conversion rewrites).
// CHECK-LABEL: func.func @main(%arg0: memref<64x32xf32>
// CHECK: call @__kiln_launch_0(
// CHECK-NOT: call @__kiln_launch_1
// CHECK: gpu.func @main_kernel0
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<16x8xf32>
// CHECK-NOT: vector.transfer_read {{.*}} : memref<64x64xf32>, vector<16x8xf32>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[ZERO]]
// CHECK: vector.transfer_write
// CHECK: gpu.barrier
// CHECK: call @main_kernel0_epilogue(
// CHECK: func.func private @main_kernel0_epilogue(%[[T:.*]]: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index
// CHECK: scf.for %{{.*}} = %[[T]] to %c4096 step %c128
// CHECK: memref.load
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK: memref.store
func.func @main(%x: memref<64x32xf32>, %w: memref<32x64xf32>, %b: memref<64xf32>, %y: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<64x64xf32>)
  linalg.matmul ins(%x, %w : memref<64x32xf32>, memref<32x64xf32>) outs(%y : memref<64x64xf32>)
  linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (n)>,
                                   affine_map<(m, n) -> (m, n)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%y, %b : memref<64x64xf32>, memref<64xf32>) outs(%y : memref<64x64xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Tests that an epilogue writing over the matmul's A (bytes the memory plan
// may reuse once A is dead in program order) stays a kernel of its own:
// other blocks still read A.
// CHECK-LABEL: func.func @main(%arg0: memref<4096xi8>
// CHECK: call @__kiln_launch_0(
// CHECK: call @__kiln_launch_1(
func.func @main(%arena: memref<4096xi8>, %w: memref<16x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1024 = arith.constant 1024 : index
  %x = memref.view %arena[%c0][] : memref<4096xi8> to memref<16x16xf32>
  %y = memref.view %arena[%c1024][] : memref<4096xi8> to memref<16x16xf32>
  %z = memref.view %arena[%c0][] : memref<4096xi8> to memref<16x16xf32>
  linalg.matmul ins(%x, %w : memref<16x16xf32>, memref<16x16xf32>) outs(%y : memref<16x16xf32>)
  linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%y : memref<16x16xf32>) outs(%z : memref<16x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests that a convolution reads its image unpadded: the zero fill of the
// padded buffer and the copy into its interior (what bufferization leaves
// of a pad) never launch; each im2col element outside the 16x16 image copies
// no source bytes (cp.async's zero fill) from a clamped address.
// CHECK-LABEL: func.func @main(%arg0: memref<16x16x16xf32>
// CHECK-NOT: linalg.map
// CHECK-NOT: linalg.copy
// CHECK: call @__kiln_launch_0(
// CHECK-NOT: call @__kiln_launch_1
// CHECK: gpu.func @main_kernel0
// CHECK: memref.expand_shape {{.*}} into memref<1x16x16x16xf32>
// CHECK: %[[IN:.*]] = affine.min #{{.*}}(%{{.*}}, %{{.*}})
// CHECK: %[[SRC:.*]] = affine.max #{{.*}}(%[[IN]])
// CHECK: nvgpu.device_async_copy %{{.*}}[%block_id_z, {{.*}}], %{{.*}}[{{.*}}], 1, %[[SRC]] : memref<1x16x16x16xf32> to memref<2x16x72xf32
// CHECK: vector.contract
func.func @main(%img: memref<16x16x16xf32>, %p: memref<16x18x18xf32>, %w: memref<16x16x3x3xf32>, %y: memref<1x16x16x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.map outs(%p : memref<16x18x18xf32>)
    (%init: f32) {
      linalg.yield %zero : f32
    }
  %inner = memref.subview %p[0, 1, 1] [16, 16, 16] [1, 1, 1] : memref<16x18x18xf32> to memref<16x16x16xf32, strided<[324, 18, 1], offset: 19>>
  linalg.copy ins(%img : memref<16x16x16xf32>) outs(%inner : memref<16x16x16xf32, strided<[324, 18, 1], offset: 19>>)
  %x = memref.expand_shape %p [[0, 1], [2], [3]] output_shape [1, 16, 18, 18] : memref<16x18x18xf32> into memref<1x16x18x18xf32>
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : memref<1x16x18x18xf32>, memref<16x16x3x3xf32>) outs(%y : memref<1x16x16x16xf32>)
  return
}

// -----

// Tests that a padded buffer something else also reads stays materialized.
// CHECK-LABEL: func.func @main(%arg0: memref<16x16x16xf32>
// CHECK: call @__kiln_launch_0(
// CHECK: call @__kiln_launch_1(
// CHECK: call @__kiln_launch_2(
// CHECK: gpu.func @main_kernel2
// CHECK-NOT: affine.max
// CHECK: nvgpu.device_async_copy %{{.*}}[%block_id_z, {{.*}}], %{{.*}}[{{.*}}], 1 : memref<1x16x18x18xf32>
func.func @main(%img: memref<16x16x16xf32>, %p: memref<16x18x18xf32>, %w: memref<16x16x3x3xf32>, %y: memref<1x16x16x16xf32>, %also: memref<16x18x18xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.map outs(%p : memref<16x18x18xf32>)
    (%init: f32) {
      linalg.yield %zero : f32
    }
  %inner = memref.subview %p[0, 1, 1] [16, 16, 16] [1, 1, 1] : memref<16x18x18xf32> to memref<16x16x16xf32, strided<[324, 18, 1], offset: 19>>
  linalg.copy ins(%img : memref<16x16x16xf32>) outs(%inner : memref<16x16x16xf32, strided<[324, 18, 1], offset: 19>>)
  %x = memref.expand_shape %p [[0, 1], [2], [3]] output_shape [1, 16, 18, 18] : memref<16x18x18xf32> into memref<1x16x18x18xf32>
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : memref<1x16x18x18xf32>, memref<16x16x3x3xf32>) outs(%y : memref<1x16x16x16xf32>)
  linalg.copy ins(%p : memref<16x18x18xf32>) outs(%also : memref<16x18x18xf32>)
  return
}

// -----

// Tests that a batch-1 convolution's bias and ReLU, which unit-extent folding
// left on [F, OH, OW] views of [1, F, OH, OW], join its kernel: one launch,
// the epilogue at the tile element's indices with the image index dropped.
// CHECK-LABEL: func.func @main(%arg0: memref<1x16x18x18xf32>
// CHECK: call @__kiln_launch_0(
// CHECK-NOT: call @__kiln_launch_1
// CHECK: gpu.func @main_kernel0
// CHECK: vector.contract
// CHECK: call @main_kernel0_epilogue(
// CHECK: func.func private @main_kernel0_epilogue(
// CHECK: scf.for
// CHECK: %[[V:.*]] = memref.load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : memref<16x16x16xf32>
// CHECK: %[[B:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<16xf32>
// CHECK: %[[S:.*]] = arith.addf %[[V]], %[[B]]
// CHECK: arith.maximumf %[[S]]
// CHECK: memref.store {{.*}} : memref<16x16x16xf32>
func.func @main(%x: memref<1x16x18x18xf32>, %w: memref<16x16x3x3xf32>, %bias: memref<16xf32>, %y: memref<1x16x16x16xf32>, %z: memref<1x16x16x16xf32>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : memref<1x16x18x18xf32>, memref<16x16x3x3xf32>) outs(%y : memref<1x16x16x16xf32>)
  %yc = memref.collapse_shape %y [[0, 1], [2], [3]] : memref<1x16x16x16xf32> into memref<16x16x16xf32>
  %zc = memref.collapse_shape %z [[0, 1], [2], [3]] : memref<1x16x16x16xf32> into memref<16x16x16xf32>
  linalg.generic {indexing_maps = [affine_map<(f, h, w) -> (f, h, w)>, affine_map<(f, h, w) -> (f)>, affine_map<(f, h, w) -> (f, h, w)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%yc, %bias : memref<16x16x16xf32>, memref<16xf32>) outs(%zc : memref<16x16x16xf32>) {
  ^bb0(%v: f32, %b: f32, %o: f32):
    %s = arith.addf %v, %b : f32
    %zero = arith.constant 0.0 : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Tests that a convolution runs on tensor cores as an implicit GEMM per
// image: the weights [F, C*KH*KW] are A, the im2col of the image B (each
// element X[n, c, oh + kh, ow + kw] copied by a 4-byte cp.async into shared
// memory), the output [F, OH*OW] C; images over the grid's z.
// CHECK-LABEL: func.func @main(%arg0: memref<2x16x18x18xf32>
// CHECK: @__kiln_launch_0({{.*}}) attributes {kiln.block = array<i32: 64, 1, 1>, kiln.grid = array<i32: 4, 1, 2>
// CHECK: gpu.func @main_kernel0
// CHECK: memref.collapse_shape {{.*}} : memref<16x16x3x3xf32> into memref<16x144xf32>
// CHECK: memref.collapse_shape {{.*}} : memref<2x16x16x16xf32> into memref<2x16x256xf32>
// CHECK: nvgpu.device_async_copy {{.*}} : memref<16x144xf32> to memref<2x16x20xf32, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %{{.*}}[%block_id_z, {{.*}}], %{{.*}}[{{.*}}], 1 : memref<2x16x18x18xf32> to memref<2x16x72xf32, #gpu.address_space<workgroup>>
// CHECK: vector.contract
func.func @main(%x: memref<2x16x18x18xf32>, %w: memref<16x16x3x3xf32>, %y: memref<2x16x16x16xf32>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<2x16x18x18xf32>, memref<16x16x3x3xf32>) outs(%y : memref<2x16x16x16xf32>)
  return
}

// -----

// Tests that an epilogue chain (bias, then GELU-like steps through an
// intermediate buffer, then a transpose of the result, as attention puts
// its heads back) runs in the matmul's kernel, each element through the
// chain in turn, the transpose storing it where the permutation puts it
// (z[n][m] = y[m][n]: indices swapped); nothing joins after a transpose.
// CHECK-LABEL: func.func @main(%arg0: memref<32x16xf32>
// CHECK: call @__kiln_launch_0(
// CHECK: call @__kiln_launch_1(
// CHECK-NOT: call @__kiln_launch_2
// CHECK: func.func private @main_kernel0_epilogue(
// CHECK: scf.for
// CHECK: arith.addf
// CHECK: memref.store
// CHECK: math.tanh
// CHECK: memref.store
// CHECK: %[[V:.*]] = memref.load %{{.*}}[%[[I:.*]], %[[J:.*]]] : memref<32x32xf32>
// CHECK-NEXT: memref.store %[[V]], %{{.*}}[%[[J]], %[[I]]] : memref<32x32xf32>
// CHECK: gpu.func @main_kernel1
func.func @main(%x: memref<32x16xf32>, %w: memref<16x32xf32>, %b: memref<32xf32>,
                %y: memref<32x32xf32>, %t: memref<32x32xf32>, %z: memref<32x32xf32>) {
  linalg.matmul ins(%x, %w : memref<32x16xf32>, memref<16x32xf32>) outs(%y : memref<32x32xf32>)
  linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (n)>,
                                   affine_map<(m, n) -> (m, n)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%y, %b : memref<32x32xf32>, memref<32xf32>) outs(%t : memref<32x32xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%t : memref<32x32xf32>) outs(%y : memref<32x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %g = math.tanh %a : f32
    linalg.yield %g : f32
  }
  linalg.generic {indexing_maps = [affine_map<(m, n) -> (n, m)>, affine_map<(m, n) -> (m, n)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%y : memref<32x32xf32>) outs(%z : memref<32x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%z : memref<32x32xf32>) outs(%t : memref<32x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  return
}

// -----

// Tests that launches in a row with the same grid and block, whose kernels
// only compute per thread and share no byte one of them writes, become one
// kernel doing both bodies (a and b only read `x`); a launch that reads
// what the merged kernel wrote stays a launch of its own.
// CHECK-LABEL: func.func @main(%arg0: memref<64xf32>, %arg1: memref<64xf32>, %arg2: memref<64xf32>, %arg3: memref<64xf32>)
// CHECK-NEXT: call @__kiln_launch_0(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<64xf32>, memref<64xf32>, memref<64xf32>) -> ()
// CHECK-NEXT: call @__kiln_launch_2(%{{.*}}, %{{.*}}) : (memref<64xf32>, memref<64xf32>) -> ()
// CHECK-NEXT: return
// CHECK-NOT: @__kiln_launch_1
// CHECK: gpu.func @main_kernel0(%arg0: memref<64xf32>, %arg1: memref<64xf32>, %arg2: memref<64xf32>) kernel
// CHECK: math.exp
// CHECK: vector.store
// CHECK: math.tanh
// CHECK: vector.store
// CHECK: gpu.return
// CHECK-NOT: gpu.func @main_kernel1
// CHECK: gpu.func @main_kernel2(
// CHECK: math.sin
#id = affine_map<(d0) -> (d0)>
func.func @main(%x: memref<64xf32>, %a: memref<64xf32>, %b: memref<64xf32>, %c: memref<64xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<64xf32>) outs(%a : memref<64xf32>) {
  ^bb0(%in: f32, %o: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<64xf32>) outs(%b : memref<64xf32>) {
  ^bb0(%in: f32, %o: f32):
    %t = math.tanh %in : f32
    linalg.yield %t : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<64xf32>) outs(%c : memref<64xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = math.sin %in : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests that a matrix-vector product (a batch-1 linear layer) becomes one
// kernel whose 8 warps split the reduction (lane = output column, warp = a
// slice of k) and add their sums through shared memory; its zero fill is
// dropped and its bias and ReLU run after the sum, in the same kernel.
// CHECK-LABEL: func.func @main
// CHECK: call @__kiln_launch_0(
// CHECK-NEXT: return
// CHECK: @__kiln_launch_0({{.*}}) attributes {kiln.block = array<i32: 256, 1, 1>, kiln.grid = array<i32: 3, 1, 1>
// CHECK: gpu.func @main_kernel0({{.*}}) workgroup(%[[P:.*]] : memref<8x32xf32, #gpu.address_space<workgroup>>) kernel
// CHECK-NOT: linalg.fill
// CHECK: scf.for %{{.*}} = %{{.*}} to %c40 step %c8
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: memref.store %{{.*}}, %[[P]]
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK-COUNT-8: memref.load %[[P]]
// CHECK: memref.store
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK: memref.store
#x = affine_map<(n, k) -> (k)>
#w = affine_map<(n, k) -> (k, n)>
#y = affine_map<(n, k) -> (n)>
#v = affine_map<(n) -> (n)>
func.func @main(%xin: memref<40xf32>, %wt: memref<40x96xf32>, %bias: memref<96xf32>, %out: memref<96xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%out : memref<96xf32>)
  linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "reduction"]}
      ins(%xin, %wt : memref<40xf32>, memref<40x96xf32>) outs(%out : memref<96xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]}
      ins(%out, %bias : memref<96xf32>, memref<96xf32>) outs(%out : memref<96xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Tests that an epilogue may write its result over an input it reads at
// the element written (a residual added in place: each thread reads its
// element first): one kernel; and that one reading that input elsewhere (a
// transpose of it) may not: that op stays a kernel of its own.
// CHECK-LABEL: func.func @main(%arg0: memref<32x16xf32>, %arg1: memref<16x32xf32>, %arg2: memref<32x32xf32>, %arg3: memref<32x32xf32>, %arg4: memref<32x32xf32>)
// CHECK: call @__kiln_launch_0(%arg3, %arg2, %arg1, %arg0)
// CHECK: call @__kiln_launch_1(%arg2, %arg1, %arg0)
// CHECK: call @__kiln_launch_2(%arg4, %arg2)
// CHECK-NOT: call @__kiln_launch_3
// CHECK: func.func private @main_kernel0_epilogue(
// CHECK: arith.addf
// CHECK: memref.store
func.func @main(%x: memref<32x16xf32>, %w: memref<16x32xf32>, %y: memref<32x32xf32>,
                %r: memref<32x32xf32>, %s: memref<32x32xf32>) {
  linalg.matmul ins(%x, %w : memref<32x16xf32>, memref<16x32xf32>) outs(%y : memref<32x32xf32>)
  linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>,
                                   affine_map<(m, n) -> (m, n)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%y, %r : memref<32x32xf32>, memref<32x32xf32>) outs(%r : memref<32x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = arith.addf %a, %b : f32
    linalg.yield %t : f32
  }
  linalg.matmul ins(%x, %w : memref<32x16xf32>, memref<16x32xf32>) outs(%y : memref<32x32xf32>)
  linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (n, m)>,
                                   affine_map<(m, n) -> (m, n)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%y, %s : memref<32x32xf32>, memref<32x32xf32>) outs(%s : memref<32x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = arith.addf %a, %b : f32
    linalg.yield %t : f32
  }
  return
}

// -----

// Tests that a buffer the memory plan did not place in the arena (sized by
// a value read before the run, or carried by a loop) stays an allocation
// of the host program, which the CUDA pipeline makes a call of the
// session's device allocator: the kernels take it as any buffer.
// CHECK-LABEL: func.func @main(%arg0: memref<64xf32>, %arg1: memref<64xf32>)
// CHECK: %[[T:.*]] = memref.alloc() : memref<64xf32>
// CHECK: call @__kiln_launch_{{[0-9]+}}({{.*}}%[[T]]{{.*}})
// CHECK: call @__kiln_launch_{{[0-9]+}}({{.*}}%[[T]]{{.*}})
func.func @main(%in: memref<64xf32>, %out: memref<64xf32>) {
  %t = memref.alloc() : memref<64xf32>
  linalg.copy ins(%in : memref<64xf32>) outs(%t : memref<64xf32>)
  linalg.copy ins(%t : memref<64xf32>) outs(%out : memref<64xf32>)
  return
}

// -----

// Tests a parallel nest whose trip count is known at run time (a dynamic
// model's rows): the host computes the grid from the size (blocks of 256,
// at least one) and passes it first with kiln.grid x = -1; the kernel has
// no known grid, computes the same count from its buffer's size and guards
// its threads with it.
// CHECK-LABEL: func.func @main(%arg0: memref<?x30xf32>)
// CHECK: %[[N:.*]] = memref.dim %arg0, %c0
// CHECK: %[[GRID:.*]] = arith.maxui %{{.*}}, %c1
// CHECK: call @__kiln_launch_0(%[[GRID]], %arg0) : (index, memref<?x30xf32>) -> ()
// CHECK: func.func private @__kiln_launch_0(index, memref<?x30xf32>)
// CHECK-SAME: kiln.grid = array<i32: -1, 1, 1>
// CHECK: gpu.func @main_kernel0(%arg0: memref<?x30xf32>) kernel
// CHECK-NOT: known_grid_size
// CHECK: %[[M:.*]] = memref.dim %arg0, %c0
// CHECK: %[[L:.*]] = arith.addi
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[L]], %{{.*}}
// CHECK: scf.if %[[IN]]
// CHECK: memref.store
func.func @main(%buf: memref<?x30xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c30 = arith.constant 30 : index
  %one = arith.constant 1.0 : f32
  %n = memref.dim %buf, %c0 : memref<?x30xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c30) step (%c1, %c1) {
    memref.store %one, %buf[%i, %j] : memref<?x30xf32>
    scf.reduce
  }
  return
}

// -----

// Tests a product whose one dynamic dimension is its rows (M, at most 256
// by kiln.input_dim_max; the output argument's rows have no bound of their
// own): the tensor-core kernel for 256 rows, its operands cast to that
// static type in the kernel, the launch's grid rows (y) computed at run
// time from the rows (4 blocks of 64 at 256) and passed first.
// CHECK-LABEL: func.func @main(%arg0: memref<?x64xf32>, %arg1: memref<64x128xf32>, %arg2: memref<?x128xf32>)
// CHECK: %[[ROWS:.*]] = memref.dim %arg0, %c0
// CHECK: %[[N:.*]] = arith.muli %[[ROWS]], %c4
// CHECK: %[[B:.*]] = arith.ceildivui %[[N]], %c256
// CHECK: %[[G:.*]] = arith.maxui %[[B]], %c1
// CHECK: call @__kiln_launch_0(%[[G]],
// CHECK: func.func private @__kiln_launch_0(index,
// CHECK-SAME: kiln.grid = array<i32: 2, -1, 1>
// CHECK: gpu.func @main_kernel0
// CHECK-NOT: known_grid_size
// CHECK-DAG: memref.cast %{{.*}} : memref<?x64xf32> to memref<256x64xf32>
// CHECK-DAG: memref.cast %{{.*}} : memref<?x128xf32> to memref<256x128xf32>
// CHECK: vector.contract
module attributes {kiln.input_dim_max = [array<i64: 256, 64>, array<i64: 64, 128>]} {
  func.func @main(%a: memref<?x64xf32>, %w: memref<64x128xf32>, %c: memref<?x128xf32>) {
    linalg.matmul ins(%a, %w : memref<?x64xf32>, memref<64x128xf32>) outs(%c : memref<?x128xf32>)
    return
  }
}

// -----

// Tests a loop of the host program (a recurrence's steps, its state in one
// buffer): the loop stays on the host and each step's kernel is launched
// from inside it, its step index a parameter of the kernel.
// CHECK-LABEL: func.func @main(%arg0: memref<8x4xf32>, %arg1: memref<4xf32>)
// CHECK: scf.for %[[T:.*]] = %c0{{.*}} to %c8{{.*}} step %c1
// CHECK: call @__kiln_launch_{{[0-9]+}}({{.*}}%[[T]]{{.*}})
// CHECK: }
// CHECK: return
#map1d = affine_map<(d0) -> (d0)>
func.func @main(%x: memref<8x4xf32>, %h: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %t = %c0 to %c8 step %c1 {
    %row = memref.subview %x[%t, 0] [1, 4] [1, 1] : memref<8x4xf32> to memref<4xf32, strided<[1], offset: ?>>
    linalg.generic {indexing_maps = [#map1d, #map1d], iterator_types = ["parallel"]} ins(%row : memref<4xf32, strided<[1], offset: ?>>) outs(%h : memref<4xf32>) {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    }
  }
  return
}

// -----

// Tests that simple kernels over a dynamic batch whose grids the host
// computes alike from the same sizes (each at its largest rows, rows read
// from the input, %x, the tightest bound) become one launch, the grid
// passed once, when they touch no common bytes; an op over rows that may
// differ (%y's) keeps a launch of its own.
// CHECK-LABEL: func.func @main
// CHECK: call @__kiln_launch_{{[0-9]+}}(%[[G:[0-9]+]], %{{.*}}, %{{.*}}, %{{.*}}) :
// CHECK: call @__kiln_launch_{{[0-9]+}}({{.*}}%arg1{{.*}}) :
// CHECK-NOT: call @__kiln_launch
// CHECK: gpu.func @main_kernel0
// CHECK: math.exp
// CHECK: arith.negf
// CHECK: gpu.return
#id2 = affine_map<(i, j) -> (i, j)>
module attributes {kiln.input_dim_max = [array<i64: 8, 64>, array<i64: 8, 64>]} {
  func.func @main(%x: memref<?x64xf32>, %y: memref<?x64xf32>, %arena: memref<8192xi8>) {
    %c0 = arith.constant 0 : index
    %c2048 = arith.constant 2048 : index
    %c4096 = arith.constant 4096 : index
    %n = memref.dim %x, %c0 : memref<?x64xf32>
    %m = memref.dim %y, %c0 : memref<?x64xf32>
    %a = memref.view %arena[%c0][%n] : memref<8192xi8> to memref<?x64xf32>
    %b = memref.view %arena[%c2048][%n] : memref<8192xi8> to memref<?x64xf32>
    %c = memref.view %arena[%c4096][%m] : memref<8192xi8> to memref<?x64xf32>
    linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%x : memref<?x64xf32>) outs(%a : memref<?x64xf32>) {
    ^bb0(%v: f32, %o: f32):
      %e = math.exp %v : f32
      linalg.yield %e : f32
    }
    linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%x : memref<?x64xf32>) outs(%b : memref<?x64xf32>) {
    ^bb0(%v: f32, %o: f32):
      %e = arith.negf %v : f32
      linalg.yield %e : f32
    }
    linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%y : memref<?x64xf32>) outs(%c : memref<?x64xf32>) {
    ^bb0(%v: f32, %o: f32):
      %e = arith.negf %v : f32
      linalg.yield %e : f32
    }
    return
  }
}

// -----

// Tests a batched product over run-time sizes other than its rows alone
// (attention's Q K^T over a dynamic sequence: batch, M and N at run time,
// at most 4, 300 and 300 by kiln.input_dim_max): ONE mma.sync kernel of
// 64x64 tiles, the zero fill folded into its accumulators, its grid (N
// tiles, M tiles, batch) from the run's sizes, at least one block each;
// the kernel reads M and N from its buffers, A's rows (64 floats) in
// 16-byte pieces, B's (N long: their alignment unknown) element by
// element, and stores the tile through a device function that checks each
// element against the run's M and N.
// CHECK-LABEL: func.func @main(%arg0: memref<?x?x64xf32>, %arg1: memref<?x64x?xf32>, %arg2: memref<?x?x?xf32>)
// CHECK-NOT: linalg.fill
// CHECK: %[[N:.*]] = memref.dim %arg2, %c2
// CHECK: %[[NT:.*]] = arith.ceildivui %[[N]], %c64
// CHECK: %[[X:.*]] = arith.maxui %[[NT]], %c1
// CHECK: %[[M:.*]] = memref.dim %arg2, %c1
// CHECK: %[[MT:.*]] = arith.ceildivui %[[M]], %c64
// CHECK: %[[Y:.*]] = arith.maxui %[[MT]], %c1
// CHECK: %[[B:.*]] = memref.dim %arg2, %c0
// CHECK: %[[Z:.*]] = arith.maxui %[[B]], %c1
// CHECK: call @__kiln_launch_0(%[[X]], %[[Y]], %[[Z]],
// CHECK: func.func private @__kiln_launch_0(index, index, index,
// CHECK-SAME: kiln.grid = array<i32: -1, -1, -1>
// CHECK: gpu.func @main_kernel0
// CHECK-NOT: known_grid_size
// CHECK-SAME: kiln.mma
// CHECK: memref.dim
// CHECK: nvgpu.device_async_copy {{.*}}, 4, {{.*}} : memref<?x?x64xf32> to memref<2x64x20xf32
// CHECK: nvgpu.device_async_copy {{.*}}, 1, {{.*}} : memref<?x64x?xf32> to memref<2x16x72xf32
// CHECK: scf.for
// CHECK: vector.contract
// CHECK: memref.reinterpret_cast {{.*}} to memref<360000xf32>
// CHECK: call @main_kernel0_store(
// CHECK: func.func private @main_kernel0_store({{.*}}, %[[RM:arg[0-9]+]]: index, %[[RN:arg[0-9]+]]: index)
// CHECK: arith.cmpi slt, %{{.*}}, %[[RM]]
// CHECK: arith.cmpi slt, %{{.*}}, %[[RN]]
// CHECK: scf.if
// CHECK: memref.store
#qa = affine_map<(b, m, n, k) -> (b, m, k)>
#qb = affine_map<(b, m, n, k) -> (b, k, n)>
#qc = affine_map<(b, m, n, k) -> (b, m, n)>
module attributes {kiln.input_dim_max = [array<i64: 4, 300, 64>, array<i64: 4, 64, 300>]} {
  func.func @main(%q: memref<?x?x64xf32>, %kt: memref<?x64x?xf32>, %s: memref<?x?x?xf32>) {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%s : memref<?x?x?xf32>)
    linalg.generic {indexing_maps = [#qa, #qb, #qc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%q, %kt : memref<?x?x64xf32>, memref<?x64x?xf32>) outs(%s : memref<?x?x?xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %p = arith.mulf %x, %y : f32
      %r = arith.addf %o, %p : f32
      linalg.yield %r : f32
    }
    return
  }
}

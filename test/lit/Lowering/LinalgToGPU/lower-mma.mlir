// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(gpu.module(kiln-gpu-lower-mma))' | FileCheck %s

// Tests that a kernel marked kiln.mma gets its 16x8x8 f32 contraction as
// ldmatrix + mma.sync with tf32 operands, and that other kernels, even with
// vectors and index arithmetic, are left alone.
// CHECK-LABEL: gpu.func @mma
// CHECK-NOT: kiln.mma
// CHECK: nvgpu.ldmatrix
// CHECK: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 8], tf32Enabled}
// CHECK-NOT: vector.contract
// CHECK-LABEL: gpu.func @other
// CHECK: arith.divui
// CHECK: vector.load
gpu.module @kernels {
  gpu.func @mma(%c: memref<16x8xf32>)
      workgroup(%sa: memref<16x8xf32, #gpu.address_space<workgroup>>, %sb: memref<8x8xf32, #gpu.address_space<workgroup>>)
      kernel attributes {kiln.mma} {
    %c0 = arith.constant 0 : index
    %f0 = arith.constant 0.0 : f32
    %acc = vector.transfer_read %c[%c0, %c0], %f0 {in_bounds = [true, true]} : memref<16x8xf32>, vector<16x8xf32>
    %a = vector.transfer_read %sa[%c0, %c0], %f0 {in_bounds = [true, true]} : memref<16x8xf32, #gpu.address_space<workgroup>>, vector<16x8xf32>
    %b = vector.transfer_read %sb[%c0, %c0], %f0 {in_bounds = [true, true]} : memref<8x8xf32, #gpu.address_space<workgroup>>, vector<8x8xf32>
    %d = vector.contract {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                          iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>}
         %a, %b, %acc : vector<16x8xf32>, vector<8x8xf32> into vector<16x8xf32>
    vector.transfer_write %d, %c[%c0, %c0] {in_bounds = [true, true]} : vector<16x8xf32>, memref<16x8xf32>
    gpu.return
  }
  gpu.func @other(%x: memref<64xf32>) kernel {
    %t = gpu.thread_id x
    %c4 = arith.constant 4 : index
    %i = arith.divui %t, %c4 : index
    %v = vector.load %x[%i] : memref<64xf32>, vector<4xf32>
    vector.store %v, %x[%i] : memref<64xf32>, vector<4xf32>
    gpu.return
  }
}

// -----

// Tests a kernel over buffers of run-time sizes (rebuilt by
// kiln-split-dynamic-args from a pointer and sizes, their strides index
// products): the products become affine.apply, which upstream's
// conversion leaves alone (as arith.muli it took them for elementwise
// math on MMA matrices and failed), and the contraction is lowered.
// CHECK-LABEL: gpu.func @dynamic
// CHECK-NOT: arith.muli
// CHECK: affine.apply
// CHECK: memref.reinterpret_cast
// CHECK: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 8], tf32Enabled}
gpu.module @kernels {
  gpu.func @dynamic(%p: memref<1xf32>, %rows: index, %cols: index)
      workgroup(%sa: memref<16x8xf32, #gpu.address_space<workgroup>>, %sb: memref<8x8xf32, #gpu.address_space<workgroup>>,
                %sc: memref<16x8xf32, #gpu.address_space<workgroup>>)
      kernel attributes {kiln.mma} {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %f0 = arith.constant 0.0 : f32
    %stride = arith.muli %cols, %c4 : index
    %x = memref.reinterpret_cast %p to offset: [0], sizes: [%rows, 4, %cols], strides: [%stride, %cols, 1] : memref<1xf32> to memref<?x4x?xf32>
    %t = gpu.thread_id x
    %v = memref.load %x[%c0, %c0, %t] : memref<?x4x?xf32>
    memref.store %v, %sa[%c0, %c0] : memref<16x8xf32, #gpu.address_space<workgroup>>
    %acc = vector.transfer_read %sc[%c0, %c0], %f0 {in_bounds = [true, true]} : memref<16x8xf32, #gpu.address_space<workgroup>>, vector<16x8xf32>
    %a = vector.transfer_read %sa[%c0, %c0], %f0 {in_bounds = [true, true]} : memref<16x8xf32, #gpu.address_space<workgroup>>, vector<16x8xf32>
    %b = vector.transfer_read %sb[%c0, %c0], %f0 {in_bounds = [true, true]} : memref<8x8xf32, #gpu.address_space<workgroup>>, vector<8x8xf32>
    %d = vector.contract {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                          iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>}
         %a, %b, %acc : vector<16x8xf32>, vector<8x8xf32> into vector<16x8xf32>
    vector.transfer_write %d, %sc[%c0, %c0] {in_bounds = [true, true]} : vector<16x8xf32>, memref<16x8xf32, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

// Tests that a kernel marked kiln.mma_bf16 (bf16 tiles read through f16
// views) gets its m16n8k16 steps as PTX's bf16 mma.sync: the f16 fragment
// rows as 32-bit registers, the f32 accumulators as they are.
// CHECK-LABEL: gpu.func @bf16
// CHECK-NOT: kiln.mma_bf16
// CHECK: nvgpu.ldmatrix
// CHECK-NOT: nvgpu.mma.sync
// CHECK: vector.bitcast {{.*}} : vector<2xf16> to vector<1xi32>
// CHECK: llvm.inline_asm "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};", "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f"
// CHECK: vector.from_elements {{.*}} : vector<2x2xf32>
gpu.module @kernels {
  gpu.func @bf16(%c: memref<16x8xf32>)
      workgroup(%sa: memref<16x16xf16, #gpu.address_space<workgroup>>, %sb: memref<16x8xf16, #gpu.address_space<workgroup>>)
      kernel attributes {kiln.mma, kiln.mma_bf16} {
    %c0 = arith.constant 0 : index
    %f0 = arith.constant 0.0 : f32
    %h0 = arith.constant 0.0 : f16
    %acc = vector.transfer_read %c[%c0, %c0], %f0 {in_bounds = [true, true]} : memref<16x8xf32>, vector<16x8xf32>
    %a = vector.transfer_read %sa[%c0, %c0], %h0 {in_bounds = [true, true]} : memref<16x16xf16, #gpu.address_space<workgroup>>, vector<16x16xf16>
    %b = vector.transfer_read %sb[%c0, %c0], %h0 {in_bounds = [true, true]} : memref<16x8xf16, #gpu.address_space<workgroup>>, vector<16x8xf16>
    %d = vector.contract {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                          iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>}
         %a, %b, %acc : vector<16x16xf16>, vector<16x8xf16> into vector<16x8xf32>
    vector.transfer_write %d, %c[%c0, %c0] {in_bounds = [true, true]} : vector<16x8xf32>, memref<16x8xf32>
    gpu.return
  }
}

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

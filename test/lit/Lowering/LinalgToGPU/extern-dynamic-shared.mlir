// RUN: kiln-opt %s --pass-pipeline='builtin.module(gpu.module(kiln-gpu-extern-dynamic-shared))' | FileCheck %s

// The dynamic shared memory global convert-gpu-to-nvvm makes becomes PTX's
// .extern array, 1024-byte aligned; other shared globals stay as they are.
// CHECK: llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
// CHECK: llvm.mlir.global internal @tile() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<64 x f32>
// CHECK: llvm.mlir.global internal @__dynamic_shmem__1() {addr_space = 0 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
gpu.module @kernels {
  llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  llvm.mlir.global internal @tile() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<64 x f32>
  llvm.mlir.global internal @__dynamic_shmem__1() {alignment = 16 : i64} : !llvm.array<0 x i8>
}

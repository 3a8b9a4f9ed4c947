// RUN: kiln-opt %s -pass-pipeline='builtin.module(func.func(kiln-copy-to-linalg))' | FileCheck %s

// Tests that a copy into a strided view becomes linalg.copy, which lowers to
// loops instead of a call into libmlir_c_runner_utils.
// CHECK-LABEL: func @copy_into_view
// CHECK-NOT: memref.copy
// CHECK: linalg.copy ins(%arg0 : memref<2x2xf32>) outs(%{{.*}} : memref<2x2xf32, strided<[4, 1], offset: 5>>)
func.func @copy_into_view(%src: memref<2x2xf32>, %dst: memref<4x4xf32>) {
  %view = memref.subview %dst[1, 1] [2, 2] [1, 1] : memref<4x4xf32> to memref<2x2xf32, strided<[4, 1], offset: 5>>
  memref.copy %src, %view : memref<2x2xf32> to memref<2x2xf32, strided<[4, 1], offset: 5>>
  return
}

// RUN: kiln-opt %s -kiln-split-dynamic-args | FileCheck %s

// Tests that a function taking memrefs with dynamic sizes takes a pointer
// (memref<1xT>) and one index per dynamic size instead, appended after its
// other arguments, rebuilds the memref with row-major strides, and records
// which argument and dimension each size is; calls pass memref.dim.

// CHECK-LABEL: func.func private @kernel(
// CHECK-SAME: %[[A:.*]]: memref<1xf32> {llvm.noalias}, %[[B:.*]]: memref<8xf32>, %[[C:.*]]: memref<1xi32>, %[[N:.*]]: index, %[[P:.*]]: index, %[[Q:.*]]: index)
// CHECK-SAME: kiln.dynamic_sizes = [array<i64: 0, 0>, array<i64: 2, 1>, array<i64: 2, 2>]
// CHECK: memref.reinterpret_cast %[[A]] to offset: [0], sizes: [%[[N]], 64], strides: [64, 1] : memref<1xf32> to memref<?x64xf32>
// CHECK: %[[S0:.*]] = arith.muli %[[Q]], %[[P]]
// CHECK: memref.reinterpret_cast %[[C]] to offset: [0], sizes: [2, %[[P]], %[[Q]]], strides: [%[[S0]], %[[Q]], 1] : memref<1xi32> to memref<2x?x?xi32>
func.func private @kernel(%a: memref<?x64xf32> {llvm.noalias}, %b: memref<8xf32>, %c: memref<2x?x?xi32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %b[%c0] : memref<8xf32>
  memref.store %v, %a[%c0, %c0] : memref<?x64xf32>
  return
}

// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:.*]]: memref<1xf32>, %[[W:.*]]: memref<8xf32>, %[[Y:.*]]: memref<1xi32>, %[[D0:.*]]: index, %[[D1:.*]]: index, %[[D2:.*]]: index)
// CHECK: %[[XM:.*]] = memref.reinterpret_cast %[[X]]
// CHECK: %[[YM:.*]] = memref.reinterpret_cast %[[Y]]
// CHECK: %[[N:.*]] = memref.dim %[[XM]], %{{.*}} : memref<?x64xf32>
// CHECK: %[[XP:.*]] = memref.reinterpret_cast %[[XM]] to offset: [0], sizes: [1], strides: [1] : memref<?x64xf32> to memref<1xf32>
// CHECK: call @kernel(%[[XP]], %[[W]], %{{.*}}, %[[N]], %{{.*}}, %{{.*}})
func.func @main(%x: memref<?x64xf32>, %w: memref<8xf32>, %y: memref<2x?x?xi32>) {
  call @kernel(%x, %w, %y) : (memref<?x64xf32>, memref<8xf32>, memref<2x?x?xi32>) -> ()
  return
}

// Tests that an empty buffer of rank 2 or more (a KV cache pinned to past
// length 0), which the bare-pointer convention refuses, is passed as a
// pointer too, with no sizes: its strides are all static.
// CHECK-LABEL: func.func private @empty(
// CHECK-SAME: %[[P:.*]]: memref<1xf32>)
// CHECK: memref.reinterpret_cast %[[P]] to offset: [0], sizes: [1, 0, 4], strides: [0, 4, 1] : memref<1xf32> to memref<1x0x4xf32>
func.func private @empty(%cache: memref<1x0x4xf32>) {
  return
}

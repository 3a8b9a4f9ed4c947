// RUN: kiln-opt %s -kiln-expand-dynamic-groups | FileCheck %s

// Tests that an expand_shape with two dynamic sizes in one group (which
// MLIR 22's expand-strided-metadata cannot take) becomes a reinterpret_cast
// of the source's base buffer: each stride is the source dimension's
// stride times the sizes after it in its group; one with a single dynamic
// size per group is left to expand-strided-metadata.

// CHECK-LABEL: func.func @rows_into_batch_and_seq(
// CHECK-SAME: %[[M:.*]]: memref<?x16xf32>, %[[B:.*]]: index, %[[S:.*]]: index)
// CHECK: %[[BASE:[^,]*]], {{.*}} = memref.extract_strided_metadata %[[M]]
// CHECK: %[[ST:.*]] = arith.muli %[[S]], %{{.*}} : index
// CHECK: memref.reinterpret_cast %[[BASE]] to offset: [0], sizes: [%[[B]], %[[S]], 16], strides: [%[[ST]], 16, 1] : memref<f32> to memref<?x?x16xf32>
// CHECK-NOT: memref.expand_shape
func.func @rows_into_batch_and_seq(%m: memref<?x16xf32>, %b: index, %s: index) -> memref<?x?x16xf32> {
  %e = memref.expand_shape %m [[0, 1], [2]] output_shape [%b, %s, 16] : memref<?x16xf32> into memref<?x?x16xf32>
  return %e : memref<?x?x16xf32>
}

// CHECK-LABEL: func.func @one_dynamic_per_group(
// CHECK: memref.expand_shape
// CHECK-NOT: memref.reinterpret_cast
func.func @one_dynamic_per_group(%m: memref<?xf32>, %b: index) -> memref<?x4x16xf32> {
  %e = memref.expand_shape %m [[0, 1, 2]] output_shape [%b, 4, 16] : memref<?xf32> into memref<?x4x16xf32>
  return %e : memref<?x4x16xf32>
}

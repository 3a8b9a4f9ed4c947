// RUN: kiln-opt %s -kiln-host-values | FileCheck %s
// RUN: kiln-opt %s -kiln-host-values -kiln-lower-output-dims | FileCheck %s --check-prefix=LOWERED

// Tests that each scalar @main reads from a tensor at its top level (a
// length and a fill value given as inputs) becomes a result of
// @__kiln_output_dims, as 64 bits (the f32's zero-extended), and in @main
// a call of @__kiln_host_value(k) turned back into its type: CUDA's host
// program reads no device memory.
// CHECK-LABEL: module attributes {kiln.host_values = array<i64: 0, 2>}
// CHECK-LABEL: func.func @main
// CHECK: %[[K0:.*]] = arith.constant 0 : i64
// CHECK: %[[V:.*]] = call @__kiln_host_value(%[[K0]]) : (i64) -> i64
// CHECK: arith.index_cast %[[V]] : i64 to index
// CHECK: %[[K1:.*]] = arith.constant 1 : i64
// CHECK: %[[B:.*]] = call @__kiln_host_value(%[[K1]]) : (i64) -> i64
// CHECK: %[[T:.*]] = arith.trunci %[[B]] : i64 to i32
// CHECK: arith.bitcast %[[T]] : i32 to f32
// CHECK-NOT: tensor.extract
// CHECK: func.func @__kiln_output_dims(%{{.*}}: tensor<?xf32>, %[[N:.*]]: tensor<1xi64>, %[[C:.*]]: tensor<f32>) -> (i64, i64)
// CHECK: %[[L:.*]] = tensor.extract %[[N]]
// CHECK: %[[S:.*]] = tensor.extract %[[C]][]
// CHECK: %[[SB:.*]] = arith.bitcast %[[S]] : f32 to i32
// CHECK: %[[SX:.*]] = arith.extui %[[SB]] : i32 to i64
// CHECK: return %[[L]], %[[SX]] : i64, i64
// CHECK: func.func private @__kiln_host_value(i64) -> i64

// The sizes' function then is host code in the LLVM dialect beside @main,
// which is still to be lowered for the GPU.
// LOWERED: func.func @main
// LOWERED: llvm.func @__kiln_output_dims(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64) -> !llvm.struct<(i64, i64)>
// LOWERED-NOT: func.func @__kiln_output_dims
module {
  func.func @main(%x: tensor<?xf32>, %n: tensor<1xi64>, %c: tensor<f32>) -> tensor<?xf32> {
    %c0 = arith.constant 0 : index
    %v = tensor.extract %n[%c0] : tensor<1xi64>
    %i = arith.index_cast %v : i64 to index
    %s = tensor.extract %c[] : tensor<f32>
    %e = tensor.empty(%i) : tensor<?xf32>
    %f = linalg.fill ins(%s : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
    return %f : tensor<?xf32>
  }
}

// RUN: kiln-opt %s -split-input-file -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" | FileCheck %s --check-prefix=BUF
// RUN: kiln-opt %s -split-input-file -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" -kiln-lower-collectives | FileCheck %s --check-prefix=CALL

// Tests that kiln.all_reduce bufferizes in place on its operand's buffer
// when nothing reads the operand after it, and on a copy when something
// does; and that each becomes a call of a declaration carrying the
// reduction, the element count and the dtype code (emit-entry.mlir tests
// the body kiln-emit-entry gives it).
// BUF-LABEL: func.func @main
// BUF: %[[A:.*]] = memref.alloc() {{.*}} : memref<2x3xf32>
// BUF: linalg.generic {{.*}} outs(%[[A]] : memref<2x3xf32>)
// BUF: kiln.all_reduce_in_place "mean" %[[A]] : memref<2x3xf32>
// BUF: %[[C:.*]] = memref.alloc() {{.*}} : memref<f64>
// BUF: memref.copy %arg1, %[[C]]
// BUF: kiln.all_reduce_in_place "sum" %[[C]] : memref<f64>
// CALL: call @__kiln_all_reduce_0(%{{.*}}) : (memref<2x3xf32>) -> ()
// CALL: call @__kiln_all_reduce_1(%{{.*}}) : (memref<f64>) -> ()
// CALL: func.func private @__kiln_all_reduce_0(memref<2x3xf32>) attributes {kiln.collective = "mean", kiln.dtype = 0 : i32, kiln.elements = 6 : i64}
// CALL: func.func private @__kiln_all_reduce_1(memref<f64>) attributes {kiln.collective = "sum", kiln.dtype = 1 : i32, kiln.elements = 1 : i64}
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%x: tensor<2x3xf32>, %y: tensor<f64>) -> (tensor<2x3xf32>, tensor<f64>, tensor<f64>) {
  %e = tensor.empty() : tensor<2x3xf32>
  %g = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<2x3xf32>
  %m = kiln.all_reduce "mean" %g : tensor<2x3xf32>
  %s = kiln.all_reduce "sum" %y : tensor<f64>
  return %m, %s, %y : tensor<2x3xf32>, tensor<f64>, tensor<f64>
}

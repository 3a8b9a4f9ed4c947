// RUN: kiln-opt %s -split-input-file -kiln-split-shared-fills=empties=1 | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-split-shared-fills | FileCheck %s --check-prefix=OFF

#id = affine_map<(d0, d1) -> (d0, d1)>

// Tests that with `empties`, an elementwise op over a matmul's result gets
// a destination of its own when the empty it shared (CSE) was also the
// destination of the op that produced the matmul's input: bufferization
// would otherwise write the epilogue over the matmul's operand, and a
// kernel doing both could not. Without the option, nothing changes.
// CHECK-LABEL: func.func @epilogue_over_operand
// CHECK: %[[E:.*]] = tensor.empty() : tensor<16x16xf32>
// CHECK: %[[X:.*]] = linalg.generic {{.*}} outs(%[[E]] : tensor<16x16xf32>)
// CHECK: %[[M:.*]] = linalg.matmul ins(%[[X]], %{{.*}}) outs
// CHECK: %[[E2:.*]] = tensor.empty() : tensor<16x16xf32>
// CHECK: linalg.generic {{.*}} ins(%[[M]] : tensor<16x16xf32>) outs(%[[E2]] : tensor<16x16xf32>)
// OFF-LABEL: func.func @epilogue_over_operand
// OFF-COUNT-1: tensor.empty() : tensor<16x16xf32>
// OFF-NOT: tensor.empty() : tensor<16x16xf32>
func.func @epilogue_over_operand(%a: tensor<16x16xf32>, %w: tensor<16x16xf32>,
                                 %z: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %e = tensor.empty() : tensor<16x16xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %in : f32
    linalg.yield %r : f32
  } -> tensor<16x16xf32>
  %m = linalg.matmul ins(%x, %w : tensor<16x16xf32>, tensor<16x16xf32>)
      outs(%z : tensor<16x16xf32>) -> tensor<16x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.negf %in : f32
    linalg.yield %r : f32
  } -> tensor<16x16xf32>
  return %y : tensor<16x16xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Tests that destinations sharing an empty with nothing the matmul reads
// keep sharing it (bufferization's in-place reuse keeps the arena small).
// CHECK-LABEL: func.func @unrelated
// OFF-LABEL: func.func @unrelated
// CHECK-COUNT-1: tensor.empty() : tensor<16x16xf32>
// CHECK-NOT: tensor.empty() : tensor<16x16xf32>
func.func @unrelated(%a: tensor<16x16xf32>, %w: tensor<16x16xf32>,
                     %z: tensor<16x16xf32>) -> (tensor<16x16xf32>, tensor<16x16xf32>) {
  %e = tensor.empty() : tensor<16x16xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.negf %in : f32
    linalg.yield %r : f32
  } -> tensor<16x16xf32>
  %m = linalg.matmul ins(%a, %w : tensor<16x16xf32>, tensor<16x16xf32>)
      outs(%z : tensor<16x16xf32>) -> tensor<16x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.negf %in : f32
    linalg.yield %r : f32
  } -> tensor<16x16xf32>
  return %x, %y : tensor<16x16xf32>, tensor<16x16xf32>
}

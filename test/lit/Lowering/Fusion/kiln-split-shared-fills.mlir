// RUN: kiln-opt %s -split-input-file -kiln-split-shared-fills | FileCheck %s

// Tests that two matmuls accumulating into one (CSE'd) zero fill each get a
// fill of their own, the second right before its matmul.
// CHECK-LABEL: func.func @two_inits
// CHECK: %[[E:.*]] = tensor.empty() : tensor<16x16xf32>
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<16x16xf32>)
// CHECK: linalg.matmul ins(%arg0, %arg1 : tensor<16x8xf32>, tensor<8x16xf32>) outs(%[[Z]] : tensor<16x16xf32>)
// CHECK: %[[E2:.*]] = tensor.empty() : tensor<16x16xf32>
// CHECK: %[[Z2:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E2]] : tensor<16x16xf32>)
// CHECK: linalg.matmul ins(%arg0, %arg2 : {{.*}}) outs(%[[Z2]] : tensor<16x16xf32>)
func.func @two_inits(%a: tensor<16x8xf32>, %b: tensor<8x16xf32>, %c: tensor<8x16xf32>) -> (tensor<16x16xf32>, tensor<16x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x16xf32>) -> tensor<16x16xf32>
  %x = linalg.matmul ins(%a, %b : tensor<16x8xf32>, tensor<8x16xf32>) outs(%z : tensor<16x16xf32>) -> tensor<16x16xf32>
  %y = linalg.matmul ins(%a, %c : tensor<16x8xf32>, tensor<8x16xf32>) outs(%z : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %x, %y : tensor<16x16xf32>, tensor<16x16xf32>
}

// -----

// Tests that a fill also read as a value keeps it, and its one destination
// use gets a fill of its own.
// CHECK-LABEL: func.func @read_and_init
// CHECK: %[[Z:.*]] = linalg.fill
// CHECK: %[[Z2:.*]] = linalg.fill
// CHECK: linalg.matmul {{.*}} outs(%[[Z2]] : tensor<8x8xf32>)
// CHECK: return %[[Z]]
func.func @read_and_init(%a: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %x = linalg.matmul ins(%a, %a : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %z, %x : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// Tests that a fill with one destination use is left alone.
// CHECK-LABEL: func.func @one_init
// CHECK-COUNT-1: linalg.fill
// CHECK-NOT: linalg.fill
func.func @one_init(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %x = linalg.matmul ins(%a, %a : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %x : tensor<8x8xf32>
}

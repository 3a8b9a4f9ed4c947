// RUN: kiln-opt %s -kiln-lower-to-linalg | FileCheck %s

// Tests that elementwise fusion merges a chain of elementwise ops, including
// a bias broadcast, into one generic.
// CHECK-LABEL: func @chain
// CHECK-COUNT-1: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK: math.tanh
func.func @chain(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.add %x, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %1 = kiln.relu %0 : tensor<4x8xf32>
  %2 = kiln.tanh %1 : tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

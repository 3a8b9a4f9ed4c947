// RUN: kiln-opt %s -kiln-lower-to-linalg | FileCheck %s
// RUN: kiln-opt %s -kiln-lower-to-linalg -kiln-fuse-elementwise | FileCheck %s --check-prefix=FUSED

// Tests that the linalg stage lowers each kiln op of a chain, a bias
// broadcast included, to a generic of its own, and leaves fusion to the
// target's stage, where elementwise fusion merges them into one.
// CHECK-LABEL: func @chain
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: linalg.generic
// FUSED-LABEL: func @chain
// FUSED-COUNT-1: linalg.generic
// FUSED-NOT: linalg.generic
// FUSED: arith.addf
// FUSED: arith.maximumf
// FUSED: math.tanh
func.func @chain(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.add %x, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %1 = kiln.relu %0 : tensor<4x8xf32>
  %2 = kiln.tanh %1 : tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

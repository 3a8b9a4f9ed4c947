// RUN: kiln-opt %s -kiln-lower-to-linalg -kiln-cpu-form-kernels='vector-bits=512' | FileCheck %s --check-prefix=AVX512
// RUN: kiln-opt %s -kiln-lower-to-linalg -kiln-cpu-form-kernels='vector-bits=256' | FileCheck %s --check-prefix=AVX2
// RUN: kiln-opt %s -kiln-lower-to-linalg | FileCheck %s --check-prefix=LINALG

// Tests that the CPU's first stage after linalg takes its vector width as
// an option: a linear layer's constant weights [K, N] = [32, 64] are
// packed into panels one vector wide (16 lanes with AVX-512, 8 with
// AVX2) and the product becomes a kernel; the target-free linalg stage
// does neither.
// AVX512: arith.constant dense<5.000000e-01> : tensor<4x32x16xf32>
// AVX512: scf.forall
// AVX2: arith.constant dense<5.000000e-01> : tensor<8x32x8xf32>
// AVX2: scf.forall
// LINALG: arith.constant dense<5.000000e-01> : tensor<32x64xf32>
// LINALG-NOT: scf.forall
func.func @main(%x: tensor<64x32xf32>) -> tensor<64x64xf32> {
  %w = kiln.constant dense<0.5> : tensor<32x64xf32>
  %y = kiln.matmul %x, %w : tensor<64x32xf32>, tensor<32x64xf32> -> tensor<64x64xf32>
  %r = kiln.relu %y : tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}

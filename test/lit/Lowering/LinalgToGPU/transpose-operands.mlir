// RUN: kiln-opt %s -split-input-file -kiln-gpu-transpose-operands | FileCheck %s

// Tests that a training step's weight gradient X^T dY (a Gemm with transA,
// on run-time operands) reads a transposed copy of X, [M, K] as the tensor
// cores want it: the copy goes before C's zero fill, which stays just
// before the product (the outliner folds it into the accumulators), and
// the copy is freed after.
// CHECK-LABEL: func.func @trans_a
// CHECK: %[[T:.*]] = memref.alloc() : memref<64x256xf32>
// CHECK: linalg.transpose ins(%arg0 : memref<256x64xf32>) outs(%[[T]] : memref<64x256xf32>) permutation = [1, 0]
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: linalg.generic {indexing_maps = [#[[MK:.*]], #[[KN:.*]], #[[MN:.*]]], {{.*}} ins(%[[T]], %arg1 : memref<64x256xf32>, memref<256x128xf32>) outs(%arg2
// CHECK: arith.mulf
// CHECK: memref.dealloc %[[T]]
func.func @trans_a(%x: memref<256x64xf32>, %dy: memref<256x128xf32>, %dw: memref<64x128xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%dw : memref<64x128xf32>)
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %dy : memref<256x64xf32>, memref<256x128xf32>) outs(%dw : memref<64x128xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests batched B read as (batch, n, k), and 16-bit operands widened into
// an f32 C: B's last two dimensions swap, the batch stays.
// CHECK-LABEL: func.func @batched_trans_b
// CHECK: %[[T:.*]] = memref.alloc() : memref<4x64x96xf16>
// CHECK: linalg.transpose ins(%arg1 : memref<4x96x64xf16>) outs(%[[T]] : memref<4x64x96xf16>) permutation = [0, 2, 1]
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[T]] : memref<4x32x64xf16>, memref<4x64x96xf16>)
// CHECK: arith.extf
// CHECK: memref.dealloc %[[T]]
func.func @batched_trans_b(%a: memref<4x32x64xf16>, %b: memref<4x96x64xf16>, %c: memref<4x32x96xf32>) {
  linalg.generic {indexing_maps = [affine_map<(h, m, n, k) -> (h, m, k)>, affine_map<(h, m, n, k) -> (h, n, k)>, affine_map<(h, m, n, k) -> (h, m, n)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x32x64xf16>, memref<4x96x64xf16>) outs(%c : memref<4x32x96xf32>) {
  ^bb0(%x: f16, %y: f16, %acc: f32):
    %xf = arith.extf %x : f16 to f32
    %yf = arith.extf %y : f16 to f32
    %p = arith.mulf %xf, %yf : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests a linear layer through weights that are parameters (a training
// step's forward pass: Gemm transB, W [N, K] shared by the batch): W is
// copied as [K, N] and read by every batch.
// CHECK-LABEL: func.func @shared_trans_b
// CHECK: %[[T:.*]] = memref.alloc() : memref<64x128xf32>
// CHECK: linalg.transpose ins(%arg1 : memref<128x64xf32>) outs(%[[T]] : memref<64x128xf32>) permutation = [1, 0]
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[SHARED:.*]], #{{.*}}], {{.*}} ins(%arg0, %[[T]] : memref<2x32x64xf32>, memref<64x128xf32>)
func.func @shared_trans_b(%x: memref<2x32x64xf32>, %w: memref<128x64xf32>, %y: memref<2x32x128xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<2x32x64xf32>, memref<128x64xf32>) outs(%y : memref<2x32x128xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests what stays as it is: a product the tensor cores would not take
// (4 rows, K = 12: no whole k step) makes no copy, and one already in
// their layout has none to make.
// CHECK-LABEL: func.func @untouched
// CHECK-NOT: linalg.transpose
// CHECK-NOT: memref.alloc
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : memref<12x4xf32>, memref<12x8xf32>)
// CHECK: linalg.generic {{.*}} ins(%arg3, %arg4 : memref<64x64xf32>, memref<64x64xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: return
func.func @untouched(%a: memref<12x4xf32>, %b: memref<12x8xf32>, %c: memref<4x8xf32>,
                     %p: memref<64x64xf32>, %q: memref<64x64xf32>, %r: memref<64x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<12x4xf32>, memref<12x8xf32>) outs(%c : memref<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%p, %q : memref<64x64xf32>, memref<64x64xf32>) outs(%r : memref<64x64xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

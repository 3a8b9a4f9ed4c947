// RUN: kiln-opt %s -split-input-file -kiln-form-kernels | FileCheck %s

// Tests that a row reduction and its elementwise consumer (softmax-like:
// x - max(x)) become one kernel: one scf.forall over the rows with the
// reduction and the subtraction of that row inside.
// CHECK-LABEL: func.func @row_reduction
// CHECK: scf.forall (%{{.*}}) in (8)
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: scf.forall.in_parallel
// CHECK-NOT: linalg.generic
// CHECK: return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @row_reduction(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %ninf = arith.constant -3.0e38 : f32
  %e = tensor.empty() : tensor<8xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x32xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.maximumf %a, %acc : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  %o = tensor.empty() : tensor<8x32xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : tensor<8x32xf32>, tensor<8xf32>) outs(%o : tensor<8x32xf32>) {
  ^bb0(%a: f32, %m: f32, %out: f32):
    %d = arith.subf %a, %m : f32
    linalg.yield %d : f32
  } -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// Tests that a matmul with its bias epilogue is one kernel, row by row.
// CHECK-LABEL: func.func @matmul_bias
// CHECK: scf.forall (%{{.*}}) in (4)
// CHECK: linalg.fill
// CHECK: linalg.matmul
// CHECK: linalg.generic
// CHECK: scf.forall.in_parallel
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @matmul_bias(%a: tensor<4x16xf32>, %b: tensor<16x8xf32>, %bias: tensor<8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<4x16xf32>, tensor<16x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %c: f32, %out: f32):
    %s = arith.addf %v, %c : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Tests the refusals. A column sum read by every row (a broadcast along the
// tiled row loop) would be recomputed for each row, so it stays a kernel of
// its own; a producer that also feeds the function's result is used outside
// the group and stays too. With nothing to fuse, the root is left as is.
// CHECK-LABEL: func.func @refusals
// CHECK-NOT: scf.forall
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK-NOT: scf.forall
// CHECK: return
#idr = affine_map<(d0, d1) -> (d0, d1)>
#c = affine_map<(d0, d1) -> (d1)>
func.func @refusals(%x: tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<32xf32>) -> tensor<32xf32>
  %cols = linalg.generic {indexing_maps = [#idr, #c], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<8x32xf32>) outs(%init : tensor<32xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<32xf32>
  %o = tensor.empty() : tensor<8x32xf32>
  %shared = linalg.generic {indexing_maps = [#idr, #idr], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x32xf32>) outs(%o : tensor<8x32xf32>) {
  ^bb0(%a: f32, %out: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<8x32xf32>
  %y = linalg.generic {indexing_maps = [#idr, #c, #idr], iterator_types = ["parallel", "parallel"]}
      ins(%shared, %cols : tensor<8x32xf32>, tensor<32xf32>) outs(%o : tensor<8x32xf32>) {
  ^bb0(%a: f32, %s: f32, %out: f32):
    %d = arith.divf %a, %s : f32
    linalg.yield %d : f32
  } -> tensor<8x32xf32>
  return %y, %shared : tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// Tests that a product and its bias stay out of the kernel of a transpose
// that reads them across their rows (a linear layer's NHWC result as
// NCHW): the product is a kernel of its own, the transpose another.
// CHECK-LABEL: func.func @product_read_across_rows
// CHECK: scf.forall
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK: scf.forall.in_parallel
// CHECK: linalg.transpose
// CHECK-NOT: "reduction"
func.func @product_read_across_rows(%x: tensor<2x64x32xf32>, %w: tensor<32x16xf32>,
                                    %b: tensor<16xf32>) -> tensor<2x16x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x64x16xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<2x64x16xf32>) -> tensor<2x64x16xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(n, p, c, k) -> (n, p, k)>,
                                        affine_map<(n, p, c, k) -> (k, c)>,
                                        affine_map<(n, p, c, k) -> (n, p, c)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<2x64x32xf32>, tensor<32x16xf32>) outs(%c : tensor<2x64x16xf32>) {
  ^bb0(%a: f32, %bb: f32, %acc: f32):
    %p = arith.mulf %a, %bb : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x64x16xf32>
  %l = linalg.generic {indexing_maps = [affine_map<(n, p, c) -> (n, p, c)>,
                                        affine_map<(n, p, c) -> (c)>,
                                        affine_map<(n, p, c) -> (n, p, c)>],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%m, %b : tensor<2x64x16xf32>, tensor<16xf32>) outs(%e : tensor<2x64x16xf32>) {
  ^bb0(%v: f32, %bias: f32, %o: f32):
    %s = arith.addf %v, %bias : f32
    linalg.yield %s : f32
  } -> tensor<2x64x16xf32>
  %t0 = tensor.empty() : tensor<2x16x64xf32>
  %t = linalg.transpose ins(%l : tensor<2x64x16xf32>) outs(%t0 : tensor<2x16x64xf32>)
       permutation = [0, 2, 1]
  return %t : tensor<2x16x64xf32>
}

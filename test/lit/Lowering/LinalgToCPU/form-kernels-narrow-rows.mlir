// RUN: kiln-opt %s -split-input-file -kiln-form-kernels | FileCheck %s

// Tests that an image of 3 channels quantized and transposed channels
// last (2 x 8 x 32 pixels) is tiled by 32 pixels, 96 elements a tile
// (the most up to 256 that divide the row), not by one pixel of 3 bytes.
// CHECK-LABEL: func.func @quantize_to_nhwc
// CHECK: scf.forall ({{.*}}) = (0, 0, 0) to (2, 8, 32) step (1, 1, 32)
// CHECK: linalg.generic
// CHECK: linalg.transpose
func.func @quantize_to_nhwc(%x: tensor<2x3x8x32xf32>) -> tensor<2x8x32x3xi8> {
  %e = tensor.empty() : tensor<2x3x8x32xi8>
  %q = linalg.generic {indexing_maps = [affine_map<(n, c, h, w) -> (n, c, h, w)>, affine_map<(n, c, h, w) -> (n, c, h, w)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x3x8x32xf32>) outs(%e : tensor<2x3x8x32xi8>) {
  ^bb0(%in: f32, %out: i8):
    %s = arith.constant 0.5 : f32
    %d = arith.divf %in, %s : f32
    %r = math.roundeven %d : f32
    %i = arith.fptoui %r : f32 to i8
    linalg.yield %i : i8
  } -> tensor<2x3x8x32xi8>
  %t = tensor.empty() : tensor<2x8x32x3xi8>
  %y = linalg.transpose ins(%q : tensor<2x3x8x32xi8>) outs(%t : tensor<2x8x32x3xi8>) permutation = [0, 2, 3, 1]
  return %y : tensor<2x8x32x3xi8>
}

// -----

// Tests that narrow rows of a product's epilogue keep their tiles (one
// row of 8 columns per tile here): the widening is for elementwise
// groups alone.
// CHECK-LABEL: func.func @product_rows
// CHECK: scf.forall (%{{.*}}) in (4)
// CHECK: linalg.matmul {{.*}} outs(%{{.*}} : tensor<1x8xf32>)
func.func @product_rows(%a: tensor<4x16xf32>, %b: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x16xf32>, tensor<16x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %m : tensor<4x8xf32>
}

// RUN: kiln-opt %s -split-input-file -kiln-pointwise-conv-as-matmul | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-pointwise-conv-as-matmul=vector-bits=512 | FileCheck %s --check-prefix=WIDE

// Tests a 1x1 convolution with its per-channel bias (read at constant 0
// along the unit dimensions) and ReLU: the product runs over the flattened
// pixels, out[n, f, p] += w[f, c] * x[n, c, p], and both elementwise ops
// are collapsed onto its [N, F, H*W] shape (the bias as [1, F]); one
// expand back to 4-D at the end (the canonicalizer folds the pairs of
// reshapes between them).
// CHECK: #[[$WM:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
// CHECK: #[[$XM:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK: #[[$YM:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @conv_bias_relu
// CHECK-DAG: %[[X:.*]] = tensor.collapse_shape %arg0 {{\[}}[0], [1], [2, 3]] : tensor<2x8x5x6xf32> into tensor<2x8x30xf32>
// CHECK-DAG: %[[W:.*]] = tensor.collapse_shape %arg1 {{\[}}[0], [1, 2, 3]] : tensor<16x8x1x1xf32> into tensor<16x8xf32>
// CHECK: %[[P:.*]] = linalg.generic {indexing_maps = [#[[$WM]], #[[$XM]], #[[$YM]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[W]], %[[X]] : tensor<16x8xf32>, tensor<2x8x30xf32>) outs({{.*}} : tensor<2x16x30xf32>)
// CHECK: %[[B:.*]] = tensor.collapse_shape %arg2 {{\[}}[0, 1, 2, 3]] : tensor<1x16x1x1xf32> into tensor<16xf32>
// CHECK: %[[S:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[B]] : tensor<2x16x30xf32>, tensor<16xf32>)
// CHECK: arith.addf
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<2x16x30xf32>)
// CHECK: arith.maximumf
// CHECK: %[[E:.*]] = tensor.expand_shape %[[R]] {{\[}}[0], [1], [2, 3]] output_shape [2, 16, 5, 6]
// CHECK: return %[[E]]
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#bias = affine_map<(d0, d1, d2, d3) -> (0, d1, 0, 0)>
func.func @conv_bias_relu(%x: tensor<2x8x5x6xf32>, %w: tensor<16x8x1x1xf32>, %b: tensor<1x16x1x1xf32>) -> tensor<2x16x5x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x16x5x6xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x16x5x6xf32>) -> tensor<2x16x5x6xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<2x8x5x6xf32>, tensor<16x8x1x1xf32>) outs(%init : tensor<2x16x5x6xf32>) -> tensor<2x16x5x6xf32>
  %s = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c, %b : tensor<2x16x5x6xf32>, tensor<1x16x1x1xf32>) outs(%e : tensor<2x16x5x6xf32>) {
  ^bb0(%v: f32, %bv: f32, %out: f32):
    %a = arith.addf %v, %bv : f32
    linalg.yield %a : f32
  } -> tensor<2x16x5x6xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x16x5x6xf32>) outs(%e : tensor<2x16x5x6xf32>) {
  ^bb0(%v: f32, %out: f32):
    %m = arith.maximumf %v, %zero : f32
    linalg.yield %m : f32
  } -> tensor<2x16x5x6xf32>
  return %r : tensor<2x16x5x6xf32>
}

// -----

// Tests a strided 1x1 convolution (a ResNet downsampling shortcut): every
// second pixel of every second row is copied out first, then multiplied.
// Larger kernels at stride 1 stay convolutions.
// CHECK: #[[$STEP:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4 * 2 + d2, d5 * 2 + d3)>
// CHECK-LABEL: func.func @strided
// CHECK: %[[S:.*]] = linalg.generic {indexing_maps = [#[[$STEP]], #{{.*}}], {{.*}} ins(%arg0 : tensor<1x4x8x8xf32>) outs({{.*}} : tensor<1x4x1x1x4x4xf32>)
// CHECK: %[[T:.*]] = tensor.collapse_shape %[[S]] {{\[}}[0], [1, 2, 3], [4], [5]] : tensor<1x4x1x1x4x4xf32> into tensor<1x4x4x4xf32>
// CHECK: tensor.collapse_shape %[[T]] {{\[}}[0], [1], [2, 3]] : tensor<1x4x4x4xf32> into tensor<1x4x16xf32>
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<8x4xf32>, tensor<1x4x16xf32>)
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} ins(%arg0, %arg2 : tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>)
func.func @strided(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x1x1xf32>, %w3: tensor<8x4x3x3xf32>) -> (tensor<1x8x4x4xf32>, tensor<1x8x6x6xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x4x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : tensor<1x4x8x8xf32>, tensor<8x4x1x1xf32>) outs(%init : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %e3 = tensor.empty() : tensor<1x8x6x6xf32>
  %init3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  %c3 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w3 : tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) outs(%init3 : tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  return %c, %c3 : tensor<1x8x4x4xf32>, tensor<1x8x6x6xf32>
}

// -----

// Tests a strided 3x3 convolution: its im2col columns, [N, C, KH, KW, OH,
// OW], copied from the padded image, then the product over (c, kh, kw);
// an RGB stem (3 channels) stays a convolution.
// CHECK: #[[$COLS:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4 * 2 + d2, d5 * 2 + d3)>
// CHECK-LABEL: func.func @im2col
// CHECK: %[[C:.*]] = linalg.generic {indexing_maps = [#[[$COLS]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%arg0 : tensor<1x16x9x9xf32>) outs({{.*}} : tensor<1x16x3x3x4x4xf32>)
// CHECK: %[[K:.*]] = tensor.collapse_shape %[[C]] {{\[}}[0], [1, 2, 3], [4], [5]] : tensor<1x16x3x3x4x4xf32> into tensor<1x144x4x4xf32>
// CHECK: tensor.collapse_shape %[[K]] {{\[}}[0], [1], [2, 3]] : tensor<1x144x4x4xf32> into tensor<1x144x16xf32>
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<8x144xf32>, tensor<1x144x16xf32>)
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} ins(%arg2, %arg3 : tensor<1x3x9x9xf32>, tensor<8x3x3x3xf32>)
func.func @im2col(%x: tensor<1x16x9x9xf32>, %w: tensor<8x16x3x3xf32>, %rgb: tensor<1x3x9x9xf32>, %w3: tensor<8x3x3x3xf32>) -> (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x4x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : tensor<1x16x9x9xf32>, tensor<8x16x3x3xf32>) outs(%init : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %s = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%rgb, %w3 : tensor<1x3x9x9xf32>, tensor<8x3x3x3xf32>) outs(%init : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  return %c, %s : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>
}

// -----

// Tests a stride-1 3x3 convolution on a 7x7 image: direct on AVX2 (its
// rows fill 7 of a register's 8 lanes), through im2col on AVX-512 (7 of
// 16: the product's columns are all 49 pixels); a 14x14 one stays direct
// on both.
// CHECK-LABEL: func.func @narrow
// CHECK-COUNT-2: linalg.conv_2d_nchw_fchw
// WIDE-LABEL: func.func @narrow
// WIDE: linalg.generic {{.*}} ins(%arg0 : tensor<1x16x9x9xf32>) outs({{.*}} : tensor<1x16x3x3x7x7xf32>)
// WIDE: linalg.generic {{.*}} ins({{.*}} : tensor<8x144xf32>, tensor<1x144x49xf32>)
// WIDE: linalg.conv_2d_nchw_fchw {{.*}} ins(%arg2, %arg1 : tensor<1x16x16x16xf32>, tensor<8x16x3x3xf32>)
func.func @narrow(%x: tensor<1x16x9x9xf32>, %w: tensor<8x16x3x3xf32>, %big: tensor<1x16x16x16xf32>) -> (tensor<1x8x7x7xf32>, tensor<1x8x14x14xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x7x7xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x7x7xf32>) -> tensor<1x8x7x7xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x16x9x9xf32>, tensor<8x16x3x3xf32>) outs(%init : tensor<1x8x7x7xf32>) -> tensor<1x8x7x7xf32>
  %e14 = tensor.empty() : tensor<1x8x14x14xf32>
  %init14 = linalg.fill ins(%zero : f32) outs(%e14 : tensor<1x8x14x14xf32>) -> tensor<1x8x14x14xf32>
  %d = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%big, %w : tensor<1x16x16x16xf32>, tensor<8x16x3x3xf32>) outs(%init14 : tensor<1x8x14x14xf32>) -> tensor<1x8x14x14xf32>
  return %c, %d : tensor<1x8x7x7xf32>, tensor<1x8x14x14xf32>
}

// -----

// Tests that a strided convolution whose im2col columns would pass 32 MiB
// of arena (here 16 x 64 x 9 x 56 x 56 floats, 110 MiB) stays direct.
// CHECK-LABEL: func.func @too_big
// CHECK-NOT: linalg.generic
// CHECK: linalg.conv_2d_nchw_fchw
func.func @too_big(%x: tensor<16x64x113x113xf32>, %w: tensor<64x64x3x3xf32>) -> tensor<16x64x56x56xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x64x56x56xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<16x64x56x56xf32>) -> tensor<16x64x56x56xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : tensor<16x64x113x113xf32>, tensor<64x64x3x3xf32>) outs(%init : tensor<16x64x56x56xf32>) -> tensor<16x64x56x56xf32>
  return %c : tensor<16x64x56x56xf32>
}

// -----

// Tests that a strided 3x3 convolution whose weights kiln-pack-conv-weights
// will pack (constant, 16 output channels: whole AVX-512 vectors) stays a
// convolution: its packed tile reads any stride with every lane used, and
// needs no im2col copy. The same layer with 8 channels still goes through
// im2col on AVX-512. So does a 1x1 convolution on a narrow image (7x7:
// the product's pixel panels would be 49 of 64 lanes), but not a wider one.
// WIDE-LABEL: func.func @packed
// WIDE: linalg.conv_2d_nchw_fchw {{.*}} ins(%arg0, %{{.*}} : tensor<1x16x9x9xf32>, tensor<16x16x3x3xf32>)
// WIDE: linalg.conv_2d_nchw_fchw {{.*}} ins(%arg1, %{{.*}} : tensor<1x16x7x7xf32>, tensor<16x16x1x1xf32>)
// WIDE-NOT: linalg.conv_2d_nchw_fchw
func.func @packed(%x: tensor<1x16x9x9xf32>, %x7: tensor<1x16x7x7xf32>, %x14: tensor<1x16x14x14xf32>) -> (tensor<1x16x4x4xf32>, tensor<1x8x4x4xf32>, tensor<1x16x7x7xf32>, tensor<1x16x14x14xf32>) {
  %w1 = arith.constant dense<0.25> : tensor<16x16x1x1xf32>
  %w16 = arith.constant dense<0.5> : tensor<16x16x3x3xf32>
  %w8 = arith.constant dense<0.5> : tensor<8x16x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %e16 = tensor.empty() : tensor<1x16x4x4xf32>
  %i16 = linalg.fill ins(%zero : f32) outs(%e16 : tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %a = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w16 : tensor<1x16x9x9xf32>, tensor<16x16x3x3xf32>) outs(%i16 : tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %e8 = tensor.empty() : tensor<1x8x4x4xf32>
  %i8 = linalg.fill ins(%zero : f32) outs(%e8 : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %b = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w8 : tensor<1x16x9x9xf32>, tensor<8x16x3x3xf32>) outs(%i8 : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %e7 = tensor.empty() : tensor<1x16x7x7xf32>
  %i7 = linalg.fill ins(%zero : f32) outs(%e7 : tensor<1x16x7x7xf32>) -> tensor<1x16x7x7xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x7, %w1 : tensor<1x16x7x7xf32>, tensor<16x16x1x1xf32>) outs(%i7 : tensor<1x16x7x7xf32>) -> tensor<1x16x7x7xf32>
  %e14 = tensor.empty() : tensor<1x16x14x14xf32>
  %i14 = linalg.fill ins(%zero : f32) outs(%e14 : tensor<1x16x14x14xf32>) -> tensor<1x16x14x14xf32>
  %d = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x14, %w1 : tensor<1x16x14x14xf32>, tensor<16x16x1x1xf32>) outs(%i14 : tensor<1x16x14x14xf32>) -> tensor<1x16x14x14xf32>
  return %a, %b, %c, %d : tensor<1x16x4x4xf32>, tensor<1x8x4x4xf32>, tensor<1x16x7x7xf32>, tensor<1x16x14x14xf32>
}

// -----

// Tests the convolutions the direct tile cannot take or that im2col
// copies without duplicating: a ViT's patch embedding (4x4 windows at
// stride 4 over 3 channels: the columns are the image reordered) and a
// dilated one (scalar loops otherwise), both as products.
// CHECK-DAG: #[[$PATCH:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4 * 4 + d2, d5 * 4 + d3)>
// CHECK-DAG: #[[$DILATED:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4 + d2 * 2, d5 + d3 * 2)>
// CHECK-LABEL: func.func @patches
// CHECK: linalg.generic {indexing_maps = [#[[$PATCH]], #{{.*}}], {{.*}} outs({{.*}} : tensor<1x3x4x4x8x8xf32>)
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<16x48xf32>, tensor<1x48x64xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[$DILATED]], #{{.*}}], {{.*}} outs({{.*}} : tensor<1x3x3x3x28x28xf32>)
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<8x27xf32>, tensor<1x27x784xf32>)
// CHECK-NOT: linalg.conv_2d_nchw_fchw
func.func @patches(%x: tensor<1x3x32x32xf32>, %w: tensor<16x3x4x4xf32>, %w3: tensor<8x3x3x3xf32>) -> (tensor<1x16x8x8xf32>, tensor<1x8x28x28xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x8x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %p = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<4> : tensor<2xi64>}
      ins(%x, %w : tensor<1x3x32x32xf32>, tensor<16x3x4x4xf32>) outs(%init : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %e2 = tensor.empty() : tensor<1x8x28x28xf32>
  %init2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x8x28x28xf32>) -> tensor<1x8x28x28xf32>
  %d = linalg.conv_2d_nchw_fchw {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w3 : tensor<1x3x32x32xf32>, tensor<8x3x3x3xf32>) outs(%init2 : tensor<1x8x28x28xf32>) -> tensor<1x8x28x28xf32>
  return %p, %d : tensor<1x16x8x8xf32>, tensor<1x8x28x28xf32>
}

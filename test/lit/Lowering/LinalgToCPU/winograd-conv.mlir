// RUN: kiln-opt %s -split-input-file -kiln-winograd-conv='min-channels=1 vector-bits=128' -canonicalize | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-winograd-conv='min-channels=1 vector-bits=128' -kiln-form-kernels=conv-vector-bits=128 -canonicalize | FileCheck %s --check-prefix=FORM

// Tests that a 3x3 convolution over a static batch becomes the input
// transform into panels of 4 tiles ([16, T/4, C, 4], T = 2 images x 2 x 2
// tiles; an empty [TY, TX] gives the tile loops' sizes), the 16 products
// reading those panels, and the output transform into [N, F, TY, 2, TX, 2]
// blocks, with the elementwise op after the convolution (bias, ReLU) fused
// into it, after the tile's value (marked). The transformed tiles and the
// products are views of [16, plane + 16]: planes a cache line more than
// their size apart. The filter of ones transforms
// to G 1 G^T = r r^T, r = (1, 1.5, 0.5, 1).
// CHECK-DAG: #[[$X00:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d1, d3 * 2, d4 * 2)>
// CHECK-DAG: #[[$X33:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d1, d3 * 2 + 3, d4 * 2 + 3)>
// CHECK-DAG: #[[$TILES:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d3, d4)>
// CHECK-DAG: #[[$PANEL:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, ((d2 * 2 + d3) * 2 + d4) floordiv 4, d1, ((d2 * 2 + d3) * 2 + d4) mod 4)>
// CHECK-DAG: #[[$U:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[$V:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2 floordiv 4, d3, d2 mod 4)>
// CHECK-DAG: #[[$M0:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (0, d1, d0, d2, d4)>
// CHECK-DAG: #[[$M15:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (15, d1, d0, d2, d4)>
// CHECK-DAG: #[[$BIAS:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1)>
// Kernel formation keeps the planes padded (a tensor.empty's slice it
// folded into an empty of the slice's size):
// FORM-LABEL: func.func @packed
// FORM: %[[P1:.*]] = bufferization.alloc_tensor() : tensor<16x24xf32>
// FORM: tensor.extract_slice %[[P1]][0, 0] [16, 8] [1, 1] : tensor<16x24xf32> to tensor<16x8xf32>
// FORM: %[[P2:.*]] = bufferization.alloc_tensor() : tensor<16x24xf32>
// FORM: tensor.extract_slice %[[P2]][0, 0] [16, 8] [1, 1] : tensor<16x24xf32> to tensor<16x8xf32>
// CHECK-LABEL: func.func @packed
// CHECK: %[[U:.*]] = arith.constant dense_resource<winograd_filter> : tensor<16x1x1xf32>
// CHECK: %[[TILES:.*]] = tensor.empty() : tensor<2x2xf32>
// CHECK: %[[PLANES:.*]] = bufferization.alloc_tensor() : tensor<16x24xf32>
// CHECK: %[[SLICE:.*]] = tensor.extract_slice %[[PLANES]][0, 0] [16, 8] [1, 1]
// CHECK: tensor.expand_shape %[[SLICE]] {{\[}}[0], [1, 2, 3]] output_shape [16, 2, 1, 4] : tensor<16x8xf32> into tensor<16x2x1x4xf32>
// CHECK: %[[V:.*]] = linalg.generic {indexing_maps = [#[[$X00]], {{.*}}, #[[$X33]], #[[$TILES]], #[[$PANEL]]]
// CHECK-SAME: outs(%{{.*}} : tensor<16x2x1x4xf32>) attrs = {kiln.winograd = "input"}
// CHECK: linalg.index 0
// CHECK: %[[M:.*]] = linalg.generic {indexing_maps = [#[[$U]], #[[$V]], {{.*}}], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[U]], %[[V]] : tensor<16x1x1xf32>, tensor<16x2x1x4xf32>) outs(%{{.*}} : tensor<16x1x8xf32>)
// CHECK: %[[M5:.*]] = tensor.expand_shape %[[M]] {{\[}}[0], [1], [2, 3, 4]] output_shape [16, 1, 2, 2, 2]
// CHECK: %[[Y6:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0], [1], [2, 3], [4, 5]] output_shape [2, 1, 2, 2, 2, 2]
// CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#[[$M0]], {{.*}}, #[[$M15]], #[[$BIAS]], {{.*}}]
// CHECK-SAME: ins(%[[M5]], {{.*}}, %arg1 : {{.*}}) outs(%[[Y6]] : tensor<2x1x2x2x2x2xf32>) attrs = {kiln.winograd = "output"}
// CHECK: linalg.index 3
// CHECK: linalg.index 5
// CHECK: %[[VALUE:.*]] = arith.select {{.*}} {kiln.winograd.value} : f32
// CHECK: %[[BIASED:.*]] = arith.addf %[[VALUE]], %{{.*}} : f32
// CHECK: arith.maximumf %[[BIASED]]
// CHECK: %[[OUT:.*]] = tensor.collapse_shape %[[Y]] {{\[}}[0], [1], [2, 3], [4, 5]] : tensor<2x1x2x2x2x2xf32> into tensor<2x1x4x4xf32>
// CHECK: return %[[OUT]]
// CHECK-NOT: linalg.conv_2d
// CHECK: winograd_filter: "0x10000000
// CHECK-SAME: 0000803F0000C03F0000003F0000803F0000C03F000010400000403F0000C03F
// CHECK-SAME: 0000003F0000403F0000803E0000003F0000803F0000C03F0000003F0000803F"
func.func @packed(%x: tensor<2x1x6x6xf32>, %bias: tensor<1xf32>) -> tensor<2x1x4x4xf32> {
  %w = arith.constant dense<1.0> : tensor<1x1x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x1x4x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<2x1x6x6xf32>, tensor<1x1x3x3xf32>) outs(%init : tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  %e2 = tensor.empty() : tensor<2x1x4x4xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(n, f, h, w) -> (n, f, h, w)>, affine_map<(n, f, h, w) -> (f)>,
                                        affine_map<(n, f, h, w) -> (n, f, h, w)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%y, %bias : tensor<2x1x4x4xf32>, tensor<1xf32>) outs(%e2 : tensor<2x1x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<2x1x4x4xf32>
  return %z : tensor<2x1x4x4xf32>
}

// -----

// Tests that a batch known at run time packs each image's tiles in panels
// of their own, [16, N, ceil(TY*TX/P), C, P] (3x3 tiles here, three panels
// of 4, the last with one tile), that the products over them write
// [16, N, F, TY*TX] with the images among their outer loops, and that an
// accumulator that is no zero fill is added to in the output transform.
// CHECK-DAG: #[[$TILES:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d3, d4)>
// CHECK-DAG: #[[$V:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, (d3 * 3 + d4) floordiv 4, d1, (d3 * 3 + d4) mod 4)>
// CHECK-DAG: #[[$U:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d4)>
// CHECK-DAG: #[[$B:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3 floordiv 4, d4, d3 mod 4)>
// CHECK-DAG: #[[$M:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[$TIMES12:.*]] = affine_map<()[s0] -> (s0 * 12)>
// CHECK-DAG: #[[$TIMES12PLUS16:.*]] = affine_map<()[s0] -> (s0 * 12 + 16)>
// CHECK-DAG: #[[$M0:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (0, d0, d1, d2, d4)>
// CHECK-LABEL: func.func @dynamic_accumulate
// CHECK: %[[N:.*]] = tensor.dim %arg0, %c0
// CHECK: %[[PLANE:.*]] = affine.apply #[[$TIMES12]]()[%[[N]]]
// CHECK: %[[PADDED:.*]] = affine.apply #[[$TIMES12PLUS16]]()[%[[N]]]
// CHECK: %[[PLANES:.*]] = bufferization.alloc_tensor(%[[PADDED]]) : tensor<16x?xf32>
// CHECK: %[[SLICE:.*]] = tensor.extract_slice %[[PLANES]][0, 0] [16, %[[PLANE]]] [1, 1]
// CHECK: %[[V0:.*]] = tensor.expand_shape %[[SLICE]] {{\[}}[0], [1, 2, 3, 4]] output_shape [16, %[[N]], 3, 1, 4]
// CHECK: %[[V:.*]] = linalg.generic {{.*}} #[[$TILES]], #[[$V]]]{{.*}} outs(%[[V0]] : tensor<16x?x3x1x4xf32>) attrs = {kiln.winograd = "input"}
// CHECK: %[[M0:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2, 3]] output_shape [16, %[[N]], 1, 9]
// CHECK: %[[FILL:.*]] = linalg.fill {{.*}} outs(%[[M0]] : tensor<16x?x1x9xf32>)
// CHECK: %[[M:.*]] = linalg.generic {indexing_maps = [#[[$U]], #[[$B]], #[[$M]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%{{.*}}, %[[V]] : tensor<16x1x1xf32>, tensor<16x?x3x1x4xf32>) outs(%[[FILL]] : tensor<16x?x1x9xf32>)
// CHECK: %[[M5:.*]] = tensor.expand_shape %[[M]] {{\[}}[0], [1], [2], [3, 4]] output_shape [16, %[[N]], 1, 3, 3]
// CHECK: tensor.expand_shape %arg1 {{\[}}[0], [1], [2, 3], [4, 5]] output_shape [%[[N]], 1, 3, 2, 3, 2]
// CHECK: linalg.generic {indexing_maps = [#[[$M0]],
// CHECK-SAME: attrs = {kiln.winograd = "output"}
// CHECK: %[[VALUE:.*]] = arith.select {{.*}} {kiln.winograd.value} : f32
// CHECK: %[[SUM:.*]] = arith.addf %out, %[[VALUE]] : f32
// CHECK: linalg.yield %[[SUM]]
func.func @dynamic_accumulate(%x: tensor<?x1x8x8xf32>, %acc: tensor<?x1x6x6xf32>) -> tensor<?x1x6x6xf32> {
  %w = arith.constant dense<1.0> : tensor<1x1x3x3xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<?x1x8x8xf32>, tensor<1x1x3x3xf32>) outs(%acc : tensor<?x1x6x6xf32>) -> tensor<?x1x6x6xf32>
  return %y : tensor<?x1x6x6xf32>
}

// -----

// Tests that an odd output (3x3 here, over 3 images) takes tiles over one
// more row and column: the input padded by a row and a column of zeros
// more, the output's 4x4 blocks cut to 3x3 by a slice.
// CHECK-LABEL: func.func @odd
// CHECK: tensor.pad %arg0 low[0, 0, 0, 0] high[0, 0, 1, 1]
// CHECK: tensor<3x1x6x6xf32>
// CHECK: attrs = {kiln.winograd = "input"}
// CHECK: attrs = {kiln.winograd = "output"}
// CHECK: %[[Y:.*]] = tensor.collapse_shape {{.*}} into tensor<3x1x4x4xf32>
// CHECK: tensor.extract_slice %[[Y]][0, 0, 0, 0] [3, 1, 3, 3] [1, 1, 1, 1] : tensor<3x1x4x4xf32> to tensor<3x1x3x3xf32>
func.func @odd(%x: tensor<3x1x5x5xf32>) -> tensor<3x1x3x3xf32> {
  %w = arith.constant dense<1.0> : tensor<1x1x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x1x3x3xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<3x1x3x3xf32>) -> tensor<3x1x3x3xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<3x1x5x5xf32>, tensor<1x1x3x3xf32>) outs(%init : tensor<3x1x3x3xf32>) -> tensor<3x1x3x3xf32>
  return %y : tensor<3x1x3x3xf32>
}

// -----

// Tests what stays a convolution: a stride of 2, a 5x5 filter, weights
// known only at run time, and too few tiles for two panels (one image of
// 2 x 2 tiles).
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: linalg.conv_2d_nchw_fchw
// CHECK-NOT: kiln.winograd
func.func @kept(%x: tensor<2x1x9x9xf32>, %wx: tensor<1x1x3x3xf32>, %x1: tensor<1x1x6x6xf32>)
    -> (tensor<2x1x4x4xf32>, tensor<2x1x5x5xf32>, tensor<2x1x7x7xf32>, tensor<1x1x4x4xf32>) {
  %w = arith.constant dense<1.0> : tensor<1x1x3x3xf32>
  %w5 = arith.constant dense<1.0> : tensor<1x1x5x5xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x1x4x4xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  %strided = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : tensor<2x1x9x9xf32>, tensor<1x1x3x3xf32>) outs(%i : tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  %e5 = tensor.empty() : tensor<2x1x5x5xf32>
  %i5 = linalg.fill ins(%zero : f32) outs(%e5 : tensor<2x1x5x5xf32>) -> tensor<2x1x5x5xf32>
  %five = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w5 : tensor<2x1x9x9xf32>, tensor<1x1x5x5xf32>) outs(%i5 : tensor<2x1x5x5xf32>) -> tensor<2x1x5x5xf32>
  %e7 = tensor.empty() : tensor<2x1x7x7xf32>
  %i7 = linalg.fill ins(%zero : f32) outs(%e7 : tensor<2x1x7x7xf32>) -> tensor<2x1x7x7xf32>
  %runtime = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %wx : tensor<2x1x9x9xf32>, tensor<1x1x3x3xf32>) outs(%i7 : tensor<2x1x7x7xf32>) -> tensor<2x1x7x7xf32>
  %e1 = tensor.empty() : tensor<1x1x4x4xf32>
  %i1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %few = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x1, %w : tensor<1x1x6x6xf32>, tensor<1x1x3x3xf32>) outs(%i1 : tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return %strided, %five, %runtime, %few : tensor<2x1x4x4xf32>, tensor<2x1x5x5xf32>, tensor<2x1x7x7xf32>, tensor<1x1x4x4xf32>
}

// -----

// Tests F(4x4, 3x3) where its tiles fill 4 panels (one image of 16x16
// outputs: 16 tiles of 4x4, 64 of 2x2): 6x6 input tiles at steps of 4,
// 36 products, 4x4 output blocks, and a single image's epilogue, which
// reads the output without its unit batch (a collapse_shape: unit
// dimensions are folded before this pass), fused into the output
// transform writing the epilogue's [F, H, W] result. The filter of ones
// transforms to r r^T, r = G 1 = (1/4, -1/2, -1/6, 7/24, 1/8, 1).
// CHECK-DAG: #[[$X00:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d1, d3 * 4, d4 * 4)>
// CHECK-DAG: #[[$X55:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d1, d3 * 4 + 5, d4 * 4 + 5)>
// CHECK-DAG: #[[$M35:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (35, d1, d0, d2, d4)>
// CHECK-DAG: #[[$BIAS:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1)>
// CHECK-LABEL: func.func @four
// CHECK: %[[U:.*]] = arith.constant dense_resource<winograd_filter{{.*}}> : tensor<36x1x1xf32>
// CHECK: bufferization.alloc_tensor() : tensor<36x32xf32>
// CHECK: %[[V:.*]] = linalg.generic {indexing_maps = [#[[$X00]], {{.*}}, #[[$X55]], {{.*}}]
// CHECK-SAME: outs(%{{.*}} : tensor<36x4x1x4xf32>) attrs = {kiln.winograd = "input"}
// CHECK: linalg.generic {{.*}} ins(%[[U]], %[[V]] : tensor<36x1x1xf32>, tensor<36x4x1x4xf32>) outs(%{{.*}} : tensor<36x1x16xf32>)
// CHECK: %[[Y6:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2, 3], [4, 5]] output_shape [1, 1, 4, 4, 4, 4] : tensor<1x16x16xf32> into tensor<1x1x4x4x4x4xf32>
// CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [{{.*}}, #[[$M35]], #[[$BIAS]], {{.*}}]
// CHECK-SAME: outs(%[[Y6]] : tensor<1x1x4x4x4x4xf32>) attrs = {kiln.winograd = "output"}
// CHECK: %[[VALUE:.*]] = arith.select {{.*}} {kiln.winograd.value} : f32
// CHECK: arith.addf %[[VALUE]]
// CHECK: %[[OUT:.*]] = tensor.collapse_shape %[[Y]] {{\[}}[0, 1], [2, 3], [4, 5]] : tensor<1x1x4x4x4x4xf32> into tensor<1x16x16xf32>
// CHECK: return %[[OUT]]
// CHECK: winograd_filter{{.*}}: "0x10000000
// CHECK-SAME: 0000803D000000BEABAA2ABD5555953D0000003D0000803E
func.func @four(%x: tensor<1x1x18x18xf32>, %bias: tensor<1xf32>) -> tensor<1x16x16xf32> {
  %w = arith.constant dense<1.0> : tensor<1x1x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x1x16x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x1x16x16xf32>) -> tensor<1x1x16x16xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x1x18x18xf32>, tensor<1x1x3x3xf32>) outs(%init : tensor<1x1x16x16xf32>) -> tensor<1x1x16x16xf32>
  %c = tensor.collapse_shape %y [[0, 1], [2], [3]] : tensor<1x1x16x16xf32> into tensor<1x16x16xf32>
  %e2 = tensor.empty() : tensor<1x16x16xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(f, h, w) -> (f, h, w)>, affine_map<(f, h, w) -> (f)>,
                                        affine_map<(f, h, w) -> (f, h, w)>],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%c, %bias : tensor<1x16x16xf32>, tensor<1xf32>) outs(%e2 : tensor<1x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<1x16x16xf32>
  return %z : tensor<1x16x16xf32>
}

// -----

// Tests that a dynamic batch takes F(4x4, 3x3) from 3 panels of one
// image's tiles (12 of 4 lanes here, 3x4 tiles of a 12x16 output): its
// images' products are their own, the filters of the first found in cache
// by the next. One image known at compile time keeps F(2x2, 3x3) (48
// tiles) under 4 panels of F(4x4, 3x3)'s.
// CHECK-LABEL: func.func @dynamic_four
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<36x?x3x1x4xf32>) attrs = {kiln.winograd = "input"}
// CHECK-LABEL: func.func @static_two
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<16x12x1x4xf32>) attrs = {kiln.winograd = "input"}
func.func @dynamic_four(%x: tensor<?x1x14x18xf32>) -> tensor<?x1x12x16xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x1x14x18xf32>
  %w = arith.constant dense<1.0> : tensor<1x1x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%n) : tensor<?x1x12x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<?x1x12x16xf32>) -> tensor<?x1x12x16xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<?x1x14x18xf32>, tensor<1x1x3x3xf32>) outs(%init : tensor<?x1x12x16xf32>) -> tensor<?x1x12x16xf32>
  return %y : tensor<?x1x12x16xf32>
}
func.func @static_two(%x: tensor<1x1x14x18xf32>) -> tensor<1x1x12x16xf32> {
  %w = arith.constant dense<1.0> : tensor<1x1x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x1x12x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x1x12x16xf32>) -> tensor<1x1x12x16xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x1x14x18xf32>, tensor<1x1x3x3xf32>) outs(%init : tensor<1x1x12x16xf32>) -> tensor<1x1x12x16xf32>
  return %y : tensor<1x1x12x16xf32>
}

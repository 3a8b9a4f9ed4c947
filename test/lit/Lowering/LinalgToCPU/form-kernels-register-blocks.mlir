// RUN: kiln-opt %s -split-input-file -kiln-form-kernels=conv-vector-bits=512 | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-form-kernels | FileCheck %s --check-prefix=UNIT
// RUN: kiln-opt %s -split-input-file -kiln-form-kernels=conv-vector-bits=256 | FileCheck %s --check-prefix=AVX2

// Tests that a convolution kiln-vectorize-conv register-tiles is tiled by
// its block (8 output channels x 2 rows for rows of 16 on AVX-512), not by
// one channel and row: its zero fill fused in. The image (10 KB) outweighs
// the filters (9 KB): rows are the outer loop, so that each thread of the
// pool reads its share of the image and all the filters. Without a vector
// width, channels and rows are tiled by 1.
// CHECK-LABEL: func.func @conv_block
// CHECK: scf.forall (%{{.*}}, %[[OH:.*]], %[[F:.*]]) = (0, 0, 0) to (1, 16, 32) step (1, 2, 8)
// CHECK: linalg.fill {{.*}} -> tensor<1x8x2x16xf32>
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x8x4x18xf32>, tensor<8x8x3x3xf32>) outs(%{{.*}} : tensor<1x8x2x16xf32>)
// UNIT-LABEL: func.func @conv_block
// UNIT: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (1, 32, 16)
func.func @conv_block(%x: tensor<1x8x18x18xf32>, %w: tensor<32x8x3x3xf32>) -> tensor<1x32x16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x32x16x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x32x16x16xf32>) -> tensor<1x32x16x16xf32>
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x8x18x18xf32>, tensor<32x8x3x3xf32>) outs(%init : tensor<1x32x16x16xf32>) -> tensor<1x32x16x16xf32>
  return %r : tensor<1x32x16x16xf32>
}

// -----

// Tests that a bias-and-ReLU epilogue of the convolution's shape, as the
// root of the kernel, is tiled by the convolution's block too (24 output
// channels: blocks of 8, the largest power of two dividing 24, and 2 rows),
// with the convolution fused into its tile.
// CHECK-LABEL: func.func @conv_epilogue
// CHECK: scf.forall ({{.*}}) = (0, 0, 0) to (1, 16, 24) step (1, 2, 8)
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} -> tensor<1x8x2x16xf32>
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x8x2x16xf32>)
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @conv_epilogue(%x: tensor<1x8x18x18xf32>, %w: tensor<24x8x3x3xf32>, %b: tensor<24xf32>) -> tensor<1x24x16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x24x16x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x24x16x16xf32>) -> tensor<1x24x16x16xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x8x18x18xf32>, tensor<24x8x3x3xf32>) outs(%init : tensor<1x24x16x16xf32>) -> tensor<1x24x16x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c, %b : tensor<1x24x16x16xf32>, tensor<24xf32>) outs(%e : tensor<1x24x16x16xf32>) {
  ^bb0(%v: f32, %bias: f32, %out: f32):
    %s = arith.addf %v, %bias : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1x24x16x16xf32>
  return %y : tensor<1x24x16x16xf32>
}

// -----

// Tests that where the filters (37 KB) outweigh the image (13 KB) the
// output channels are the outer loop: each thread reads its share of the
// filters and all the image.
// CHECK-LABEL: func.func @conv_filters_outside
// CHECK: scf.forall ({{.*}}) = (0, 0, 0) to (1, 32, 8) step (1, 8, 2)
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} -> tensor<1x8x2x8xf32>
func.func @conv_filters_outside(%x: tensor<1x32x10x10xf32>, %w: tensor<32x32x3x3xf32>) -> tensor<1x32x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x32x8x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x32x10x10xf32>, tensor<32x32x3x3xf32>) outs(%init : tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  return %r : tensor<1x32x8x8xf32>
}

// -----

// Tests that a kernel holding a linear layer is tiled by the matmul's row
// block (4 rows for 64 columns on AVX-512, and with AVX2 4 x 3 vectors of
// 8), its bias-and-ReLU epilogue in the same tile; without a vector width,
// by one row.
// CHECK-LABEL: func.func @linear_rows
// CHECK: scf.forall (%{{.*}}) = (0) to (16) step (4)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x32xf32>, tensor<32x64xf32>) outs(%{{.*}} : tensor<4x64xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<4x64xf32>)
// AVX2-LABEL: func.func @linear_rows
// AVX2: scf.forall (%{{.*}}) = (0) to (16) step (4)
// UNIT-LABEL: func.func @linear_rows
// UNIT: scf.forall (%{{.*}}) in (16)
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#r = affine_map<(m, n) -> (m, n)>
#bias = affine_map<(m, n) -> (n)>
func.func @linear_rows(%x: tensor<16x32xf32>, %w: tensor<32x64xf32>, %b: tensor<64xf32>) -> tensor<16x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  %mm = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<16x32xf32>, tensor<32x64xf32>) outs(%init : tensor<16x64xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<16x64xf32>
  %y = linalg.generic {indexing_maps = [#r, #bias, #r], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<16x64xf32>, tensor<64xf32>) outs(%e : tensor<16x64xf32>) {
  ^bb0(%v: f32, %bb: f32, %out: f32):
    %s = arith.addf %v, %bb : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}

// -----

// Tests a product whose last chunk of columns is narrower than the tile
// (a 7x7 1x1 convolution: 49 columns, 48 in 4 x 3 vectors and 1 left):
// with AVX2 a row tile takes two of that chunk's 12-row blocks, 32 rows
// (16 tiles of 512), not the register block's 4. AVX-512's chunk of 4
// vectors of 16 holds all 49: tiles of its 4-row block.
// CHECK-LABEL: func.func @narrow_tail_rows
// CHECK: scf.forall (%{{.*}}) = (0) to (512) step (4)
// AVX2-LABEL: func.func @narrow_tail_rows
// AVX2: scf.forall (%{{.*}}) = (0) to (512) step (32)
// UNIT-LABEL: func.func @narrow_tail_rows
// UNIT: scf.forall (%{{.*}}) in (512)
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#r = affine_map<(m, n) -> (m, n)>
func.func @narrow_tail_rows(%w: tensor<512x64xf32>, %x: tensor<64x49xf32>) -> tensor<512x49xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x49xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<512x49xf32>) -> tensor<512x49xf32>
  %mm = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : tensor<512x64xf32>, tensor<64x49xf32>) outs(%init : tensor<512x49xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<512x49xf32>
  %y = linalg.generic {indexing_maps = [#r, #r], iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<512x49xf32>) outs(%e : tensor<512x49xf32>) {
  ^bb0(%v: f32, %out: f32):
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  } -> tensor<512x49xf32>
  return %y : tensor<512x49xf32>
}

// -----

// Tests that when the kernel's root writes the product permuted (attention's
// probabilities times values [B, H, T, D] written seq-first as [T, B, H, D],
// as nn.MultiheadAttention's export does), the query rows are tiled by the
// register block on the root loop that indexes them (loop 0), not on its
// innermost tiled loop (the heads), and that loop is the tiles' innermost:
// a thread's run of tiles shares a head's values (rows outermost, each
// tile of 4 query rows read another head's keys and values: ViT-B/16's
// attention at batch 8 14.4 -> 6.8 ms a layer on 2 SPR cores).
// CHECK-LABEL: func.func @permuted_rows
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) = (0, 0, 0) to (2, 3, 16) step (1, 1, 4)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x1x4x64xf32>)
// AVX2-LABEL: func.func @permuted_rows
// AVX2: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) = (0, 0, 0) to (2, 3, 16) step (1, 1, 4)
#pa = affine_map<(b, h, t, d, k) -> (b, h, t, k)>
#pb = affine_map<(b, h, t, d, k) -> (b, h, k, d)>
#pc = affine_map<(b, h, t, d, k) -> (b, h, t, d)>
#pin = affine_map<(t, b, h, d) -> (b, h, t, d)>
#pout = affine_map<(t, b, h, d) -> (t, b, h, d)>
func.func @permuted_rows(%p: tensor<2x3x16x16xf32>, %v: tensor<2x3x16x64xf32>) -> tensor<16x2x3x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3x16x64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3x16x64xf32>) -> tensor<2x3x16x64xf32>
  %pv = linalg.generic {indexing_maps = [#pa, #pb, #pc], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x3x16x16xf32>, tensor<2x3x16x64xf32>) outs(%init : tensor<2x3x16x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x3x16x64xf32>
  %o = tensor.empty() : tensor<16x2x3x64xf32>
  %y = linalg.generic {indexing_maps = [#pin, #pout], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%pv : tensor<2x3x16x64xf32>) outs(%o : tensor<16x2x3x64xf32>) {
  ^bb0(%a: f32, %out: f32):
    linalg.yield %a : f32
  } -> tensor<16x2x3x64xf32>
  return %y : tensor<16x2x3x64xf32>
}

// -----

// Tests that a depthwise convolution stays out of the kernel of the
// transpose that reads it across its rows (ConvNeXt's NCHW -> NHWC
// permute): fused, each tile computed one pixel's channels without the
// register tile. The convolution is a kernel of its own, tiled as the
// register tile wants it: its loops are (n, oh, ow, c, ..), and each tile
// is one channel times 2 output rows, whole (8 input rows of 20), the
// tiles walking each channel's rows in turn (c outside oh); the transpose
// reads its result.
// CHECK-LABEL: func.func @conv_read_across_rows
// CHECK: scf.forall ({{.*}}) = (0, 0, 0) to (1, 16, 14) step (1, 1, 2)
// CHECK: linalg.depthwise_conv_2d_nchw_chw {{.*}} ins({{.*}} : tensor<1x1x8x20xf32>, tensor<1x7x7xf32>) outs({{.*}} : tensor<1x1x2x14xf32>)
// CHECK: scf.forall.in_parallel
// CHECK-NOT: linalg.depthwise_conv_2d_nchw_chw
// CHECK: linalg.transpose ins(%{{.*}} : tensor<1x16x14x14xf32>)
func.func @conv_read_across_rows(%x: tensor<1x16x20x20xf32>, %w: tensor<16x7x7xf32>) -> tensor<1x14x14x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x14x14xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x14x14xf32>) -> tensor<1x16x14x14xf32>
  %y = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w : tensor<1x16x20x20xf32>, tensor<16x7x7xf32>) outs(%c : tensor<1x16x14x14xf32>) -> tensor<1x16x14x14xf32>
  %t0 = tensor.empty() : tensor<1x14x14x16xf32>
  %t = linalg.transpose ins(%y : tensor<1x16x14x14xf32>) outs(%t0 : tensor<1x14x14x16xf32>)
       permutation = [0, 2, 3, 1]
  return %t : tensor<1x14x14x16xf32>
}

// -----

// Tests a depthwise convolution at 14x14 (no power of two above 2 divides
// 14): with a long epilogue (SiLU's exp and division) its tiles take 7
// rows, so the epilogue's chains overlap; with a bias alone 2 rows. One
// image's: the kernel's loop is marked for the threads to split however
// small (by channels here, as the 1x1 convolutions around it split them).
// CHECK-LABEL: func.func @depthwise_silu_rows
// CHECK: scf.forall ({{.*}}) = (0, 0, 0) to (1, 8, 14) step (1, 1, 7)
// CHECK: } {kiln.spread}
// CHECK-LABEL: func.func @depthwise_bias_rows
// CHECK: scf.forall ({{.*}}) = (0, 0, 0) to (1, 8, 14) step (1, 1, 2)
#dwid = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @depthwise_silu_rows(%x: tensor<1x8x18x18xf32>, %w: tensor<8x5x5xf32>) -> tensor<1x8x14x14xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<1x8x14x14xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x14x14xf32>) -> tensor<1x8x14x14xf32>
  %y = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w : tensor<1x8x18x18xf32>, tensor<8x5x5xf32>) outs(%c : tensor<1x8x14x14xf32>) -> tensor<1x8x14x14xf32>
  %o = tensor.empty() : tensor<1x8x14x14xf32>
  %s = linalg.generic {indexing_maps = [#dwid, #dwid], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%y : tensor<1x8x14x14xf32>) outs(%o : tensor<1x8x14x14xf32>) {
  ^bb0(%v: f32, %out: f32):
    %n = arith.negf %v : f32
    %x1 = math.exp %n : f32
    %d = arith.addf %x1, %one : f32
    %r = arith.divf %v, %d : f32
    linalg.yield %r : f32
  } -> tensor<1x8x14x14xf32>
  return %s : tensor<1x8x14x14xf32>
}
func.func @depthwise_bias_rows(%x: tensor<1x8x18x18xf32>, %w: tensor<8x5x5xf32>, %b: tensor<8xf32>) -> tensor<1x8x14x14xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x14x14xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x14x14xf32>) -> tensor<1x8x14x14xf32>
  %y = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w : tensor<1x8x18x18xf32>, tensor<8x5x5xf32>) outs(%c : tensor<1x8x14x14xf32>) -> tensor<1x8x14x14xf32>
  %o = tensor.empty() : tensor<1x8x14x14xf32>
  %s = linalg.generic {indexing_maps = [#dwid, affine_map<(d0, d1, d2, d3) -> (d1)>, #dwid], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%y, %b : tensor<1x8x14x14xf32>, tensor<8xf32>) outs(%o : tensor<1x8x14x14xf32>) {
  ^bb0(%v: f32, %bias: f32, %out: f32):
    %r = arith.addf %v, %bias : f32
    linalg.yield %r : f32
  } -> tensor<1x8x14x14xf32>
  return %s : tensor<1x8x14x14xf32>
}

// -----

// Tests a depthwise convolution at 56x56 with a bias: its tiles go by
// image rows, then channels, (n, oh, c), so the pool's halves are the top
// and bottom of every channel as a 1x1 convolution's pixel columns split
// them (at 14x14, above, by channels).
// CHECK-LABEL: func.func @depthwise_big_rows_first
// CHECK: scf.forall ({{.*}}) = (0, 0, 0) to (1, 56, 8) step (1, {{[0-9]+}}, 1)
// CHECK: } {kiln.spread}
func.func @depthwise_big_rows_first(%x: tensor<1x8x58x58xf32>, %w: tensor<8x3x3xf32>, %b: tensor<8xf32>) -> tensor<1x8x56x56xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x56x56xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x56x56xf32>) -> tensor<1x8x56x56xf32>
  %y = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w : tensor<1x8x58x58xf32>, tensor<8x3x3xf32>) outs(%c : tensor<1x8x56x56xf32>) -> tensor<1x8x56x56xf32>
  %o = tensor.empty() : tensor<1x8x56x56xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%y, %b : tensor<1x8x56x56xf32>, tensor<8xf32>) outs(%o : tensor<1x8x56x56xf32>) {
  ^bb0(%v: f32, %bias: f32, %out: f32):
    %r = arith.addf %v, %bias : f32
    linalg.yield %r : f32
  } -> tensor<1x8x56x56xf32>
  return %s : tensor<1x8x56x56xf32>
}

// -----

// Tests that a linear layer over a static number of rows no block divides
// (13 here; ViT's 197 tokens) is tiled by the register tile's row block
// all the same, the last tile partial (its rows a run-time size, as under
// a dynamic batch), not by one row per tile re-reading all of B.
// CHECK-LABEL: func.func @rows_no_block_divides
// CHECK: scf.forall ({{.*}}) = (0) to (13) step (4)
// CHECK: affine.min
// CHECK: linalg.generic
// CHECK-SAME: "reduction"
func.func @rows_no_block_divides(%x: tensor<13x32xf32>, %w: tensor<32x64xf32>, %b: tensor<64xf32>) -> tensor<13x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<13x64xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<13x64xf32>) -> tensor<13x64xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>,
                                        affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<13x32xf32>, tensor<32x64xf32>) outs(%c : tensor<13x64xf32>) {
  ^bb0(%a: f32, %bb: f32, %acc: f32):
    %p = arith.mulf %a, %bb : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<13x64xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (n)>,
                                        affine_map<(m, n) -> (m, n)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%m, %b : tensor<13x64xf32>, tensor<64xf32>) outs(%e : tensor<13x64xf32>) {
  ^bb0(%v: f32, %bias: f32, %o: f32):
    %s = arith.addf %v, %bias : f32
    linalg.yield %s : f32
  } -> tensor<13x64xf32>
  return %y : tensor<13x64xf32>
}

// -----

// Tests that a max-pool (with its cast to uint8) stays out of the kernel
// of the transpose that reads it across its rows (NCHW -> NHWC before a
// quantized model's channels-last convolutions): fused, each tile pooled
// one pixel's 64 channels, gathered from 64 planes. The pool is a kernel
// of its own, tiled by output rows; the transpose reads its result.
// CHECK-LABEL: func.func @pool_read_across_rows
// CHECK: scf.forall ({{.*}}) in (2, 64, 7)
// CHECK: linalg.pooling_nchw_max {{.*}} ins({{.*}} : tensor<1x1x3x15xf32>, tensor<3x3xf32>)
// CHECK: scf.forall.in_parallel
// CHECK-NOT: linalg.pooling_nchw_max
// CHECK: linalg.transpose ins(%{{.*}} : tensor<2x64x7x7xi8>)
func.func @pool_read_across_rows(%x: tensor<2x64x16x16xf32>) -> tensor<2x7x7x64xi8> {
  %ninf = arith.constant 0xFF800000 : f32
  %win = tensor.empty() : tensor<3x3xf32>
  %e = tensor.empty() : tensor<2x64x7x7xf32>
  %c = linalg.fill ins(%ninf : f32) outs(%e : tensor<2x64x7x7xf32>) -> tensor<2x64x7x7xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
       ins(%x, %win : tensor<2x64x16x16xf32>, tensor<3x3xf32>) outs(%c : tensor<2x64x7x7xf32>) -> tensor<2x64x7x7xf32>
  %q0 = tensor.empty() : tensor<2x64x7x7xi8>
  %q = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%p : tensor<2x64x7x7xf32>) outs(%q0 : tensor<2x64x7x7xi8>) {
  ^bb0(%a: f32, %out: i8):
    %i = arith.fptoui %a : f32 to i8
    linalg.yield %i : i8
  } -> tensor<2x64x7x7xi8>
  %t0 = tensor.empty() : tensor<2x7x7x64xi8>
  %t = linalg.transpose ins(%q : tensor<2x64x7x7xi8>) outs(%t0 : tensor<2x7x7x64xi8>) permutation = [0, 2, 3, 1]
  return %t : tensor<2x7x7x64xi8>
}

// -----

// Tests the kernel of a channels-last depthwise convolution and its bias:
// one output row of pixels whole per tile, the channels in blocks of 48
// (the widest whole vectors of 96 giving 48 tiles or more: 28 rows x 2
// blocks), the bias in the same tile as the epilogue.
// CHECK-LABEL: func.func @depthwise_nhwc
// CHECK: scf.forall (%{{.*}}, %[[R:.*]], %[[C:.*]]) = (0, 0, 0) to (1, 28, 96) step (1, 1, 48)
// CHECK: tensor.extract_slice %{{.*}}[%{{.*}}, %[[R]], 0, %[[C]]] [1, 3, 30, 48]
// CHECK: linalg.depthwise_conv_2d_nhwc_hwc {{.*}} -> tensor<1x1x28x48xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x1x28x48xf32>, tensor<48xf32>)
func.func @depthwise_nhwc(%x: tensor<1x30x30x96xf32>, %w: tensor<3x3x96xf32>, %b: tensor<96xf32>) -> tensor<1x28x28x96xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x28x28x96xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x28x28x96xf32>) -> tensor<1x28x28x96xf32>
  %c = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x30x30x96xf32>, tensor<3x3x96xf32>) outs(%f : tensor<1x28x28x96xf32>) -> tensor<1x28x28x96xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(n, h, w, c) -> (n, h, w, c)>, affine_map<(n, h, w, c) -> (c)>,
                                        affine_map<(n, h, w, c) -> (n, h, w, c)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c, %b : tensor<1x28x28x96xf32>, tensor<96xf32>) outs(%e : tensor<1x28x28x96xf32>) {
  ^bb0(%a: f32, %v: f32, %o: f32):
    %r = arith.addf %a, %v : f32
    linalg.yield %r : f32
  } -> tensor<1x28x28x96xf32>
  return %y : tensor<1x28x28x96xf32>
}

// -----

// Tests that a reduction over a channels-last depthwise convolution's
// channels (a LayerNorm's mean, tiled a pixel at a time) leaves the
// convolution its own kernel of row tiles rather than taking it in.
// CHECK-LABEL: func.func @depthwise_nhwc_then_mean
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) = (0, 0, 0) to (1, 28, 96) step (1, 1, 48)
// CHECK: linalg.depthwise_conv_2d_nhwc_hwc {{.*}} -> tensor<1x1x28x48xf32>
// CHECK: scf.forall
// CHECK-NOT: linalg.depthwise_conv_2d_nhwc_hwc
// CHECK: return
func.func @depthwise_nhwc_then_mean(%x: tensor<1x30x30x96xf32>, %w: tensor<3x3x96xf32>) -> tensor<1x28x28xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x28x28x96xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x28x28x96xf32>) -> tensor<1x28x28x96xf32>
  %c = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x30x30x96xf32>, tensor<3x3x96xf32>) outs(%f : tensor<1x28x28x96xf32>) -> tensor<1x28x28x96xf32>
  %e3 = tensor.empty() : tensor<1x28x28xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<1x28x28xf32>) -> tensor<1x28x28xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(n, h, w, c) -> (n, h, w, c)>, affine_map<(n, h, w, c) -> (n, h, w)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%c : tensor<1x28x28x96xf32>) outs(%f3 : tensor<1x28x28xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x28x28xf32>
  return %s : tensor<1x28x28xf32>
}

// RUN: kiln-opt %s -split-input-file -kiln-vectorize-conv=vector-bits=512 | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-vectorize-conv=vector-bits=256 | FileCheck %s --check-prefix=AVX2

// Tests the register tile of a 3x3 convolution with 16 output channels and
// 2 rows of 16 columns on AVX-512: blocks of 8 channels x 2 rows x one
// vector<16xf32> of columns stay in registers (iter_args) over c and kh; kw
// is unrolled, each input vector loaded once per tap feeds 8 FMAs and each
// broadcast weight 2. AVX2 (8 lanes): two vectors per row, 4 channels per
// block, one row (8 accumulators within its 12).
// CHECK-LABEL: func.func @conv3x3
// CHECK-NOT: linalg.conv_2d_nchw_fchw
// CHECK: scf.parallel (%[[F:.*]]) = (%c0) to (%c16) step (%c8)
// CHECK-COUNT-16: vector.load %{{.*}} : memref<1x16x2x16xf32>, vector<16xf32>
// CHECK: scf.for %[[C:.*]] = %c0 to %c8 step %c1 iter_args(
// CHECK: scf.for %[[KH:.*]] = %c0 to %c3 step %c1 iter_args(
// CHECK: %[[X0:.*]] = vector.load %{{.*}}[%c0, %[[C]], %{{.*}}, %c0] : memref<1x8x4x18xf32>, vector<16xf32>
// CHECK: %[[X1:.*]] = vector.load %{{.*}}[%c0, %[[C]], %{{.*}}, %c0] : memref<1x8x4x18xf32>, vector<16xf32>
// CHECK: %[[W:.*]] = memref.load %{{.*}}[%[[F]], %[[C]], %[[KH]], %c0] : memref<16x8x3x3xf32>
// CHECK: %[[B:.*]] = vector.broadcast %[[W]] : f32 to vector<16xf32>
// CHECK: vector.fma %[[B]], %[[X0]], %{{.*}} : vector<16xf32>
// CHECK: vector.fma %[[B]], %[[X1]], %{{.*}} : vector<16xf32>
// CHECK-COUNT-46: vector.fma
// CHECK-NOT: vector.fma
// CHECK: scf.yield
// CHECK-COUNT-16: vector.store %{{.*}} : memref<1x16x2x16xf32>, vector<16xf32>
// AVX2-LABEL: func.func @conv3x3
// AVX2: scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%c2, %c16) step (%c1, %c4)
// AVX2-COUNT-8: vector.load %{{.*}} : memref<1x16x2x16xf32>, vector<8xf32>
// AVX2-COUNT-24: vector.fma {{.*}} : vector<8xf32>
func.func @conv3x3(%x: memref<1x8x4x18xf32>, %w: memref<16x8x3x3xf32>, %y: memref<1x16x2x16xf32>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<1x8x4x18xf32>, memref<16x8x3x3xf32>) outs(%y : memref<1x16x2x16xf32>)
  return
}

// -----

// Tests a row of 20 columns: chunks of two vectors of 16 lanes; the only
// chunk is the last, so its second vector covers columns 16..19 under a
// 4-lane mask, on loads of the input and the output and on the store.
// CHECK-LABEL: func.func @ragged_row
// CHECK: vector.load %{{.*}}[%c0, %c0, %c0, %c0] : memref<1x8x1x20xf32>, vector<16xf32>
// CHECK: %[[M:.*]] = vector.constant_mask [4] : vector<16xi1>
// CHECK: vector.maskedload %{{.*}}[%c0, %c0, %c0, %c16], %[[M]]
// CHECK: scf.for
// CHECK: vector.maskedload {{.*}} : memref<1x4x3x22xf32>
// CHECK: vector.maskedstore %{{.*}}[%c0, %c0, %c0, %c16]
func.func @ragged_row(%x: memref<1x4x3x22xf32>, %w: memref<8x4x3x3xf32>, %y: memref<1x8x1x20xf32>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<1x4x3x22xf32>, memref<8x4x3x3xf32>) outs(%y : memref<1x8x1x20xf32>)
  return
}

// -----

// Tests stride 2: each input vector is 32 lanes loaded and the even ones
// kept; in the last chunk the loads that would pass the row's end (width
// 33: 2*15 + kw + 1 > 33 for kw = 2) are masked to the columns that exist.
// The kept lanes are in the order of an in-lane shuffle (per 128-bit
// block two columns of each half), the accumulators too: permuted once
// at their load and store, not per tap.
// CHECK-LABEL: func.func @stride2
// CHECK: %[[Y:.*]] = vector.load %{{.*}} : memref<1x8x1x16xf32>, vector<16xf32>
// CHECK: vector.shuffle %[[Y]], %[[Y]] [0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15]
// CHECK: vector.load %{{.*}} : memref<1x4x3x33xf32>, vector<32xf32>
// CHECK: vector.shuffle %{{.*}} [0, 2, 16, 18, 4, 6, 20, 22, 8, 10, 24, 26, 12, 14, 28, 30] : vector<32xf32>, vector<32xf32>
// CHECK: vector.maskedload %{{.*}} : memref<1x4x3x33xf32>, vector<32xi1>, vector<32xf32> into vector<32xf32>
// CHECK: %[[S:.*]] = vector.shuffle %{{.*}} [0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15]
// CHECK: vector.store %[[S]]
// AVX2-LABEL: func.func @stride2
// AVX2: vector.shuffle %{{.*}} [0, 1, 4, 5, 2, 3, 6, 7] : vector<8xf32>
// AVX2: vector.shuffle %{{.*}} [0, 2, 8, 10, 4, 6, 12, 14] : vector<16xf32>
// AVX2: %[[S:.*]] = vector.shuffle %{{.*}} [0, 1, 4, 5, 2, 3, 6, 7] : vector<8xf32>
// AVX2: vector.store %[[S]]
func.func @stride2(%x: memref<1x4x3x33xf32>, %w: memref<8x4x3x3xf32>, %y: memref<1x8x1x16xf32>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : memref<1x4x3x33xf32>, memref<8x4x3x3xf32>) outs(%y : memref<1x8x1x16xf32>)
  return
}

// -----

// Tests long rows: the chunks but the last run in a loop, unmasked.
// CHECK-LABEL: func.func @long_row
// CHECK: scf.for %[[OW:.*]] = %c0 to %c64 step %c32
// CHECK-NOT: vector.maskedload
// CHECK: vector.load %{{.*}}[%c0, %{{.*}}, %c0, %[[OW]]]
// CHECK: scf.yield
// CHECK: vector.maskedload
func.func @long_row(%x: memref<1x2x1x70xf32>, %w: memref<8x2x1x1xf32>, %y: memref<1x8x1x70xf32>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<1x2x1x70xf32>, memref<8x2x1x1xf32>) outs(%y : memref<1x8x1x70xf32>)
  return
}

// -----

// Tests the refusals: dilation, a column stride of 3, dynamic shapes and
// f64 stay linalg (lowered to loops later).
// CHECK-LABEL: func.func @refused
// CHECK-COUNT-4: linalg.conv_2d_nchw_fchw
// CHECK-NOT: vector.fma
func.func @refused(%x: memref<1x4x9x9xf32>, %w: memref<8x4x3x3xf32>, %y: memref<1x8x5x5xf32>,
                   %y3: memref<1x8x3x3xf32>, %xd: memref<?x4x9x9xf32>, %yd: memref<?x8x7x7xf32>,
                   %x64: memref<1x4x9x9xf64>, %w64: memref<8x4x3x3xf64>, %y64: memref<1x8x7x7xf64>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<1x4x9x9xf32>, memref<8x4x3x3xf32>) outs(%y : memref<1x8x5x5xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<3> : tensor<2xi64>}
      ins(%x, %w : memref<1x4x9x9xf32>, memref<8x4x3x3xf32>) outs(%y3 : memref<1x8x3x3xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%xd, %w : memref<?x4x9x9xf32>, memref<8x4x3x3xf32>) outs(%yd : memref<?x8x7x7xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x64, %w64 : memref<1x4x9x9xf64>, memref<8x4x3x3xf64>) outs(%y64 : memref<1x8x7x7xf64>)
  return
}

// -----

// Tests the epilogue in registers: the bias-and-ReLU generic after the
// convolution reads the tile's temporary only where it writes, so its body
// runs on the accumulators (the bias broadcast per channel) and stores to
// its output; the temporary's zero fill becomes the accumulators' initial
// value, and neither the fill, the convolution nor the generic remain.
// CHECK-LABEL: func.func @epilogue
// CHECK-NOT: linalg.fill
// CHECK: %[[Z:.*]] = arith.constant dense<0.000000e+00> : vector<16xf32>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[Z]]
// CHECK: vector.fma
// CHECK: %[[BIAS:.*]] = memref.load %{{.*}}[%c0, %c0] : memref<1x4xf32>
// CHECK: %[[BB:.*]] = vector.broadcast %[[BIAS]] : f32 to vector<16xf32>
// CHECK: %[[S:.*]] = arith.addf %{{.*}}, %[[BB]] : vector<16xf32>
// CHECK: %[[R:.*]] = arith.maximumf %[[S]], %{{.*}} : vector<16xf32>
// CHECK: vector.store %[[R]], %arg3[%c0, %c0, %c0, %c0] : memref<1x4x1x16xf32>, vector<16xf32>
// CHECK-NOT: linalg.
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d0, d1)>
func.func @epilogue(%x: memref<1x2x3x18xf32>, %w: memref<4x2x3x3xf32>, %b: memref<1x4xf32>, %y: memref<1x4x1x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloca() : memref<1x4x1x16xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<1x4x1x16xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<1x2x3x18xf32>, memref<4x2x3x3xf32>) outs(%t : memref<1x4x1x16xf32>)
  linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%t, %b : memref<1x4x1x16xf32>, memref<1x4xf32>) outs(%y : memref<1x4x1x16xf32>) {
  ^bb0(%v: f32, %bias: f32, %out: f32):
    %s = arith.addf %v, %bias : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Tests that an epilogue that also reads the temporary elsewhere (here:
// transposed) stays a loop of its own after the register tile.
// CHECK-LABEL: func.func @epilogue_refused
// CHECK: vector.fma
// CHECK: linalg.generic
#t = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#tt = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2, d1)>
func.func @epilogue_refused(%x: memref<1x2x3x6xf32>, %w: memref<4x2x3x3xf32>, %y: memref<1x4x1x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloca() : memref<1x4x1x4xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<1x4x1x4xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<1x2x3x6xf32>, memref<4x2x3x3xf32>) outs(%t : memref<1x4x1x4xf32>)
  linalg.generic {indexing_maps = [#t, #tt, #t], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%t, %t : memref<1x4x1x4xf32>, memref<1x4x1x4xf32>) outs(%y : memref<1x4x1x4xf32>) {
  ^bb0(%a: f32, %c: f32, %out: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests a depthwise 3x3 convolution (4 channels, 8 rows of 16 columns) on
// AVX-512: one channel per block (channels share no input) and all 8 rows
// in registers, one vector each; each tap loads the channel's own input
// rows and broadcasts its own weight, w[c, kh, kw]; its ReLU epilogue is
// applied to the accumulators before they are stored.
// CHECK-LABEL: func.func @depthwise
// CHECK-NOT: linalg.depthwise_conv_2d_nchw_chw
// CHECK: scf.parallel (%[[F:.*]]) = (%c0) to (%c4) step (%c1)
// CHECK: scf.for %{{.*}} = %c0 to %c1 step %c1 iter_args(
// CHECK: scf.for %[[KH:.*]] = %c0 to %c3 step %c1 iter_args(
// CHECK: vector.load %{{.*}}[%c0, %[[F]], %{{.*}}, %c0] : memref<1x4x10x18xf32>, vector<16xf32>
// CHECK: memref.load %{{.*}}[%[[F]], %[[KH]], %c0] : memref<4x3x3xf32>
// CHECK-COUNT-24: vector.fma {{.*}} : vector<16xf32>
// CHECK-NOT: vector.fma
// CHECK: arith.maximumf {{.*}} : vector<16xf32>
// CHECK: vector.store %{{.*}} : memref<1x4x8x16xf32>, vector<16xf32>
func.func @depthwise(%x: memref<1x4x10x18xf32>, %w: memref<4x3x3xf32>, %y: memref<1x4x8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %acc = memref.alloc() : memref<1x4x8x16xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<1x4x8x16xf32>)
  linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<1x4x10x18xf32>, memref<4x3x3xf32>) outs(%acc : memref<1x4x8x16xf32>)
  linalg.generic {indexing_maps = [affine_map<(n, c, h, w) -> (n, c, h, w)>, affine_map<(n, c, h, w) -> (n, c, h, w)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc : memref<1x4x8x16xf32>) outs(%y : memref<1x4x8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  }
  memref.dealloc %acc : memref<1x4x8x16xf32>
  return
}

// -----

// Tests the packed convolution's tile (kiln-pack-conv-weights' form) on
// AVX-512: 2 vectors of 16 output channels x 8 pixels in registers; per
// (c, kh) step and tap, the two channel vectors loaded from their panels
// and each pixel's input element broadcast; then each channel vector's
// 8 pixels transposed (one shuffle) into 16 rows of 8, the bias and ReLU
// applied, and stored to the output viewed as [N, F, OH*OW]. The fill, the
// generic and the epilogue are gone. AVX2 (8 lanes) leaves it: packed for
// another width.
// CHECK-LABEL: func.func @packed
// CHECK-NOT: linalg.fill
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %arg3 {{\[}}[0], [1], [2, 3]] : memref<1x32x1x8xf32> into memref<1x32x8xf32>
// CHECK: scf.for %[[C:.*]] = %c0 to %c2
// CHECK: scf.for %[[KH:.*]] = %c0 to %c3
// CHECK: vector.load %arg1[%c0, %{{.*}}, %[[KH]], %c0, %c0] : memref<2x2x3x3x16xf32>, vector<16xf32>
// CHECK: vector.load %arg1[%c1, %{{.*}}, %[[KH]], %c0, %c0] : memref<2x2x3x3x16xf32>, vector<16xf32>
// CHECK: %[[X:.*]] = memref.load %arg0[%c0, %{{.*}}, %{{.*}}, %c0] : memref<1x2x3x10xf32>
// CHECK: %[[BX:.*]] = vector.broadcast %[[X]] : f32 to vector<16xf32>
// CHECK: vector.fma %{{.*}}, %[[BX]], %{{.*}} : vector<16xf32>
// CHECK: vector.shuffle {{.*}} [0, 16, 32, 48, 64, 80, 96, 112, 1, 17,
// CHECK: %[[ROW:.*]] = vector.extract %{{.*}}[0] : vector<8xf32> from vector<16x8xf32>
// CHECK: %[[BIAS:.*]] = memref.load %arg2[%c0, %c0] : memref<1x32xf32>
// CHECK: arith.maximumf
// CHECK: vector.store %{{.*}}, %[[FLAT]][%c0, %c0, %c0] : memref<1x32x8xf32>, vector<8xf32>
// CHECK-NOT: linalg.
// AVX2-LABEL: func.func @packed
// AVX2: linalg.generic
#in = affine_map<(n, f, oh, ow, c, kh, kw) -> (n, c, oh + kh, ow + kw)>
#wp = affine_map<(n, f, oh, ow, c, kh, kw) -> (f floordiv 16, c, kh, kw, f mod 16)>
#out = affine_map<(n, f, oh, ow, c, kh, kw) -> (n, f, oh, ow)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d0, d1)>
func.func @packed(%x: memref<1x2x3x10xf32>, %w: memref<2x2x3x3x16xf32>, %b: memref<1x32xf32>, %y: memref<1x32x1x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloca() : memref<1x32x1x8xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<1x32x1x8xf32>)
  linalg.generic {indexing_maps = [#in, #wp, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w : memref<1x2x3x10xf32>, memref<2x2x3x3x16xf32>) outs(%t : memref<1x32x1x8xf32>) {
  ^bb0(%a: f32, %bw: f32, %acc: f32):
    %p = arith.mulf %a, %bw : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%t, %b : memref<1x32x1x8xf32>, memref<1x32xf32>) outs(%y : memref<1x32x1x8xf32>) {
  ^bb0(%v: f32, %bias: f32, %o: f32):
    %s = arith.addf %v, %bias : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Tests the input channels in blocks whose weight panels fit L1: 48
// channels of 2 x 3 x 3 x 16 floats are 54 KiB, so blocks of 16 (18 KiB).
// The first block starts from zero and parks its sums in a stack buffer
// [N, channel vectors, pixels, lanes]; the middle one (a loop, from channel 16)
// reads and parks them; the last (channels 32-47) reads them and stores.
// With no epilogue, the output's old values are added (a convolution
// accumulates into its init).
// CHECK-LABEL: func.func @packed_blocked
// CHECK: %[[PARK:.*]] = memref.alloca() {alignment = 64 : i64} : memref<1x2x8x16xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c16
// CHECK: vector.store %{{.*}}, %[[PARK]]
// CHECK: vector.load %[[PARK]]
// CHECK: scf.for %[[MID:.*]] = %c0 to %c16
// CHECK: arith.addi %[[MID]], %c16
// CHECK: vector.store %{{.*}}, %[[PARK]]
// CHECK: vector.load %[[PARK]]
// CHECK: scf.for %[[LAST:.*]] = %c0 to %c16
// CHECK: arith.addi %[[LAST]], %c32
// CHECK: %[[OLD:.*]] = vector.load %{{.*}} : memref<1x32x8xf32>, vector<8xf32>
// CHECK: arith.addf %[[OLD]]
// CHECK: vector.store
#in = affine_map<(n, f, oh, ow, c, kh, kw) -> (n, c, oh + kh, ow + kw)>
#wp = affine_map<(n, f, oh, ow, c, kh, kw) -> (f floordiv 16, c, kh, kw, f mod 16)>
#out = affine_map<(n, f, oh, ow, c, kh, kw) -> (n, f, oh, ow)>
func.func @packed_blocked(%x: memref<1x48x3x10xf32>, %w: memref<2x48x3x3x16xf32>, %y: memref<1x32x1x8xf32>) {
  linalg.generic {indexing_maps = [#in, #wp, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w : memref<1x48x3x10xf32>, memref<2x48x3x3x16xf32>) outs(%y : memref<1x32x1x8xf32>) {
  ^bb0(%a: f32, %bw: f32, %acc: f32):
    %p = arith.mulf %a, %bw : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests AVX2's packed tile on two rows of a 14-wide output (ResNet-50's
// 256-channel stride-2 layer): 5 pixels per tile (2 x 5 accumulators fill
// the two FMA pipes of 5 cycles, 2 x 4 left them idle a fifth of the
// time), 5 tiles over the 28 pixels, 2 channel vectors x 5 pixels = 10
// FMAs a tap, 30 a kernel row, then one tile of the 3 pixels left (18).
// AVX-512 leaves it: packed for another width.
// CHECK-LABEL: func.func @packed_two_rows
// CHECK: linalg.generic
// AVX2-LABEL: func.func @packed_two_rows
// AVX2: scf.for %{{.*}} = %c0 to %c25 step %c5
// AVX2: scf.for %{{.*}} = %c0 to %c4 step %c1 iter_args(
// AVX2: scf.for %{{.*}} = %c0 to %c3 step %c1 iter_args(
// AVX2-COUNT-30: vector.fma
// AVX2-NOT: vector.fma
// AVX2: scf.yield
// AVX2: scf.for %{{.*}} = %c0 to %c3 step %c1 iter_args(
// AVX2-COUNT-18: vector.fma
// AVX2-NOT: vector.fma
// AVX2: scf.yield
#in2 = affine_map<(n, f, oh, ow, c, kh, kw) -> (n, c, oh * 2 + kh, ow * 2 + kw)>
#wp2 = affine_map<(n, f, oh, ow, c, kh, kw) -> (f floordiv 8, c, kh, kw, f mod 8)>
#out2 = affine_map<(n, f, oh, ow, c, kh, kw) -> (n, f, oh, ow)>
func.func @packed_two_rows(%x: memref<1x4x5x29xf32>, %w: memref<2x4x3x3x8xf32>, %y: memref<1x16x2x14xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<1x16x2x14xf32>)
  linalg.generic {indexing_maps = [#in2, #wp2, #out2], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w : memref<1x4x5x29xf32>, memref<2x4x3x3x8xf32>) outs(%y : memref<1x16x2x14xf32>) {
  ^bb0(%a: f32, %bw: f32, %acc: f32):
    %p = arith.mulf %a, %bw : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests the channels-last depthwise tile for AVX2 (8 lanes), one row of 12 output
// pixels x 12 channels (a whole vector of 8, then 4 lanes under a mask);
// 12 columns make two groups of 6 pixels, each group's 6 accumulators kept
// over the kh loop and the 3 kw taps unrolled: per tap one weight vector
// w[kh, kw, c0 ..] shared by the 6 FMAs, each reading its pixel's input
// vector. The bias (per channel, along the vector) is added to the
// accumulators, which start at the fill's zeros; the fill, the temporary
// and the epilogue are gone.
// AVX2-LABEL: func.func @depthwise_nhwc
// AVX2-NOT: linalg.fill
// AVX2-NOT: linalg.depthwise_conv_2d_nhwc_hwc
// AVX2: scf.for %[[G:.*]] = %c0 to %c12 step %c6
// AVX2: scf.for %[[KH:.*]] = %c0 to %c3 step %c1 iter_args(
// AVX2: vector.load %arg1[%[[KH]], %c0, %c0] : memref<3x3x12xf32>, vector<8xf32>
// AVX2-COUNT-6: vector.fma {{.*}} : vector<8xf32>
// AVX2: vector.load %arg1[%[[KH]], %c1, %c0] : memref<3x3x12xf32>, vector<8xf32>
// AVX2-COUNT-12: vector.fma {{.*}} : vector<8xf32>
// AVX2-NOT: vector.fma
// AVX2: vector.load %arg2[%c0] : memref<12xf32>, vector<8xf32>
// AVX2: arith.addf {{.*}} : vector<8xf32>
// AVX2: vector.store %{{.*}}, %arg3[%c0, %c0, %{{.*}}, %c0] : memref<1x1x12x12xf32>, vector<8xf32>
// AVX2: vector.maskedload %arg1[%{{.*}}, %c0, %c8]
// AVX2: vector.maskedstore %arg3
func.func @depthwise_nhwc(%x: memref<1x3x14x12xf32>, %w: memref<3x3x12xf32>, %b: memref<12xf32>, %y: memref<1x1x12x12xf32>) {
  %zero = arith.constant 0.0 : f32
  %acc = memref.alloc() : memref<1x1x12x12xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<1x1x12x12xf32>)
  linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<1x3x14x12xf32>, memref<3x3x12xf32>) outs(%acc : memref<1x1x12x12xf32>)
  linalg.generic {indexing_maps = [affine_map<(n, h, w, c) -> (n, h, w, c)>, affine_map<(n, h, w, c) -> (c)>,
                                   affine_map<(n, h, w, c) -> (n, h, w, c)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc, %b : memref<1x1x12x12xf32>, memref<12xf32>) outs(%y : memref<1x1x12x12xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %r = arith.addf %a, %c : f32
    linalg.yield %r : f32
  }
  memref.dealloc %acc : memref<1x1x12x12xf32>
  return
}

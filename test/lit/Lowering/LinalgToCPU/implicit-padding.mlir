// RUN: kiln-opt %s --kiln-implicit-padding | FileCheck %s

// A depthwise convolution's tile reads the image its zero pad was made of:
// the fill, the copy and the padded buffer are gone; a row outside the
// image is the zero row (a select of two row views), and the epilogue
// (ReLU) runs on the accumulators.

#stride2 = affine_map<(d0) -> (d0 * 2)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
memref.global "private" constant @weights : memref<4x1x3x3xf32> = dense<1.0> {alignment = 64 : i64}

// (Globals are created at the module's start: the last first.)
// CHECK: memref.global "private" constant @__kiln_ninf_row_16 : memref<16xf32> = dense<0xFF800000>
// CHECK: memref.global "private" constant @__kiln_zero_row_20 : memref<20xf32> = dense<0.000000e+00> {alignment = 64 : i64}
// CHECK-LABEL: func.func @implicit
// CHECK-NOT: linalg.map
// CHECK-NOT: linalg.copy
// CHECK: %[[ZERO:.*]] = memref.get_global @__kiln_zero_row_20
// CHECK: %[[IMAGE:.*]] = memref.expand_shape %{{.*}} {{\[\[}}0, 1], [2], [3]] output_shape [1, 4, 6, 20]
// CHECK: scf.parallel
// CHECK: %[[INSIDE:.*]] = arith.cmpi ult, %{{.*}}, %c6
// CHECK: %[[ROW:.*]] = memref.subview %[[IMAGE]]
// CHECK: %[[ZEROS:.*]] = memref.cast %[[ZERO]]
// CHECK: arith.select %[[INSIDE]], %[[ROW]], %[[ZEROS]]
// CHECK: vector.fma
// CHECK: arith.maximumf
// CHECK-NOT: linalg.depthwise_conv_2d_nchw_chw
// CHECK-NOT: memref<4x8x22xf32>
// CHECK: return
func.func @implicit(%arg0: memref<1x4x6x20xf32>, %arg1: memref<1x4x3x10xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = memref.get_global @weights : memref<4x1x3x3xf32>
  %image = memref.collapse_shape %arg0 [[0, 1], [2], [3]] : memref<1x4x6x20xf32> into memref<4x6x20xf32>
  %padded = memref.alloc() {alignment = 64 : i64} : memref<4x8x22xf32>
  linalg.map outs(%padded : memref<4x8x22xf32>)
    (%init: f32) {
      linalg.yield %cst : f32
    }
  %window = memref.subview %padded[0, 1, 1] [4, 6, 20] [1, 1, 1] : memref<4x8x22xf32> to memref<4x6x20xf32, strided<[176, 22, 1], offset: 23>>
  linalg.copy ins(%image : memref<4x6x20xf32>) outs(%window : memref<4x6x20xf32, strided<[176, 22, 1], offset: 23>>)
  %expanded = memref.expand_shape %padded [[0, 1], [2], [3]] output_shape [1, 4, 8, 22] : memref<4x8x22xf32> into memref<1x4x8x22xf32>
  %w = memref.collapse_shape %0 [[0, 1], [2], [3]] : memref<4x1x3x3xf32> into memref<4x3x3xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  scf.parallel (%c, %r) = (%c0, %c0) to (%c4, %c3) step (%c1, %c1) {
    %row = affine.apply #stride2(%r)
    %in = memref.subview %expanded[0, %c, %row, 0] [1, 1, 3, 21] [1, 1, 1, 1] : memref<1x4x8x22xf32> to memref<1x1x3x21xf32, strided<[704, 176, 22, 1], offset: ?>>
    %wc = memref.subview %w[%c, 0, 0] [1, 3, 3] [1, 1, 1] : memref<4x3x3xf32> to memref<1x3x3xf32, strided<[9, 3, 1], offset: ?>>
    %acc = memref.alloc() {alignment = 64 : i64} : memref<1x1x1x10xf32>
    linalg.fill ins(%cst : f32) outs(%acc : memref<1x1x1x10xf32>)
    linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%in, %wc : memref<1x1x3x21xf32, strided<[704, 176, 22, 1], offset: ?>>, memref<1x3x3xf32, strided<[9, 3, 1], offset: ?>>) outs(%acc : memref<1x1x1x10xf32>)
    %out = memref.subview %arg1[0, %c, %r, 0] [1, 1, 1, 10] [1, 1, 1, 1] : memref<1x4x3x10xf32> to memref<1x1x1x10xf32, strided<[120, 30, 10, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%acc : memref<1x1x1x10xf32>) outs(%out : memref<1x1x1x10xf32, strided<[120, 30, 10, 1], offset: ?>>) {
    ^bb0(%a: f32, %o: f32):
      %m = arith.maximumf %a, %cst : f32
      linalg.yield %m : f32
    }
    memref.dealloc %acc : memref<1x1x1x10xf32>
    scf.reduce
  }
  memref.dealloc %padded : memref<4x8x22xf32>
  return
}

// The padded image is also an output: the pad stays.
// CHECK-LABEL: func.func @read_elsewhere
// CHECK: linalg.fill
// CHECK: linalg.copy
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK: linalg.copy
func.func @read_elsewhere(%arg0: memref<1x2x8x8xf32>, %w: memref<4x2x3x3xf32>,
                          %arg1: memref<1x4x8x8xf32>, %arg2: memref<1x2x10x10xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %padded = memref.alloc() {alignment = 64 : i64} : memref<1x2x10x10xf32>
  linalg.fill ins(%cst : f32) outs(%padded : memref<1x2x10x10xf32>)
  %window = memref.subview %padded[0, 0, 1, 1] [1, 2, 8, 8] [1, 1, 1, 1] : memref<1x2x10x10xf32> to memref<1x2x8x8xf32, strided<[200, 100, 10, 1], offset: 11>>
  linalg.copy ins(%arg0 : memref<1x2x8x8xf32>) outs(%window : memref<1x2x8x8xf32, strided<[200, 100, 10, 1], offset: 11>>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%padded, %w : memref<1x2x10x10xf32>, memref<4x2x3x3xf32>) outs(%arg1 : memref<1x4x8x8xf32>)
  linalg.copy ins(%padded : memref<1x2x10x10xf32>) outs(%arg2 : memref<1x2x10x10xf32>)
  memref.dealloc %padded : memref<1x2x10x10xf32>
  return
}

// The image is written after the pad copied it: the pad stays.
// CHECK-LABEL: func.func @written_between
// CHECK: linalg.copy
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%arg0
// CHECK: linalg.conv_2d_nchw_fchw
func.func @written_between(%arg0: memref<1x2x8x8xf32>, %w: memref<4x2x3x3xf32>,
                           %arg1: memref<1x4x8x8xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %padded = memref.alloc() {alignment = 64 : i64} : memref<1x2x10x10xf32>
  linalg.fill ins(%cst : f32) outs(%padded : memref<1x2x10x10xf32>)
  %window = memref.subview %padded[0, 0, 1, 1] [1, 2, 8, 8] [1, 1, 1, 1] : memref<1x2x10x10xf32> to memref<1x2x8x8xf32, strided<[200, 100, 10, 1], offset: 11>>
  linalg.copy ins(%arg0 : memref<1x2x8x8xf32>) outs(%window : memref<1x2x8x8xf32, strided<[200, 100, 10, 1], offset: 11>>)
  linalg.fill ins(%one : f32) outs(%arg0 : memref<1x2x8x8xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%padded, %w : memref<1x2x10x10xf32>, memref<4x2x3x3xf32>) outs(%arg1 : memref<1x4x8x8xf32>)
  memref.dealloc %padded : memref<1x2x10x10xf32>
  return
}

// A dense convolution reading the whole padded buffer (no tile): its
// register tile reads the image, offsets 0.
// CHECK-LABEL: func.func @whole
// CHECK-NOT: linalg.copy
// CHECK: memref.get_global @__kiln_zero_row_8
// CHECK: vector.fma
// CHECK-NOT: linalg.conv_2d_nchw_fchw
// CHECK: return
func.func @whole(%arg0: memref<1x2x8x8xf32>, %w: memref<4x2x3x3xf32>,
                 %arg1: memref<1x4x8x8xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %padded = memref.alloc() {alignment = 64 : i64} : memref<1x2x10x10xf32>
  linalg.fill ins(%cst : f32) outs(%padded : memref<1x2x10x10xf32>)
  %window = memref.subview %padded[0, 0, 1, 1] [1, 2, 8, 8] [1, 1, 1, 1] : memref<1x2x10x10xf32> to memref<1x2x8x8xf32, strided<[200, 100, 10, 1], offset: 11>>
  linalg.copy ins(%arg0 : memref<1x2x8x8xf32>) outs(%window : memref<1x2x8x8xf32, strided<[200, 100, 10, 1], offset: 11>>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%padded, %w : memref<1x2x10x10xf32>, memref<4x2x3x3xf32>) outs(%arg1 : memref<1x4x8x8xf32>)
  memref.dealloc %padded : memref<1x2x10x10xf32>
  return
}

// The image's deallocation before the convolution moves after it, the
// convolution now reading the image.
// CHECK-LABEL: func.func @dealloc_moves
// CHECK-NOT: linalg.copy
// CHECK: %[[IMAGE:.*]] = memref.alloc() {{.*}} : memref<1x2x8x8xf32>
// CHECK: vector.fma
// CHECK: memref.dealloc %[[IMAGE]]
// CHECK-NEXT: return
func.func @dealloc_moves(%arg0: memref<1x2x8x8xf32>, %w: memref<4x2x3x3xf32>,
                         %arg1: memref<1x4x8x8xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %image = memref.alloc() {alignment = 64 : i64} : memref<1x2x8x8xf32>
  linalg.copy ins(%arg0 : memref<1x2x8x8xf32>) outs(%image : memref<1x2x8x8xf32>)
  %padded = memref.alloc() {alignment = 64 : i64} : memref<1x2x10x10xf32>
  linalg.fill ins(%cst : f32) outs(%padded : memref<1x2x10x10xf32>)
  %window = memref.subview %padded[0, 0, 1, 1] [1, 2, 8, 8] [1, 1, 1, 1] : memref<1x2x10x10xf32> to memref<1x2x8x8xf32, strided<[200, 100, 10, 1], offset: 11>>
  linalg.copy ins(%image : memref<1x2x8x8xf32>) outs(%window : memref<1x2x8x8xf32, strided<[200, 100, 10, 1], offset: 11>>)
  memref.dealloc %image : memref<1x2x8x8xf32>
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%padded, %w : memref<1x2x10x10xf32>, memref<4x2x3x3xf32>) outs(%arg1 : memref<1x4x8x8xf32>)
  memref.dealloc %padded : memref<1x2x10x10xf32>
  return
}

// A deallocation of the image inside a branch cannot be moved: the pad
// stays.
// CHECK-LABEL: func.func @dealloc_in_branch
// CHECK: linalg.copy ins(%{{.*}} : memref<1x2x8x8xf32>) outs(%{{.*}} : memref<1x2x8x8xf32, strided
// CHECK: scf.if
// CHECK: linalg.conv_2d_nchw_fchw
func.func @dealloc_in_branch(%arg0: memref<1x2x8x8xf32>, %w: memref<4x2x3x3xf32>,
                             %arg1: memref<1x4x8x8xf32>, %free: i1) {
  %cst = arith.constant 0.000000e+00 : f32
  %image = memref.alloc() {alignment = 64 : i64} : memref<1x2x8x8xf32>
  linalg.copy ins(%arg0 : memref<1x2x8x8xf32>) outs(%image : memref<1x2x8x8xf32>)
  %padded = memref.alloc() {alignment = 64 : i64} : memref<1x2x10x10xf32>
  linalg.fill ins(%cst : f32) outs(%padded : memref<1x2x10x10xf32>)
  %window = memref.subview %padded[0, 0, 1, 1] [1, 2, 8, 8] [1, 1, 1, 1] : memref<1x2x10x10xf32> to memref<1x2x8x8xf32, strided<[200, 100, 10, 1], offset: 11>>
  linalg.copy ins(%image : memref<1x2x8x8xf32>) outs(%window : memref<1x2x8x8xf32, strided<[200, 100, 10, 1], offset: 11>>)
  scf.if %free {
    memref.dealloc %image : memref<1x2x8x8xf32>
  }
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%padded, %w : memref<1x2x10x10xf32>, memref<4x2x3x3xf32>) outs(%arg1 : memref<1x4x8x8xf32>)
  memref.dealloc %padded : memref<1x2x10x10xf32>
  return
}


// A max pool reads the image its -inf pad was made of: rows outside it
// are a row of -inf, the first chunk's column left of it is shifted in as
// -inf, and the pad buffer is gone.
// CHECK-LABEL: func.func @max_pool
// CHECK-NOT: linalg.copy
// CHECK: %[[NINF:.*]] = memref.get_global @__kiln_ninf_row_16
// CHECK: scf.parallel
// CHECK: %[[INSIDE:.*]] = arith.cmpi ult, %{{.*}}, %c8
// CHECK: %[[ROW:.*]] = memref.subview %arg0
// CHECK: %[[PAD:.*]] = memref.cast %[[NINF]]
// CHECK: %[[READ:.*]] = arith.select %[[INSIDE]], %[[ROW]], %[[PAD]]
// CHECK: %[[M:.*]] = vector.constant_mask [15] : vector<16xi1>
// CHECK: %[[V:.*]] = vector.maskedload %[[READ]][%c0{{.*}}], %[[M]], %[[FILL:.*]] :
// CHECK: vector.shuffle %[[V]], %[[FILL]] [16, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]
// CHECK: arith.maximumf
// CHECK-NOT: linalg.pooling_nchw_max
// CHECK: return
func.func @max_pool(%arg0: memref<1x2x8x16xf32>, %arg1: memref<1x2x4x8xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %padded = memref.alloc() {alignment = 64 : i64} : memref<1x2x10x18xf32>
  linalg.fill ins(%ninf : f32) outs(%padded : memref<1x2x10x18xf32>)
  %window = memref.subview %padded[0, 0, 1, 1] [1, 2, 8, 16] [1, 1, 1, 1] : memref<1x2x10x18xf32> to memref<1x2x8x16xf32, strided<[360, 180, 18, 1], offset: 19>>
  linalg.copy ins(%arg0 : memref<1x2x8x16xf32>) outs(%window : memref<1x2x8x16xf32, strided<[360, 180, 18, 1], offset: 19>>)
  %k = memref.alloc() : memref<3x3xf32>
  linalg.fill ins(%ninf : f32) outs(%arg1 : memref<1x2x4x8xf32>)
  linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%padded, %k : memref<1x2x10x18xf32>, memref<3x3xf32>) outs(%arg1 : memref<1x2x4x8xf32>)
  memref.dealloc %padded : memref<1x2x10x18xf32>
  return
}


// A max pool reading a zero pad (zeros are not -inf to a maximum): the
// pad stays.
// CHECK-LABEL: func.func @max_pool_zero_pad
// CHECK: linalg.copy
// CHECK: linalg.pooling_nchw_max
func.func @max_pool_zero_pad(%arg0: memref<1x2x8x16xf32>, %arg1: memref<1x2x4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %padded = memref.alloc() {alignment = 64 : i64} : memref<1x2x10x18xf32>
  linalg.fill ins(%zero : f32) outs(%padded : memref<1x2x10x18xf32>)
  %window = memref.subview %padded[0, 0, 1, 1] [1, 2, 8, 16] [1, 1, 1, 1] : memref<1x2x10x18xf32> to memref<1x2x8x16xf32, strided<[360, 180, 18, 1], offset: 19>>
  linalg.copy ins(%arg0 : memref<1x2x8x16xf32>) outs(%window : memref<1x2x8x16xf32, strided<[360, 180, 18, 1], offset: 19>>)
  %k = memref.alloc() : memref<3x3xf32>
  linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%padded, %k : memref<1x2x10x18xf32>, memref<3x3xf32>) outs(%arg1 : memref<1x2x4x8xf32>)
  memref.dealloc %padded : memref<1x2x10x18xf32>
  return
}

// A channels-last depthwise convolution's tile (one output row of 6 pixels
// x 8 channels) reads the NHWC image itself: a kernel row above or below
// the image is skipped (scf.if on the row), and the taps of the row's
// first and last pixels that fall left or right of it are dropped. The
// padded buffer, its fill and copy are gone.
// CHECK-LABEL: func.func @channels_last
// CHECK-NOT: linalg.copy
// CHECK: scf.parallel
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c3{{.*}} step %c1{{.*}} iter_args(
// CHECK: %[[INSIDE:.*]] = arith.cmpi ult, %{{.*}}, %c5
// CHECK: scf.if %[[INSIDE]]
// CHECK-COUNT-16: vector.fma
// CHECK-NOT: vector.fma
// CHECK: } else {
// CHECK-NOT: linalg.depthwise_conv_2d_nhwc_hwc
// CHECK-NOT: memref<1x7x8x8xf32>
// CHECK: return
func.func @channels_last(%arg0: memref<1x5x6x8xf32>, %w: memref<3x3x8xf32>, %arg1: memref<1x5x6x8xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %padded = memref.alloc() {alignment = 64 : i64} : memref<1x7x8x8xf32>
  linalg.fill ins(%cst : f32) outs(%padded : memref<1x7x8x8xf32>)
  %window = memref.subview %padded[0, 1, 1, 0] [1, 5, 6, 8] [1, 1, 1, 1] : memref<1x7x8x8xf32> to memref<1x5x6x8xf32, strided<[448, 64, 8, 1], offset: 72>>
  linalg.copy ins(%arg0 : memref<1x5x6x8xf32>) outs(%window : memref<1x5x6x8xf32, strided<[448, 64, 8, 1], offset: 72>>)
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  scf.parallel (%r) = (%c0) to (%c5) step (%c1) {
    %in = memref.subview %padded[0, %r, 0, 0] [1, 3, 8, 8] [1, 1, 1, 1] : memref<1x7x8x8xf32> to memref<1x3x8x8xf32, strided<[448, 64, 8, 1], offset: ?>>
    %out = memref.subview %arg1[0, %r, 0, 0] [1, 1, 6, 8] [1, 1, 1, 1] : memref<1x5x6x8xf32> to memref<1x1x6x8xf32, strided<[240, 48, 8, 1], offset: ?>>
    linalg.fill ins(%cst : f32) outs(%out : memref<1x1x6x8xf32, strided<[240, 48, 8, 1], offset: ?>>)
    linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%in, %w : memref<1x3x8x8xf32, strided<[448, 64, 8, 1], offset: ?>>, memref<3x3x8xf32>) outs(%out : memref<1x1x6x8xf32, strided<[240, 48, 8, 1], offset: ?>>)
    scf.reduce
  }
  memref.dealloc %padded : memref<1x7x8x8xf32>
  return
}

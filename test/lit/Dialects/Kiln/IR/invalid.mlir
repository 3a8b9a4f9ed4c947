// RUN: kiln-opt %s -split-input-file -verify-diagnostics
// Verifier and type-inference errors, with the values in the message.

func.func @add_no_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{shapes 2x3 and 4 do not broadcast}}
  // expected-error @+1 {{'kiln.add' op failed to infer returned types}}
  %0 = kiln.add %a, %b : tensor<2x3xf32>, tensor<4xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @add_wrong_result(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<3x3xf32> {
  // expected-error @+2 {{inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3x3xf32>'}}
  // expected-error @+1 {{'kiln.add' op failed to infer returned types}}
  %0 = kiln.add %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

func.func @matmul_k_mismatch(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+2 {{matmul contraction sizes differ: 2x3 by 4x5}}
  // expected-error @+1 {{'kiln.matmul' op failed to infer returned types}}
  %0 = kiln.matmul %a, %b : tensor<2x3xf32>, tensor<4x5xf32> -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @reshape_count(%a: tensor<2x3xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{cannot reshape 2x3 (6 elements) to 7 (7 elements)}}
  %0 = kiln.reshape %a : tensor<2x3xf32> -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @exp_of_int(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{must be ranked tensor of floating-point values}}
  %0 = kiln.exp %a : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @conv_channels_last_grouped(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x2x4xf32>) -> tensor<1x6x6x4xf32> {
  // expected-error @+2 {{a channels-last conv is ungrouped or depthwise}}
  // expected-error @+1 {{'kiln.conv' op failed to infer returned types}}
  %0 = kiln.conv %x, %w {channels_last, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : tensor<1x8x8x4xf32>, tensor<3x3x2x4xf32> -> tensor<1x6x6x4xf32>
  return %0 : tensor<1x6x6x4xf32>
}

// -----

func.func @conv_channels_last_3d(%x: tensor<1x4x8x8x4xf32>, %w: tensor<3x3x3x4x4xf32>) -> tensor<1x2x6x6x4xf32> {
  // expected-error @+2 {{a channels-last conv is 2-D}}
  // expected-error @+1 {{'kiln.conv' op failed to infer returned types}}
  %0 = kiln.conv %x, %w {channels_last, strides = array<i64: 1, 1, 1>, pads = array<i64: 0, 0, 0, 0, 0, 0>, dilations = array<i64: 1, 1, 1>} : tensor<1x4x8x8x4xf32>, tensor<3x3x3x4x4xf32> -> tensor<1x2x6x6x4xf32>
  return %0 : tensor<1x2x6x6x4xf32>
}

// -----

func.func @conv_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+2 {{conv channels: input has 3, weight expects 2 x group 1}}
  // expected-error @+1 {{'kiln.conv' op failed to infer returned types}}
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32> -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @transpose_perm(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+2 {{transpose perm is not a permutation}}
  // expected-error @+1 {{'kiln.transpose' op failed to infer returned types}}
  %0 = kiln.transpose %x {perm = array<i64: 0, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @split_sizes(%x: tensor<6xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  // expected-error @+2 {{split sizes add up to 4, dimension is 6}}
  // expected-error @+1 {{'kiln.split' op failed to infer returned types}}
  %0:2 = kiln.split %x {axis = 0 : i64, sizes = array<i64: 2, 2>} : tensor<6xf32> -> tensor<2xf32>, tensor<2xf32>
  return %0#0, %0#1 : tensor<2xf32>, tensor<2xf32>
}

// -----

func.func @squeeze_non_unit(%x: tensor<2x3xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{squeeze axis 0 has size 2, expected 1}}
  // expected-error @+1 {{'kiln.squeeze' op failed to infer returned types}}
  %0 = kiln.squeeze %x {axes = array<i64: 0>} : tensor<2x3xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @softmax_axis(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{axis 2 out of range}}
  %0 = kiln.softmax %x {axis = 2 : i64} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @clip_bounds(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{min 2.000000e+00 exceeds max 1.000000e+00}}
  %0 = kiln.clip %x {min = 2.0 : f64, max = 1.0 : f64} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @pool_pads(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32> {
  // expected-error @+2 {{pooling pads must be smaller than the kernel}}
  // expected-error @+1 {{'kiln.max_pool' op failed to infer returned types}}
  %0 = kiln.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 2, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<1x1x4x4xf32> -> tensor<1x1x3x3xf32>
  return %0 : tensor<1x1x3x3xf32>
}

// -----

func.func @layer_norm_scale(%x: tensor<2x8xf32>, %g: tensor<4xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{scale/bias of shape 4 do not broadcast to 8}}
  %0 = kiln.layer_norm %x, %g {axis = -1 : i64} : tensor<2x8xf32>, tensor<4xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// A dynamic dimension is kept whole: never padded...
func.func @pad_dynamic(%x: tensor<?x4xf32>) -> tensor<?x6xf32> {
  // expected-error @+2 {{pad of dynamic dimension 0 (only known sizes are padded)}}
  // expected-error @+1 {{'kiln.pad' op failed to infer returned types}}
  %0 = kiln.pad %x {pads = array<i64: 1, 1, 0, 1>, mode = "constant", value = 0.0 : f64} : tensor<?x4xf32> -> tensor<?x6xf32>
  return %0 : tensor<?x6xf32>
}

// -----

// ...nor sliced.
func.func @slice_dynamic(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+2 {{invalid slice parameters (axes out of range, repeated or of dynamic size}}
  // expected-error @+1 {{'kiln.slice' op failed to infer returned types}}
  %0 = kiln.slice %x {starts = array<i64: 0>, ends = array<i64: 2>, axes = array<i64: 0>, steps = array<i64: 1>} : tensor<?x4xf32> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @all_reduce_kind(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{reduction must be "sum" or "mean", not "max"}}
  %0 = kiln.all_reduce "max" %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @im2col_window_too_large(%x: tensor<1x2x2x4xi8>) -> tensor<1x1x1x36xi8> {
  // expected-error @+2 {{im2col's window is larger than the image}}
  // expected-error @+1 {{'kiln.im2col' op failed to infer returned types}}
  %0 = kiln.im2col %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : tensor<1x2x2x4xi8> -> tensor<1x1x1x36xi8>
  return %0 : tensor<1x1x1x36xi8>
}

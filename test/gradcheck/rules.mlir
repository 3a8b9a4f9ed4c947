// Gradient checks of every rule (run by kiln-gradcheck; see kiln-gradcheck.cpp).
// One func per case: f64 arguments (kiln.range = [lo, hi], default [-2, 2]), one result.

func.func @neg(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %y = kiln.neg %x : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @abs(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %y = kiln.abs %x : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @exp(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %y = kiln.exp %x : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @log(%x: tensor<2x3xf64> {kiln.range = [0.2, 3.0]}) -> tensor<2x3xf64> {
  %y = kiln.log %x : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @sqrt(%x: tensor<2x3xf64> {kiln.range = [0.2, 3.0]}) -> tensor<2x3xf64> {
  %y = kiln.sqrt %x : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @reciprocal(%x: tensor<2x3xf64> {kiln.range = [0.5, 3.0]}) -> tensor<2x3xf64> {
  %y = kiln.reciprocal %x : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @erf(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %y = kiln.erf %x : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @tanh(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %y = kiln.tanh %x : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @sigmoid(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %y = kiln.sigmoid %x : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @relu(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %y = kiln.relu %x : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @floor(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %y = kiln.floor %x : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @ceil(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %y = kiln.ceil %x : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @round(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %y = kiln.round %x : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @sin(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %y = kiln.sin %x : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @cos(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %y = kiln.cos %x : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @tan(%x: tensor<2x3xf64> {kiln.range = [-1.2, 1.2]}) -> tensor<2x3xf64> {
  %y = kiln.tan %x : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @asin(%x: tensor<2x3xf64> {kiln.range = [-0.9, 0.9]}) -> tensor<2x3xf64> {
  %y = kiln.asin %x : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @acos(%x: tensor<2x3xf64> {kiln.range = [-0.9, 0.9]}) -> tensor<2x3xf64> {
  %y = kiln.acos %x : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @atan(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %y = kiln.atan %x : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @sinh(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %y = kiln.sinh %x : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @cosh(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %y = kiln.cosh %x : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @asinh(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %y = kiln.asinh %x : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @acosh(%x: tensor<2x3xf64> {kiln.range = [1.2, 3.0]}) -> tensor<2x3xf64> {
  %y = kiln.acosh %x : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @atanh(%x: tensor<2x3xf64> {kiln.range = [-0.9, 0.9]}) -> tensor<2x3xf64> {
  %y = kiln.atanh %x : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @identity(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %y = kiln.identity %x : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @clip(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %y = kiln.clip %x {min = -1.0 : f64, max = 1.0 : f64} : tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @add(%a: tensor<2x3xf64>, %b: tensor<3xf64>) -> tensor<2x3xf64> {
  %y = kiln.add %a, %b : tensor<2x3xf64>, tensor<3xf64> -> tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @sub(%a: tensor<2x3xf64>, %b: tensor<3xf64>) -> tensor<2x3xf64> {
  %y = kiln.sub %a, %b : tensor<2x3xf64>, tensor<3xf64> -> tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @mul(%a: tensor<2x3xf64>, %b: tensor<3xf64>) -> tensor<2x3xf64> {
  %y = kiln.mul %a, %b : tensor<2x3xf64>, tensor<3xf64> -> tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @div(%a: tensor<2x3xf64>, %b: tensor<3xf64> {kiln.range = [0.5, 2.0]}) -> tensor<2x3xf64> {
  %y = kiln.div %a, %b : tensor<2x3xf64>, tensor<3xf64> -> tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @max(%a: tensor<2x3xf64>, %b: tensor<3xf64>) -> tensor<2x3xf64> {
  %y = kiln.max %a, %b : tensor<2x3xf64>, tensor<3xf64> -> tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @min(%a: tensor<2x3xf64>, %b: tensor<3xf64>) -> tensor<2x3xf64> {
  %y = kiln.min %a, %b : tensor<2x3xf64>, tensor<3xf64> -> tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @pow(%a: tensor<2x3xf64> {kiln.range = [0.5, 2.0]}, %b: tensor<2x1xf64>) -> tensor<2x3xf64> {
  %y = kiln.pow %a, %b : tensor<2x3xf64>, tensor<2x1xf64> -> tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @fmod(%a: tensor<2x3xf64> {kiln.range = [0.1, 0.9]}, %b: tensor<2x3xf64> {kiln.range = [1.5, 2.5]}) -> tensor<2x3xf64> {
  %y = kiln.mod %a, %b {fmod = true} : tensor<2x3xf64>, tensor<2x3xf64> -> tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @where(%a: tensor<2x3xf64>, %b: tensor<3xf64>) -> tensor<2x3xf64> {
  %c = kiln.constant dense<[[true, false, true], [false, false, true]]> : tensor<2x3xi1>
  %y = kiln.where %c, %a, %b : tensor<2x3xi1>, tensor<2x3xf64>, tensor<3xf64> -> tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @matmul(%a: tensor<2x3x4xf64>, %b: tensor<4x5xf64>) -> tensor<2x3x5xf64> {
  %y = kiln.matmul %a, %b : tensor<2x3x4xf64>, tensor<4x5xf64> -> tensor<2x3x5xf64>
  return %y : tensor<2x3x5xf64>
}
func.func @matmul_batch_broadcast(%a: tensor<2x1x3x4xf64>, %b: tensor<3x4x2xf64>) -> tensor<2x3x3x2xf64> {
  %y = kiln.matmul %a, %b : tensor<2x1x3x4xf64>, tensor<3x4x2xf64> -> tensor<2x3x3x2xf64>
  return %y : tensor<2x3x3x2xf64>
}
func.func @matmul_shared_unit_batch(%a: tensor<2x2x3x4xf64>, %b: tensor<1x4x5xf64>) -> tensor<2x2x3x5xf64> {
  %y = kiln.matmul %a, %b : tensor<2x2x3x4xf64>, tensor<1x4x5xf64> -> tensor<2x2x3x5xf64>
  return %y : tensor<2x2x3x5xf64>
}
func.func @matmul_vector_b(%a: tensor<2x3x4xf64>, %b: tensor<4xf64>) -> tensor<2x3xf64> {
  %y = kiln.matmul %a, %b : tensor<2x3x4xf64>, tensor<4xf64> -> tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @matmul_vector(%a: tensor<4xf64>, %b: tensor<2x4x3xf64>) -> tensor<2x3xf64> {
  %y = kiln.matmul %a, %b : tensor<4xf64>, tensor<2x4x3xf64> -> tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @gemm(%a: tensor<3x2xf64>, %b: tensor<4x3xf64>, %c: tensor<4xf64>) -> tensor<2x4xf64> {
  %y = kiln.gemm %a, %b, %c {trans_a = true, trans_b = true, alpha = 0.5 : f32, beta = 2.0 : f32} : tensor<3x2xf64>, tensor<4x3xf64>, tensor<4xf64> -> tensor<2x4xf64>
  return %y : tensor<2x4xf64>
}
func.func @gemm_plain(%a: tensor<2x3xf64>, %b: tensor<3x4xf64>, %c: tensor<2x1xf64>) -> tensor<2x4xf64> {
  %y = kiln.gemm %a, %b, %c : tensor<2x3xf64>, tensor<3x4xf64>, tensor<2x1xf64> -> tensor<2x4xf64>
  return %y : tensor<2x4xf64>
}
func.func @conv(%x: tensor<2x3x5x5xf64>, %w: tensor<4x3x3x3xf64>, %b: tensor<4xf64>) -> tensor<2x4x3x3xf64> {
  %y = kiln.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : tensor<2x3x5x5xf64>, tensor<4x3x3x3xf64>, tensor<4xf64> -> tensor<2x4x3x3xf64>
  return %y : tensor<2x4x3x3xf64>
}
func.func @conv_dilated_grouped(%x: tensor<1x4x6x6xf64>, %w: tensor<4x2x2x2xf64>) -> tensor<1x4x5x4xf64> {
  %y = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 0, 0, 0>, dilations = array<i64: 2, 2>, group = 2 : i64} : tensor<1x4x6x6xf64>, tensor<4x2x2x2xf64> -> tensor<1x4x5x4xf64>
  return %y : tensor<1x4x5x4xf64>
}
func.func @conv_depthwise_strided(%x: tensor<1x3x7x7xf64>, %w: tensor<3x1x3x3xf64>) -> tensor<1x3x3x3xf64> {
  %y = kiln.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 3 : i64} : tensor<1x3x7x7xf64>, tensor<3x1x3x3xf64> -> tensor<1x3x3x3xf64>
  return %y : tensor<1x3x3x3xf64>
}
func.func @batch_norm(%x: tensor<2x3x2x2xf64>, %s: tensor<3xf64>, %b: tensor<3xf64>, %m: tensor<3xf64>, %v: tensor<3xf64> {kiln.range = [0.5, 2.0]}) -> tensor<2x3x2x2xf64> {
  %y = kiln.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f32} : tensor<2x3x2x2xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64> -> tensor<2x3x2x2xf64>
  return %y : tensor<2x3x2x2xf64>
}
func.func @layer_norm(%x: tensor<2x3x4xf64>, %g: tensor<4xf64>, %b: tensor<4xf64>) -> tensor<2x3x4xf64> {
  %y = kiln.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32} : tensor<2x3x4xf64>, tensor<4xf64>, tensor<4xf64> -> tensor<2x3x4xf64>
  return %y : tensor<2x3x4xf64>
}
func.func @layer_norm_axis1(%x: tensor<2x3x4xf64>, %g: tensor<3x4xf64>) -> tensor<2x3x4xf64> {
  %y = kiln.layer_norm %x, %g {axis = 1 : i64, epsilon = 1.0e-05 : f32} : tensor<2x3x4xf64>, tensor<3x4xf64> -> tensor<2x3x4xf64>
  return %y : tensor<2x3x4xf64>
}
func.func @softmax(%x: tensor<2x3x4xf64>) -> tensor<2x3x4xf64> {
  %y = kiln.softmax %x {axis = 1 : i64} : tensor<2x3x4xf64>
  return %y : tensor<2x3x4xf64>
}
func.func @max_pool(%x: tensor<1x2x5x5xf64>) -> tensor<1x2x3x3xf64> {
  %y = kiln.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : tensor<1x2x5x5xf64> -> tensor<1x2x3x3xf64>
  return %y : tensor<1x2x3x3xf64>
}
func.func @max_pool_ceil_dilated(%x: tensor<1x1x6x6xf64>) -> tensor<1x1x2x2xf64> {
  %y = kiln.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>, ceil_mode = true} : tensor<1x1x6x6xf64> -> tensor<1x1x2x2xf64>
  return %y : tensor<1x1x2x2xf64>
}
func.func @avg_pool(%x: tensor<1x2x5x5xf64>) -> tensor<1x2x3x3xf64> {
  %y = kiln.avg_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : tensor<1x2x5x5xf64> -> tensor<1x2x3x3xf64>
  return %y : tensor<1x2x3x3xf64>
}
func.func @avg_pool_include_pad(%x: tensor<1x1x4x4xf64>) -> tensor<1x1x3x3xf64> {
  %y = kiln.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = true} : tensor<1x1x4x4xf64> -> tensor<1x1x3x3xf64>
  return %y : tensor<1x1x3x3xf64>
}
func.func @global_avg_pool(%x: tensor<2x3x2x2xf64>) -> tensor<2x3x1x1xf64> {
  %y = kiln.global_avg_pool %x : tensor<2x3x2x2xf64> -> tensor<2x3x1x1xf64>
  return %y : tensor<2x3x1x1xf64>
}
func.func @reduce_sum(%x: tensor<2x3x4xf64>) -> tensor<2x4xf64> {
  %y = kiln.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : tensor<2x3x4xf64> -> tensor<2x4xf64>
  return %y : tensor<2x4xf64>
}
func.func @reduce_mean(%x: tensor<2x3x4xf64>) -> tensor<2x4xf64> {
  %y = kiln.reduce_mean %x {axes = array<i64: 1>, keepdims = false} : tensor<2x3x4xf64> -> tensor<2x4xf64>
  return %y : tensor<2x4xf64>
}
func.func @reduce_max(%x: tensor<2x3x4xf64>) -> tensor<2x4xf64> {
  %y = kiln.reduce_max %x {axes = array<i64: 1>, keepdims = false} : tensor<2x3x4xf64> -> tensor<2x4xf64>
  return %y : tensor<2x4xf64>
}
func.func @reduce_min(%x: tensor<2x3x4xf64>) -> tensor<2x4xf64> {
  %y = kiln.reduce_min %x {axes = array<i64: 1>, keepdims = false} : tensor<2x3x4xf64> -> tensor<2x4xf64>
  return %y : tensor<2x4xf64>
}
func.func @reduce_prod(%x: tensor<2x3x4xf64>) -> tensor<2x4xf64> {
  %y = kiln.reduce_prod %x {axes = array<i64: 1>, keepdims = false} : tensor<2x3x4xf64> -> tensor<2x4xf64>
  return %y : tensor<2x4xf64>
}
func.func @reduce_sum_all(%x: tensor<2x3xf64>) -> tensor<1x1xf64> {
  %y = kiln.reduce_sum %x {axes = array<i64>} : tensor<2x3xf64> -> tensor<1x1xf64>
  return %y : tensor<1x1xf64>
}
func.func @cumsum(%x: tensor<2x4xf64>) -> tensor<2x4xf64> {
  %y = kiln.cumsum %x {axis = 1 : i64, exclusive = true, reverse = true} : tensor<2x4xf64>
  return %y : tensor<2x4xf64>
}
func.func @pad(%x: tensor<2x3xf64>) -> tensor<3x4xf64> {
  %y = kiln.pad %x {pads = array<i64: 1, 2, 0, -1>, value = 0.5 : f64} : tensor<2x3xf64> -> tensor<3x4xf64>
  return %y : tensor<3x4xf64>
}
func.func @pad_reflect(%x: tensor<2x4xf64>) -> tensor<4x9xf64> {
  %y = kiln.pad %x {pads = array<i64: 1, 2, 1, 3>, mode = "reflect"} : tensor<2x4xf64> -> tensor<4x9xf64>
  return %y : tensor<4x9xf64>
}
func.func @pad_edge(%x: tensor<2x3xf64>) -> tensor<5x4xf64> {
  %y = kiln.pad %x {pads = array<i64: 2, 0, 1, 1>, mode = "edge"} : tensor<2x3xf64> -> tensor<5x4xf64>
  return %y : tensor<5x4xf64>
}
func.func @reshape(%x: tensor<2x3xf64>) -> tensor<3x2xf64> {
  %y = kiln.reshape %x : tensor<2x3xf64> -> tensor<3x2xf64>
  return %y : tensor<3x2xf64>
}
func.func @flatten(%x: tensor<2x3x2xf64>) -> tensor<2x6xf64> {
  %y = kiln.flatten %x {axis = 1 : i64} : tensor<2x3x2xf64> -> tensor<2x6xf64>
  return %y : tensor<2x6xf64>
}
func.func @squeeze(%x: tensor<2x1x3xf64>) -> tensor<2x3xf64> {
  %y = kiln.squeeze %x {axes = array<i64: 1>} : tensor<2x1x3xf64> -> tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @unsqueeze(%x: tensor<2x3xf64>) -> tensor<2x1x3xf64> {
  %y = kiln.unsqueeze %x {axes = array<i64: 1>} : tensor<2x3xf64> -> tensor<2x1x3xf64>
  return %y : tensor<2x1x3xf64>
}
func.func @transpose(%x: tensor<2x3x4xf64>) -> tensor<4x2x3xf64> {
  %y = kiln.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf64> -> tensor<4x2x3xf64>
  return %y : tensor<4x2x3xf64>
}
func.func @concat(%a: tensor<2x3xf64>, %b: tensor<2x1xf64>) -> tensor<2x4xf64> {
  %y = kiln.concat %a, %b {axis = 1 : i64} : tensor<2x3xf64>, tensor<2x1xf64> -> tensor<2x4xf64>
  return %y : tensor<2x4xf64>
}
func.func @split(%x: tensor<2x5xf64>) -> tensor<2x3xf64> {
  %a, %b = kiln.split %x {axis = 1 : i64, sizes = array<i64: 2, 3>} : tensor<2x5xf64> -> tensor<2x2xf64>, tensor<2x3xf64>
  return %b : tensor<2x3xf64>
}
func.func @slice(%x: tensor<4x6xf64>) -> tensor<2x2xf64> {
  %y = kiln.slice %x {starts = array<i64: 3, 1>, ends = array<i64: 0, 5>, axes = array<i64: 0, 1>, steps = array<i64: -2, 2>} : tensor<4x6xf64> -> tensor<2x2xf64>
  return %y : tensor<2x2xf64>
}
func.func @gather(%x: tensor<4x3xf64>) -> tensor<2x2x3xf64> {
  %i = kiln.constant dense<[[0, 2], [2, -1]]> : tensor<2x2xi64>
  %y = kiln.gather %x, %i {axis = 0 : i64} : tensor<4x3xf64>, tensor<2x2xi64> -> tensor<2x2x3xf64>
  return %y : tensor<2x2x3xf64>
}
func.func @gather_axis1(%x: tensor<2x4xf64>) -> tensor<2x3xf64> {
  %i = kiln.constant dense<[1, 1, 3]> : tensor<3xi32>
  %y = kiln.gather %x, %i {axis = 1 : i64} : tensor<2x4xf64>, tensor<3xi32> -> tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @gather_elements(%x: tensor<2x3xf64>) -> tensor<2x2xf64> {
  %i = kiln.constant dense<[[0, 2], [1, 1]]> : tensor<2x2xi64>
  %y = kiln.gather_elements %x, %i {axis = 1 : i64} : tensor<2x3xf64>, tensor<2x2xi64> -> tensor<2x2xf64>
  return %y : tensor<2x2xf64>
}
func.func @gather_nd(%x: tensor<3x2xf64>) -> tensor<2x2xf64> {
  %i = kiln.constant dense<[[2], [0]]> : tensor<2x1xi64>
  %y = kiln.gather_nd %x, %i : tensor<3x2xf64>, tensor<2x1xi64> -> tensor<2x2xf64>
  return %y : tensor<2x2xf64>
}
func.func @scatter_elements(%d: tensor<2x3xf64>, %u: tensor<2x2xf64>) -> tensor<2x3xf64> {
  %i = kiln.constant dense<[[0, 2], [1, 0]]> : tensor<2x2xi64>
  %y = kiln.scatter_elements %d, %i, %u {axis = 1 : i64} : tensor<2x3xf64>, tensor<2x2xi64>, tensor<2x2xf64> -> tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}
func.func @scatter_nd_add(%d: tensor<3x2xf64>, %u: tensor<2x2xf64>) -> tensor<3x2xf64> {
  %i = kiln.constant dense<[[2], [0]]> : tensor<2x1xi64>
  %y = kiln.scatter_nd %d, %i, %u {reduction = "add"} : tensor<3x2xf64>, tensor<2x1xi64>, tensor<2x2xf64> -> tensor<3x2xf64>
  return %y : tensor<3x2xf64>
}
func.func @trilu(%x: tensor<3x3xf64>) -> tensor<3x3xf64> {
  %y = kiln.trilu %x {upper = false, k = 0 : i64} : tensor<3x3xf64>
  return %y : tensor<3x3xf64>
}
// Several uses of one value: the gradients along each are summed.
func.func @fan_out(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %a = kiln.tanh %x : tensor<2x3xf64>
  %b = kiln.mul %a, %x : tensor<2x3xf64>, tensor<2x3xf64> -> tensor<2x3xf64>
  %y = kiln.add %b, %a : tensor<2x3xf64>, tensor<2x3xf64> -> tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}

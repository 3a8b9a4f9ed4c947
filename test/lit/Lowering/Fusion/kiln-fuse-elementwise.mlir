// RUN: kiln-opt %s -split-input-file -kiln-fuse-elementwise | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// Tests that a chain of elementwise generics (bias add, then tanh) becomes one.
// CHECK-LABEL: func @chain
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK: math.tanh
// CHECK-NOT: linalg.generic
func.func @chain(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>

// Tests that an expensive producer read by a contraction through a broadcast
// (it lacks the n loop) is not fused: it would be recomputed 16 times.
// CHECK-LABEL: func @no_recompute_into_matmul
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: math.erf
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-NOT: math.erf
func.func @no_recompute_into_matmul(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %acc: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %g = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.erf %a : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %m = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%g, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%acc : tensor<4x16xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %mul = arith.mulf %p, %q : f32
    %add = arith.addf %o, %mul : f32
    linalg.yield %add : f32
  } -> tensor<4x16xf32>
  return %m : tensor<4x16xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#rowsum = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#id1 = affine_map<(d0) -> (d0)>

// Tests that casts (a 16-bit model widened into f32 arithmetic) go into
// every consumer, however it reads them: a row sum and a subtraction both
// read the f16 input, the scale is widened where the broadcast reads it, and
// no f32 copy is left (a layer norm's widened input was a kernel of its own).
// CHECK-LABEL: func @casts_into_consumers
// CHECK-NOT: linalg.generic {{.*}}ins(%{{.*}} : tensor<4x8xf16>) outs(%{{.*}} : tensor<4x8xf32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}}ins(%arg0 : tensor<4x8xf16>)
// CHECK: arith.extf
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}}ins(%arg0, %{{.*}}, %arg1 : tensor<4x8xf16>, tensor<4xf32>, tensor<8xf16>)
// CHECK-DAG: arith.extf
// CHECK-DAG: arith.extf
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
func.func @casts_into_consumers(%x: tensor<4x8xf16>, %g: tensor<8xf16>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %wide = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf16>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f16, %o: f32):
    %w = arith.extf %a : f16 to f32
    linalg.yield %w : f32
  } -> tensor<4x8xf32>
  %eg = tensor.empty() : tensor<8xf32>
  %gw = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%g : tensor<8xf16>) outs(%eg : tensor<8xf32>) {
  ^bb0(%a: f16, %o: f32):
    %w = arith.extf %a : f16 to f32
    linalg.yield %w : f32
  } -> tensor<8xf32>
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #rowsum], iterator_types = ["parallel", "reduction"]}
      ins(%wide : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %r = linalg.generic {indexing_maps = [#id, #rowsum, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%wide, %sum, %gw : tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %c: f32, %o: f32):
    %d = arith.subf %a, %s : f32
    %m = arith.mulf %d, %c : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
#mask = affine_map<(b, h, i, j) -> (i, j)>

// Tests that an index pattern (Trilu of a constant: a causal mask) is
// computed where its consumer reads it, though through a broadcast: a few
// integer steps per element instead of a kernel and a tensor.
// CHECK-LABEL: func @mask_into_consumer
// CHECK: linalg.generic
// CHECK: linalg.index 2
// CHECK: linalg.index 3
// CHECK: arith.cmpi
// CHECK: arith.select
// CHECK-NOT: linalg.generic
func.func @mask_into_consumer(%s: tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32> {
  %ones = arith.constant dense<true> : tensor<4x4xi1>
  %false = arith.constant false
  %c1 = arith.constant 1 : index
  %ninf = arith.constant -1.0e30 : f32
  %e = tensor.empty() : tensor<4x4xi1>
  %m = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ones : tensor<4x4xi1>) outs(%e : tensor<4x4xi1>) {
  ^bb0(%in: i1, %o: i1):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %d = arith.subi %j, %i : index
    %above = arith.cmpi sge, %d, %c1 : index
    %v = arith.select %above, %in, %false : i1
    linalg.yield %v : i1
  } -> tensor<4x4xi1>
  %e4 = tensor.empty() : tensor<2x3x4x4xf32>
  %r = linalg.generic {indexing_maps = [#mask, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%m, %s : tensor<4x4xi1>, tensor<2x3x4x4xf32>) outs(%e4 : tensor<2x3x4x4xf32>) {
  ^bb0(%k: i1, %x: f32, %o: f32):
    %v = arith.select %k, %ninf, %x : f32
    linalg.yield %v : f32
  } -> tensor<2x3x4x4xf32>
  return %r : tensor<2x3x4x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
#mask = affine_map<(b, h, i, j) -> (i, j)>

// Tests that an index pattern read by two ops (one mask, two attention
// blocks) is computed in each of them.
// CHECK-LABEL: func @shared_mask
// CHECK: linalg.generic
// CHECK: linalg.index 2
// CHECK: linalg.generic
// CHECK: linalg.index 2
// CHECK-NOT: linalg.generic
func.func @shared_mask(%s: tensor<2x3x4x4xf32>, %t: tensor<2x3x4x4xf32>) -> (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>) {
  %ones = arith.constant dense<true> : tensor<4x4xi1>
  %false = arith.constant false
  %c1 = arith.constant 1 : index
  %ninf = arith.constant -1.0e30 : f32
  %e = tensor.empty() : tensor<4x4xi1>
  %m = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ones : tensor<4x4xi1>) outs(%e : tensor<4x4xi1>) {
  ^bb0(%in: i1, %o: i1):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %d = arith.subi %j, %i : index
    %above = arith.cmpi sge, %d, %c1 : index
    %v = arith.select %above, %in, %false : i1
    linalg.yield %v : i1
  } -> tensor<4x4xi1>
  %e4 = tensor.empty() : tensor<2x3x4x4xf32>
  %r = linalg.generic {indexing_maps = [#mask, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%m, %s : tensor<4x4xi1>, tensor<2x3x4x4xf32>) outs(%e4 : tensor<2x3x4x4xf32>) {
  ^bb0(%k: i1, %x: f32, %o: f32):
    %v = arith.select %k, %ninf, %x : f32
    linalg.yield %v : f32
  } -> tensor<2x3x4x4xf32>
  %r2 = linalg.generic {indexing_maps = [#mask, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%m, %t : tensor<4x4xi1>, tensor<2x3x4x4xf32>) outs(%e4 : tensor<2x3x4x4xf32>) {
  ^bb0(%k: i1, %x: f32, %o: f32):
    %v = arith.select %k, %ninf, %x : f32
    linalg.yield %v : f32
  } -> tensor<2x3x4x4xf32>
  return %r, %r2 : tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>
}

// -----

#a3 = affine_map<(m, n, k) -> (m, k)>
#b3 = affine_map<(m, n, k) -> (k, n)>
#c3 = affine_map<(m, n, k) -> (m, n)>
#id3 = affine_map<(d0, d1) -> (d0, d1)>
#bias3 = affine_map<(d0, d1) -> (d1)>

// Tests that a packed QKV projection ([T, 3E], bias added) unflattened to
// [T, 3, E] is not expanded: the product would get two column loops. Its
// rows ([B*T] as [B, T]) still expand.
// CHECK-LABEL: func @qkv_columns_not_split
// CHECK: linalg.generic {{.*}}ins({{.*}} : tensor<8x4xf32>, tensor<4x6xf32>) outs({{.*}} : tensor<8x6xf32>)
// CHECK: linalg.generic {{.*}}ins({{.*}} : tensor<8x6xf32>, tensor<6xf32>) outs({{.*}} : tensor<8x6xf32>)
// CHECK: tensor.expand_shape {{.*}} : tensor<8x6xf32> into tensor<8x3x2xf32>
func.func @qkv_columns_not_split(%x: tensor<8x4xf32>, %w: tensor<4x6xf32>, %b: tensor<6xf32>) -> tensor<8x3x2xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x6xf32>
  %acc = linalg.fill ins(%z : f32) outs(%e : tensor<8x6xf32>) -> tensor<8x6xf32>
  %m = linalg.generic {indexing_maps = [#a3, #b3, #c3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<8x4xf32>, tensor<4x6xf32>) outs(%acc : tensor<8x6xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %mul = arith.mulf %p, %q : f32
    %add = arith.addf %o, %mul : f32
    linalg.yield %add : f32
  } -> tensor<8x6xf32>
  %s = linalg.generic {indexing_maps = [#id3, #bias3, #id3], iterator_types = ["parallel", "parallel"]}
      ins(%m, %b : tensor<8x6xf32>, tensor<6xf32>) outs(%e : tensor<8x6xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %add = arith.addf %p, %q : f32
    linalg.yield %add : f32
  } -> tensor<8x6xf32>
  %r = tensor.expand_shape %s [[0], [1, 2]] output_shape [8, 3, 2] : tensor<8x6xf32> into tensor<8x3x2xf32>
  return %r : tensor<8x3x2xf32>
}

// -----

#a4 = affine_map<(m, n, k) -> (m, k)>
#b4 = affine_map<(m, n, k) -> (k, n)>
#c4 = affine_map<(m, n, k) -> (m, n)>

// CHECK-LABEL: func @rows_split
// CHECK: linalg.generic {{.*}}ins({{.*}} : tensor<2x4x4xf32>, tensor<4x6xf32>) outs({{.*}} : tensor<2x4x6xf32>)
// CHECK-NOT: tensor.expand_shape
func.func @rows_split(%x: tensor<8x4xf32>, %w: tensor<4x6xf32>, %acc: tensor<8x6xf32>) -> tensor<2x4x6xf32> {
  %m = linalg.generic {indexing_maps = [#a4, #b4, #c4], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<8x4xf32>, tensor<4x6xf32>) outs(%acc : tensor<8x6xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %mul = arith.mulf %p, %q : f32
    %add = arith.addf %o, %mul : f32
    linalg.yield %add : f32
  } -> tensor<8x6xf32>
  %r = tensor.expand_shape %m [[0, 1], [2]] output_shape [2, 4, 6] : tensor<8x6xf32> into tensor<2x4x6xf32>
  return %r : tensor<2x4x6xf32>
}

// -----

// Tests GPT-2's tanh GELU, 0.5 x (1 + tanh(0.79788 (x + 0.044715 x^3))):
// fused into one op that reads x once (kernel formation fuses a producer
// once per operand: it computed the linear layer before it three times),
// with its scalar constants inlined into the body (the exponent 3 a
// constant, for kiln-approximate-math's x * x * x).
// CHECK-LABEL: func.func @tanh_gelu
// CHECK: %[[THREE:.*]] = arith.constant 3.000000e+00 : f32
// CHECK: linalg.generic
// CHECK-SAME: ins(%arg0 : tensor<4x8xf32>)
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK: math.powf %[[X]], %[[THREE]] : f32
// CHECK: math.tanh
// CHECK-NOT: linalg.generic
#m = affine_map<(d0, d1) -> (d0, d1)>
#s = affine_map<(d0, d1) -> ()>
func.func @tanh_gelu(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %half = arith.constant dense<0.5> : tensor<f32>
  %three = arith.constant dense<3.0> : tensor<f32>
  %c = arith.constant dense<0.044715> : tensor<f32>
  %k = arith.constant dense<0.797884583> : tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %e = tensor.empty() : tensor<4x8xf32>
  %cube = linalg.generic {indexing_maps = [#m, #s, #m], iterator_types = ["parallel", "parallel"]}
      ins(%x, %three : tensor<4x8xf32>, tensor<f32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %p: f32, %o: f32):
    %r = math.powf %a, %p : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %inner = linalg.generic {indexing_maps = [#m, #s, #m, #s, #m], iterator_types = ["parallel", "parallel"]}
      ins(%x, %c, %cube, %k : tensor<4x8xf32>, tensor<f32>, tensor<4x8xf32>, tensor<f32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %cc: f32, %q: f32, %kk: f32, %o: f32):
    %t = arith.mulf %q, %cc : f32
    %u = arith.addf %a, %t : f32
    %v = arith.mulf %u, %kk : f32
    %w = math.tanh %v : f32
    linalg.yield %w : f32
  } -> tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#m, #s, #m, #s, #m], iterator_types = ["parallel", "parallel"]}
      ins(%x, %half, %inner, %one : tensor<4x8xf32>, tensor<f32>, tensor<4x8xf32>, tensor<f32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %h: f32, %t: f32, %o1: f32, %o: f32):
    %s1 = arith.addf %t, %o1 : f32
    %hx = arith.mulf %a, %h : f32
    %r = arith.mulf %hx, %s1 : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

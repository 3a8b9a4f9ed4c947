// RUN: kiln-opt %s -split-input-file -kiln-pack-matmul-weights=vector-bits=256 | FileCheck %s

// Tests that a linear layer's constant weights [K, N] = [4, 16] become
// two panels of 8 columns, [2, 4, 8], each panel's rows one after another
// (column n of row k at [n / 8, k, n % 8]), read through
// (n floordiv 8, k, n mod 8); A, C and the body stay.
// CHECK-LABEL: func.func @linear
// CHECK: %[[W:.*]] = arith.constant dense_resource<packed> : tensor<2x4x8xf32>
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[PACKED:.*]], #{{.*}}]{{.*}} ins(%arg0, %[[W]] : tensor<3x4xf32>, tensor<2x4x8xf32>)
// CHECK: arith.mulf
// CHECK: {-#
// Panel 0 holds columns 0-7 of rows 0-3 (0..7, then 16..23, 32..39,
// 48..55), panel 1 columns 8-15 (8..15, 24..31, ...): after 0..7 come
// 16, 17, 18, 19 (0x41800000, 0x41880000, ...); 8 follows 55 (0x425C0000).
// CHECK: packed: "0x10000000
// CHECK-SAME: 000000000000803F0000004000004040000080400000A0400000C0400000E040000080410000884100009041000098410000A041
// CHECK-SAME: 00005C4200000041
func.func @linear(%x: tensor<3x4xf32>) -> tensor<3x16xf32> {
  %w = arith.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0],
                             [16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0],
                             [32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0],
                             [48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0, 63.0]]> : tensor<4x16xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x16xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<3x16xf32>) -> tensor<3x16xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<3x4xf32>, tensor<4x16xf32>) outs(%c : tensor<3x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<3x16xf32>
  return %y : tensor<3x16xf32>
}

// -----

// Tests what stays as it is: weights known only at run time for 3 rows
// (the copy would cost more than it saves) and 8 columns (one vector: a
// panel already).
// CHECK-LABEL: func.func @untouched
// CHECK-NOT: packed
// CHECK: return
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @untouched(%x: tensor<3x4xf32>, %w: tensor<4x16xf32>, %o16: tensor<3x16xf32>, %o8: tensor<3x8xf32>)
    -> (tensor<3x16xf32>, tensor<3x8xf32>) {
  %w8 = arith.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
                              [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 9.0]]> : tensor<4x8xf32>
  %y16 = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<3x4xf32>, tensor<4x16xf32>) outs(%o16 : tensor<3x16xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<3x16xf32>
  %y8 = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w8 : tensor<3x4xf32>, tensor<4x8xf32>) outs(%o8 : tensor<3x8xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<3x8xf32>
  return %y16, %y8 : tensor<3x16xf32>, tensor<3x8xf32>
}

// -----

// Tests 36 columns, no whole number of vectors (but 4 or more): the last
// panel is padded. A constant's bytes go into [5, 4, 8] with columns 36..39
// zero; weights known at run time (64 rows) are copied in one pass: the
// 4 whole panels transposed into the packed [5, 4, 8], the last 4 columns
// padded to a panel of their own after them. Fewer than 4 panels stay unpacked (a padded 10 columns would
// be mostly padding; `external-weights.test` keeps its 10 as they are).
// One matrix (no batch of images) packed at run time: the copy is marked
// for the threads to split by its panels (kiln-tile-transposes).
// CHECK-LABEL: func.func @ragged
// CHECK: arith.constant dense_resource<packed> : tensor<5x4x8xf32>
// CHECK: %[[ALL:.*]] = tensor.empty() : tensor<5x4x8xf32>
// CHECK: %[[WHOLE:.*]] = tensor.extract_slice %arg1[0, 0] [4, 32] [1, 1]
// CHECK: %[[V:.*]] = tensor.expand_shape %[[WHOLE]] {{\[\[}}0], [1, 2]] output_shape [4, 4, 8] : tensor<4x32xf32> into tensor<4x4x8xf32>
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[V]]{{.*}} permutation = [1, 0, 2] {kiln.spread}
// CHECK: %[[I:.*]] = tensor.insert_slice %[[T]] into %[[ALL]][0, 0, 0] [4, 4, 8]
// CHECK: %[[REST:.*]] = tensor.extract_slice %arg1[0, 32] [4, 4] [1, 1]
// CHECK: %[[PAD:.*]] = tensor.pad %[[REST]] low[0, 0] high[0, 4]
// CHECK: %[[LAST:.*]] = tensor.expand_shape %[[PAD]] {{\[\[}}0, 1], [2]] output_shape [1, 4, 8]
// CHECK: %[[P:.*]] = tensor.insert_slice %[[LAST]] into %[[I]][4, 0, 0] [1, 4, 8]
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[P]] : tensor<64x4xf32>, tensor<5x4x8xf32>)
// Panel 3 ends with row 3's 25..32 (32.0: 0x42000000); panel 4's rows are
// 33, 34, 35, 36 and four zeros.
// CHECK: {-#
// CHECK: packed: "0x10000000
// CHECK-SAME: 00000042000004420000084200000C42000010420000000000000000000000000000000000000442
func.func @ragged(%x: tensor<64x4xf32>, %w: tensor<4x36xf32>, %o: tensor<64x36xf32>) -> (tensor<64x36xf32>, tensor<64x36xf32>) {
  %wc = arith.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0],
                              [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0],
                              [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0],
                              [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0]]> : tensor<4x36xf32>
  %yc = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %wc : tensor<64x4xf32>, tensor<4x36xf32>) outs(%o : tensor<64x36xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<64x36xf32>
  %yr = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<64x4xf32>, tensor<4x36xf32>) outs(%o : tensor<64x36xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<64x36xf32>
  return %yc, %yr : tensor<64x36xf32>, tensor<64x36xf32>
}

// -----

// Tests weights known only at run time with rows enough to reuse them (a
// training step's linear layer over 2 x 32 tokens): a copy packs them
// first, [4, 16] viewed as [4, 2, 8] and its first two dimensions swapped,
// and the product reads the copy as above. The same with 3 rows stays as
// it is (@untouched).
// CHECK-LABEL: func.func @runtime
// CHECK: %[[V:.*]] = tensor.expand_shape %arg1 {{\[\[}}0], [1, 2]] output_shape [4, 2, 8] : tensor<4x16xf32> into tensor<4x2x8xf32>
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x4x8xf32>
// CHECK: %[[P:.*]] = linalg.transpose ins(%[[V]] : tensor<4x2x8xf32>) outs(%[[E]] : tensor<2x4x8xf32>) permutation = [1, 0, 2]
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[P]] : tensor<2x32x4xf32>, tensor<2x4x8xf32>)
func.func @runtime(%x: tensor<2x32x4xf32>, %w: tensor<4x16xf32>, %o: tensor<2x32x16xf32>) -> tensor<2x32x16xf32> {
  %y = linalg.generic {indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<2x32x4xf32>, tensor<4x16xf32>) outs(%o : tensor<2x32x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x32x16xf32>
  return %y : tensor<2x32x16xf32>
}

// -----

// Tests splat weights (every element the same) with rows enough: the same
// splat in the packed shape, no copy kernel.
// CHECK-LABEL: func.func @splat
// CHECK: %[[W:.*]] = arith.constant dense<1.500000e+00> : tensor<2x4x8xf32>
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[W]] : tensor<64x4xf32>, tensor<2x4x8xf32>)
func.func @splat(%x: tensor<64x4xf32>, %o: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %w = arith.constant dense<1.5> : tensor<4x16xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<64x4xf32>, tensor<4x16xf32>) outs(%o : tensor<64x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<64x16xf32>
  return %y : tensor<64x16xf32>
}

// -----

// Tests that a constant read by several products (an unrolled RNN's R at
// every step) is packed once, beside the constant, for all of them.
// CHECK-LABEL: func.func @shared_weights
// CHECK-COUNT-1: dense_resource<packed>
// CHECK-NOT: dense_resource<packed
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[W:.*]] : tensor<3x4xf32>, tensor<2x4x8xf32>)
// CHECK: linalg.generic {{.*}} ins(%extracted_slice, %[[W]] : tensor<3x4xf32>, tensor<2x4x8xf32>)
func.func @shared_weights(%x: tensor<3x4xf32>) -> tensor<3x16xf32> {
  %w = arith.constant dense_resource<r> : tensor<4x16xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x16xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<3x16xf32>) -> tensor<3x16xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<3x4xf32>, tensor<4x16xf32>) outs(%c : tensor<3x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<3x16xf32>
  %h = tensor.extract_slice %y[0, 0] [3, 4] [1, 1] : tensor<3x16xf32> to tensor<3x4xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%h, %w : tensor<3x4xf32>, tensor<4x16xf32>) outs(%c : tensor<3x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<3x16xf32>
  return %z : tensor<3x16xf32>
}

{-#
  dialect_resources: {
    builtin: {
      r: "0x10000000000000000000803F0000004000004040000080400000A0400000C0400000E0400000004100001041000020410000304100004041000050410000604100007041000080410000884100009041000098410000A0410000A8410000B0410000B8410000C0410000C8410000D0410000D8410000E0410000E8410000F0410000F84100000042000004420000084200000C4200001042000014420000184200001C4200002042000024420000284200002C4200003042000034420000384200003C4200004042000044420000484200004C4200005042000054420000584200005C4200006042000064420000684200006C4200007042000074420000784200007C42"
    }
  }
#-}

// -----

// Tests a 1x1 convolution's images as B (out[i, f, p] += w[f, c] *
// x[i, c, p]) with rows 4x the depth or more (an expansion, 8 -> 64
// channels): each image packed at run time, [2, 8, 16] viewed as
// [2, 8, 2, 8] with depth and panels swapped, read at (i, p floordiv 8, c,
// p mod 8). A dynamic number of images too.
// CHECK: #[[PACKED:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2 floordiv 8, d3, d2 mod 8)>
// CHECK-LABEL: func.func @images
// CHECK: %[[V:.*]] = tensor.expand_shape %arg1 {{\[\[}}0], [1], [2, 3]] output_shape [2, 8, 2, 8] : tensor<2x8x16xf32> into tensor<2x8x2x8xf32>
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x2x8x8xf32>
// CHECK: %[[P:.*]] = linalg.transpose ins(%[[V]] : tensor<2x8x2x8xf32>) outs(%[[E]] : tensor<2x2x8x8xf32>) permutation = [0, 2, 1, 3]
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[PACKED]], #{{.*}}], {{.*}} ins(%arg0, %[[P]] : tensor<64x8xf32>, tensor<2x2x8x8xf32>)
// CHECK-LABEL: func.func @images_dynamic
// CHECK: %[[N:.*]] = tensor.dim %arg1, %c0
// CHECK: tensor.expand_shape %arg1 {{\[\[}}0], [1], [2, 3]] output_shape [%[[N]], 8, 2, 8] : tensor<?x8x16xf32> into tensor<?x8x2x8xf32>
// CHECK: tensor.empty(%[[N]]) : tensor<?x2x8x8xf32>
// CHECK: linalg.transpose
func.func @images(%w: tensor<64x8xf32>, %x: tensor<2x8x16xf32>, %o: tensor<2x64x16xf32>) -> tensor<2x64x16xf32> {
  %y = linalg.generic {indexing_maps = [affine_map<(i, f, p, c) -> (f, c)>, affine_map<(i, f, p, c) -> (i, c, p)>, affine_map<(i, f, p, c) -> (i, f, p)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %x : tensor<64x8xf32>, tensor<2x8x16xf32>) outs(%o : tensor<2x64x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x64x16xf32>
  return %y : tensor<2x64x16xf32>
}
func.func @images_dynamic(%w: tensor<64x8xf32>, %x: tensor<?x8x16xf32>, %o: tensor<?x64x16xf32>) -> tensor<?x64x16xf32> {
  %y = linalg.generic {indexing_maps = [affine_map<(i, f, p, c) -> (f, c)>, affine_map<(i, f, p, c) -> (i, c, p)>, affine_map<(i, f, p, c) -> (i, f, p)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %x : tensor<64x8xf32>, tensor<?x8x16xf32>) outs(%o : tensor<?x64x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x64x16xf32>
  return %y : tensor<?x64x16xf32>
}

// -----

// Tests a 1x1 convolution that reduces its channels (64 -> 32, rows under
// 4x the depth): its images stay as they are, a per-image copy costs
// about what the packed panels save. Not where the pixels are no whole
// vectors (36, as 14x14's 196): each image is packed, its 4 whole panels
// and the last one padded, for a number of images known only at run time
// too.
// CHECK-LABEL: func.func @images_reduced
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<64x64xf32>, tensor<2x64x16xf32>)
// CHECK-LABEL: func.func @images_reduced_ragged
// CHECK: linalg.transpose
// CHECK: tensor.pad
// CHECK: %[[P:.*]] = tensor.insert_slice %{{.*}}[0, 4, 0, 0] [2, 1, 64, 8]
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[P]] : tensor<64x64xf32>, tensor<2x5x64x8xf32>)
// CHECK-LABEL: func.func @images_reduced_ragged_dynamic
// CHECK: %[[N:.*]] = tensor.dim %arg1, %c0 : tensor<?x64x36xf32>
// CHECK: %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?x5x64x8xf32>
// CHECK: linalg.transpose
// CHECK: %[[W:.*]] = tensor.insert_slice %{{.*}} into %[[E]][0, 0, 0, 0] [%{{.*}}, 4, 64, 8]
// CHECK: %[[REST:.*]] = tensor.extract_slice %arg1[0, 0, 32] [%[[N]], 64, 4] [1, 1, 1]
// CHECK: %[[PAD:.*]] = tensor.pad %[[REST]] low[0, 0, 0] high[0, 0, 4]
// CHECK: } : tensor<?x64x4xf32> to tensor<?x64x8xf32>
// CHECK: %[[LAST:.*]] = tensor.expand_shape %[[PAD]] {{\[}}[0], [1, 2], [3]] output_shape [%[[N]], 1, 64, 8]
// CHECK: %[[P:.*]] = tensor.insert_slice %[[LAST]] into %[[W]][0, 4, 0, 0] [%{{.*}}, 1, 64, 8]
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[P]] : tensor<64x64xf32>, tensor<?x5x64x8xf32>)
func.func @images_reduced(%w: tensor<64x64xf32>, %x: tensor<2x64x16xf32>, %o: tensor<2x64x16xf32>) -> tensor<2x64x16xf32> {
  %y = linalg.generic {indexing_maps = [affine_map<(i, f, p, c) -> (f, c)>, affine_map<(i, f, p, c) -> (i, c, p)>, affine_map<(i, f, p, c) -> (i, f, p)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %x : tensor<64x64xf32>, tensor<2x64x16xf32>) outs(%o : tensor<2x64x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x64x16xf32>
  return %y : tensor<2x64x16xf32>
}
func.func @images_reduced_ragged(%w: tensor<64x64xf32>, %x: tensor<2x64x36xf32>, %o: tensor<2x64x36xf32>) -> tensor<2x64x36xf32> {
  %y = linalg.generic {indexing_maps = [affine_map<(i, f, p, c) -> (f, c)>, affine_map<(i, f, p, c) -> (i, c, p)>, affine_map<(i, f, p, c) -> (i, f, p)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %x : tensor<64x64xf32>, tensor<2x64x36xf32>) outs(%o : tensor<2x64x36xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x64x36xf32>
  return %y : tensor<2x64x36xf32>
}
func.func @images_reduced_ragged_dynamic(%w: tensor<64x64xf32>, %x: tensor<?x64x36xf32>, %o: tensor<?x64x36xf32>) -> tensor<?x64x36xf32> {
  %y = linalg.generic {indexing_maps = [affine_map<(i, f, p, c) -> (f, c)>, affine_map<(i, f, p, c) -> (i, c, p)>, affine_map<(i, f, p, c) -> (i, f, p)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %x : tensor<64x64xf32>, tensor<?x64x36xf32>) outs(%o : tensor<?x64x36xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x64x36xf32>
  return %y : tensor<?x64x36xf32>
}

// -----

// Tests that a B known only at run time and read transposed, at (n, k) (a
// training step's linear layer: x W^T), is packed by a copy kernel, [N, K]
// = [16, 4] viewed as [2, 8, 4] and transposed to [2, 4, 8], when 64 rows
// reuse it; the product then reads the panels.
// CHECK-LABEL: func.func @runtime_transposed
// CHECK: %[[V:.*]] = tensor.expand_shape %arg1 {{\[\[}}0, 1], [2]] output_shape [2, 8, 4] : tensor<16x4xf32> into tensor<2x8x4xf32>
// CHECK: %[[P:.*]] = linalg.transpose ins(%[[V]] : tensor<2x8x4xf32>) outs(%{{.*}} : tensor<2x4x8xf32>) permutation = [0, 2, 1]
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[P]] : tensor<64x4xf32>, tensor<2x4x8xf32>)
#a = affine_map<(m, n, k) -> (m, k)>
#bt = affine_map<(m, n, k) -> (n, k)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @runtime_transposed(%x: tensor<64x4xf32>, %w: tensor<16x4xf32>) -> tensor<64x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<64x16xf32>) -> tensor<64x16xf32>
  %y = linalg.generic {indexing_maps = [#a, #bt, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<64x4xf32>, tensor<16x4xf32>) outs(%init : tensor<64x16xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<64x16xf32>
  return %y : tensor<64x16xf32>
}

// -----

// Tests that a run-time B whose K is known only at run time (dW = X^T dY
// over a dynamic batch) is packed too, its K read off B.
// CHECK-LABEL: func.func @runtime_dynamic_k
// CHECK: %[[K:.*]] = tensor.dim %arg1, %c0
// CHECK: %[[V:.*]] = tensor.expand_shape %arg1 {{\[\[}}0], [1, 2]] output_shape [%{{.*}}, 2, 8] : tensor<?x16xf32> into tensor<?x2x8xf32>
// CHECK: %[[P:.*]] = linalg.transpose ins(%[[V]] : tensor<?x2x8xf32>) outs(%{{.*}} : tensor<2x?x8xf32>) permutation = [1, 0, 2]
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[P]] : tensor<64x?xf32>, tensor<2x?x8xf32>)
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @runtime_dynamic_k(%x: tensor<64x?xf32>, %w: tensor<?x16xf32>) -> tensor<64x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<64x16xf32>) -> tensor<64x16xf32>
  %y = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<64x?xf32>, tensor<?x16xf32>) outs(%init : tensor<64x16xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<64x16xf32>
  return %y : tensor<64x16xf32>
}

// -----

// Tests a vector-matrix product (a classifier at batch 1, its unit row
// folded away) with constant weights [K, N] = [2, 16]: packed as a row
// matmul's, [2, 2, 8] read through (n floordiv 8, k, n mod 8).
// CHECK-DAG: #[[$VPACKED:.*]] = affine_map<(d0, d1) -> (d0 floordiv 8, d1, d0 mod 8)>
// CHECK-LABEL: func.func @vecmat
// CHECK: %[[W:.*]] = arith.constant dense_resource<packed> : tensor<2x2x8xf32>
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[$VPACKED]], #{{.*}}]{{.*}} ins(%arg0, %[[W]] : tensor<2xf32>, tensor<2x2x8xf32>)
func.func @vecmat(%x: tensor<2xf32>) -> tensor<16xf32> {
  %w = arith.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0],
                             [16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0]]> : tensor<2x16xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(n, k) -> (k)>, affine_map<(n, k) -> (k, n)>, affine_map<(n, k) -> (n)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x, %w : tensor<2xf32>, tensor<2x16xf32>) outs(%c : tensor<16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %y : tensor<16xf32>
}

// -----

// Tests a 1x1 convolution's weights as the product's A, rows 4 KiB apart
// (1024 channels): stored with 16 more floats a row and read through a
// [8, 1024] slice, so a block's rows fall in different L1 sets. 512
// channels (2 KiB apart) stay as they are.
// CHECK-LABEL: func.func @padded_rows
// CHECK: %[[ROWS:.*]] = arith.constant dense<5.000000e-01> : tensor<8x1040xf32>
// CHECK: %[[A:.*]] = tensor.extract_slice %[[ROWS]][0, 0] [8, 1024] [1, 1] : tensor<8x1040xf32> to tensor<8x1024xf32>
// CHECK: linalg.generic {{.*}} ins(%[[A]], %{{.*}} : tensor<8x1024xf32>,
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<8x512xf32>,
func.func @padded_rows(%x: tensor<1024x16xf32>, %x2: tensor<512x16xf32>, %o: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %w4 = arith.constant dense<0.5> : tensor<8x1024x1x1xf32>
  %w = tensor.collapse_shape %w4 [[0], [1, 2, 3]] : tensor<8x1024x1x1xf32> into tensor<8x1024xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(f, p, c) -> (f, c)>, affine_map<(f, p, c) -> (c, p)>, affine_map<(f, p, c) -> (f, p)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : tensor<8x1024xf32>, tensor<1024x16xf32>) outs(%o : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  %v = arith.constant dense<0.25> : tensor<8x512xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(f, p, c) -> (f, c)>, affine_map<(f, p, c) -> (c, p)>, affine_map<(f, p, c) -> (f, p)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%v, %x2 : tensor<8x512xf32>, tensor<512x16xf32>) outs(%o : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %y, %z : tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

// Tests a constant A packed by rows where B is packed: [8, 4] as [2, 4, 4]
// read at (m floordiv 4, k, m mod 4), each k's 4 rows of a block side by
// side. Row m holds m, so panel 0 is 0, 1, 2, 3 at every k and panel 1 is
// 4, 5, 6, 7 (after the blob's 4-byte alignment header).
// CHECK: affine_map<(d0, d1, d2) -> (d0 floordiv 4, d2, d0 mod 4)>
// CHECK-LABEL: func.func @packed_rows
// CHECK-DAG: %[[A:.*]] = arith.constant dense_resource<packed_rows> : tensor<2x4x4xf32>
// CHECK-DAG: %[[B:.*]] = arith.constant dense_resource<packed> : tensor<2x4x8xf32>
// CHECK: linalg.generic {{.*}} ins(%[[A]], %[[B]] : tensor<2x4x4xf32>, tensor<2x4x8xf32>)
// CHECK: packed_rows: "0x10000000
// CHECK-SAME: 000000000000803F0000004000004040000000000000803F0000004000004040
// CHECK-SAME: 000000000000803F0000004000004040000000000000803F0000004000004040
// CHECK-SAME: 000080400000A0400000C0400000E040
func.func @packed_rows(%o: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %a = arith.constant dense<[
    [0.0, 0.0, 0.0, 0.0],
    [1.0, 1.0, 1.0, 1.0],
    [2.0, 2.0, 2.0, 2.0],
    [3.0, 3.0, 3.0, 3.0],
    [4.0, 4.0, 4.0, 4.0],
    [5.0, 5.0, 5.0, 5.0],
    [6.0, 6.0, 6.0, 6.0],
    [7.0, 7.0, 7.0, 7.0]]> : tensor<8x4xf32>
  %w = arith.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0],
                             [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0],
                             [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0],
                             [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]]> : tensor<4x16xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %w : tensor<8x4xf32>, tensor<4x16xf32>) outs(%o : tensor<8x16xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// Tests a batch of constant A packed by rows (Winograd's transformed
// filters, one [F, C] per transform point, B's batch loop): [2, 8, 4] as
// [2, 2, 4, 4] read at (p, f floordiv 4, c, f mod 4).
// CHECK: affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 4, d3, d1 mod 4)>
// CHECK-LABEL: func.func @packed_rows_batch
// CHECK: %[[A:.*]] = arith.constant dense_resource<packed_rows> : tensor<2x2x4x4xf32>
// CHECK: linalg.generic {{.*}} ins(%[[A]], %{{.*}} : tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>)
func.func @packed_rows_batch(%x: tensor<2x2x4x8xf32>, %o: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %u = arith.constant dense<[[[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0],
                              [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]],
                             [[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0],
                              [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 9.0]]]> : tensor<2x8x4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(p, f, t, c) -> (p, f, c)>, affine_map<(p, f, t, c) -> (p, t floordiv 8, c, t mod 8)>, affine_map<(p, f, t, c) -> (p, f, t)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%u, %x : tensor<2x8x4xf32>, tensor<2x2x4x8xf32>) outs(%o : tensor<2x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// RUN: kiln-opt %s -split-input-file -kiln-form-kernels=conv-vector-bits=512 | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-form-kernels="conv-vector-bits=512 column-block-bytes=0" | FileCheck %s --check-prefix=ROWS

// Tests that a product whose B passes column-block-bytes (a 1x1
// convolution's 256-channel 56x56 image, 3.2 MB) is tiled by blocks of
// B's columns, the widest whose 256 x Nb panel fits L1 (32 columns, 32
// KiB), all 64 rows per tile; its ReLU follows the tile. With the option
// at 0 it is tiled by blocks of 8 rows (the register tile: 8 x 2 vectors
// for a reduction of 256), each reading all of B.
// CHECK-LABEL: func.func @columns
// CHECK: scf.forall (%[[J:.*]]) = (0) to (3136) step (32)
// CHECK: tensor.extract_slice %arg1[0, %[[J]]] [256, 32] [1, 1]
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<64x256xf32>, tensor<256x32xf32>)
// CHECK: arith.maximumf
// ROWS-LABEL: func.func @columns
// ROWS: scf.forall (%{{.*}}) = (0) to (64) step (8)
// ROWS: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<8x256xf32>, tensor<256x3136xf32>)
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>
func.func @columns(%w: tensor<64x256xf32>, %x: tensor<256x3136xf32>) -> tensor<64x3136xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x3136xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x3136xf32>) -> tensor<64x3136xf32>
  %p = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : tensor<64x256xf32>, tensor<256x3136xf32>) outs(%f : tensor<64x3136xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %m = arith.mulf %u, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<64x3136xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<64x3136xf32>) outs(%e : tensor<64x3136xf32>) {
  ^bb0(%v: f32, %out: f32):
    %y = arith.maximumf %v, %zero : f32
    linalg.yield %y : f32
  } -> tensor<64x3136xf32>
  return %r : tensor<64x3136xf32>
}

// -----

// Tests a linear layer with big weights (3072 x 768 f32, 9.4 MB) whose
// consumer needs whole rows of it (a row sum standing for a layer-norm):
// the product is a kernel of its own, tiled by columns (K is long: the
// widest panel within 512 KiB of L2, 32 columns), with the GELU-like
// producer of its A left to a kernel of its own (each column tile would
// recompute all of it); the sum and its epilogue take the product from
// memory, tiled by rows.
// CHECK-LABEL: func.func @row_consumer
// CHECK: %[[G:.*]] = linalg.generic
// CHECK: math.erf
// CHECK: scf.forall (%{{.*}}) = (0) to (768) step (32)
// CHECK: linalg.generic {{.*}} ins(%[[G]], %{{.*}} : tensor<128x3072xf32>, tensor<3072x32xf32>)
// CHECK: scf.forall (%{{.*}}) in (128)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK-NOT: tensor<3072x
// ROWS-LABEL: func.func @row_consumer
// ROWS: scf.forall (%{{.*}}) = (0) to (128) step (8)
// ROWS: math.erf
// ROWS: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<8x3072xf32>, tensor<3072x768xf32>)
// ROWS: iterator_types = ["parallel", "reduction"]
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>
#row = affine_map<(m, n) -> (m)>
func.func @row_consumer(%h: tensor<128x3072xf32>, %w: tensor<3072x768xf32>) -> tensor<128x768xf32> {
  %zero = arith.constant 0.0 : f32
  %eh = tensor.empty() : tensor<128x3072xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<128x3072xf32>) outs(%eh : tensor<128x3072xf32>) {
  ^bb0(%v: f32, %out: f32):
    %y = math.erf %v : f32
    linalg.yield %y : f32
  } -> tensor<128x3072xf32>
  %e = tensor.empty() : tensor<128x768xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<128x768xf32>) -> tensor<128x768xf32>
  %p = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%g, %w : tensor<128x3072xf32>, tensor<3072x768xf32>) outs(%f : tensor<128x768xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %m = arith.mulf %u, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<128x768xf32>
  %es = tensor.empty() : tensor<128xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%es : tensor<128xf32>) -> tensor<128xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%p : tensor<128x768xf32>) outs(%fs : tensor<128xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  } -> tensor<128xf32>
  %o = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p, %sum : tensor<128x768xf32>, tensor<128xf32>) outs(%e : tensor<128x768xf32>) {
  ^bb0(%v: f32, %t: f32, %out: f32):
    %y = arith.subf %v, %t : f32
    linalg.yield %y : f32
  } -> tensor<128x768xf32>
  return %o : tensor<128x768xf32>
}

// -----

// Tests that a B packed at run time (the image of a 1x1 convolution,
// packed into 16-column panels [196, 256, 16] read through (n floordiv 16,
// k, n mod 16)) is packed by each column tile: the transpose joins the
// kernel for the tile's 2 panels (32 KiB), so the image goes through
// memory once.
// CHECK-LABEL: func.func @runtime_pack
// CHECK: scf.forall (%[[J:.*]]) = (0) to (3136) step (32)
// CHECK: %[[P:.*]] = affine.apply #{{.*}}(%[[J]])
// CHECK: %[[S:.*]] = tensor.extract_slice %{{.*}}[0, %[[P]], %{{.*}}] [256, 2, 16]
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[S]] : tensor<256x2x16xf32>) outs(%{{.*}} : tensor<2x256x16xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[T]] : tensor<64x256xf32>, tensor<2x256x16xf32>)
// CHECK: arith.maximumf
// ROWS-LABEL: func.func @runtime_pack
// ROWS: linalg.transpose ins(%{{.*}} : tensor<256x196x16xf32>)
// ROWS: scf.forall (%{{.*}}) = (0) to (64) step (8)
#a = affine_map<(m, n, k) -> (m, k)>
#pb = affine_map<(m, n, k) -> (n floordiv 16, k, n mod 16)>
#c = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>
func.func @runtime_pack(%w: tensor<64x256xf32>, %x: tensor<256x3136xf32>) -> tensor<64x3136xf32> {
  %zero = arith.constant 0.0 : f32
  %v = tensor.expand_shape %x [[0], [1, 2]] output_shape [256, 196, 16] : tensor<256x3136xf32> into tensor<256x196x16xf32>
  %pe = tensor.empty() : tensor<196x256x16xf32>
  %packed = linalg.transpose ins(%v : tensor<256x196x16xf32>) outs(%pe : tensor<196x256x16xf32>) permutation = [1, 0, 2]
  %e = tensor.empty() : tensor<64x3136xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x3136xf32>) -> tensor<64x3136xf32>
  %p = linalg.generic {indexing_maps = [#a, #pb, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %packed : tensor<64x256xf32>, tensor<196x256x16xf32>) outs(%f : tensor<64x3136xf32>) {
  ^bb0(%u: f32, %b: f32, %acc: f32):
    %m = arith.mulf %u, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<64x3136xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<64x3136xf32>) outs(%e : tensor<64x3136xf32>) {
  ^bb0(%y: f32, %out: f32):
    %z = arith.maximumf %y, %zero : f32
    linalg.yield %z : f32
  } -> tensor<64x3136xf32>
  return %r : tensor<64x3136xf32>
}

// -----

// Tests the same for a batch of 4 images ([4, 196, 256, 16] packed): a
// tile's slice is one image's 2 panels (32 KiB), not the batch's 128 KiB,
// so the transpose joins each (image, column) tile too. (Sized with the
// whole batch, every image's pack past batch 1 ran as a pass of its own:
// ResNet-50 at batch 8, 64 -> 256 at 56x56 4.92 -> 4.64 ms.)
// CHECK-LABEL: func.func @runtime_pack_batch
// CHECK: scf.forall (%[[I:.*]], %[[J:.*]]) = (0, 0) to (4, 3136) step (1, 32)
// CHECK: %[[S:.*]] = tensor.extract_slice %{{.*}}[%[[I]], 0, %{{.*}}, %{{.*}}] [1, 256, 2, 16]
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[S]] : tensor<1x256x2x16xf32>) outs(%{{.*}} : tensor<1x2x256x16xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[T]] : tensor<64x256xf32>, tensor<1x2x256x16xf32>)
#ab = affine_map<(i, m, n, k) -> (m, k)>
#pbb = affine_map<(i, m, n, k) -> (i, n floordiv 16, k, n mod 16)>
#cb = affine_map<(i, m, n, k) -> (i, m, n)>
#idb = affine_map<(i, m, n) -> (i, m, n)>
func.func @runtime_pack_batch(%w: tensor<64x256xf32>, %x: tensor<4x256x3136xf32>) -> tensor<4x64x3136xf32> {
  %zero = arith.constant 0.0 : f32
  %v = tensor.expand_shape %x [[0], [1], [2, 3]] output_shape [4, 256, 196, 16] : tensor<4x256x3136xf32> into tensor<4x256x196x16xf32>
  %pe = tensor.empty() : tensor<4x196x256x16xf32>
  %packed = linalg.transpose ins(%v : tensor<4x256x196x16xf32>) outs(%pe : tensor<4x196x256x16xf32>) permutation = [0, 2, 1, 3]
  %e = tensor.empty() : tensor<4x64x3136xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x64x3136xf32>) -> tensor<4x64x3136xf32>
  %p = linalg.generic {indexing_maps = [#ab, #pbb, #cb], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %packed : tensor<64x256xf32>, tensor<4x196x256x16xf32>) outs(%f : tensor<4x64x3136xf32>) {
  ^bb0(%u: f32, %b: f32, %acc: f32):
    %m = arith.mulf %u, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x64x3136xf32>
  %r = linalg.generic {indexing_maps = [#idb, #idb], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%p : tensor<4x64x3136xf32>) outs(%e : tensor<4x64x3136xf32>) {
  ^bb0(%y: f32, %out: f32):
    %z = arith.maximumf %y, %zero : f32
    linalg.yield %z : f32
  } -> tensor<4x64x3136xf32>
  return %r : tensor<4x64x3136xf32>
}

// -----

// Tests that a run-time pack whose tile panel would pass 64 KiB (K = 2048:
// the tile's one 16-column panel is 128 KiB) stays a kernel of its own:
// the product reads its panels from it. Its 49 column tiles are odd but
// many: the rows stay whole (@odd_tiles below splits 7).
// CHECK-LABEL: func.func @runtime_pack_big
// CHECK: linalg.transpose ins(%{{.*}} : tensor<2048x49x16xf32>)
// CHECK: scf.forall (%{{[^,]*}}) = (0) to (784) step (16)
// CHECK-NOT: linalg.transpose
// CHECK: return
#a2 = affine_map<(m, n, k) -> (m, k)>
#pb2 = affine_map<(m, n, k) -> (n floordiv 16, k, n mod 16)>
#c2 = affine_map<(m, n, k) -> (m, n)>
func.func @runtime_pack_big(%w: tensor<64x2048xf32>, %x: tensor<2048x784xf32>) -> tensor<64x784xf32> {
  %zero = arith.constant 0.0 : f32
  %v = tensor.expand_shape %x [[0], [1, 2]] output_shape [2048, 49, 16] : tensor<2048x784xf32> into tensor<2048x49x16xf32>
  %pe = tensor.empty() : tensor<49x2048x16xf32>
  %packed = linalg.transpose ins(%v : tensor<2048x49x16xf32>) outs(%pe : tensor<49x2048x16xf32>) permutation = [1, 0, 2]
  %e = tensor.empty() : tensor<64x784xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x784xf32>) -> tensor<64x784xf32>
  %p = linalg.generic {indexing_maps = [#a2, #pb2, #c2], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %packed : tensor<64x2048xf32>, tensor<49x2048x16xf32>) outs(%f : tensor<64x784xf32>) {
  ^bb0(%u: f32, %b: f32, %acc: f32):
    %m = arith.mulf %u, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<64x784xf32>
  return %p : tensor<64x784xf32>
}

// -----

// Tests that column tiles of an odd count, and few (ResNet-50's 512 -> 128
// 1x1 convolution at 28x28: 7 tiles of 112 pixels), split the rows in
// halves too, the columns' loop outermost: 14 tiles, as many for each of
// two threads, each thread's run sharing its panels.
// CHECK-LABEL: func.func @odd_tiles
// CHECK: scf.forall (%[[J:.*]], %[[I:.*]]) = (0, 0) to (784, 128) step (112, 64)
// CHECK: tensor.extract_slice %arg0[%[[I]], 0] [64, 512] [1, 1]
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<64x512xf32>, tensor<7x512x16xf32>)
// CHECK: arith.maximumf
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%[[I]], %[[J]]] [64, 112]
#a3 = affine_map<(m, n, k) -> (m, k)>
#pb3 = affine_map<(m, n, k) -> (n floordiv 16, k, n mod 16)>
#c3 = affine_map<(m, n, k) -> (m, n)>
#id3 = affine_map<(m, n) -> (m, n)>
func.func @odd_tiles(%w: tensor<128x512xf32>, %packed: tensor<49x512x16xf32>) -> tensor<128x784xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x784xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<128x784xf32>) -> tensor<128x784xf32>
  %p = linalg.generic {indexing_maps = [#a3, #pb3, #c3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %packed : tensor<128x512xf32>, tensor<49x512x16xf32>) outs(%f : tensor<128x784xf32>) {
  ^bb0(%u: f32, %b: f32, %acc: f32):
    %m = arith.mulf %u, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<128x784xf32>
  %r = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<128x784xf32>) outs(%e : tensor<128x784xf32>) {
  ^bb0(%v: f32, %o: f32):
    %y = arith.maximumf %v, %zero : f32
    linalg.yield %y : f32
  } -> tensor<128x784xf32>
  return %r : tensor<128x784xf32>
}

// -----

// Tests a product whose constant B (768 x 2304 weights, 7 MB) is shared by
// every leading index of A and C, with few rows per index ([197, 8, 768]:
// ViT's in-projection after its [seq, batch] transpose): tiled by column
// panels and leading indices, the panels' loop outermost, so each thread's
// contiguous run of tiles shares a panel rather than every index reading
// all of them.
// CHECK-LABEL: func.func @shared_weights_few_rows
// CHECK: scf.forall (%[[J:.*]], %[[L:.*]]) = (0, 0) to (2304, 197) step (128, 1)
// CHECK: tensor.extract_slice %arg0[%[[L]], 0, 0] [1, 8, 768]
#wa = affine_map<(l, m, n, k) -> (l, m, k)>
#wb = affine_map<(l, m, n, k) -> (k, n)>
#wc = affine_map<(l, m, n, k) -> (l, m, n)>
func.func @shared_weights_few_rows(%x: tensor<197x8x768xf32>) -> tensor<197x8x2304xf32> {
  %w = arith.constant dense<1.0> : tensor<768x2304xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<197x8x2304xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<197x8x2304xf32>) -> tensor<197x8x2304xf32>
  %p = linalg.generic {indexing_maps = [#wa, #wb, #wc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<197x8x768xf32>, tensor<768x2304xf32>) outs(%f : tensor<197x8x2304xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %m = arith.mulf %u, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<197x8x2304xf32>
  return %p : tensor<197x8x2304xf32>
}

// -----

// Tests that one image's product with constant A within L1 (a 1x1
// convolution's 24 x 64 filters, 6 KB) and B wider than A is tall (its
// 64-channel image, 3136 pixels: 800 KB, under column-block-bytes) is
// tiled by columns too: each thread of the pool takes its share of the
// pixels, as the kernels around it do, not half of every pixel's channels
// from all of the image. A is read whole by every tile.
// CHECK-LABEL: func.func @image_columns
// CHECK: scf.forall (%{{.*}}) = (0) to (3136) step (
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<24x64xf32>, tensor<64x
// ROWS-LABEL: func.func @image_columns
// ROWS: scf.forall (%{{.*}}) = (0) to (24) step (
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @image_columns(%x: tensor<64x3136xf32>) -> tensor<24x3136xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<0.5> : tensor<24x64xf32>
  %e = tensor.empty() : tensor<24x3136xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<24x3136xf32>) -> tensor<24x3136xf32>
  %p = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : tensor<24x64xf32>, tensor<64x3136xf32>) outs(%f : tensor<24x3136xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %m = arith.mulf %u, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<24x3136xf32>
  return %p : tensor<24x3136xf32>
}

// -----

// Tests that A past L1 (256 x 64 filters, 64 KB: every column tile reads
// it again) keeps such a product tiled by rows.
// CHECK-LABEL: func.func @image_rows
// CHECK: scf.forall (%{{.*}}) = (0) to (256) step (
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @image_rows(%x: tensor<64x3136xf32>) -> tensor<256x3136xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<0.5> : tensor<256x64xf32>
  %e = tensor.empty() : tensor<256x3136xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<256x3136xf32>) -> tensor<256x3136xf32>
  %p = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : tensor<256x64xf32>, tensor<64x3136xf32>) outs(%f : tensor<256x3136xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %m = arith.mulf %u, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<256x3136xf32>
  return %p : tensor<256x3136xf32>
}

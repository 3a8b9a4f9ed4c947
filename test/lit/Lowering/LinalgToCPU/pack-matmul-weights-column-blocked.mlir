// RUN: kiln-opt %s -split-input-file -kiln-pack-matmul-weights="vector-bits=256 column-block-bytes=4096" | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-pack-matmul-weights="vector-bits=256" | FileCheck %s --check-prefix=NEVER

// Tests that a 1x1 convolution reducing its channels (64 -> 64, rows under
// 4x the depth) gets its images packed when each image's [K, N] is past
// `column-block-bytes` (64 x 32 floats, 8 KiB): kernel formation then
// tiles it by columns and packs each tile's panel in a stack buffer, no
// pass of its own. Without the option (0) it stays as it is. Two images:
// the copy is not marked kiln.spread (the pool splits the images).
// CHECK-LABEL: func.func @reduction_past_blocks
// CHECK: %[[T:.*]] = linalg.transpose ins(%{{.*}} : tensor<2x64x4x8xf32>) outs(%{{.*}} : tensor<2x4x64x8xf32>) permutation = [0, 2, 1, 3]{{ *$}}
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[T]] : tensor<64x64xf32>, tensor<2x4x64x8xf32>)
// NEVER-LABEL: func.func @reduction_past_blocks
// NEVER-NOT: linalg.transpose
// NEVER: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<64x64xf32>, tensor<2x64x32xf32>)
func.func @reduction_past_blocks(%w: tensor<64x64xf32>, %x: tensor<2x64x32xf32>, %o: tensor<2x64x32xf32>) -> tensor<2x64x32xf32> {
  %y = linalg.generic {indexing_maps = [affine_map<(i, f, p, c) -> (f, c)>, affine_map<(i, f, p, c) -> (i, c, p)>, affine_map<(i, f, p, c) -> (i, f, p)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %x : tensor<64x64xf32>, tensor<2x64x32xf32>) outs(%o : tensor<2x64x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x64x32xf32>
  return %y : tensor<2x64x32xf32>
}

// -----

// Tests that an image within `column-block-bytes` (64 x 16 floats, 4 KiB)
// stays as it is: row tiles read it from cache.
// CHECK-LABEL: func.func @reduction_within_blocks
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<64x64xf32>, tensor<2x64x16xf32>)
func.func @reduction_within_blocks(%w: tensor<64x64xf32>, %x: tensor<2x64x16xf32>, %o: tensor<2x64x16xf32>) -> tensor<2x64x16xf32> {
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

// -----

// Tests that an image past `column-block-bytes` whose depth is too long
// for a column tile's panel (2048 x 2 vectors x 4 bytes = 128 KiB, past
// the 64 KiB a tile packs for itself) stays as it is: packed, it would be
// a pass of its own, the copy that did not pay.
// CHECK-LABEL: func.func @reduction_too_deep
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<64x2048xf32>, tensor<2x2048x16xf32>)
func.func @reduction_too_deep(%w: tensor<64x2048xf32>, %x: tensor<2x2048x16xf32>, %o: tensor<2x64x16xf32>) -> tensor<2x64x16xf32> {
  %y = linalg.generic {indexing_maps = [affine_map<(i, f, p, c) -> (f, c)>, affine_map<(i, f, p, c) -> (i, c, p)>, affine_map<(i, f, p, c) -> (i, f, p)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %x : tensor<64x2048xf32>, tensor<2x2048x16xf32>) outs(%o : tensor<2x64x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x64x16xf32>
  return %y : tensor<2x64x16xf32>
}

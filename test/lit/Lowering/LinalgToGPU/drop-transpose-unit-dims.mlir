// RUN: kiln-opt %s -split-input-file -kiln-gpu-drop-transpose-unit-dims | FileCheck %s

// Tests that batch 1's split of the heads (a transpose with a unit batch,
// read through a collapse that drops it) writes the collapsed view from
// its input collapsed alike, with the permutation of the dimensions left:
// Q's [0, 2, 1, 3] is [1, 0, 2], K^T's [0, 2, 3, 1] is [1, 2, 0]. The
// collapse moves up to the transpose; other users of the buffer (a dealloc,
// a later op writing it) stay.
// CHECK-LABEL: func.func @heads
// CHECK: %[[QT:.*]] = memref.alloc() {{.*}} : memref<1x4x16x16xf32>
// CHECK: %[[Q:.*]] = memref.collapse_shape %[[QT]] {{\[\[}}0, 1], [2], [3]] : memref<1x4x16x16xf32> into memref<4x16x16xf32>
// CHECK: %[[QX:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0, 1], [2], [3]] : memref<1x16x4x16xf32, strided<[3072, 192, 16, 1]>> into memref<16x4x16xf32, strided<[192, 16, 1]>>
// CHECK: linalg.transpose ins(%[[QX]] : {{.*}}) outs(%[[Q]] : memref<4x16x16xf32>) permutation = [1, 0, 2]
// CHECK: %[[KT:.*]] = memref.alloc() {{.*}} : memref<1x4x16x16xf32>
// CHECK: %[[K:.*]] = memref.collapse_shape %[[KT]]
// CHECK: %[[KX:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0, 1], [2], [3]] : memref<1x16x4x16xf32, strided<[3072, 192, 16, 1], offset: 64>>
// CHECK: linalg.transpose ins(%[[KX]] : {{.*}}) outs(%[[K]] : memref<4x16x16xf32>) permutation = [1, 2, 0]
// CHECK-NOT: linalg.transpose ins(%{{.*}} : memref<1x16x4x16xf32
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[Q]], %[[K]] :
// CHECK: linalg.fill {{.*}} outs(%[[QT]] :
// CHECK: memref.dealloc %[[QT]]
func.func @heads(%qkv: memref<16x192xf32>, %out: memref<4x16x16xf32>) {
  %cst = arith.constant 0.0 : f32
  %sq = memref.subview %qkv[0, 0] [16, 64] [1, 1] : memref<16x192xf32> to memref<16x64xf32, strided<[192, 1]>>
  %sk = memref.subview %qkv[0, 64] [16, 64] [1, 1] : memref<16x192xf32> to memref<16x64xf32, strided<[192, 1], offset: 64>>
  %eq = memref.expand_shape %sq [[0, 1], [2, 3]] output_shape [1, 16, 4, 16] : memref<16x64xf32, strided<[192, 1]>> into memref<1x16x4x16xf32, strided<[3072, 192, 16, 1]>>
  %ek = memref.expand_shape %sk [[0, 1], [2, 3]] output_shape [1, 16, 4, 16] : memref<16x64xf32, strided<[192, 1], offset: 64>> into memref<1x16x4x16xf32, strided<[3072, 192, 16, 1], offset: 64>>
  %qt = memref.alloc() {alignment = 64 : i64} : memref<1x4x16x16xf32>
  linalg.transpose ins(%eq : memref<1x16x4x16xf32, strided<[3072, 192, 16, 1]>>) outs(%qt : memref<1x4x16x16xf32>) permutation = [0, 2, 1, 3]
  %kt = memref.alloc() {alignment = 64 : i64} : memref<1x4x16x16xf32>
  linalg.transpose ins(%ek : memref<1x16x4x16xf32, strided<[3072, 192, 16, 1], offset: 64>>) outs(%kt : memref<1x4x16x16xf32>) permutation = [0, 2, 3, 1]
  %q = memref.collapse_shape %qt [[0, 1], [2], [3]] : memref<1x4x16x16xf32> into memref<4x16x16xf32>
  %k = memref.collapse_shape %kt [[0, 1], [2], [3]] : memref<1x4x16x16xf32> into memref<4x16x16xf32>
  linalg.generic {indexing_maps = [affine_map<(h, i, j, d) -> (h, i, d)>, affine_map<(h, i, j, d) -> (h, d, j)>, affine_map<(h, i, j, d) -> (h, i, j)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : memref<4x16x16xf32>, memref<4x16x16xf32>) outs(%out : memref<4x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%cst : f32) outs(%qt : memref<1x4x16x16xf32>)
  memref.dealloc %qt : memref<1x4x16x16xf32>
  memref.dealloc %kt : memref<1x4x16x16xf32>
  return
}

// -----

// Tests that a transpose stays when its result's collapse merges two
// dimensions longer than 1 (the heads back into the features, [16, 64]),
// or when nothing collapses it.
// CHECK-LABEL: func.func @kept
// CHECK: linalg.transpose ins(%{{.*}} : memref<1x4x16x16xf32>) outs(%{{.*}} : memref<1x16x4x16xf32>) permutation = [0, 2, 1, 3]
// CHECK: linalg.transpose ins(%{{.*}} : memref<1x4x16x16xf32>) outs(%{{.*}} : memref<1x16x4x16xf32>) permutation = [0, 2, 1, 3]
func.func @kept(%o: memref<1x4x16x16xf32>, %y: memref<16x64xf32>, %z: memref<1x16x4x16xf32>) {
  %t = memref.alloc() : memref<1x16x4x16xf32>
  linalg.transpose ins(%o : memref<1x4x16x16xf32>) outs(%t : memref<1x16x4x16xf32>) permutation = [0, 2, 1, 3]
  %c = memref.collapse_shape %t [[0, 1], [2, 3]] : memref<1x16x4x16xf32> into memref<16x64xf32>
  memref.copy %c, %y : memref<16x64xf32> to memref<16x64xf32>
  linalg.transpose ins(%o : memref<1x4x16x16xf32>) outs(%z : memref<1x16x4x16xf32>) permutation = [0, 2, 1, 3]
  return
}

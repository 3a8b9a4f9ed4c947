// RUN: kiln-opt %s --kiln-implicit-padding=vector-bits=256 | FileCheck %s

// Tests that a packed convolution (kiln-pack-conv-weights' channels in the
// lanes: an RGB stem, 3x3 at stride 2) reads the image its zero pad was
// made of: the fill, the copy and the padded buffer are gone. A tile of
// pixels whose windows lie inside the image reads it directly; one at its
// border (the first row, the first column: a tile crosses row ends) reads
// each element through its row's view (the zero row above the image) and
// a column test (zero left of it).
// CHECK-LABEL: func.func @stem
// CHECK-NOT: linalg.map
// CHECK-NOT: linalg.copy
// CHECK: scf.if
// CHECK: memref.load %arg0
// CHECK: vector.fma
// CHECK: } else {
// CHECK: arith.cmpi ult, %{{.*}}, %c8
// CHECK: arith.select
// CHECK: memref.subview %arg0
// CHECK: arith.select
// CHECK: arith.cmpi ult, %{{.*}}, %c8
// CHECK: memref.load
// CHECK: arith.select
// CHECK: vector.fma
// CHECK-NOT: memref<1x3x10x10xf32>
// CHECK: return
#in = affine_map<(n, f, oh, ow, c, kh, kw) -> (n, c, oh * 2 + kh, ow * 2 + kw)>
#w = affine_map<(n, f, oh, ow, c, kh, kw) -> (f floordiv 8, c, kh, kw, f mod 8)>
#out = affine_map<(n, f, oh, ow, c, kh, kw) -> (n, f, oh, ow)>
memref.global "private" constant @filters : memref<1x3x3x3x8xf32> = dense<1.0> {alignment = 64 : i64}
func.func @stem(%arg0: memref<1x3x8x8xf32>, %arg1: memref<1x8x4x4xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %w = memref.get_global @filters : memref<1x3x3x3x8xf32>
  %padded = memref.alloc() {alignment = 64 : i64} : memref<1x3x10x10xf32>
  linalg.fill ins(%zero : f32) outs(%padded : memref<1x3x10x10xf32>)
  %window = memref.subview %padded[0, 0, 1, 1] [1, 3, 8, 8] [1, 1, 1, 1] : memref<1x3x10x10xf32> to memref<1x3x8x8xf32, strided<[300, 100, 10, 1], offset: 11>>
  linalg.copy ins(%arg0 : memref<1x3x8x8xf32>) outs(%window : memref<1x3x8x8xf32, strided<[300, 100, 10, 1], offset: 11>>)
  linalg.fill ins(%zero : f32) outs(%arg1 : memref<1x8x4x4xf32>)
  linalg.generic {indexing_maps = [#in, #w, #out],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%padded, %w : memref<1x3x10x10xf32>, memref<1x3x3x3x8xf32>) outs(%arg1 : memref<1x8x4x4xf32>) {
  ^bb0(%x: f32, %k: f32, %acc: f32):
    %m = arith.mulf %x, %k : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  memref.dealloc %padded : memref<1x3x10x10xf32>
  return
}

// RUN: kiln-opt %s -split-input-file -kiln-vectorize-matmul=vector-bits=512 | FileCheck %s

// Tests the 8-bit product's tile on B packed for VNNI ([N/16, K/4, 16, 4],
// kiln-pack-matmul-weights): 3 rows x 20 columns (a vector of 16 and a
// masked one of 4, whose panel is zero-padded) in i32 accumulators; per
// group of 4 k, each panel's 64 bytes (its [K/4, 64] view's row), A's 4
// bytes of each row as one 32-bit word broadcast to 16 lanes, and
// vpdpbusd per row and vector.
// CHECK-LABEL: func.func @integer_product
// CHECK-NOT: linalg.generic
// CHECK: %[[B:.*]] = memref.collapse_shape %arg1 {{\[}}[0], [1], [2, 3]] : memref<2x8x16x4xi8> into memref<2x8x64xi8>
// CHECK: scf.for %[[G:.*]] = %c0 to %c8 step %c1 iter_args(
// CHECK: %[[K:.*]] = arith.muli %[[G]], %c4
// CHECK-COUNT-2: vector.load %[[B]][%{{.*}}, %[[G]], %c0] : memref<2x8x64xi8>, vector<64xi8>
// CHECK: %[[W:.*]] = vector.load %arg0[%c0, %[[K]]] : memref<3x32xi8>, vector<4xi8>
// CHECK: vector.bitcast %[[W]] : vector<4xi8> to vector<1xi32>
// CHECK: vector.broadcast {{.*}} : i32 to vector<16xi32>
// CHECK: vector.bitcast {{.*}} : vector<16xi32> to vector<64xi8>
// CHECK-COUNT-2: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"({{.*}}) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
// CHECK: scf.yield
// CHECK: vector.store {{.*}} : memref<3x20xi32>, vector<16xi32>
// CHECK: vector.maskedstore {{.*}} : memref<3x20xi32>, vector<16xi1>, vector<16xi32>
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n floordiv 16, k floordiv 4, n mod 16, k mod 4)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @integer_product(%x: memref<3x32xi8>, %w: memref<2x8x16x4xi8>, %y: memref<3x20xi32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<3x32xi8>, memref<2x8x16x4xi8>) outs(%y : memref<3x20xi32>) {
  ^bb0(%p: i8, %q: i8, %acc: i32):
    %p32 = arith.extui %p : i8 to i32
    %q32 = arith.extsi %q : i8 to i32
    %m = arith.muli %p32, %q32 : i32
    %s = arith.addi %acc, %m : i32
    linalg.yield %s : i32
  }
  return
}

// -----

// Tests that an 8-bit product on B as it is ([K, N]) is not taken: the
// tile reads it only packed.
// CHECK-LABEL: func.func @unpacked
// CHECK: linalg.generic
// CHECK-NOT: vpdpbusd
#a2 = affine_map<(m, n, k) -> (m, k)>
#b2 = affine_map<(m, n, k) -> (k, n)>
#c2 = affine_map<(m, n, k) -> (m, n)>
func.func @unpacked(%x: memref<3x32xi8>, %w: memref<32x16xi8>, %y: memref<3x16xi32>) {
  linalg.generic {indexing_maps = [#a2, #b2, #c2], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<3x32xi8>, memref<32x16xi8>) outs(%y : memref<3x16xi32>) {
  ^bb0(%p: i8, %q: i8, %acc: i32):
    %p32 = arith.extui %p : i8 to i32
    %q32 = arith.extsi %q : i8 to i32
    %m = arith.muli %p32, %q32 : i32
    %s = arith.addi %acc, %m : i32
    linalg.yield %s : i32
  }
  return
}

// -----

// Tests that A read with k other than last (its 4 bytes at k..k+3 would
// not be one word) is not taken.
// CHECK-LABEL: func.func @a_transposed
// CHECK: linalg.generic
// CHECK-NOT: vpdpbusd
#a3 = affine_map<(m, n, k) -> (k, m)>
#b3 = affine_map<(m, n, k) -> (n floordiv 16, k floordiv 4, n mod 16, k mod 4)>
#c3 = affine_map<(m, n, k) -> (m, n)>
func.func @a_transposed(%x: memref<32x3xi8>, %w: memref<1x8x16x4xi8>, %y: memref<3x16xi32>) {
  linalg.generic {indexing_maps = [#a3, #b3, #c3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<32x3xi8>, memref<1x8x16x4xi8>) outs(%y : memref<3x16xi32>) {
  ^bb0(%p: i8, %q: i8, %acc: i32):
    %p32 = arith.extui %p : i8 to i32
    %q32 = arith.extsi %q : i8 to i32
    %m = arith.muli %p32, %q32 : i32
    %s = arith.addi %acc, %m : i32
    linalg.yield %s : i32
  }
  return
}

// -----

// Tests an 8-bit product's epilogue in registers past an op between them
// that touches neither the product nor its temporary (A's zero point
// times the weights' column sums, a vector per column the epilogue
// subtracts, loaded per accumulator): the accumulators start from the i32
// zero fill, the correction and cast run on them, and f32 is stored to the
// output; no temporary.
// CHECK-LABEL: func.func @epilogue_past_correction
// CHECK: %[[Z:.*]] = arith.constant dense<0> : vector<16xi32>
// CHECK: linalg.generic
// CHECK-SAME: ins(%arg3, %arg4 : memref<i32>, memref<16xi32>)
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[Z]]
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// CHECK: scf.yield
// CHECK: arith.subi {{.*}} : vector<16xi32>
// CHECK: arith.sitofp {{.*}} : vector<16xi32> to vector<16xf32>
// CHECK: vector.store {{.*}} : memref<2x16xf32>, vector<16xf32>
// CHECK-NOT: linalg.generic
#a4 = affine_map<(m, n, k) -> (m, k)>
#b4 = affine_map<(m, n, k) -> (n floordiv 16, k floordiv 4, n mod 16, k mod 4)>
#c4 = affine_map<(m, n, k) -> (m, n)>
#id4 = affine_map<(d0, d1) -> (d0, d1)>
#col4 = affine_map<(d0, d1) -> (d1)>
#sc4 = affine_map<(d0) -> ()>
#v4 = affine_map<(d0) -> (d0)>
func.func @epilogue_past_correction(%x: memref<2x8xi8>, %w: memref<1x2x16x4xi8>, %y: memref<2x16xf32>,
                                    %za: memref<i32>, %sums: memref<16xi32>) {
  %zero = arith.constant 0 : i32
  %t = memref.alloca() : memref<2x16xi32>
  linalg.fill ins(%zero : i32) outs(%t : memref<2x16xi32>)
  linalg.generic {indexing_maps = [#a4, #b4, #c4], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<2x8xi8>, memref<1x2x16x4xi8>) outs(%t : memref<2x16xi32>) {
  ^bb0(%p: i8, %q: i8, %acc: i32):
    %p32 = arith.extui %p : i8 to i32
    %q32 = arith.extsi %q : i8 to i32
    %m = arith.muli %p32, %q32 : i32
    %s = arith.addi %acc, %m : i32
    linalg.yield %s : i32
  }
  %corr = memref.alloca() : memref<16xi32>
  linalg.generic {indexing_maps = [#sc4, #v4, #v4], iterator_types = ["parallel"]}
      ins(%za, %sums : memref<i32>, memref<16xi32>) outs(%corr : memref<16xi32>) {
  ^bb0(%z: i32, %c: i32, %o: i32):
    %r = arith.muli %z, %c : i32
    linalg.yield %r : i32
  }
  linalg.generic {indexing_maps = [#id4, #col4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%t, %corr : memref<2x16xi32>, memref<16xi32>) outs(%y : memref<2x16xf32>) {
  ^bb0(%v: i32, %c: i32, %o: f32):
    %d = arith.subi %v, %c : i32
    %f = arith.sitofp %d : i32 to f32
    linalg.yield %f : f32
  }
  return
}

// -----

// Tests an 8-bit vector-matrix product (a quantized classifier at batch 1,
// its unit row folded away) on B packed for VNNI: taken as the one-row
// matmul it was, on vpdpbusd (as scalar loops ResNet-50's 2048 x 1000
// QGemm ran 0.58 ms; this way 0.05-0.07).
// CHECK-LABEL: func.func @integer_vecmat
// CHECK-NOT: linalg.generic
// CHECK: memref.expand_shape %arg0 {{\[\[}}0, 1]] output_shape [1, 64]
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
#vx = affine_map<(n, k) -> (k)>
#vw = affine_map<(n, k) -> (n floordiv 16, k floordiv 4, n mod 16, k mod 4)>
#vy = affine_map<(n, k) -> (n)>
func.func @integer_vecmat(%x: memref<64xi8>, %w: memref<4x16x16x4xi8>, %y: memref<64xi32>) {
  linalg.generic {indexing_maps = [#vx, #vw, #vy], iterator_types = ["parallel", "reduction"]}
      ins(%x, %w : memref<64xi8>, memref<4x16x16x4xi8>) outs(%y : memref<64xi32>) {
  ^bb0(%p: i8, %q: i8, %acc: i32):
    %p32 = arith.extui %p : i8 to i32
    %q32 = arith.extsi %q : i8 to i32
    %m = arith.muli %p32, %q32 : i32
    %s = arith.addi %acc, %m : i32
    linalg.yield %s : i32
  }
  return
}

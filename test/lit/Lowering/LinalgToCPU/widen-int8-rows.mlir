// RUN: kiln-opt %s -split-input-file -kiln-widen-int8-rows | FileCheck %s

// Tests that an 8-bit product on B packed in pairs of k reads A as i16
// where A is made by an elementwise op (a quantize) that only such
// products read: that op yields the value zero-extended to i16 itself,
// and the product's body extends i16 to i32. Both products of the same A
// read the one widened op.
// CHECK-LABEL: func.func @at_producer
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x32xi16>
// CHECK: %[[Q:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<4x32xf32>) outs(%[[E]] : tensor<4x32xi16>)
// CHECK: arith.fptoui {{.*}} : f32 to i8
// CHECK: %[[W:.*]] = arith.extui {{.*}} : i8 to i16
// CHECK: linalg.yield %[[W]] : i16
// CHECK-NOT: linalg.generic {{.*}} outs({{.*}} : tensor<4x32xi8>)
// CHECK: linalg.generic {{.*}} ins(%[[Q]], %arg1 : tensor<4x32xi16>, tensor<1x16x8x2xi8>)
// CHECK: ^bb0(%{{.*}}: i16, %{{.*}}: i8, %{{.*}}: i32):
// CHECK: arith.extui {{.*}} : i16 to i32
// CHECK: linalg.generic {{.*}} ins(%[[Q]], %arg2 : tensor<4x32xi16>, tensor<1x16x8x2xi8>)
#id = affine_map<(m, k) -> (m, k)>
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n floordiv 8, k floordiv 2, n mod 8, k mod 2)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @at_producer(%x: tensor<4x32xf32>, %w: tensor<1x16x8x2xi8>, %v: tensor<1x16x8x2xi8>)
    -> (tensor<4x8xi32>, tensor<4x8xi32>) {
  %e = tensor.empty() : tensor<4x32xi8>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x32xf32>) outs(%e : tensor<4x32xi8>) {
  ^bb0(%in: f32, %out: i8):
    %r = arith.fptoui %in : f32 to i8
    linalg.yield %r : i8
  } -> tensor<4x32xi8>
  %zero = arith.constant 0 : i32
  %ce = tensor.empty() : tensor<4x8xi32>
  %c0 = linalg.fill ins(%zero : i32) outs(%ce : tensor<4x8xi32>) -> tensor<4x8xi32>
  %y = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%q, %w : tensor<4x32xi8>, tensor<1x16x8x2xi8>) outs(%c0 : tensor<4x8xi32>) {
  ^bb0(%p: i8, %s: i8, %acc: i32):
    %p32 = arith.extui %p : i8 to i32
    %s32 = arith.extsi %s : i8 to i32
    %m = arith.muli %p32, %s32 : i32
    %t = arith.addi %acc, %m : i32
    linalg.yield %t : i32
  } -> tensor<4x8xi32>
  %z = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%q, %v : tensor<4x32xi8>, tensor<1x16x8x2xi8>) outs(%c0 : tensor<4x8xi32>) {
  ^bb0(%p: i8, %s: i8, %acc: i32):
    %p32 = arith.extui %p : i8 to i32
    %s32 = arith.extsi %s : i8 to i32
    %m = arith.muli %p32, %s32 : i32
    %t = arith.addi %acc, %m : i32
    linalg.yield %t : i32
  } -> tensor<4x8xi32>
  return %y, %z : tensor<4x8xi32>, tensor<4x8xi32>
}

// -----

// Tests a producer of rows known only at run time: its widened form is
// sized by its init, and the byte form goes.
// CHECK-LABEL: func.func @at_producer_dynamic
// CHECK: %[[E:.*]] = tensor.empty(%{{.*}}) : tensor<?x32xi16>
// CHECK: %[[Q:.*]] = linalg.generic {{.*}} outs(%[[E]] : tensor<?x32xi16>)
// CHECK-NOT: tensor<?x32xi8>
// CHECK: linalg.generic {{.*}} ins(%[[Q]], %arg1 : tensor<?x32xi16>, tensor<1x16x8x2xi8>)
#idd = affine_map<(m, k) -> (m, k)>
#ad = affine_map<(m, n, k) -> (m, k)>
#bd = affine_map<(m, n, k) -> (n floordiv 8, k floordiv 2, n mod 8, k mod 2)>
#cd = affine_map<(m, n, k) -> (m, n)>
func.func @at_producer_dynamic(%x: tensor<?x32xf32>, %w: tensor<1x16x8x2xi8>, %c0: tensor<?x8xi32>) -> tensor<?x8xi32> {
  %zero = arith.constant 0 : index
  %m = tensor.dim %x, %zero : tensor<?x32xf32>
  %e = tensor.empty(%m) : tensor<?x32xi8>
  %q = linalg.generic {indexing_maps = [#idd, #idd], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x32xf32>) outs(%e : tensor<?x32xi8>) {
  ^bb0(%in: f32, %out: i8):
    %r = arith.fptoui %in : f32 to i8
    linalg.yield %r : i8
  } -> tensor<?x32xi8>
  %y = linalg.generic {indexing_maps = [#ad, #bd, #cd], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%q, %w : tensor<?x32xi8>, tensor<1x16x8x2xi8>) outs(%c0 : tensor<?x8xi32>) {
  ^bb0(%p: i8, %s: i8, %acc: i32):
    %p32 = arith.extui %p : i8 to i32
    %s32 = arith.extsi %s : i8 to i32
    %mm = arith.muli %p32, %s32 : i32
    %t = arith.addi %acc, %mm : i32
    linalg.yield %t : i32
  } -> tensor<?x8xi32>
  return %y : tensor<?x8xi32>
}

// -----

// Tests that an A read by something else too (here returned) stays bytes
// for it, and the product reads a zero-extension of its own; so does an
// A that is an argument, its rows known only at run time.
// CHECK-LABEL: func.func @shared
// CHECK: %[[Q:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<4x32xi8>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x32xi16>
// CHECK: %[[W:.*]] = linalg.generic {{.*}} ins(%[[Q]] : tensor<4x32xi8>) outs(%[[E]] : tensor<4x32xi16>)
// CHECK: arith.extui {{.*}} : i8 to i16
// CHECK: linalg.generic {{.*}} ins(%[[W]], %arg1 : tensor<4x32xi16>, tensor<1x16x8x2xi8>)
// CHECK: return %{{.*}}, %[[Q]]
#id2 = affine_map<(m, k) -> (m, k)>
#a2 = affine_map<(m, n, k) -> (m, k)>
#b2 = affine_map<(m, n, k) -> (n floordiv 8, k floordiv 2, n mod 8, k mod 2)>
#c2 = affine_map<(m, n, k) -> (m, n)>
func.func @shared(%x: tensor<4x32xf32>, %w: tensor<1x16x8x2xi8>) -> (tensor<4x8xi32>, tensor<4x32xi8>) {
  %e = tensor.empty() : tensor<4x32xi8>
  %q = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x32xf32>) outs(%e : tensor<4x32xi8>) {
  ^bb0(%in: f32, %out: i8):
    %r = arith.fptoui %in : f32 to i8
    linalg.yield %r : i8
  } -> tensor<4x32xi8>
  %zero = arith.constant 0 : i32
  %ce = tensor.empty() : tensor<4x8xi32>
  %c0 = linalg.fill ins(%zero : i32) outs(%ce : tensor<4x8xi32>) -> tensor<4x8xi32>
  %y = linalg.generic {indexing_maps = [#a2, #b2, #c2], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%q, %w : tensor<4x32xi8>, tensor<1x16x8x2xi8>) outs(%c0 : tensor<4x8xi32>) {
  ^bb0(%p: i8, %s: i8, %acc: i32):
    %p32 = arith.extui %p : i8 to i32
    %s32 = arith.extsi %s : i8 to i32
    %m = arith.muli %p32, %s32 : i32
    %t = arith.addi %acc, %m : i32
    linalg.yield %t : i32
  } -> tensor<4x8xi32>
  return %y, %q : tensor<4x8xi32>, tensor<4x32xi8>
}

// CHECK-LABEL: func.func @argument_dynamic_rows
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[M:.*]] = tensor.dim %arg0, %[[C0]] : tensor<?x32xi8>
// CHECK: %[[E:.*]] = tensor.empty(%[[M]]) : tensor<?x32xi16>
// CHECK: %[[W:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<?x32xi8>) outs(%[[E]] : tensor<?x32xi16>)
// CHECK: linalg.generic {{.*}} ins(%[[W]], %arg1 : tensor<?x32xi16>, tensor<1x16x8x2xi8>)
func.func @argument_dynamic_rows(%q: tensor<?x32xi8>, %w: tensor<1x16x8x2xi8>, %c0: tensor<?x8xi32>) -> tensor<?x8xi32> {
  %y = linalg.generic {indexing_maps = [#a2, #b2, #c2], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%q, %w : tensor<?x32xi8>, tensor<1x16x8x2xi8>) outs(%c0 : tensor<?x8xi32>) {
  ^bb0(%p: i8, %s: i8, %acc: i32):
    %p32 = arith.extui %p : i8 to i32
    %s32 = arith.extsi %s : i8 to i32
    %m = arith.muli %p32, %s32 : i32
    %t = arith.addi %acc, %m : i32
    linalg.yield %t : i32
  } -> tensor<?x8xi32>
  return %y : tensor<?x8xi32>
}

// -----

// Tests that a product on vpdpbusd's groups of 4 keeps its bytes.
// CHECK-LABEL: func.func @groups_of_four
// CHECK-NOT: i16
#a3 = affine_map<(m, n, k) -> (m, k)>
#b3 = affine_map<(m, n, k) -> (n floordiv 16, k floordiv 4, n mod 16, k mod 4)>
#c3 = affine_map<(m, n, k) -> (m, n)>
func.func @groups_of_four(%q: tensor<4x32xi8>, %w: tensor<1x8x16x4xi8>, %c0: tensor<4x16xi32>) -> tensor<4x16xi32> {
  %y = linalg.generic {indexing_maps = [#a3, #b3, #c3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%q, %w : tensor<4x32xi8>, tensor<1x8x16x4xi8>) outs(%c0 : tensor<4x16xi32>) {
  ^bb0(%p: i8, %s: i8, %acc: i32):
    %p32 = arith.extui %p : i8 to i32
    %s32 = arith.extsi %s : i8 to i32
    %m = arith.muli %p32, %s32 : i32
    %t = arith.addi %acc, %m : i32
    linalg.yield %t : i32
  } -> tensor<4x16xi32>
  return %y : tensor<4x16xi32>
}

// RUN: kiln-opt %s -split-input-file -kiln-fold-channel-scales | FileCheck %s

// Tests an SE block's gate scaling the image that a 1x1 projection reads
// (one image, 24 output channels < 196 pixels): the product reads the
// image itself and the weights times the gate by column, w[f, c] * s[0, c, 0, 0];
// the scaled image is gone.
// CHECK: #[[$ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK: #[[$GATE:.*]] = affine_map<(d0, d1) -> (0, d1, 0, 0)>
// CHECK-LABEL: func.func @se_projection
// CHECK: %[[W:.*]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$GATE]], #[[$ID]]], iterator_types = ["parallel", "parallel"]} ins(%arg2, %arg1 : tensor<24x96xf32>, tensor<1x96x1x1xf32>) outs(%{{.*}} : tensor<24x96xf32>)
// CHECK: arith.mulf
// CHECK: %[[X:.*]] = tensor.collapse_shape %arg0 {{\[}}[0], [1], [2, 3]] : tensor<1x96x14x14xf32> into tensor<1x96x196xf32>
// CHECK: linalg.generic {{.*}} ins(%[[W]], %[[X]] : tensor<24x96xf32>, tensor<1x96x196xf32>)
// CHECK-NOT: linalg.generic
#id = affine_map<(n, c, h, w) -> (n, c, h, w)>
#gate = affine_map<(n, c, h, w) -> (n, c, 0, 0)>
#w = affine_map<(n, f, p, c) -> (f, c)>
#x = affine_map<(n, f, p, c) -> (n, c, p)>
#y = affine_map<(n, f, p, c) -> (n, f, p)>
func.func @se_projection(%x: tensor<1x96x14x14xf32>, %s: tensor<1x96x1x1xf32>, %w: tensor<24x96xf32>,
                         %init: tensor<1x24x196xf32>) -> tensor<1x24x196xf32> {
  %e = tensor.empty() : tensor<1x96x14x14xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #gate, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %s : tensor<1x96x14x14xf32>, tensor<1x96x1x1xf32>) outs(%e : tensor<1x96x14x14xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<1x96x14x14xf32>
  %flat = tensor.collapse_shape %scaled [[0], [1], [2, 3]] : tensor<1x96x14x14xf32> into tensor<1x96x196xf32>
  %p = linalg.generic {indexing_maps = [#w, #x, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %flat : tensor<24x96xf32>, tensor<1x96x196xf32>) outs(%init : tensor<1x24x196xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s2 = arith.addf %o, %m : f32
    linalg.yield %s2 : f32
  } -> tensor<1x24x196xf32>
  return %p : tensor<1x24x196xf32>
}

// -----

// Tests what stays: more output channels than pixels (a 7x7 stage, where
// the weights outweigh the image), a batch of 2 (a gate per image), and a
// scaled image no product reads (returned).
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-2: ins(%arg0, %arg1 : tensor<1x96x7x7xf32>, tensor<1x96x1x1xf32>)
// CHECK: ins(%arg4, %arg5 : tensor<2x96x14x14xf32>, tensor<2x96x1x1xf32>)
#id = affine_map<(n, c, h, w) -> (n, c, h, w)>
#gate = affine_map<(n, c, h, w) -> (n, c, 0, 0)>
#w = affine_map<(n, f, p, c) -> (f, c)>
#x = affine_map<(n, f, p, c) -> (n, c, p)>
#y = affine_map<(n, f, p, c) -> (n, f, p)>
func.func @left_alone(%x: tensor<1x96x7x7xf32>, %s: tensor<1x96x1x1xf32>, %w: tensor<64x96xf32>,
                      %init: tensor<1x64x49xf32>, %xb: tensor<2x96x14x14xf32>, %sb: tensor<2x96x1x1xf32>,
                      %w2: tensor<24x96xf32>, %init2: tensor<2x24x196xf32>)
    -> (tensor<1x64x49xf32>, tensor<1x96x7x7xf32>, tensor<2x24x196xf32>) {
  %e = tensor.empty() : tensor<1x96x7x7xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #gate, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %s : tensor<1x96x7x7xf32>, tensor<1x96x1x1xf32>) outs(%e : tensor<1x96x7x7xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<1x96x7x7xf32>
  %flat = tensor.collapse_shape %scaled [[0], [1], [2, 3]] : tensor<1x96x7x7xf32> into tensor<1x96x49xf32>
  %p = linalg.generic {indexing_maps = [#w, #x, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %flat : tensor<64x96xf32>, tensor<1x96x49xf32>) outs(%init : tensor<1x64x49xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s2 = arith.addf %o, %m : f32
    linalg.yield %s2 : f32
  } -> tensor<1x64x49xf32>
  %scaled2 = linalg.generic {indexing_maps = [#id, #gate, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %s : tensor<1x96x7x7xf32>, tensor<1x96x1x1xf32>) outs(%e : tensor<1x96x7x7xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<1x96x7x7xf32>
  %eb = tensor.empty() : tensor<2x96x14x14xf32>
  %scaledb = linalg.generic {indexing_maps = [#id, #gate, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%xb, %sb : tensor<2x96x14x14xf32>, tensor<2x96x1x1xf32>) outs(%eb : tensor<2x96x14x14xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<2x96x14x14xf32>
  %flatb = tensor.collapse_shape %scaledb [[0], [1], [2, 3]] : tensor<2x96x14x14xf32> into tensor<2x96x196xf32>
  %pb = linalg.generic {indexing_maps = [#w, #x, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w2, %flatb : tensor<24x96xf32>, tensor<2x96x196xf32>) outs(%init2 : tensor<2x24x196xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s2 = arith.addf %o, %m : f32
    linalg.yield %s2 : f32
  } -> tensor<2x24x196xf32>
  return %p, %scaled2, %pb : tensor<1x64x49xf32>, tensor<1x96x7x7xf32>, tensor<2x24x196xf32>
}

// -----

// Tests that a generic with a product's maps whose body yields an operand
// (no sum of products) is left alone, its scaled image too.
// CHECK-LABEL: func.func @not_a_product
// CHECK: ins(%arg0, %arg1 : tensor<1x96x14x14xf32>, tensor<1x96x1x1xf32>)
// CHECK: ins(%arg2, %{{.*}} : tensor<24x96xf32>, tensor<1x96x196xf32>)
#id = affine_map<(n, c, h, w) -> (n, c, h, w)>
#gate = affine_map<(n, c, h, w) -> (n, c, 0, 0)>
#w = affine_map<(n, f, p, c) -> (f, c)>
#x = affine_map<(n, f, p, c) -> (n, c, p)>
#y = affine_map<(n, f, p, c) -> (n, f, p)>
func.func @not_a_product(%x: tensor<1x96x14x14xf32>, %s: tensor<1x96x1x1xf32>, %w: tensor<24x96xf32>,
                         %init: tensor<1x24x196xf32>) -> tensor<1x24x196xf32> {
  %e = tensor.empty() : tensor<1x96x14x14xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #gate, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %s : tensor<1x96x14x14xf32>, tensor<1x96x1x1xf32>) outs(%e : tensor<1x96x14x14xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<1x96x14x14xf32>
  %flat = tensor.collapse_shape %scaled [[0], [1], [2, 3]] : tensor<1x96x14x14xf32> into tensor<1x96x196xf32>
  %p = linalg.generic {indexing_maps = [#w, #x, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %flat : tensor<24x96xf32>, tensor<1x96x196xf32>) outs(%init : tensor<1x24x196xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    linalg.yield %b : f32
  } -> tensor<1x24x196xf32>
  return %p : tensor<1x24x196xf32>
}

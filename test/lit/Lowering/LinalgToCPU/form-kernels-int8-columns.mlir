// RUN: kiln-opt %s -kiln-form-kernels="conv-vector-bits=256 column-block-bytes=262144" | FileCheck %s

// Tests the column panels of an 8-bit product on AVX2 (B packed in pairs
// of k, A widened to i16: BERT-base's 3072 -> 768 layer at 128 tokens):
// sized by B's bytes (1 an element, not an f32's 4) and by the 8-bit
// tile's 2-vector register blocks: the widest multiple of 16 columns
// dividing 768 whose 3072 x Nb bytes fit 512 KiB of L2, 128 (6 tiles),
// where f32 sizing and 3-vector blocks made 24 (32 tiles, each reading
// all of A, a third of each in one-vector blocks).
// CHECK-LABEL: func.func @int8_columns
// CHECK: scf.forall (%[[J:.*]]) = (0) to (768) step (128)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<128x3072xi16>, tensor<16x1536x8x2xi8>)
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n floordiv 8, k floordiv 2, n mod 8, k mod 2)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @int8_columns(%x: tensor<128x3072xi16>, %w: tensor<96x1536x8x2xi8>) -> tensor<128x768xi32> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<128x768xi32>
  %f = linalg.fill ins(%zero : i32) outs(%e : tensor<128x768xi32>) -> tensor<128x768xi32>
  %y = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<128x3072xi16>, tensor<96x1536x8x2xi8>) outs(%f : tensor<128x768xi32>) {
  ^bb0(%p: i16, %q: i8, %acc: i32):
    %p32 = arith.extui %p : i16 to i32
    %q32 = arith.extsi %q : i8 to i32
    %m = arith.muli %p32, %q32 : i32
    %s = arith.addi %acc, %m : i32
    linalg.yield %s : i32
  } -> tensor<128x768xi32>
  return %y : tensor<128x768xi32>
}

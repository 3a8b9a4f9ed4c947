// RUN: kiln-opt %s -kiln-pack-matmul-weights="vector-bits=256 row-alias-bytes=64" | FileCheck %s

// Tests the padding of a non-splat constant A whose rows are a multiple of
// row-alias-bytes apart (here 16 floats = 64 bytes; by default 4 KiB):
// each row is copied into a row 16 floats longer, the padding zero, and the
// product reads the [8, 16] slice of it. Row m holds m + 1, so the blob is
// row 0's sixteen 1.0 (0x3F800000), sixteen zeros, then row 1's 2.0
// (after the blob's 4-byte alignment header).
// CHECK-LABEL: func.func @padded_rows_data
// CHECK: %[[ROWS:.*]] = arith.constant dense_resource<padded_rows{{.*}}> : tensor<8x32xf32>
// CHECK: %[[A:.*]] = tensor.extract_slice %[[ROWS]][0, 0] [8, 16] [1, 1] : tensor<8x32xf32> to tensor<8x16xf32>
// CHECK: linalg.generic {{.*}} ins(%[[A]], %{{.*}} : tensor<8x16xf32>,
// CHECK: padded_rows: "0x10000000
// CHECK-SAME: 0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F
// CHECK-SAME: 00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000
// CHECK-SAME: 00000040000000400000004000000040000000400000004000000040000000400000004000000040000000400000004000000040000000400000004000000040
// CHECK-SAME: 00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000
// CHECK-SAME: 00004040000040400000404000004040000040400000404000004040000040400000404000004040000040400000404000004040000040400000404000004040
func.func @padded_rows_data(%x: tensor<16x24xf32>, %o: tensor<8x24xf32>) -> tensor<8x24xf32> {
  %w = arith.constant dense<[
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
    [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0],
    [3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0],
    [4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0],
    [5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0],
    [6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0],
    [7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0],
    [8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0]]> : tensor<8x16xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(f, p, c) -> (f, c)>, affine_map<(f, p, c) -> (c, p)>, affine_map<(f, p, c) -> (f, p)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : tensor<8x16xf32>, tensor<16x24xf32>) outs(%o : tensor<8x24xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x24xf32>
  return %y : tensor<8x24xf32>
}

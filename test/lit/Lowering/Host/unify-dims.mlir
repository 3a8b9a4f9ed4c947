// RUN: kiln-opt %s -split-input-file -kiln-unify-dims -verify-diagnostics | FileCheck %s

// Tests that dimensions one loop reads from two arguments get one symbol
// (the first argument's), their ranges met; and that a dynamic dimension a
// loop also reads as a static size is pinned to it.
// CHECK: module attributes {kiln.dim_ranges = {a = array<i64: 2, 8>, c = array<i64: 3, 3>}}
// CHECK: %arg0: tensor<?x4xf32> {kiln.dims = ["a", 4]}, %arg1: tensor<?x4xf32> {kiln.dims = ["a", 4]}, %arg2: tensor<?xf32> {kiln.dims = ["c"]}
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0) -> (d0)>
module attributes {kiln.dim_ranges = {a = array<i64: 1, 8>, b = array<i64: 2, -1>, c = array<i64: 1, -1>}} {
  func.func @main(%x: tensor<?x4xf32> {kiln.dims = ["a", 4]}, %y: tensor<?x4xf32> {kiln.dims = ["b", 4]},
                  %z: tensor<?xf32> {kiln.dims = ["c"]}, %w: tensor<3xf32>) -> (tensor<?x4xf32>, tensor<3xf32>) {
    %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%x, %y : tensor<?x4xf32>, tensor<?x4xf32>) outs(%x : tensor<?x4xf32>) {
    ^bb0(%p: f32, %q: f32, %o: f32):
      %s = arith.addf %p, %q : f32
      linalg.yield %s : f32
    } -> tensor<?x4xf32>
    %t = linalg.generic {indexing_maps = [#row, #row], iterator_types = ["parallel"]}
        ins(%z : tensor<?xf32>) outs(%w : tensor<3xf32>) {
    ^bb0(%p: f32, %o: f32):
      linalg.yield %p : f32
    } -> tensor<3xf32>
    return %r, %t : tensor<?x4xf32>, tensor<3xf32>
  }
}

// -----

// Ranges with no size in common: an error naming the symbols.
module attributes {kiln.dim_ranges = {a = array<i64: 1, 3>, b = array<i64: 4, -1>}} {
  // expected-error @+1 {{the model requires dimensions a, b to be equal, and their ranges have no size in common}}
  func.func @main(%x: tensor<?xf32> {kiln.dims = ["a"]}, %y: tensor<?xf32> {kiln.dims = ["b"]}) -> tensor<?xf32> {
    %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
        ins(%x : tensor<?xf32>) outs(%y : tensor<?xf32>) {
    ^bb0(%p: f32, %o: f32):
      linalg.yield %p : f32
    } -> tensor<?xf32>
    return %r : tensor<?xf32>
  }
}

// RUN: kiln-opt %s -kiln-to-linalg | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t && kiln compile %s -o %t/r.so
// RUN: kiln run %t/r.so --input c=%S/Inputs/counter-3.npy | FileCheck %s --check-prefix=OUT

// The counter-based generator: an index-hashing generic, no state; the
// counter one of its inputs (every element reads it: on CUDA a kernel
// reads it where a training step keeps it, in device memory).
// CHECK-NOT: tensor.extract
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<i64>)
// CHECK: linalg.index 0
// CHECK: arith.muli
// CHECK: arith.uitofp

// 65536 draws: mean 1/2 and variance 1/12 (0.0833) within sampling error;
// the same counter gives the same numbers (the two results are equal), a
// different one different numbers.
// OUT-DAG: mean: f32 [] [0.{{49[6-9]|50[0-4]}}
// OUT-DAG: var: f32 [] [0.08{{[2-4]}}
// OUT-DAG: same: bool [] [1]
// OUT-DAG: other: bool [] [0]
func.func @main(%c: tensor<i64> {kiln.name = "c"}) -> (tensor<f32> {kiln.name = "mean"}, tensor<f32> {kiln.name = "var"}, tensor<i1> {kiln.name = "same"}, tensor<i1> {kiln.name = "other"}) {
  %u = kiln.random_uniform %c {seed = 11 : i64} : tensor<i64> -> tensor<256x256xf32>
  %m = kiln.reduce_mean %u {axes = array<i64>, keepdims = false} : tensor<256x256xf32> -> tensor<f32>
  %d = kiln.sub %u, %m : tensor<256x256xf32>, tensor<f32> -> tensor<256x256xf32>
  %sq = kiln.mul %d, %d : tensor<256x256xf32>, tensor<256x256xf32> -> tensor<256x256xf32>
  %v = kiln.reduce_mean %sq {axes = array<i64>, keepdims = false} : tensor<256x256xf32> -> tensor<f32>
  %u2 = kiln.random_uniform %c {seed = 11 : i64} : tensor<i64> -> tensor<256x256xf32>
  %eq = kiln.equal %u, %u2 : tensor<256x256xf32>, tensor<256x256xf32> -> tensor<256x256xi1>
  %eqf = kiln.cast %eq : tensor<256x256xi1> -> tensor<256x256xf32>
  %n = kiln.reduce_min %eqf {axes = array<i64>, keepdims = false} : tensor<256x256xf32> -> tensor<f32>
  %same = kiln.cast %n : tensor<f32> -> tensor<i1>
  %one = kiln.constant dense<1> : tensor<i64>
  %c2 = kiln.add %c, %one : tensor<i64>, tensor<i64> -> tensor<i64>
  %w = kiln.random_uniform %c2 {seed = 11 : i64} : tensor<i64> -> tensor<256x256xf32>
  %eq2 = kiln.equal %u, %w : tensor<256x256xf32>, tensor<256x256xf32> -> tensor<256x256xi1>
  %eq2f = kiln.cast %eq2 : tensor<256x256xi1> -> tensor<256x256xf32>
  %n2 = kiln.reduce_min %eq2f {axes = array<i64>, keepdims = false} : tensor<256x256xf32> -> tensor<f32>
  %other = kiln.cast %n2 : tensor<f32> -> tensor<i1>
  return %m, %v, %same, %other : tensor<f32>, tensor<f32>, tensor<i1>, tensor<i1>
}

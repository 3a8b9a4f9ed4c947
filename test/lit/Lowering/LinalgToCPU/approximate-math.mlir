// RUN: kiln-opt %s -pass-pipeline='builtin.module(func.func(kiln-approximate-math))' | FileCheck %s

// Tests that f32 erf becomes arithmetic (no libm call left) and f64 erf stays.
// CHECK-LABEL: func @erf
// CHECK-NOT: math.erf {{.*}} : f32
// CHECK: math.fma
// CHECK: math.erf {{.*}} : f64
func.func @erf(%x: f32, %y: f64) -> (f32, f64) {
  %0 = math.erf %x : f32
  %1 = math.erf %y : f64
  return %0, %1 : f32, f64
}

// Tests that a power by a constant 3 (GPT-2's tanh GELU cubes its input)
// is two multiplications, not exp(3 log x) by libm per lane.
// CHECK-LABEL: func @cube
// CHECK-NOT: math.powf
// CHECK: %[[SQ:.*]] = arith.mulf %arg0, %arg0 : vector<16xf32>
// CHECK: arith.mulf %arg0, %[[SQ]] : vector<16xf32>
func.func @cube(%x: vector<16xf32>) -> vector<16xf32> {
  %three = arith.constant dense<3.0> : vector<16xf32>
  %0 = math.powf %x, %three : vector<16xf32>
  return %0 : vector<16xf32>
}

// RUN: kiln-opt %s -pass-pipeline='builtin.module(func.func(kiln-approximate-math))' | FileCheck %s

// Tests that f32 erf becomes arithmetic (no libm call left): x P(x^2) /
// Q(x^2) where |x| < 3.92 (or NaN), else copysign(1, x); f64 erf stays.
// CHECK-LABEL: func @erf
// CHECK-NOT: math.erf {{.*}} : f32
// CHECK: %[[ABS:.*]] = math.absf %arg0 : f32
// CHECK: %[[IN:.*]] = arith.cmpf ult, %[[ABS]], %{{.*}} : f32
// CHECK: %[[T:.*]] = arith.mulf %arg0, %arg0 : f32
// CHECK-COUNT-4: math.fma %{{.*}}, %[[T]], %{{.*}} : f32
// CHECK: %[[NUM:.*]] = arith.mulf %arg0, %{{.*}} : f32
// CHECK-COUNT-5: math.fma %{{.*}}, %[[T]], %{{.*}} : f32
// CHECK: %[[RATIO:.*]] = arith.divf %[[NUM]], %{{.*}} : f32
// CHECK: %[[ONE:.*]] = math.copysign %{{.*}}, %arg0 : f32
// CHECK: arith.select %[[IN]], %[[RATIO]], %[[ONE]] : f32
// CHECK: math.erf {{.*}} : f64
func.func @erf(%x: f32, %y: f64) -> (f32, f64) {
  %0 = math.erf %x : f32
  %1 = math.erf %y : f64
  return %0, %1 : f32, f64
}

// Tests the same on vectors (GELU's erf in a matmul's epilogue).
// CHECK-LABEL: func @erf_vector
// CHECK-NOT: math.erf
// CHECK: arith.divf {{.*}} : vector<8xf32>
// CHECK: arith.select {{.*}} : vector<8xi1>, vector<8xf32>
func.func @erf_vector(%x: vector<8xf32>) -> vector<8xf32> {
  %0 = math.erf %x : vector<8xf32>
  return %0 : vector<8xf32>
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

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

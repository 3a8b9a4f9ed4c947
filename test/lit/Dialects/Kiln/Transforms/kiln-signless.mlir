// RUN: kiln-opt %s -split-input-file -kiln-signless | FileCheck %s

// Tests that unsigned tensors become signless, the ops whose meaning depends
// on signedness are marked, and constants keep their bits.
// CHECK-LABEL: func.func @main(%arg0: tensor<4xi8>, %arg1: tensor<4xi8>) -> (tensor<4xi8>, tensor<4xi1>, tensor<4xf32>)
// CHECK: kiln.constant dense<-56> : tensor<4xi8>
// CHECK: kiln.div %arg0, %{{.*}} {kiln.unsigned} : tensor<4xi8>, tensor<4xi8> -> tensor<4xi8>
// CHECK: kiln.less %arg0, %arg1 {kiln.unsigned}
// CHECK: kiln.cast %arg0 {kiln.unsigned_in} : tensor<4xi8> -> tensor<4xf32>
// CHECK: kiln.add %arg0, %arg1 {kiln.unsigned}
func.func @main(%a: tensor<4xui8>, %b: tensor<4xui8>) -> (tensor<4xui8>, tensor<4xi1>, tensor<4xf32>) {
  %c = kiln.constant dense<200> : tensor<4xui8>
  %0 = kiln.div %a, %c : tensor<4xui8>, tensor<4xui8> -> tensor<4xui8>
  %1 = kiln.less %a, %b : tensor<4xui8>, tensor<4xui8> -> tensor<4xi1>
  %2 = kiln.cast %a : tensor<4xui8> -> tensor<4xf32>
  %3 = kiln.add %a, %b : tensor<4xui8>, tensor<4xui8> -> tensor<4xui8>
  %4 = kiln.add %0, %3 : tensor<4xui8>, tensor<4xui8> -> tensor<4xui8>
  return %4, %1, %2 : tensor<4xui8>, tensor<4xi1>, tensor<4xf32>
}

// -----

// Tests that an op reading an unsigned value made by an earlier op is
// marked too (marks are decided before any value is retyped).
// CHECK-LABEL: func.func @chain
// CHECK: kiln.cast %arg0 {kiln.unsigned_out} : tensor<4xf32> -> tensor<4xi8>
// CHECK: kiln.cast %{{.*}} {kiln.unsigned_in} : tensor<4xi8> -> tensor<4xf32>
func.func @chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %q = kiln.cast %x : tensor<4xf32> -> tensor<4xui8>
  %f = kiln.cast %q : tensor<4xui8> -> tensor<4xf32>
  return %f : tensor<4xf32>
}

// RUN: kiln-opt %s -kiln-privatize-entry | FileCheck %s

// Tests that @main becomes private and loses its kiln.name attributes.
// CHECK: func.func private @main(%arg0: tensor<2xf32>) -> tensor<2xf32>
func.func @main(%x: tensor<2xf32> {kiln.name = "x"}) -> (tensor<2xf32> {kiln.name = "y"}) {
  return %x : tensor<2xf32>
}

// RUN: kiln-opt %s -kiln-privatize-entry | FileCheck %s

// Tests that @main becomes private, loses its kiln.* attributes (already in
// the signature), and that its inputs are marked read-only for bufferization:
// a scatter into an input once changed the caller's buffer.
// CHECK: func.func private @main(%arg0: tensor<2xf32> {bufferization.writable = false}, %arg1: tensor<2xf32> {bufferization.writable = false}) -> tensor<2xf32>
func.func @main(%x: tensor<2xf32> {kiln.name = "x"}, %w: tensor<2xf32> {kiln.name = "w", kiln.param, kiln.update = 1 : i64}) -> (tensor<2xf32> {kiln.name = "y", kiln.grad_of = 1 : i64}) {
  return %x : tensor<2xf32>
}

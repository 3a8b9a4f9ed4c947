// RUN: kiln-opt %s -kiln-externalize-weights | FileCheck %s

// Tests that resource weights move to a weights buffer after the arena:
// 64-byte aligned offsets in declaration order, views in place of
// get_global, the globals gone, the blobs left for the driver, and the
// embedded weight count reduced. Small constants (inline dense) stay.
// CHECK-LABEL: module attributes
// CHECK-SAME: kiln.external_weights = {{\[\[}}0, dense_resource<w1> : tensor<3xf32>], {{\[}}64, dense_resource<w2> : tensor<2xf32>]]
// CHECK-SAME: kiln.weight_bytes = 4 : i64
// CHECK-NOT: memref.global "private" constant @w1
// CHECK: memref.global "private" constant @small
// CHECK: func.func @main(%[[OUT:.*]]: memref<3xf32>, %[[ARENA:.*]]: memref<0xi8>, %[[W:.*]]: memref<72xi8>)
// CHECK: memref.view %[[W]][%c0][] : memref<72xi8> to memref<3xf32>
// CHECK: memref.view %[[W]][%c64][] : memref<72xi8> to memref<2xf32>
// CHECK: memref.get_global @small
module attributes {kiln.weight_bytes = 24 : i64} {
  memref.global "private" constant @w1 : memref<3xf32> = dense_resource<w1>
  memref.global "private" constant @w2 : memref<2xf32> = dense_resource<w2>
  memref.global "private" constant @small : memref<1xf32> = dense<2.0>
  func.func @main(%out: memref<3xf32>, %arena: memref<0xi8>) {
    %a = memref.get_global @w1 : memref<3xf32>
    %b = memref.get_global @w2 : memref<2xf32>
    %s = memref.get_global @small : memref<1xf32>
    %c0 = arith.constant 0 : index
    %x = memref.load %a[%c0] : memref<3xf32>
    %y = memref.load %b[%c0] : memref<2xf32>
    %z = memref.load %s[%c0] : memref<1xf32>
    %xy = arith.addf %x, %y : f32
    %xyz = arith.addf %xy, %z : f32
    memref.store %xyz, %out[%c0] : memref<3xf32>
    return
  }
}

{-#
  dialect_resources: {
    builtin: {
      w1: "0x040000000000803F0000004000004040",
      w2: "0x040000000000803F00000040"
    }
  }
#-}

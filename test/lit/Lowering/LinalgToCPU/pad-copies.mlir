// RUN: kiln-opt %s -split-input-file -kiln-pad-copies | FileCheck %s

// Tests a bufferized pad (a fill of the whole buffer, then the image
// copied into its window at [1, 1] of the last two dimensions, 2 columns
// on the right): one parallel loop over the padded rows; a row inside the
// image fills its left column, copies the image's row and fills the 2 on
// the right, any other row is filled whole. The fill and the copy are gone.
// CHECK-LABEL: func.func @pad
// CHECK-NOT: linalg.map
// CHECK: scf.parallel (%[[N:.*]], %[[C:.*]], %[[H:.*]]) = (%c0{{.*}}, %c0{{.*}}, %c0{{.*}}) to (%c2{{.*}}, %c4{{.*}}, %c7{{.*}})
// CHECK: %[[R:.*]] = arith.subi %[[H]], %c1
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[R]], %c5
// CHECK: scf.if
// CHECK: linalg.fill {{.*}} outs(%{{.*}} : memref<1xf32
// CHECK: %[[SRC:.*]] = memref.subview %arg0[%{{.*}}, %{{.*}}, %[[R]], 0] [1, 1, 1, 6] [1, 1, 1, 1]
// CHECK: %[[DST:.*]] = memref.subview %arg1[%[[N]], %[[C]], %[[H]], 1] [1, 1, 1, 6] [1, 1, 1, 1]
// CHECK: linalg.copy ins(%[[SRC]] : {{.*}}) outs(%[[DST]] : {{.*}})
// CHECK: memref.subview %arg1[%[[N]], %[[C]], %[[H]], 7] [1, 1, 1, 2] [1, 1, 1, 1]
// CHECK: } else {
// CHECK: memref.subview %arg1[%[[N]], %[[C]], %[[H]], 0] [1, 1, 1, 9] [1, 1, 1, 1]
// CHECK: linalg.fill
// CHECK-NOT: linalg.copy
func.func @pad(%x: memref<2x4x5x6xf32>, %p: memref<2x4x7x9xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.map outs(%p : memref<2x4x7x9xf32>)
    (%init: f32) {
      linalg.yield %zero : f32
    }
  %s = memref.subview %p[0, 0, 1, 1] [2, 4, 5, 6] [1, 1, 1, 1] : memref<2x4x7x9xf32> to memref<2x4x5x6xf32, strided<[252, 63, 9, 1], offset: 10>>
  linalg.copy ins(%x : memref<2x4x5x6xf32>) outs(%s : memref<2x4x5x6xf32, strided<[252, 63, 9, 1], offset: 10>>)
  return
}

// -----

// Tests what stays: a copy with no fill of its buffer right before it,
// and a fill whose value is computed per element.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: scf.parallel
// CHECK: linalg.copy
// CHECK: linalg.map
// CHECK: linalg.copy
func.func @kept(%x: memref<4x4xf32>, %p: memref<6x6xf32>, %q: memref<6x6xf32>) {
  %s = memref.subview %p[1, 1] [4, 4] [1, 1] : memref<6x6xf32> to memref<4x4xf32, strided<[6, 1], offset: 7>>
  linalg.copy ins(%x : memref<4x4xf32>) outs(%s : memref<4x4xf32, strided<[6, 1], offset: 7>>)
  linalg.map outs(%q : memref<6x6xf32>)
    (%init: f32) {
      %v = arith.addf %init, %init : f32
      linalg.yield %v : f32
    }
  %t = memref.subview %q[1, 1] [4, 4] [1, 1] : memref<6x6xf32> to memref<4x4xf32, strided<[6, 1], offset: 7>>
  linalg.copy ins(%x : memref<4x4xf32>) outs(%t : memref<4x4xf32, strided<[6, 1], offset: 7>>)
  return
}

// -----

// Tests one image's pad (batch 1): the loop runs over the padded rows
// first, then the channels (none over the unit batch), and is marked for the threads to split by
// rows however small, as the kernels around it split the image.
// CHECK-LABEL: func.func @one_image
// CHECK: scf.parallel (%[[H:.*]], %[[C:.*]]) = (%c0{{.*}}, %c0{{.*}}) to (%c9{{.*}}, %c4{{.*}})
// CHECK: %[[R:.*]] = arith.subi %[[H]], %c2
// CHECK: memref.subview %arg1[%{{.*}}, %[[C]], %[[H]], 2] [1, 1, 1, 5]
// CHECK: } {kiln.spread}
func.func @one_image(%x: memref<1x4x5x5xf32>, %p: memref<1x4x9x9xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%p : memref<1x4x9x9xf32>)
  %s = memref.subview %p[0, 0, 2, 2] [1, 4, 5, 5] [1, 1, 1, 1] : memref<1x4x9x9xf32> to memref<1x4x5x5xf32, strided<[324, 81, 9, 1], offset: 20>>
  linalg.copy ins(%x : memref<1x4x5x5xf32>) outs(%s : memref<1x4x5x5xf32, strided<[324, 81, 9, 1], offset: 20>>)
  return
}

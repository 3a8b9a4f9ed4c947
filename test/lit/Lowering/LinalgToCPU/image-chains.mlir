// RUN: kiln-opt %s -split-input-file -kiln-image-chains | FileCheck %s

// Tests two kernels over 4 images that use their buffers only at the image
// of their first loop (a subview, a load and a store at it, through a
// reshape keeping the images first): one parallel loop over the images
// holding both, each with its remaining loop. The buffer only they use
// (%b) becomes one image's buffer, allocated in each iteration, its
// reshape made there too; the one read after them (%k, allocated between
// them) stays the batch's, allocated before the loop and deallocated
// after it.
// CHECK-LABEL: func.func @chain
// CHECK: %[[K:.*]] = memref.alloc() : memref<4x8x16xf32>
// CHECK-NOT: memref.alloc() : memref<4x
// CHECK: scf.parallel (%[[N:.*]]) = (%c0{{.*}}) to (%c4{{.*}}) step (%c1{{.*}}) {
// CHECK:   %[[OWN:.*]] = memref.alloc() : memref<1x8x16xf32>
// CHECK:   %[[ZERO:.*]] = arith.constant 0 : index
// CHECK:   %[[V:.*]] = memref.collapse_shape %[[OWN]] {{\[}}[0], [1, 2]] : memref<1x8x16xf32> into memref<1x128xf32>
// CHECK:   scf.parallel (%[[C:.*]]) = (%c0{{.*}}) to (%c8{{.*}}) step (%c1{{.*}}) {
// CHECK:     memref.subview %arg0[%[[N]], %[[C]], 0] [1, 1, 16]
// CHECK:     memref.subview %[[OWN]][%[[ZERO]], %[[C]], 0] [1, 1, 16]
// CHECK:     memref.subview %[[K]][%[[N]], %[[C]], 0] [1, 1, 16]
// CHECK:   scf.parallel (%[[P:.*]]) = (%c0{{.*}}) to (%c128{{.*}}) step (%c1{{.*}}) {
// CHECK:     memref.load %[[V]][%[[ZERO]], %[[P]]]
// CHECK:     memref.store %{{.*}}, %arg1[%[[N]], %[[P]]]
// CHECK:   memref.dealloc %[[OWN]]
// CHECK: memref.copy %[[K]], %arg2
// CHECK-NEXT: memref.dealloc %[[K]]
// CHECK-NEXT: return
func.func @chain(%x: memref<4x8x16xf32>, %y: memref<4x128xf32>, %out: memref<4x8x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %b = memref.alloc() : memref<4x8x16xf32>
  %k = memref.alloc() : memref<4x8x16xf32>
  scf.parallel (%n, %c) = (%c0, %c0) to (%c4, %c8) step (%c1, %c1) {
    %s = memref.subview %x[%n, %c, 0] [1, 1, 16] [1, 1, 1] : memref<4x8x16xf32> to memref<16xf32, strided<[1], offset: ?>>
    %d = memref.subview %b[%n, %c, 0] [1, 1, 16] [1, 1, 1] : memref<4x8x16xf32> to memref<16xf32, strided<[1], offset: ?>>
    memref.copy %s, %d : memref<16xf32, strided<[1], offset: ?>> to memref<16xf32, strided<[1], offset: ?>>
    %e = memref.subview %k[%n, %c, 0] [1, 1, 16] [1, 1, 1] : memref<4x8x16xf32> to memref<16xf32, strided<[1], offset: ?>>
    memref.copy %s, %e : memref<16xf32, strided<[1], offset: ?>> to memref<16xf32, strided<[1], offset: ?>>
    scf.reduce
  }
  %v = memref.collapse_shape %b [[0], [1, 2]] : memref<4x8x16xf32> into memref<4x128xf32>
  %c128 = arith.constant 128 : index
  scf.parallel (%n, %p) = (%c0, %c0) to (%c4, %c128) step (%c1, %c1) {
    %e = memref.load %v[%n, %p] : memref<4x128xf32>
    %f = arith.addf %e, %e : f32
    memref.store %f, %y[%n, %p] : memref<4x128xf32>
    scf.reduce
  }
  memref.dealloc %b : memref<4x8x16xf32>
  memref.copy %k, %out : memref<4x8x16xf32> to memref<4x8x16xf32>
  memref.dealloc %k : memref<4x8x16xf32>
  return
}

// -----

// Tests kernels that stay as they are: the second reads the image after
// its own (a window of images 0 and 1 from image 0's row), the third
// reads the images merged with the channels (a reshape folding dimension
// 0), the fourth's weights are more than a quarter of its images' bytes;
// the two kernels on each side of them are single, not a run.
// CHECK-LABEL: func.func @apart
// CHECK-COUNT-4: scf.parallel (%{{.*}}, %{{.*}}) =
// CHECK-NOT: scf.parallel
memref.global "private" constant @w : memref<64x64xf32> = dense<1.0>
func.func @apart(%x: memref<4x64xf32>, %y: memref<4x64xf32>, %z: memref<4x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%n, %c) = (%c0, %c0) to (%c4, %c64) step (%c1, %c1) {
    %e = memref.load %x[%n, %c] : memref<4x64xf32>
    memref.store %e, %y[%n, %c] : memref<4x64xf32>
    scf.reduce
  }
  scf.parallel (%n, %c) = (%c0, %c0) to (%c4, %c64) step (%c1, %c1) {
    %s = memref.subview %y[%n, 0] [2, 64] [1, 1] : memref<4x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
    %e = memref.load %s[%c1, %c] : memref<2x64xf32, strided<[64, 1], offset: ?>>
    memref.store %e, %z[%n, %c] : memref<4x64xf32>
    scf.reduce
  }
  %flat = memref.collapse_shape %z [[0, 1]] : memref<4x64xf32> into memref<256xf32>
  scf.parallel (%n, %c) = (%c0, %c0) to (%c4, %c64) step (%c1, %c1) {
    %e = memref.load %flat[%c] : memref<256xf32>
    memref.store %e, %y[%n, %c] : memref<4x64xf32>
    scf.reduce
  }
  %w = memref.get_global @w : memref<64x64xf32>
  scf.parallel (%n, %c) = (%c0, %c0) to (%c4, %c64) step (%c1, %c1) {
    %e = memref.load %w[%c, %c] : memref<64x64xf32>
    memref.store %e, %y[%n, %c] : memref<4x64xf32>
    scf.reduce
  }
  return
}

// -----

// Tests a run over fewer images than min-images (4): left as it is.
// CHECK-LABEL: func.func @few
// CHECK-COUNT-2: scf.parallel (%{{.*}}, %{{.*}}) =
func.func @few(%x: memref<2x64xf32>, %y: memref<2x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%n, %c) = (%c0, %c0) to (%c2, %c64) step (%c1, %c1) {
    %e = memref.load %x[%n, %c] : memref<2x64xf32>
    memref.store %e, %y[%n, %c] : memref<2x64xf32>
    scf.reduce
  }
  scf.parallel (%n, %c) = (%c0, %c0) to (%c2, %c64) step (%c1, %c1) {
    %e = memref.load %y[%n, %c] : memref<2x64xf32>
    memref.store %e, %x[%n, %c] : memref<2x64xf32>
    scf.reduce
  }
  return
}

// -----

// Tests an elementwise op kernel formation left untiled (an SE block's
// scaling: each image's channels times its own scale) between two kernels:
// it joins the run as the same op on each operand's image, a subview at
// the image of the run's loop. The buffers only the run uses become one
// image's each: the op's input (%t), whose last reader is the op through
// its subview, is freed after the op, not after the subview; its output
// (%m) after the kernel reading it.
// CHECK-LABEL: func.func @scale
// CHECK: scf.parallel (%[[N:.*]]) = (%c0{{.*}}) to (%c4{{.*}}) step (%c1{{.*}}) {
// CHECK:   %[[T:.*]] = memref.alloc() : memref<1x8x16xf32>
// CHECK:   scf.parallel
// CHECK:   %[[X:.*]] = memref.subview %[[T]][%{{.*}}, 0, 0] [1, 8, 16] [1, 1, 1]
// CHECK:   %[[S:.*]] = memref.subview %arg1[%[[N]], 0] [1, 8] [1, 1]
// CHECK:   %[[OWN:.*]] = memref.alloc() : memref<1x8x16xf32>
// CHECK:   %[[O:.*]] = memref.subview %[[OWN]][%{{.*}}, 0, 0] [1, 8, 16] [1, 1, 1]
// CHECK:   linalg.generic {{.*}} ins(%[[X]], %[[S]] : {{.*}}) outs(%[[O]] : {{.*}})
// CHECK:   memref.dealloc %[[T]]
// CHECK:   scf.parallel
// CHECK:   memref.dealloc %[[OWN]]
#x = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#s = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @scale(%in: memref<4x8x16xf32>, %s: memref<4x8xf32>, %y: memref<4x8x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %t = memref.alloc() : memref<4x8x16xf32>
  scf.parallel (%n, %c) = (%c0, %c0) to (%c4, %c8) step (%c1, %c1) {
    %e = memref.load %in[%n, %c, %c0] : memref<4x8x16xf32>
    memref.store %e, %t[%n, %c, %c0] : memref<4x8x16xf32>
    scf.reduce
  }
  %m = memref.alloc() : memref<4x8x16xf32>
  linalg.generic {indexing_maps = [#x, #s, #x], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%t, %s : memref<4x8x16xf32>, memref<4x8xf32>) outs(%m : memref<4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  }
  memref.dealloc %t : memref<4x8x16xf32>
  scf.parallel (%n, %c) = (%c0, %c0) to (%c4, %c16) step (%c1, %c1) {
    %e = memref.load %m[%n, %c0, %c] : memref<4x8x16xf32>
    memref.store %e, %y[%n, %c0, %c] : memref<4x8x16xf32>
    scf.reduce
  }
  memref.dealloc %m : memref<4x8x16xf32>
  return
}

// -----

// Tests elementwise ops that read their loop indices or memory besides
// their operands (a gather, as a Split lowers): per image the index of
// loop 0 would restart at 0, so they stay whole, and the kernels around
// them are single.
// CHECK-LABEL: func.func @gather
// CHECK-COUNT-2: scf.parallel (%{{.*}}, %{{.*}}) =
// CHECK-NOT: scf.parallel
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @gather(%x: memref<4x8xf32>, %t: memref<8x4xf32>, %y: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%n, %c) = (%c0, %c0) to (%c4, %c8) step (%c1, %c1) {
    %e = memref.load %x[%n, %c] : memref<4x8xf32>
    memref.store %e, %y[%n, %c] : memref<4x8xf32>
    scf.reduce
  }
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%y : memref<4x8xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %v = memref.load %t[%j, %i] : memref<8x4xf32>
    linalg.yield %v : f32
  }
  scf.parallel (%n, %c) = (%c0, %c0) to (%c4, %c8) step (%c1, %c1) {
    %e = memref.load %y[%n, %c] : memref<4x8xf32>
    memref.store %e, %x[%n, %c] : memref<4x8xf32>
    scf.reduce
  }
  return
}

// -----

// Tests a dynamic batch: the kernels' loops run to the batch measured on
// different views (the input, a reshape of the buffer between them), one
// batch. The count is known at run time only: from 4 images the chain,
// its buffer %b one image's; below, the kernels as they were, on the
// batch's %b, which stays allocated for them (its reshape and the size
// read of it hoisted before the choice).
// CHECK-LABEL: func.func @dynamic
// CHECK: %[[N:.*]] = memref.dim %arg0, %c0
// CHECK: %[[B:.*]] = memref.alloc(%[[N]]) : memref<?x8x16xf32>
// CHECK: %[[V:.*]] = memref.collapse_shape %[[B]]
// CHECK: %[[ENOUGH:.*]] = arith.cmpi sge, %[[N]], %c4
// CHECK: scf.if %[[ENOUGH]] {
// CHECK:   scf.parallel (%[[I:.*]]) = (%c0{{.*}}) to (%[[N]]) step (%c1{{.*}}) {
// CHECK:     %[[OWN:.*]] = memref.alloc() : memref<1x8x16xf32>
// CHECK:     scf.parallel (%{{.*}}) = (%c0{{.*}}) to (%c8{{.*}})
// CHECK:       memref.subview %[[OWN]]
// CHECK:     scf.parallel (%{{.*}}) = (%c0{{.*}}) to (%c128{{.*}})
// CHECK:       memref.store %{{.*}}, %arg1[%[[I]], %{{.*}}]
// CHECK:     memref.dealloc %[[OWN]]
// CHECK: } else {
// CHECK:   scf.parallel (%{{.*}}, %{{.*}}) = (%c0{{.*}}, %c0{{.*}}) to (%[[N]], %c8{{.*}})
// CHECK:     memref.subview %[[B]]
// CHECK:   scf.parallel (%{{.*}}, %{{.*}}) = (%c0{{.*}}, %c0{{.*}}) to (%{{.*}}, %c128{{.*}})
// CHECK:     memref.load %[[V]]
// CHECK: }
// CHECK: memref.dealloc %[[B]]
// CHECK-NEXT: return
func.func @dynamic(%x: memref<?x8x16xf32>, %y: memref<?x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %n = memref.dim %x, %c0 : memref<?x8x16xf32>
  %b = memref.alloc(%n) : memref<?x8x16xf32>
  scf.parallel (%i, %c) = (%c0, %c0) to (%n, %c8) step (%c1, %c1) {
    %s = memref.subview %x[%i, %c, 0] [1, 1, 16] [1, 1, 1] : memref<?x8x16xf32> to memref<16xf32, strided<[1], offset: ?>>
    %d = memref.subview %b[%i, %c, 0] [1, 1, 16] [1, 1, 1] : memref<?x8x16xf32> to memref<16xf32, strided<[1], offset: ?>>
    memref.copy %s, %d : memref<16xf32, strided<[1], offset: ?>> to memref<16xf32, strided<[1], offset: ?>>
    scf.reduce
  }
  %v = memref.collapse_shape %b [[0], [1, 2]] : memref<?x8x16xf32> into memref<?x128xf32>
  %m = memref.dim %v, %c0 : memref<?x128xf32>
  %c128 = arith.constant 128 : index
  scf.parallel (%i, %p) = (%c0, %c0) to (%m, %c128) step (%c1, %c1) {
    %e = memref.load %v[%i, %p] : memref<?x128xf32>
    %f = arith.addf %e, %e : f32
    memref.store %f, %y[%i, %p] : memref<?x128xf32>
    scf.reduce
  }
  memref.dealloc %b : memref<?x8x16xf32>
  return
}

// -----

// Tests a dynamic batch declared at most 3 images (`--dim batch=1..3`, the
// maxima of @main's arguments): never enough for a chain, so none.
// CHECK-LABEL: func.func @main
// CHECK-NOT: scf.if
// CHECK-COUNT-2: scf.parallel (%{{.*}}, %{{.*}}) =
module attributes {kiln.input_dim_max = [array<i64: 3, 64>, array<i64: 3, 64>]} {
  func.func @main(%x: memref<?x64xf32>, %y: memref<?x64xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %n = memref.dim %x, %c0 : memref<?x64xf32>
    %b = memref.alloc(%n) : memref<?x64xf32>
    scf.parallel (%i, %c) = (%c0, %c0) to (%n, %c64) step (%c1, %c1) {
      %e = memref.load %x[%i, %c] : memref<?x64xf32>
      memref.store %e, %b[%i, %c] : memref<?x64xf32>
      scf.reduce
    }
    scf.parallel (%i, %c) = (%c0, %c0) to (%n, %c64) step (%c1, %c1) {
      %e = memref.load %b[%i, %c] : memref<?x64xf32>
      memref.store %e, %y[%i, %c] : memref<?x64xf32>
      scf.reduce
    }
    memref.dealloc %b : memref<?x64xf32>
    return
  }
}

// -----

// Tests a dynamic batch's run that starts with an elementwise op reading a
// global first (an SE block's scale, per channel, then the image): the
// count of images is the image's dimension 0, not the global's.
// CHECK-LABEL: func.func @scale_first
// CHECK: memref.alloc
// CHECK: %[[N:.*]] = memref.dim %arg0, %c0{{.*}} : memref<?x64xf32>
// CHECK-NEXT: %c4 = arith.constant 4 : index
// CHECK-NEXT: %[[ENOUGH:.*]] = arith.cmpi sge, %[[N]], %c4
// CHECK: scf.if %[[ENOUGH]] {
// CHECK:   scf.parallel (%{{.*}}) = (%c0{{.*}}) to (%[[N]])
// CHECK: } else {
memref.global "private" constant @s : memref<64xf32> = dense<2.0>
func.func @scale_first(%x: memref<?x64xf32>, %y: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %s = memref.get_global @s : memref<64xf32>
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  %b = memref.alloc(%n) : memref<?x64xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%s, %x : memref<64xf32>, memref<?x64xf32>) outs(%b : memref<?x64xf32>) {
  ^bb0(%a: f32, %v: f32, %o: f32):
    %m = arith.mulf %a, %v : f32
    linalg.yield %m : f32
  }
  scf.parallel (%i, %c) = (%c0, %c0) to (%n, %c64) step (%c1, %c1) {
    %e = memref.load %b[%i, %c] : memref<?x64xf32>
    memref.store %e, %y[%i, %c] : memref<?x64xf32>
    scf.reduce
  }
  memref.dealloc %b : memref<?x64xf32>
  return
}

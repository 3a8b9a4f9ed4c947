// RUN: kiln-opt %s -split-input-file -kiln-tile-transposes | FileCheck %s

// Tests that a transpose too big for L1 (1024x1024 f32, 4 MiB, its rows
// too long for 8x8 blocks) runs in 32x32 tiles: an scf.parallel over the
// tiles of y, each transposing x's tile at the swapped offsets.
// CHECK-LABEL: func.func @transpose_2d
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) = (%c0{{.*}}, %c0{{.*}}) to (%c1024{{.*}}, %c1024{{.*}}) step (%c32{{.*}}, %c32{{.*}})
// CHECK: %[[X:.*]] = memref.subview %arg0[%[[J]], %[[I]]] [32, 32] [1, 1]
// CHECK: %[[Y:.*]] = memref.subview %arg1[%[[I]], %[[J]]] [32, 32] [1, 1]
// CHECK: linalg.transpose ins(%[[X]] : {{.*}}) outs(%[[Y]] : {{.*}}) permutation = [1, 0]
func.func @transpose_2d(%x: memref<1024x1024xf32>, %y: memref<1024x1024xf32>) {
  linalg.transpose ins(%x : memref<1024x1024xf32>) outs(%y : memref<1024x1024xf32>) permutation = [1, 0]
  return
}

// -----

// Tests an elementwise op reading one input across (y = x^T + b, the
// transpose fused in): tiled along the two loops x's rows and y's rows run
// along, 32 each, the batch loop by 1; b, read along y's rows, follows.
// CHECK-LABEL: func.func @fused_3d
// CHECK: scf.parallel (%{{.*}}, %{{.*}}, %{{.*}}) = {{.*}} to (%c4{{.*}}, %c128{{.*}}, %c256{{.*}}) step (%c1{{.*}}, %c32{{.*}}, %c32{{.*}})
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : memref<1x32x32xf32, {{.*}}>, memref<1x32x32xf32, {{.*}}>)
func.func @fused_3d(%x: memref<4x256x128xf32>, %b: memref<4x128x256xf32>, %y: memref<4x128x256xf32>) {
  linalg.generic {indexing_maps = [affine_map<(n, i, j) -> (n, j, i)>, affine_map<(n, i, j) -> (n, i, j)>, affine_map<(n, i, j) -> (n, i, j)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %b : memref<4x256x128xf32>, memref<4x128x256xf32>) outs(%y : memref<4x128x256xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests a transpose of short runs (a matmul's B packed into 16-float
// panels at run time, [256, 196, 16] -> [196, 256, 16]): tiled along the
// two swapped loops by divisors of at most 8 (7 of 196, 8 of 256), each
// run whole, so a tile reads 8 rows of x and writes 7 panels' rows.
// CHECK-LABEL: func.func @runs
// CHECK: scf.parallel (%[[P:.*]], %[[K:.*]]) = (%c0{{.*}}, %c0{{.*}}) to (%c196{{.*}}, %c256{{.*}}) step (%c7{{.*}}, %c8{{.*}})
// CHECK: %[[X:.*]] = memref.subview %arg0[%[[K]], %[[P]], 0] [8, 7, 16] [1, 1, 1]
// CHECK: %[[Y:.*]] = memref.subview %arg1[%[[P]], %[[K]], 0] [7, 8, 16] [1, 1, 1]
// CHECK: linalg.transpose ins(%[[X]] : {{.*}}) outs(%[[Y]] : {{.*}}) permutation = [1, 0, 2]
func.func @runs(%x: memref<256x196x16xf32>, %y: memref<196x256x16xf32>) {
  linalg.transpose ins(%x : memref<256x196x16xf32>) outs(%y : memref<196x256x16xf32>) permutation = [1, 0, 2]
  return
}

// -----

// Tests that the same transpose marked kiln.spread (one image's
// panels, from kiln-pack-matmul-weights) leaves the mark on its loop.
// CHECK-LABEL: func.func @runs_marked
// CHECK: scf.parallel
// CHECK: linalg.transpose
// CHECK: } {kiln.spread}
func.func @runs_marked(%x: memref<256x196x16xf32>, %y: memref<196x256x16xf32>) {
  linalg.transpose ins(%x : memref<256x196x16xf32>) outs(%y : memref<196x256x16xf32>) permutation = [1, 0, 2] {kiln.spread}
  return
}

// -----

// Tests that a head's 128x64 slices (32 KiB, in L1 whole) move in 8x8
// blocks: eight rows of x loaded as vectors (along d), one shuffle
// transposing them, eight rows of y stored (along s).
// CHECK-LABEL: func.func @head_blocks
// CHECK: scf.parallel (%[[B:.*]], %[[D:.*]], %[[S:.*]]) = (%c0{{.*}}, %c0{{.*}}, %c0{{.*}}) to (%c8{{.*}}, %c64{{.*}}, %c128{{.*}}) step (%c1{{.*}}, %c8{{.*}}, %c8{{.*}})
// CHECK: vector.load %arg0[%[[B]], %[[S]], %[[D]]] : memref<8x128x64xf32>, vector<8xf32>
// CHECK: %[[S1:.*]] = arith.addi %[[S]], %c1
// CHECK: vector.load %arg0[%[[B]], %[[S1]], %[[D]]]
// CHECK-COUNT-6: vector.load %arg0
// CHECK: vector.shuffle {{.*}} [0, 8, 16, 24, 32, 40, 48, 56, 1, 9,
// CHECK: vector.store %{{.*}}, %arg1[%[[B]], %[[D]], %[[S]]] : memref<8x64x128xf32>, vector<8xf32>
// CHECK: %[[D1:.*]] = arith.addi %[[D]], %c1
// CHECK: vector.store %{{.*}}, %arg1[%[[B]], %[[D1]], %[[S]]]
// CHECK-COUNT-6: vector.store %{{.*}}, %arg1
// CHECK-NOT: linalg.transpose
func.func @head_blocks(%h: memref<8x128x64xf32>, %ht: memref<8x64x128xf32>) {
  linalg.transpose ins(%h : memref<8x128x64xf32>) outs(%ht : memref<8x64x128xf32>) permutation = [0, 2, 1]
  return
}

// -----

// Tests slices of 100 tokens x 60 (no multiples of 8): blocks over both,
// whole ones as above, the last along either loop masked: rows past the
// end off whole, the rest to the count left (min(8, 100 - s), min(8, 60
// - d)), past-the-end indices clamped to the last row.
// CHECK-LABEL: func.func @head_remainder
// CHECK: scf.parallel (%[[B:.*]], %[[D:.*]], %[[S:.*]]) = ({{.*}}) to (%c8{{.*}}, %c60{{.*}}, %c100{{.*}}) step (%c1{{.*}}, %c8{{.*}}, %c8{{.*}})
// CHECK-DAG: %[[SN:.*]] = arith.minsi %{{.*}}, %c8
// CHECK-DAG: %[[DN:.*]] = arith.minsi %{{.*}}, %c8
// CHECK: scf.if %{{.*}} {
// CHECK-COUNT-8: vector.load %arg0
// CHECK-COUNT-8: vector.store %{{.*}}, %arg1
// CHECK: } else {
// CHECK: %[[S1:.*]] = arith.addi %[[S]], %c1
// CHECK: arith.minsi %[[S1]], %c99
// CHECK: vector.maskedload %arg0
// CHECK-COUNT-6: vector.maskedload %arg0
// CHECK: vector.maskedstore %arg1
// CHECK-COUNT-7: vector.maskedstore %arg1
// CHECK-NOT: linalg.transpose
func.func @head_remainder(%h: memref<8x100x60xf32>, %ht: memref<8x60x100xf32>) {
  linalg.transpose ins(%h : memref<8x100x60xf32>) outs(%ht : memref<8x60x100xf32>) permutation = [0, 2, 1]
  return
}

// -----

// Tests what is left alone: a head's slices shorter than a block (6
// tokens), of integers, a transpose inside a kernel's loop (a tile
// already), and an op along rows (no input read across).
// CHECK-LABEL: func.func @untouched
// CHECK-NOT: step (%c32
// CHECK-NOT: vector.
// CHECK: linalg.transpose ins(%arg0
// CHECK: linalg.transpose ins(%arg5
// CHECK: scf.for
// CHECK-NEXT: linalg.transpose ins(%arg2
// CHECK: linalg.copy
func.func @untouched(%h: memref<8x6x64xf32>, %ht: memref<8x64x6xf32>,
                     %x: memref<256x256xf32>, %y: memref<256x256xf32>, %z: memref<256x256xf32>,
                     %hi: memref<8x128x64xi32>, %hti: memref<8x64x128xi32>) {
  linalg.transpose ins(%h : memref<8x6x64xf32>) outs(%ht : memref<8x64x6xf32>) permutation = [0, 2, 1]
  linalg.transpose ins(%hi : memref<8x128x64xi32>) outs(%hti : memref<8x64x128xi32>) permutation = [0, 2, 1]
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.for %i = %c0 to %c2 step %c1 {
    linalg.transpose ins(%x : memref<256x256xf32>) outs(%y : memref<256x256xf32>) permutation = [1, 0]
  }
  linalg.copy ins(%y : memref<256x256xf32>) outs(%z : memref<256x256xf32>)
  return
}

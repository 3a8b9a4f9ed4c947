// RUN: kiln-opt %s -split-input-file -kiln-vectorize-elementwise=vector-bits=512 | FileCheck %s

// Tests an epilogue on a strided view: one parallel loop over the rows
// (the outliner may split it over the thread pool), each row of 34 along
// the innermost loop
// (two vectors of 16 and a 2-lane masked tail), the per-channel bias read
// and broadcast (LLVM hoists it out of the row), the body applied lane-wise.
// CHECK-LABEL: func.func @bias_relu_rows
// CHECK: scf.parallel (%[[C:.*]], %[[H:.*]]) = (%c0, %c0) to (%c8, %c4) step (%c1, %c1)
// CHECK: scf.parallel (%[[W:.*]]) = (%c0) to (%c32) step (%c16)
// CHECK: %[[X:.*]] = vector.load %arg0[%[[C]], %[[H]], %[[W]]] : memref<8x4x34xf32>, vector<16xf32>
// CHECK: %[[B:.*]] = memref.load %arg1[%[[C]]] : memref<8xf32>
// CHECK: %[[BB:.*]] = vector.broadcast %[[B]] : f32 to vector<16xf32>
// CHECK: %[[S:.*]] = arith.addf %[[X]], %[[BB]] : vector<16xf32>
// CHECK: arith.maximumf %[[S]]
// CHECK: vector.store %{{.*}}, %arg2[%[[C]], %[[H]], %[[W]]] : memref<8x4x34xf32, strided<[1156, 34, 1], offset: 35>>, vector<16xf32>
// CHECK: vector.maskedload %arg0[%[[C]], %[[H]], %c32]
// CHECK: %[[M:.*]] = vector.constant_mask [2] : vector<16xi1>
// CHECK: vector.maskedstore %arg2[%[[C]], %[[H]], %c32], %[[M]]
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#ch = affine_map<(d0, d1, d2) -> (d0)>
func.func @bias_relu_rows(%x: memref<8x4x34xf32>, %b: memref<8xf32>,
                          %y: memref<8x4x34xf32, strided<[1156, 34, 1], offset: 35>>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %b : memref<8x4x34xf32>, memref<8xf32>) outs(%y : memref<8x4x34xf32, strided<[1156, 34, 1], offset: 35>>) {
  ^bb0(%v: f32, %bias: f32, %out: f32):
    %s = arith.addf %v, %bias : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Tests a body loading a scale computed at run time (a 0-d buffer, as
// onnxruntime's dynamic quantization fuses it): loaded once and broadcast,
// the body still vectorized.
// CHECK-LABEL: func.func @runtime_scale
// CHECK: %[[X:.*]] = vector.load %collapse_shape
// CHECK: %[[S:.*]] = memref.load %arg1[] : memref<f32>
// CHECK: %[[SB:.*]] = vector.broadcast %[[S]] : f32 to vector<16xf32>
// CHECK: arith.mulf %[[X]], %[[SB]] : vector<16xf32>
// CHECK-NOT: linalg.generic
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @runtime_scale(%x: memref<4x64xf32>, %scale: memref<f32>, %y: memref<4x64xf32>) {
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x64xf32>) outs(%y : memref<4x64xf32>) {
  ^bb0(%v: f32, %out: f32):
    %s = memref.load %scale[] : memref<f32>
    %r = arith.mulf %v, %s : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Tests that an op over whole contiguous buffers runs as one row of the
// flattened buffers (a fill of 16x34x34 = 18496 floats: four vectors per
// loop iteration, then the last whole vectors and the masked tail).
// CHECK-LABEL: func.func @fill_flat
// CHECK: %[[F:.*]] = memref.collapse_shape %arg0 {{\[\[}}0, 1, 2]] : memref<16x34x34xf32> into memref<18496xf32>
// CHECK: scf.parallel (%[[I:.*]]) = (%c0) to (%c18496) step (%c64)
// CHECK-COUNT-4: vector.store %{{.*}}, %[[F]][%{{.*}}] : memref<18496xf32>, vector<16xf32>
// CHECK-NOT: vector.maskedstore
func.func @fill_flat(%y: memref<16x34x34xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  linalg.fill ins(%ninf : f32) outs(%y : memref<16x34x34xf32>)
  return
}

// -----

// Tests a copy into the interior of a padded buffer: rows of 32, two
// vectors each, no mask.
// CHECK-LABEL: func.func @copy_interior
// CHECK: vector.load %arg0[%{{.*}}, %{{.*}}, %c16] : memref<4x32x32xf32>, vector<16xf32>
// CHECK: vector.store %{{.*}}, %arg1[%{{.*}}, %{{.*}}, %c16]
// CHECK-NOT: vector.mask
func.func @copy_interior(%x: memref<4x32x32xf32>, %y: memref<4x32x32xf32, strided<[1156, 34, 1], offset: 35>>) {
  linalg.copy ins(%x : memref<4x32x32xf32>) outs(%y : memref<4x32x32xf32, strided<[1156, 34, 1], offset: 35>>)
  return
}

// -----

// Tests what stays a loop: a transpose (the innermost loop strides through
// the input), rows of 3, and long rows of a strided view (LLVM vectorizes
// along those).
// CHECK-LABEL: func.func @refused
// CHECK-COUNT-3: linalg.
// CHECK-NOT: vector.
#t = affine_map<(d0, d1) -> (d1, d0)>
#i = affine_map<(d0, d1) -> (d0, d1)>
func.func @refused(%x: memref<16x16xf32>, %y: memref<16x16xf32>, %s: memref<8x3xf32>,
                   %l: memref<2x128xf32, strided<[256, 1]>>) {
  linalg.generic {indexing_maps = [#t, #i], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<16x16xf32>) outs(%y : memref<16x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%s : memref<8x3xf32>)
  linalg.fill ins(%one : f32) outs(%l : memref<2x128xf32, strided<[256, 1]>>)
  return
}

// -----

// Tests a row sum (layer-norm's mean) into vector accumulators: rows of 100
// floats run four vectors per step (four independent accumulators), the
// rest one vector at a time, the last 4 lanes masked to the identity (-0.0
// for addition); the row's total reduces the accumulators once, with the
// output's value as the starting point.
// CHECK-LABEL: func.func @row_sum
// CHECK: %[[ID:.*]] = arith.constant dense<-0.000000e+00> : vector<16xf32>
// CHECK: scf.parallel (%[[R:.*]]) = (%c0) to (%c8) step (%c1)
// CHECK: %[[L:.*]]:4 = scf.for %{{.*}} = %c0 to %c64 step %c64 iter_args(%{{.*}} = %[[ID]], %{{.*}} = %[[ID]], %{{.*}} = %[[ID]], %{{.*}} = %[[ID]])
// CHECK-COUNT-4: vector.load %arg0
// CHECK: scf.yield
// CHECK: vector.load %arg0[%[[R]], %c64]
// CHECK: vector.load %arg0[%[[R]], %c80]
// CHECK: %[[M:.*]] = vector.maskedload %arg0[%[[R]], %c96]
// CHECK: arith.select %{{.*}}, %{{.*}}, %[[ID]]
// CHECK: %[[INIT:.*]] = memref.load %arg1[%[[R]]]
// CHECK: %[[T:.*]] = vector.reduction <add>, %{{.*}}, %[[INIT]] : vector<16xf32> into f32
// CHECK: memref.store %[[T]], %arg1[%[[R]]]
#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @row_sum(%x: memref<8x100xf32>, %s: memref<8xf32>) {
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x100xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.addf %acc, %a : f32
    linalg.yield %y : f32
  }
  return
}

// -----

// Tests a row max of exp (a softmax step) and the refusal of a column sum
// (the reduction is not the innermost loop).
// CHECK-LABEL: func.func @row_max_exp
// CHECK: arith.constant dense<0xFF800000> : vector<16xf32>
// CHECK: math.exp %{{.*}} : vector<16xf32>
// CHECK: arith.maximumf %{{.*}} : vector<16xf32>
// CHECK: vector.reduction <maximumf>
// CHECK: linalg.generic
#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#cols = affine_map<(d0, d1) -> (d1, d0)>
#col = affine_map<(d0, d1) -> (d0)>
func.func @row_max_exp(%x: memref<4x32xf32>, %m: memref<4xf32>, %y: memref<32x4xf32>, %c: memref<4xf32>) {
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x32xf32>) outs(%m : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %e = math.exp %a : f32
    %r = arith.maximumf %acc, %e : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#cols, #col], iterator_types = ["parallel", "reduction"]}
      ins(%y : memref<32x4xf32>) outs(%c : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Tests that a transpose keeping the innermost dimension inside a kernel
// (a column tile packing its panels of B) copies whole rows as vectors, in
// its source's order (each of the 256 image rows once, both its vectors
// together), and that one which is a kernel of its own is left to LLVM.
// CHECK-LABEL: func.func @panel_pack
// CHECK: scf.parallel
// CHECK: scf.parallel (%[[K:.*]], %[[V:.*]]) = (%{{.*}}, %{{.*}}) to (%c256, %c2)
// CHECK: %[[R:.*]] = vector.load %{{.*}}[%[[K]], %[[V]], %{{.*}}] : memref<256x2x16xf32, strided<[3136, 16, 1], offset: ?>>, vector<16xf32>
// CHECK: vector.store %[[R]], %{{.*}}[%[[V]], %[[K]], %{{.*}}] : memref<2x256x16xf32>, vector<16xf32>
// CHECK-NOT: linalg.transpose
// CHECK-LABEL: func.func @pack_kernel
// CHECK: linalg.transpose
func.func @panel_pack(%x: memref<256x196x16xf32>, %out: memref<196x256x16xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c196 = arith.constant 196 : index
  scf.parallel (%j) = (%c0) to (%c196) step (%c2) {
    %s = memref.subview %x[0, %j, 0] [256, 2, 16] [1, 1, 1] : memref<256x196x16xf32> to memref<256x2x16xf32, strided<[3136, 16, 1], offset: ?>>
    %t = memref.subview %out[%j, 0, 0] [2, 256, 16] [1, 1, 1] : memref<196x256x16xf32> to memref<2x256x16xf32, strided<[4096, 16, 1], offset: ?>>
    %a = memref.alloca() : memref<2x256x16xf32>
    linalg.transpose ins(%s : memref<256x2x16xf32, strided<[3136, 16, 1], offset: ?>>) outs(%a : memref<2x256x16xf32>) permutation = [1, 0, 2]
    memref.copy %a, %t : memref<2x256x16xf32> to memref<2x256x16xf32, strided<[4096, 16, 1], offset: ?>>
    scf.reduce
  }
  return
}

func.func @pack_kernel(%x: memref<256x196x16xf32>, %out: memref<196x256x16xf32>) {
  linalg.transpose ins(%x : memref<256x196x16xf32>) outs(%out : memref<196x256x16xf32>) permutation = [1, 0, 2]
  return
}

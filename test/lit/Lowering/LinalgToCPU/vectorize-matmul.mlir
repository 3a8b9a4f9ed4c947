// RUN: kiln-opt %s -split-input-file -kiln-vectorize-matmul=vector-bits=512 | FileCheck %s

// Tests a linear layer's tile after kiln-interchange-loops (loops m, k, n):
// 4 rows x 64 columns (four vectors of 16) stay in registers over k; per k
// step four loads of B's row and a broadcast of A per row feed 16 FMAs.
// CHECK-LABEL: func.func @linear
// CHECK-NOT: linalg.generic
// CHECK-COUNT-16: vector.load %arg2{{.*}} : memref<4x64xf32>, vector<16xf32>
// CHECK: scf.for %[[K:.*]] = %c0 to %c32 step %c1 iter_args(
// CHECK-COUNT-4: vector.load %arg1[%[[K]], %{{.*}}] : memref<32x64xf32>, vector<16xf32>
// CHECK: %[[A:.*]] = memref.load %arg0[%c0, %[[K]]] : memref<4x32xf32>
// CHECK: vector.broadcast %[[A]] : f32 to vector<16xf32>
// CHECK-COUNT-16: vector.fma
// CHECK: scf.yield
// CHECK-COUNT-16: vector.store {{.*}} : memref<4x64xf32>, vector<16xf32>
#a = affine_map<(m, k, n) -> (m, k)>
#b = affine_map<(m, k, n) -> (k, n)>
#c = affine_map<(m, k, n) -> (m, n)>
func.func @linear(%x: memref<4x32xf32>, %w: memref<32x64xf32>, %y: memref<4x64xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x, %w : memref<4x32xf32>, memref<32x64xf32>) outs(%y : memref<4x64xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests ragged shapes: 20 columns (a vector of 16 and a 4-lane masked one:
// two per row, so blocks of 8 rows) and 10 rows (a block of 8, then one
// of 2).
// CHECK-LABEL: func.func @ragged
// CHECK: scf.for {{.*}} iter_args(
// CHECK: vector.maskedload %arg1
// CHECK-COUNT-16: vector.fma
// CHECK: scf.yield
// CHECK-COUNT-8: vector.maskedstore
// CHECK: scf.for {{.*}} iter_args(
// CHECK-COUNT-4: vector.fma
// CHECK-NOT: vector.fma
// CHECK: scf.yield
func.func @ragged(%x: memref<10x8xf32>, %w: memref<8x20xf32>, %y: memref<10x20xf32>) {
  linalg.matmul ins(%x, %w : memref<10x8xf32>, memref<8x20xf32>) outs(%y : memref<10x20xf32>)
  return
}

// -----

// Tests a batched one (attention's probabilities times values): the batch
// loops index B before (k, n) and become outer loops.
// CHECK-LABEL: func.func @batched
// CHECK: scf.parallel (%[[H:.*]]) = (%c0) to (%c2) step (%c1)
// CHECK: vector.load %arg1[%[[H]], %{{.*}}, %c0] : memref<2x16x8xf32>, vector<8xf32>
// CHECK: vector.fma
#pa = affine_map<(h, i, j, d) -> (h, i, j)>
#pb = affine_map<(h, i, j, d) -> (h, j, d)>
#pc = affine_map<(h, i, j, d) -> (h, i, d)>
func.func @batched(%p: memref<2x4x16xf32>, %v: memref<2x16x8xf32>, %o: memref<2x4x8xf32>) {
  linalg.generic {indexing_maps = [#pa, #pb, #pc], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
      ins(%p, %v : memref<2x4x16xf32>, memref<2x16x8xf32>) outs(%o : memref<2x4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests a 1x1 convolution's product over pixels for a batch of images
// (kiln-pointwise-conv-as-matmul): the image loop indexes B and C but not
// A (the weights), and becomes an outer loop like a batch loop.
// CHECK-LABEL: func.func @images
// CHECK: scf.parallel (%[[I:.*]], %[[F:.*]]) = (%c0, %c0) to (%c2, %c16) step (%c1, %c8)
// CHECK: scf.for %[[K:.*]] = %c0 to %c16 step %c1 iter_args(
// CHECK: vector.load %arg1[%[[I]], %[[K]], %{{.*}}] : memref<2x16x32xf32>, vector<16xf32>
// CHECK: memref.load %arg0[%[[F]], %[[K]]] : memref<16x16xf32>
// CHECK: vector.fma
#iw = affine_map<(i, f, p, c) -> (f, c)>
#ix = affine_map<(i, f, p, c) -> (i, c, p)>
#iy = affine_map<(i, f, p, c) -> (i, f, p)>
func.func @images(%w: memref<16x16xf32>, %x: memref<2x16x32xf32>, %y: memref<2x16x32xf32>) {
  linalg.generic {indexing_maps = [#iw, #ix, #iy], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x16xf32>, memref<2x16x32xf32>) outs(%y : memref<2x16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests the same product with each image's B packed at run time
// (kiln-pack-matmul-weights: [2, 2, 16, 16] read at (i, p floordiv 16, c,
// p mod 16)): the vector of a k step is its panel's row, with the image's
// index first; a residual read where the epilogue writes is requested
// (prefetched) before the reduction.
// CHECK-LABEL: func.func @images_packed
// CHECK: scf.parallel (%[[I:.*]], %[[F:.*]]) = (%c0, %c0) to (%c2, %c16) step (%c1, %c8)
// CHECK: memref.prefetch %arg2[%[[I]], %[[F]], %{{.*}}], read, locality<3>, data
// CHECK: scf.for %[[K:.*]] = %c0 to %c16 step %c1 iter_args(
// CHECK: vector.load %arg1[%[[I]], %{{.*}}, %[[K]], %c0] : memref<2x2x16x16xf32>, vector<16xf32>
// CHECK: memref.load %arg0[%[[F]], %[[K]]] : memref<16x16xf32>
// CHECK: vector.fma
// CHECK: vector.load %arg2[%[[I]], %[[F]], %{{.*}}] : memref<2x16x32xf32>, vector<16xf32>
// CHECK: vector.store {{.*}}, %arg3[%[[I]], %[[F]], %{{.*}}] : memref<2x16x32xf32>, vector<16xf32>
#pw = affine_map<(i, f, p, c) -> (f, c)>
#px = affine_map<(i, f, p, c) -> (i, p floordiv 16, c, p mod 16)>
#py = affine_map<(i, f, p, c) -> (i, f, p)>
#pe = affine_map<(i, f, p) -> (i, f, p)>
func.func @images_packed(%w: memref<16x16xf32>, %x: memref<2x2x16x16xf32>, %r: memref<2x16x32xf32>, %out: memref<2x16x32xf32>) {
  %y = memref.alloc() : memref<2x16x32xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<2x16x32xf32>)
  linalg.generic {indexing_maps = [#pw, #px, #py], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x16xf32>, memref<2x2x16x16xf32>) outs(%y : memref<2x16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#pe, #pe, #pe], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%y, %r : memref<2x16x32xf32>, memref<2x16x32xf32>) outs(%out : memref<2x16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }
  memref.dealloc %y : memref<2x16x32xf32>
  return
}

// -----

// Tests a vector-matrix product (a classifier at batch 1, its unit row
// folded away): taken as a one-row matmul on [1, K] and [1, N] views, 8
// vectors of 16 columns per chunk, the chunks split over the pool (an
// scf.parallel over them: the one row block gives the pool nothing else).
// CHECK-LABEL: func.func @vecmat
// CHECK-DAG: memref.expand_shape %arg0 {{\[\[}}0, 1]] output_shape [1, 256]
// CHECK-DAG: memref.expand_shape %arg2 {{\[\[}}0, 1]] output_shape [1, 1000]
// CHECK: scf.parallel (%{{.*}}) = (%c0{{.*}}) to (%c896{{.*}}) step (%c128{{.*}})
// CHECK: scf.for
// CHECK-COUNT-8: vector.fma {{.*}} : vector<16xf32>
#vx = affine_map<(n, k) -> (k)>
#vw = affine_map<(n, k) -> (k, n)>
#vy = affine_map<(n, k) -> (n)>
func.func @vecmat(%x: memref<256xf32>, %w: memref<256x1000xf32>, %y: memref<1000xf32>) {
  linalg.generic {indexing_maps = [#vx, #vw, #vy], iterator_types = ["parallel", "reduction"]}
      ins(%x, %w : memref<256xf32>, memref<256x1000xf32>) outs(%y : memref<1000xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests a vector-matrix product whose weights kiln-pack-matmul-weights
// packed ([N/16, K, 16] read at (n floordiv 16, k, n mod 16)): the one-row
// matmul reads the packed panels, its chunks split over the pool.
// CHECK-LABEL: func.func @vecmat_packed
// CHECK: scf.parallel
// CHECK: scf.for
// CHECK: vector.load %arg1[%{{.*}}, %{{.*}}, %c0{{.*}}] : memref<32x256x16xf32>, vector<16xf32>
// CHECK-COUNT-8: vector.fma {{.*}} : vector<16xf32>
#px = affine_map<(n, k) -> (k)>
#pw = affine_map<(n, k) -> (n floordiv 16, k, n mod 16)>
#py = affine_map<(n, k) -> (n)>
func.func @vecmat_packed(%x: memref<256xf32>, %w: memref<32x256x16xf32>, %y: memref<512xf32>) {
  linalg.generic {indexing_maps = [#px, #pw, #py], iterator_types = ["parallel", "reduction"]}
      ins(%x, %w : memref<256xf32>, memref<32x256x16xf32>) outs(%y : memref<512xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests the refusals: B read transposed (k innermost: dot products), and
// f64.
// CHECK-LABEL: func.func @refused
// CHECK-COUNT-2: linalg.
// CHECK-NOT: vector.fma
#tb = affine_map<(m, n, k) -> (n, k)>
#ta = affine_map<(m, n, k) -> (m, k)>
#tc = affine_map<(m, n, k) -> (m, n)>
func.func @refused(%x: memref<4x32xf32>, %w: memref<64x32xf32>, %y: memref<4x64xf32>,
                   %x64: memref<4x8xf64>, %w64: memref<8x16xf64>, %y64: memref<4x16xf64>) {
  linalg.generic {indexing_maps = [#ta, #tb, #tc], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<4x32xf32>, memref<64x32xf32>) outs(%y : memref<4x64xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  linalg.matmul ins(%x64, %w64 : memref<4x8xf64>, memref<8x16xf64>) outs(%y64 : memref<4x16xf64>)
  return
}

// -----

// Tests the epilogue in registers: a 1x1 convolution's tile (4 output
// channels x 64 pixels) into a temporary, then bias per channel, residual
// add and ReLU into the output. The accumulators start from the fill's
// value; each is finished by the epilogue's body (the bias broadcast, the
// residual loaded where it stores) and stored to the output: no fill, no
// temporary traffic, no loop of its own.
// CHECK-LABEL: func.func @epilogue
// CHECK-NOT: linalg.fill
// CHECK: %[[Z:.*]] = arith.constant dense<0.000000e+00> : vector<16xf32>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[Z]]
// CHECK-COUNT-16: vector.fma
// CHECK: %[[BIAS:.*]] = memref.load %arg2[%c0] : memref<4xf32>
// CHECK: %[[BB:.*]] = vector.broadcast %[[BIAS]] : f32 to vector<16xf32>
// CHECK: %[[R:.*]] = vector.load %arg3[%c0, %c0] : memref<4x64xf32>, vector<16xf32>
// CHECK: %[[S:.*]] = arith.addf %{{.*}}, %[[BB]] : vector<16xf32>
// CHECK: %[[T:.*]] = arith.addf %[[S]], %[[R]] : vector<16xf32>
// CHECK: %[[M:.*]] = arith.maximumf %[[T]], %{{.*}} : vector<16xf32>
// CHECK: vector.store %[[M]], %arg4[%c0, %c0] : memref<4x64xf32>, vector<16xf32>
// CHECK-NOT: linalg.
#a = affine_map<(m, k, n) -> (m, k)>
#b = affine_map<(m, k, n) -> (k, n)>
#c = affine_map<(m, k, n) -> (m, n)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @epilogue(%w: memref<4x32xf32>, %x: memref<32x64xf32>, %b: memref<4xf32>, %res: memref<4x64xf32>, %y: memref<4x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloca() : memref<4x64xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<4x64xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%w, %x : memref<4x32xf32>, memref<32x64xf32>) outs(%t : memref<4x64xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %b, %res : memref<4x64xf32>, memref<4xf32>, memref<4x64xf32>) outs(%y : memref<4x64xf32>) {
  ^bb0(%v: f32, %bias: f32, %r: f32, %o: f32):
    %s = arith.addf %v, %bias : f32
    %u = arith.addf %s, %r : f32
    %q = arith.maximumf %u, %zero : f32
    linalg.yield %q : f32
  }
  return
}

// -----

// Tests a linear layer's bias per column in registers: the epilogue reads
// it along the columns (its last, contiguous dimension), one vector per
// accumulator at the accumulator's columns; no temporary is stored and
// read back (a column tile of BERT's QKV layer had a 128 x 144 temporary
// from the heap, and a loop of its own).
// CHECK-LABEL: func.func @linear_bias
// CHECK-NOT: linalg.fill
// CHECK: scf.for {{.*}} iter_args(
// CHECK: scf.yield
// CHECK: %[[B:.*]] = vector.load %arg2[%c0] : memref<32xf32>, vector<16xf32>
// CHECK: arith.addf %{{.*}}, %[[B]] : vector<16xf32>
// CHECK: vector.store {{.*}} : memref<4x32xf32>, vector<16xf32>
// CHECK-NOT: linalg.generic
#la = affine_map<(m, k, n) -> (m, k)>
#lb = affine_map<(m, k, n) -> (k, n)>
#lc = affine_map<(m, k, n) -> (m, n)>
#lid = affine_map<(d0, d1) -> (d0, d1)>
#lcol = affine_map<(d0, d1) -> (d1)>
func.func @linear_bias(%x: memref<4x16xf32>, %w: memref<16x32xf32>, %b: memref<32xf32>, %y: memref<4x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloca() : memref<4x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<4x32xf32>)
  linalg.generic {indexing_maps = [#la, #lb, #lc], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x, %w : memref<4x16xf32>, memref<16x32xf32>) outs(%t : memref<4x32xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#lid, #lcol, #lid], iterator_types = ["parallel", "parallel"]}
      ins(%t, %b : memref<4x32xf32>, memref<32xf32>) outs(%y : memref<4x32xf32>) {
  ^bb0(%v: f32, %bias: f32, %o: f32):
    %s = arith.addf %v, %bias : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests the register tile of a long reduction (K = 256): 8 rows x 2
// vectors, 16 accumulators, two loads of B a k step (4 x 4 would read 4
// lines of B a step, from L2 once K x 4 vectors pass L1), and 4 x 4 for a
// short one (K = 64).
// CHECK-LABEL: func.func @long_reduction
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %c256 step %{{.*}} iter_args
// CHECK-COUNT-2: vector.load %arg1[%[[K]], %{{.*}}] : memref<256x64xf32>, vector<16xf32>
// CHECK-NOT: vector.load %arg1
// CHECK-COUNT-8: memref.load %arg0
// CHECK: scf.yield
// CHECK-LABEL: func.func @short_reduction
// CHECK: scf.for %[[K2:.*]] = %{{.*}} to %c64 step %{{.*}} iter_args
// CHECK-COUNT-4: vector.load %arg1[%[[K2]], %{{.*}}] : memref<64x64xf32>, vector<16xf32>
// CHECK-NOT: vector.load %arg1
// CHECK-COUNT-4: memref.load %arg0
// CHECK: scf.yield
#la = affine_map<(m, n, k) -> (m, k)>
#lb = affine_map<(m, n, k) -> (k, n)>
#lc = affine_map<(m, n, k) -> (m, n)>
func.func @long_reduction(%a: memref<16x256xf32>, %b: memref<256x64xf32>, %c: memref<16x64xf32>) {
  linalg.generic {indexing_maps = [#la, #lb, #lc], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<16x256xf32>, memref<256x64xf32>) outs(%c : memref<16x64xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}
func.func @short_reduction(%a: memref<16x64xf32>, %b: memref<64x64xf32>, %c: memref<16x64xf32>) {
  linalg.generic {indexing_maps = [#la, #lb, #lc], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<16x64xf32>, memref<64x64xf32>) outs(%c : memref<16x64xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

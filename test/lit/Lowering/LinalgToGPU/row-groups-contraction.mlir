// RUN: kiln-opt %s -split-input-file -kiln-gpu-mark-row-groups | FileCheck %s --check-prefix=MARK
// RUN: kiln-opt %s -split-input-file -kiln-gpu-mark-row-groups -kiln-plan-memory -kiln-outline-gpu-kernels | FileCheck %s

// Tests attention over short rows (2 heads, 16 queries, 16 keys of 8) as
// ONE kernel, K^T's transpose folded in (Q K^T reads K through the
// permutation): the block of a query row computes its scores (Q K^T: a
// thread per key, looping over the 8 products from the fill's value), their
// max and exponentials, then P V (a thread per output, looping over the 16
// keys), with the scores, the max and the exponentials in shared memory.
// The pass marks the group's ops and the transpose only it reads, so the
// memory plan keeps K (and K^T) live to P V.
// MARK-LABEL: func.func @main
// MARK: linalg.transpose {{.*}} {kiln.fused_span = 0 : i64}
// MARK: linalg.fill {kiln.fused_span = 0 : i64}
// MARK: linalg.generic {{.*}}kiln.fused_span = 0 : i64
// MARK: linalg.fill {kiln.fused_span = 0 : i64}
// MARK: linalg.generic {{.*}}kiln.fused_span = 0 : i64
// MARK: linalg.generic {{.*}}kiln.fused_span = 0 : i64
// MARK: linalg.fill {kiln.fused_span = 0 : i64}
// MARK: linalg.generic {{.*}}kiln.fused_span = 0 : i64
// CHECK-LABEL: func.func @main
// CHECK: call @__kiln_launch_0(
// CHECK-NOT: call @__kiln_launch
// CHECK: @__kiln_launch_0({{.*}}) attributes {kiln.block = array<i32: 32, 1, 1>, kiln.grid = array<i32: 32, 1, 1>
// CHECK: gpu.func @main_kernel0
// CHECK: gpu.dynamic_shared_memory
// The scores: a thread per key, 8 products from the fill's zero.
// CHECK: %[[S:.*]] = memref.load %[[ROW:.*]][%{{.*}}, %{{.*}}, %[[J:.*]]] : memref<2x16x16xf32, strided<[0, 0, 1]>, #gpu.address_space<workgroup>>
// CHECK: %[[SUM:.*]] = scf.for %[[D:.*]] = %c0{{.*}} to %c8{{.*}} step %c1{{.*}} iter_args(%{{.*}} = %[[S]]) -> (f32)
// Q at the row, then K as it is ([b, key, d]: the transpose read through).
// CHECK-NEXT: memref.load %{{.*}}[%{{.*}}, %{{.*}}, %[[D]]] : memref<2x16x8xf32>
// CHECK-NEXT: memref.load %{{.*}}[%{{.*}}, %[[J]], %[[D]]] : memref<2x16x8xf32>
// CHECK: memref.store %[[SUM]], %[[ROW]][%{{.*}}, %{{.*}}, %[[J]]]
// CHECK: gpu.all_reduce maximumf
// CHECK: math.exp
// P V: 16 keys a thread, the exponentials from shared memory.
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c16{{.*}} step %c1{{.*}} iter_args
// CHECK: memref.load {{.*}} : memref<2x16x16xf32, strided<[0, 0, 1]>, #gpu.address_space<workgroup>>
// CHECK: gpu.return
#qk_q = affine_map<(b, i, j, d) -> (b, i, d)>
#qk_k = affine_map<(b, i, j, d) -> (b, d, j)>
#qk_s = affine_map<(b, i, j, d) -> (b, i, j)>
#id3 = affine_map<(b, i, j) -> (b, i, j)>
#row3 = affine_map<(b, i, j) -> (b, i)>
#pv_p = affine_map<(b, i, e, j) -> (b, i, j)>
#pv_v = affine_map<(b, i, e, j) -> (b, j, e)>
#pv_o = affine_map<(b, i, e, j) -> (b, i, e)>
func.func @main(%q: memref<2x16x8xf32>, %k: memref<2x16x8xf32>, %v: memref<2x16x8xf32>, %out: memref<2x16x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %kt = memref.alloc() {alignment = 64 : i64} : memref<2x8x16xf32>
  %s = memref.alloc() {alignment = 64 : i64} : memref<2x16x16xf32>
  %m = memref.alloc() {alignment = 64 : i64} : memref<2x16xf32>
  %e = memref.alloc() {alignment = 64 : i64} : memref<2x16x16xf32>
  linalg.transpose ins(%k : memref<2x16x8xf32>) outs(%kt : memref<2x8x16xf32>) permutation = [0, 2, 1]
  linalg.fill ins(%zero : f32) outs(%s : memref<2x16x16xf32>)
  linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kt : memref<2x16x8xf32>, memref<2x8x16xf32>) outs(%s : memref<2x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%ninf : f32) outs(%m : memref<2x16xf32>)
  linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s : memref<2x16x16xf32>) outs(%m : memref<2x16xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %acc, %a : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id3, #row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %m : memref<2x16x16xf32>, memref<2x16xf32>) outs(%e : memref<2x16x16xf32>) {
  ^bb0(%a: f32, %mx: f32, %o: f32):
    %d = arith.subf %a, %mx : f32
    %x = math.exp %d : f32
    linalg.yield %x : f32
  }
  linalg.fill ins(%zero : f32) outs(%out : memref<2x16x8xf32>)
  linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%e, %v : memref<2x16x16xf32>, memref<2x16x8xf32>) outs(%out : memref<2x16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Tests that a contraction with more work a row (64 keys of 128: 8192
// products, each row reading its head's K again) stays with the matmul
// kernels: its fill and Q K^T are not marked (only the softmax after
// them, a group of its own), and Q K^T is a launch of its own.
// MARK-LABEL: func.func @main
// MARK-NOT: kiln.fused_span
// MARK: linalg.yield
// MARK: linalg.fill {kiln.fused_span = 0 : i64}
// CHECK-LABEL: func.func @main
// CHECK: call @__kiln_launch_0(
// CHECK: call @__kiln_launch_1(
// CHECK: gpu.func @main_kernel0({{.*}}kiln.mma
// CHECK: gpu.func @main_kernel1(
#qk_q = affine_map<(b, i, j, d) -> (b, i, d)>
#qk_k = affine_map<(b, i, j, d) -> (b, d, j)>
#qk_s = affine_map<(b, i, j, d) -> (b, i, j)>
#id3 = affine_map<(b, i, j) -> (b, i, j)>
#row3 = affine_map<(b, i, j) -> (b, i)>
func.func @main(%q: memref<2x64x128xf32>, %kt: memref<2x128x64xf32>, %out: memref<2x64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s = memref.alloc() {alignment = 64 : i64} : memref<2x64x64xf32>
  %m = memref.alloc() {alignment = 64 : i64} : memref<2x64xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<2x64x64xf32>)
  linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kt : memref<2x64x128xf32>, memref<2x128x64xf32>) outs(%s : memref<2x64x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%ninf : f32) outs(%m : memref<2x64xf32>)
  linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s : memref<2x64x64xf32>) outs(%m : memref<2x64xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %acc, %a : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id3, #row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %m : memref<2x64x64xf32>, memref<2x64xf32>) outs(%out : memref<2x64x64xf32>) {
  ^bb0(%a: f32, %mx: f32, %o: f32):
    %d = arith.subf %a, %mx : f32
    %x = math.exp %d : f32
    linalg.yield %x : f32
  }
  return
}

// -----

// Tests a contraction reducing two loops (a global average pool's sums,
// as a CNN's training step has them before its loss): the loops nest, each
// one's bounds made before the outermost (they were made between the two,
// which did not dominate the inner one), then the logits' row max.
// MARK-LABEL: func.func @main
// MARK: linalg.fill {kiln.fused_span = 0 : i64}
// CHECK-LABEL: func.func @main
// CHECK: call @__kiln_launch_0(
// CHECK-NOT: call @__kiln_launch
// CHECK: gpu.func @main_kernel0
// CHECK: scf.for %{{.*}} = %[[Z:.*]] to %c8{{.*}} step %[[ONE:[^ ]*]] iter_args
// CHECK-NEXT: scf.for %{{.*}} = %[[Z]] to %c8{{.*}} step %[[ONE]] iter_args
// CHECK: gpu.all_reduce maximumf
#in4 = affine_map<(n, c, h, w) -> (n, c, h, w)>
#out4 = affine_map<(n, c, h, w) -> (n, c)>
#id2 = affine_map<(n, c) -> (n, c)>
#row2 = affine_map<(n, c) -> (n)>
func.func @main(%x: memref<2x32x8x8xf32>, %out: memref<2xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %p = memref.alloc() {alignment = 64 : i64} : memref<2x32xf32>
  linalg.fill ins(%zero : f32) outs(%p : memref<2x32xf32>)
  linalg.generic {indexing_maps = [#in4, #out4], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x : memref<2x32x8x8xf32>) outs(%p : memref<2x32xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%ninf : f32) outs(%out : memref<2xf32>)
  linalg.generic {indexing_maps = [#id2, #row2], iterator_types = ["parallel", "reduction"]}
      ins(%p : memref<2x32xf32>) outs(%out : memref<2xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %acc, %a : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Tests that the transpose after the group putting the heads back
// ([head, query, e] -> [query, head, e]) joins it: the group's last fill
// and P V write %out through a permuted view (memref.transpose), so the
// kernel stores each row's 8 outputs at out[query, head, :] and no other
// kernel runs.
// MARK-LABEL: func.func @main(%arg0: memref<2x16x8xf32>, %arg1: memref<2x8x16xf32>
// MARK: %[[S:.*]] = memref.alloc() {{.*}} : memref<2x16x16xf32>
// MARK: linalg.generic {{.*}} outs(%[[S]] : memref<2x16x16xf32>) attrs = {kiln.fused_span = 0 : i64}
// MARK: %[[V:.*]] = memref.transpose %{{.*}} (d0, d1, d2) -> (d1, d0, d2) : memref<16x2x8xf32> to memref<2x16x8xf32, strided<[8, 16, 1]>>
// MARK: linalg.fill {kiln.fused_span = 0 : i64} ins(%{{.*}} : f32) outs(%[[V]] :
// MARK: linalg.generic {{.*}} outs(%[[V]] : memref<2x16x8xf32, strided<[8, 16, 1]>>) attrs = {kiln.fused_span = 0 : i64}
// MARK-NOT: linalg.transpose
// MARK: return
// CHECK-LABEL: func.func @main(%arg0: memref<2x16x8xf32>, %arg1: memref<2x8x16xf32>
// CHECK: call @__kiln_launch_0(
// CHECK-NOT: call @__kiln_launch
// CHECK: gpu.func @main_kernel0
// CHECK: memref.transpose %{{.*}} (d0, d1, d2) -> (d1, d0, d2)
// CHECK: memref.store %{{.*}} : memref<2x16x8xf32, strided<[8, 16, 1]>>
// CHECK: gpu.return
#hq = affine_map<(b, i, j, d) -> (b, i, d)>
#hk = affine_map<(b, i, j, d) -> (b, d, j)>
#hs = affine_map<(b, i, j, d) -> (b, i, j)>
#hid = affine_map<(b, i, j) -> (b, i, j)>
#hrow = affine_map<(b, i, j) -> (b, i)>
#hp = affine_map<(b, i, e, j) -> (b, i, j)>
#hv = affine_map<(b, i, e, j) -> (b, j, e)>
#ho = affine_map<(b, i, e, j) -> (b, i, e)>
func.func @main(%q: memref<2x16x8xf32>, %kt: memref<2x8x16xf32>, %v: memref<2x16x8xf32>, %out: memref<16x2x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s = memref.alloc() {alignment = 64 : i64} : memref<2x16x16xf32>
  %m = memref.alloc() {alignment = 64 : i64} : memref<2x16xf32>
  %e = memref.alloc() {alignment = 64 : i64} : memref<2x16x16xf32>
  %ob = memref.alloc() {alignment = 64 : i64} : memref<2x16x8xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<2x16x16xf32>)
  linalg.generic {indexing_maps = [#hq, #hk, #hs], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kt : memref<2x16x8xf32>, memref<2x8x16xf32>) outs(%s : memref<2x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%ninf : f32) outs(%m : memref<2x16xf32>)
  linalg.generic {indexing_maps = [#hid, #hrow], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s : memref<2x16x16xf32>) outs(%m : memref<2x16xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %acc, %a : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#hid, #hrow, #hid], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %m : memref<2x16x16xf32>, memref<2x16xf32>) outs(%e : memref<2x16x16xf32>) {
  ^bb0(%a: f32, %mx: f32, %x: f32):
    %d = arith.subf %a, %mx : f32
    %y = math.exp %d : f32
    linalg.yield %y : f32
  }
  linalg.fill ins(%zero : f32) outs(%ob : memref<2x16x8xf32>)
  linalg.generic {indexing_maps = [#hp, #hv, #ho], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%e, %v : memref<2x16x16xf32>, memref<2x16x8xf32>) outs(%ob : memref<2x16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  linalg.transpose ins(%ob : memref<2x16x8xf32>) outs(%out : memref<16x2x8xf32>) permutation = [1, 0, 2]
  memref.dealloc %s : memref<2x16x16xf32>
  memref.dealloc %m : memref<2x16xf32>
  memref.dealloc %e : memref<2x16x16xf32>
  memref.dealloc %ob : memref<2x16x8xf32>
  return
}

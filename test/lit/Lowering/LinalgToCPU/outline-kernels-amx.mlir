// RUN: kiln-opt %s -kiln-outline-kernels=min-work=65536 | FileCheck %s

// Tests that an AMX tile product counts its multiply-adds (16 rows x 64
// bytes x 16 columns: 16384 a tdpbusd) toward the work that makes a
// parallel loop a task: 4 iterations of one are past 65536, so the loop
// becomes a task for the pool, and its cost lists twice as many
// operations. (Counted as one lane, a quantized BERT layer's 3072 -> 768
// product ran on one thread.)
// CHECK-LABEL: func.func @main
// CHECK: call @__kiln_parallel_0
// CHECK: func.func private @main_task0({{.*}}) attributes {kiln.cost = [131072,
func.func @main(%a: memref<64x64xi8>, %b: memref<16x64xi8>, %c: memref<64x16xi32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%r) = (%c0) to (%c64) step (%c16) {
    %z = amx.tile_zero : !amx.tile<16x16xi32>
    %ta = amx.tile_load %a[%r, %c0] : memref<64x64xi8> into !amx.tile<16x64xi8>
    %tb = amx.tile_load %b[%c0, %c0] : memref<16x64xi8> into !amx.tile<16x64xi8>
    %p = amx.tile_muli %ta zext, %tb, %z : !amx.tile<16x64xi8>, !amx.tile<16x64xi8>, !amx.tile<16x16xi32>
    amx.tile_store %c[%r, %c0], %p : memref<64x16xi32>, !amx.tile<16x16xi32>
    scf.reduce
  }
  return
}

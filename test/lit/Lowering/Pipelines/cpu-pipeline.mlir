// RUN: kiln-opt %s -kiln-lower-to-linalg -kiln-cpu-lower-to-llvm | FileCheck %s
// RUN: kiln-opt %s -kiln-lower-to-linalg -kiln-cpu-lower-to-llvm='vector-bits=256' | FileCheck %s

// Tests the whole CPU pipeline: results become out-params written in place,
// the fused loop nest is a kernel function with noalias buffers, @main takes
// the arena and the weights last, transcendental math is approximated, the entry point wraps
// @main, and no runtime helper (memrefCopy, malloc) is called.
// CHECK-NOT: memrefCopy
// CHECK-LABEL: llvm.func internal @main(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: !llvm.ptr, %arg3: !llvm.ptr)
// CHECK-NEXT: llvm.call @main_kernel0(%arg1, %arg0)
// CHECK-NEXT: llvm.return
// CHECK-LABEL: llvm.func internal @main_kernel0(%arg0: !llvm.ptr {llvm.noalias}, %arg1: !llvm.ptr {llvm.noalias})
// CHECK-NOT: llvm.call @malloc
// CHECK-NOT: math.
// CHECK: llvm.return
// CHECK-LABEL: llvm.func @kiln_model_run
func.func @main(%x: tensor<64x128xf32>) -> tensor<64x128xf32> {
  %0 = kiln.erf %x : tensor<64x128xf32>
  %1 = kiln.add %0, %x : tensor<64x128xf32>, tensor<64x128xf32> -> tensor<64x128xf32>
  return %1 : tensor<64x128xf32>
}

// RUN: kiln-opt %s -kiln-split-dynamic-args | FileCheck %s

// Tests that a CUDA kernel (gpu.func) splits as host functions do, and its
// launch declaration, which takes the grid size first, alike: the kernel
// and the launch then take the same pointers and sizes after it.

// CHECK-LABEL: func.func private @__kiln_launch_0(index, memref<1xf32>, memref<4xf32>, index)
// CHECK: gpu.func @main_kernel0(%[[P:.*]]: memref<1xf32>, %{{.*}}: memref<4xf32>, %[[N:.*]]: index) kernel
// CHECK-SAME: kiln.dynamic_sizes = [array<i64: 0, 0>]
// CHECK: memref.reinterpret_cast %[[P]] to offset: [0], sizes: [%[[N]], 4], strides: [4, 1] : memref<1xf32> to memref<?x4xf32>
// CHECK-LABEL: func.func @main(
// CHECK: %[[ROWS:.*]] = memref.dim
// CHECK: call @__kiln_launch_0(%{{.*}}, %{{.*}}, %{{.*}}, %[[ROWS]])
module attributes {gpu.container_module} {
  func.func private @__kiln_launch_0(index, memref<?x4xf32>, memref<4xf32>)
  gpu.module @kiln_kernels {
    gpu.func @main_kernel0(%x: memref<?x4xf32>, %w: memref<4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %v = memref.load %w[%c0] : memref<4xf32>
      memref.store %v, %x[%c0, %c0] : memref<?x4xf32>
      gpu.return
    }
  }
  func.func @main(%x: memref<?x4xf32>, %w: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    call @__kiln_launch_0(%c1, %x, %w) : (index, memref<?x4xf32>, memref<4xf32>) -> ()
    return
  }
}

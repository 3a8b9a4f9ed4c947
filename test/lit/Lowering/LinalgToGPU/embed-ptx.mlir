// RUN: kiln-opt %s -kiln-embed-ptx | FileCheck %s

// Tests that the PTX of the serialized kernels moves onto the module and
// the binary goes away, leaving host code only.
// CHECK: module attributes {kiln.ptx = "//\0A.version 8.0\0A"}
// CHECK-NOT: gpu.binary
// CHECK: func.func @main
module attributes {gpu.container_module} {
  gpu.binary @kiln_kernels [#gpu.object<#nvvm.target<chip = "sm_80">, assembly = "//\0A.version 8.0\0A">]
  func.func @main() {
    return
  }
}

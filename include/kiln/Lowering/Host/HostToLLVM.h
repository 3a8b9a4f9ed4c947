//===- HostToLLVM.h - host code to the LLVM dialect ---------------*- C++ -*-===//

#ifndef KILN_LOWERING_HOST_HOSTTOLLVM_H
#define KILN_LOWERING_HOST_HOSTTOLLVM_H

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace kiln {

/// Host code on buffers (loops, calls, views) => the LLVM dialect with bare
/// pointers, dynamic memrefs passed as pointers and sizes. With
/// `deviceAllocations` (CUDA's host program) memref.alloc and dealloc call
/// MLIR's generic allocation functions, which kiln-emit-entry routes to the
/// session's device allocator, instead of malloc and free.
/// With `amx`, kernels may hold AMX tiles (kiln-vectorize-matmul's amx).
void addHostToLLVM(mlir::OpPassManager &pm, bool deviceAllocations = false, bool amx = false);

} // namespace kiln

#endif // KILN_LOWERING_HOST_HOSTTOLLVM_H

//===- HostAllocations.h - dynamic buffers from the session ------*- C++ -*-===//

#ifndef KILN_LIB_LOWERING_HOST_HOSTALLOCATIONS_H
#define KILN_LIB_LOWERING_HOST_HOSTALLOCATIONS_H

#include "mlir/IR/BuiltinOps.h"

namespace kiln {

/// Routes the host program's malloc and free (buffers sized at run time)
/// to the runtime's allocator through kiln_artifact_host_t (alloc,
/// release, allocator), falling back to libc without one.
void routeAllocationsToHost(mlir::ModuleOp module);

/// CUDA's host program: defines the generic allocation functions its
/// buffers sized at run time call (_mlir_memref_to_llvm_alloc, _aligned_alloc,
/// _free) as the host's alloc and release, which give device memory; a
/// refused allocation fails the run.
void routeAllocationsToDevice(mlir::ModuleOp module);

} // namespace kiln

#endif // KILN_LIB_LOWERING_HOST_HOSTALLOCATIONS_H

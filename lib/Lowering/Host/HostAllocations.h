//===- HostAllocations.h - dynamic buffers from the session ------*- C++ -*-===//

#ifndef KILN_LIB_LOWERING_HOST_HOSTALLOCATIONS_H
#define KILN_LIB_LOWERING_HOST_HOSTALLOCATIONS_H

#include "mlir/IR/BuiltinOps.h"

namespace kiln {

/// Routes the host program's malloc and free (buffers sized at run time)
/// to the runtime's allocator through kiln_artifact_host_t (alloc,
/// release, allocator), falling back to libc without one.
void routeAllocationsToHost(mlir::ModuleOp module);

} // namespace kiln

#endif // KILN_LIB_LOWERING_HOST_HOSTALLOCATIONS_H

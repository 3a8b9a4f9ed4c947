//===- HostReads.h - scalars the host program reads back from a kernel -*- C++ -*-===//

#ifndef KILN_LIB_LOWERING_LINALGTOGPU_HOSTREADS_H
#define KILN_LIB_LOWERING_LINALGTOGPU_HOSTREADS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {

/// A one-element device buffer for `r` (allocated for the whole run of
/// `fn`), which the kernel of `ops` stores `r` into as 64 bits: the ops
/// that do so join `ops`.
mlir::Value storeForHost(mlir::func::FuncOp fn, mlir::Value r,
                         llvm::SmallVectorImpl<mlir::Operation *> &ops);

/// Gives the host program's uses of `r` (those outside `ops`) the value
/// read back from `slot`, at `hb` (after the kernel's launch).
void readBack(mlir::OpBuilder &hb, mlir::Value r, mlir::Value slot,
              llvm::ArrayRef<mlir::Operation *> ops);

} // namespace kiln

#endif // KILN_LIB_LOWERING_LINALGTOGPU_HOSTREADS_H

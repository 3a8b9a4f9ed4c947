//===- ScalarBits.h - a scalar as the 64 bits host and runtime pass -*- C++ -*-===//
//
// Host values (kiln-host-values: host->dims) and device reads
// (@__kiln_device_read) carry any scalar as one i64.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_HOST_SCALARBITS_H
#define KILN_LOWERING_HOST_SCALARBITS_H

#include "mlir/IR/Builders.h"

namespace kiln {

/// `v` as 64 bits (integers sign-extended, i1 and floats zero-extended
/// from their bits), or null for a type that does not fit.
mlir::Value toBits(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v);
/// The inverse of toBits: `bits` as a `t`.
mlir::Value fromBits(mlir::OpBuilder &b, mlir::Location loc, mlir::Value bits, mlir::Type t);

} // namespace kiln

#endif // KILN_LOWERING_HOST_SCALARBITS_H

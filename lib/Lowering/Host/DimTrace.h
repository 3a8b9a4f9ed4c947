//===- DimTrace.h - which argument dimension a dimension equals -*- C++ -*-===//
//
// On linalg-on-tensors IR (the end of the linalg stage): a dynamic
// dimension traced through destination operands, tensor.empty sizes,
// tensor.dim, casts and reshapes that keep it a group of its own, to the
// function argument dimension it equals.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_HOST_DIMTRACE_H
#define KILN_LIB_LOWERING_HOST_DIMTRACE_H

#include "mlir/IR/Value.h"

#include <optional>
#include <utility>

namespace kiln {

/// The argument dimension that dimension `d` of `v` equals, when the IR
/// says so without computing it.
std::optional<std::pair<mlir::BlockArgument, int64_t>> traceDim(mlir::Value v, int64_t d);

} // namespace kiln

#endif // KILN_LIB_LOWERING_HOST_DIMTRACE_H

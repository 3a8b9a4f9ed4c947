//===- DimBounds.h - the range of a size the host computes ------*- C++ -*-===//
//
// On the host program after bufferization: the smallest and largest values
// an index can take, from the inputs' largest dimensions (the module's
// kiln.input_dim_max) through memref.dim, views and index arithmetic. What
// the CUDA arena sizes a dynamic buffer by (kiln-plan-memory), and the
// largest rows a CUDA kernel is compiled for (LargestRows.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_HOST_DIMBOUNDS_H
#define KILN_LOWERING_HOST_DIMBOUNDS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Value.h"

#include <optional>
#include <utility>

namespace kiln {

/// [lo, hi] of index `v`: constants, dimensions (static, an input's up to
/// its maximum in `inputMax`, an allocation's or an arena view's size,
/// through reshapes, subviews and casts) and add/sub/mul/div/min/max over
/// them; nullopt when unbounded or unknown.
std::optional<std::pair<int64_t, int64_t>> indexRange(mlir::Value v, mlir::ArrayAttr inputMax);

/// The same for dimension `d` of memref `m`.
std::optional<std::pair<int64_t, int64_t>> dimRange(mlir::Value m, int64_t d,
                                                    mlir::ArrayAttr inputMax);

} // namespace kiln

#endif // KILN_LOWERING_HOST_DIMBOUNDS_H

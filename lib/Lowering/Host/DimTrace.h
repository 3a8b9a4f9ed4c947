//===- DimTrace.h - what argument dimensions a dimension is -----*- C++ -*-===//
//
// On linalg-on-tensors IR (the end of the linalg stage): a dynamic
// dimension traced through destination operands, tensor.empty sizes,
// tensor.dim, casts, reshapes that keep it a group of its own and index
// arithmetic (a concatenation's summed sizes), to the function argument
// dimensions it is computed from.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_HOST_DIMTRACE_H
#define KILN_LIB_LOWERING_HOST_DIMTRACE_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Value.h"

#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace kiln {

/// An argument dimension: (argument number, dimension).
using ArgDim = std::pair<unsigned, int64_t>;

/// A size as a polynomial over argument dimensions: each sorted product of
/// factors (none: the constant term) with its nonzero coefficient.
using DimSum = std::map<std::vector<ArgDim>, int64_t>;

/// Dimension `d` of `v` as a polynomial over the dimensions of `entry`'s
/// arguments, when the IR computes it from them by constants, additions,
/// subtractions and products.
std::optional<DimSum> traceDimSum(mlir::Value v, int64_t d, mlir::Block *entry);

/// The argument dimension that dimension `d` of `v` equals, when the IR
/// says so without computing it.
std::optional<std::pair<mlir::BlockArgument, int64_t>> traceDim(mlir::Value v, int64_t d);

} // namespace kiln

#endif // KILN_LIB_LOWERING_HOST_DIMTRACE_H

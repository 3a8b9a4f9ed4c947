//===- OutputDims.h - output sizes computed from the inputs' values -*- C++ -*-===//
//
// An output dimension that no sum or product of the inputs' dimensions
// gives (a Reshape to a shape given as an input, a Range to a run-time
// limit) is a *value symbol*: kiln-bind-result-dims names it
// "<output>[<axis>]", lists it in the module's kiln.dim_values, and builds
// @__kiln_output_dims, which takes @main's inputs and returns those sizes
// (the slice of @main that computes them). kiln-emit-entry exports it as
// kiln_model_output_dims (ArtifactFormat.h), which the runtime calls on the
// inputs' data before it sizes the outputs.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_OUTPUTDIMS_H
#define KILN_LOWERING_OUTPUTDIMS_H

#include "llvm/ADT/StringRef.h"

namespace kiln {

/// Module attribute: the value symbols, in the order
/// @__kiln_output_dims returns them.
inline constexpr llvm::StringLiteral kDimValuesAttrName = "kiln.dim_values";
/// The function that computes them (index results).
inline constexpr llvm::StringLiteral kOutputDimsFunctionName = "__kiln_output_dims";
/// On CUDA (kiln-host-values): the scalars the host program reads from
/// tensors, appended to @__kiln_output_dims's results as i64 bits; the
/// attribute is [first result, count], and @main reads the k-th through
/// a call of @__kiln_host_value(k).
inline constexpr llvm::StringLiteral kHostValuesAttrName = "kiln.host_values";
inline constexpr llvm::StringLiteral kHostValueFunctionName = "__kiln_host_value";
/// On CUDA (kiln-outline-gpu-kernels): a scalar a kernel computed that the
/// host program branches on (a Loop's condition computed in its body),
/// read back as i64 bits from its device address (i64) by
/// @__kiln_device_read, which kiln-emit-entry defines as a call of
/// host->read.
inline constexpr llvm::StringLiteral kDeviceReadFunctionName = "__kiln_device_read";
/// The artifact's C entry wrapping it.
inline constexpr llvm::StringLiteral kOutputDimsEntryName = "kiln_model_output_dims";

} // namespace kiln

#endif // KILN_LOWERING_OUTPUTDIMS_H

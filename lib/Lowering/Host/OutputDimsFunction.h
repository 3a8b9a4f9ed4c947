//===- OutputDimsFunction.h - @__kiln_output_dims -------------*- C++ -*-===//

#ifndef KILN_LIB_LOWERING_HOST_OUTPUTDIMSFUNCTION_H
#define KILN_LIB_LOWERING_HOST_OUTPUTDIMSFUNCTION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {

/// The `index` value @main sizes dimension `d` of `result` with (built
/// before its return, folded back to where the size is computed).
mlir::Value outputDimValue(mlir::func::FuncOp main, mlir::Value result, int64_t d);

/// Appends `values` (values of @main) to the results of
/// @__kiln_output_dims(<@main's arguments>), built empty when the module
/// has none, cloning the part of @main that computes them.
mlir::LogicalResult appendOutputDimsResults(mlir::func::FuncOp main,
                                            mlir::ArrayRef<mlir::Value> values);

} // namespace kiln

#endif // KILN_LIB_LOWERING_HOST_OUTPUTDIMSFUNCTION_H

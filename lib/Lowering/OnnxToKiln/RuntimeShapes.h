//===- RuntimeShapes.h - shape arguments known only at run time -*- C++ -*-===//
//
// A Reshape's shape, a Range's limits, a ConstantOfShape's shape... given
// as graph inputs (or computed from them) are read at run time: each
// element becomes an `index` value (tensor.extract + index_cast) and the
// op's result gets dynamic sizes computed from them. Such a size reaching
// an output is a value symbol (kiln/Lowering/OutputDims.h): the runtime
// computes it from the inputs' data before it sizes the outputs.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_ONNXTOKILN_RUNTIMESHAPES_H
#define KILN_LIB_LOWERING_ONNXTOKILN_RUNTIMESHAPES_H

#include "NodeContext.h"

namespace kiln {

/// Input `i`, an integer tensor of static shape with at most 64 elements,
/// read element by element at run time (sign-extended to `index`).
mlir::FailureOr<llvm::SmallVector<mlir::Value>> runtimeInts(NodeContext &nc, size_t i,
                                                            llvm::StringRef what);

/// Reshape to a target read at run time (0 copies the input's dimension
/// unless `allowZero`, -1 is inferred). A target that does not fit the
/// input's element count makes the first size -1, which the runtime
/// refuses when it reaches an output.
mlir::LogicalResult reshapeRuntime(NodeContext &nc, mlir::Value x, bool allowZero);

} // namespace kiln

#endif // KILN_LIB_LOWERING_ONNXTOKILN_RUNTIMESHAPES_H

//===- Utils.h - builders shared by the kiln-to-linalg patterns -*- C++ -*-===//

#ifndef KILN_LIB_LOWERING_KILNTOLINALG_UTILS_H
#define KILN_LIB_LOWERING_KILNTOLINALG_UTILS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln {

/// Builds the scalar body of an elementwise op from its block arguments.
using ScalarFn = llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                                mlir::ValueRange)>;

mlir::RankedTensorType tensorType(mlir::Value v);

/// Indexing map reading `operand` (right-aligned numpy broadcasting) inside a
/// loop nest over `outShape`: broadcast dimensions read index 0.
mlir::AffineMap broadcastMap(llvm::ArrayRef<int64_t> outShape,
                             llvm::ArrayRef<int64_t> operandShape,
                             mlir::MLIRContext *ctx);

/// linalg.generic over `resultType` with broadcasting inputs and `body`.
mlir::Value buildElementwise(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::RankedTensorType resultType,
                             mlir::ValueRange inputs, ScalarFn body);

/// A scalar constant of `type` (float or integer) holding `value`.
mlir::Value scalarConstant(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type,
                           double value);

/// The lowest value of a type: -inf for floats, the minimum for integers.
mlir::Value lowestValue(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type);

/// f16 and bf16: computed in f32 where sums run long (matmuls, softmax, the
/// norms, sums and means), narrowed once at the end, as PyTorch does.
bool isHalfFloat(mlir::Type t);

/// The type a sum into `t` accumulates in: `t` with f32 elements when
/// they are 16-bit floats (narrowed once at the end, as PyTorch, cuBLAS and
/// cuDNN do), else `t`.
mlir::RankedTensorType accumulationType(mlir::RankedTensorType t);

/// `x` converted elementwise to float type `et` (extf or truncf); `x`
/// itself when it already has it.
mlir::Value convertFloat(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Type et);

/// Dimension `d` of `v`: the size its producer's tensor.empty was made
/// with when there is one (so an intermediate gains no tensor.dim use,
/// which would keep elementwise fusion from taking it), else tensor.dim.
mlir::Value dimOf(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v, int64_t d);
/// The size dimension `d` of `v` was made with (its producer's
/// tensor.empty, through destination operands); null when there is none.
mlir::Value producedSize(mlir::Value v, int64_t d);

/// The sizes of `outType`'s dynamic dimensions for a linalg op reading
/// `inputs` through `inputMaps` and writing through `outMap`: each one is
/// the size of an input dimension indexed by the same loop.
llvm::SmallVector<mlir::Value> dynamicSizes(mlir::OpBuilder &b, mlir::Location loc,
                                            mlir::RankedTensorType outType,
                                            mlir::ValueRange inputs,
                                            llvm::ArrayRef<mlir::AffineMap> inputMaps,
                                            mlir::AffineMap outMap);

/// The sizes of `outType`'s dynamic dimensions when each is `in`'s at the
/// same position (a batch a convolution or a pooling keeps).
llvm::SmallVector<mlir::Value> sameDynamicSizes(mlir::OpBuilder &b, mlir::Location loc,
                                                mlir::RankedTensorType outType, mlir::Value in);

/// tensor.empty of `type` (`dynSizes` its dynamic dimensions) filled with
/// `value`.
mlir::Value filledTensor(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::RankedTensorType type, mlir::Value value,
                         mlir::ValueRange dynSizes = {});

/// Any static reshape as a collapse to 1-D followed by an expansion.
mlir::Value reshapeTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value input,
                      mlir::RankedTensorType type);

/// A reshape whose dynamic result dimensions have `sizes`: dimensions
/// kept at either end stay in place, the middle collapses and expands.
mlir::Value reshapeWithSizes(mlir::OpBuilder &b, mlir::Location loc, mlir::Value input,
                             mlir::RankedTensorType type, mlir::ValueRange sizes);

enum class ReduceKind { Sum, Max, Min, Prod };

/// The highest value of a type: +inf for floats, the maximum for integers.
mlir::Value highestValue(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type);

/// Reduces `input` over the dimensions flagged in `reduced`, keeping them as
/// size 1 (the keepdims form, so it broadcasts back against `input`).
mlir::Value reduceKeepDims(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value input, llvm::ArrayRef<bool> reduced,
                           ReduceKind kind, bool isUnsigned = false);

/// Scalar arithmetic that picks the float or integer form by type.
mlir::Value addScalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Value y);
mlir::Value mulScalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Value y);
mlir::Value maxScalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Value y);
mlir::Value minScalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Value y);

/// Pads the spatial dimensions of an NC... tensor (the trailing ones), or
/// of an N...C one (`channelsLast`: all but the first and the last).
mlir::Value padSpatial(mlir::OpBuilder &b, mlir::Location loc, mlir::Value input,
                       llvm::ArrayRef<int64_t> padsBegin,
                       llvm::ArrayRef<int64_t> padsEnd, mlir::Value padValue,
                       bool channelsLast = false);

/// A parallel generic over `outType` whose element at (d0..dn) is
/// `element(inputs' elements, indices)`: reads at computed indices (gathers,
/// pads, negative-step slices). `dynSizes`: the result's dynamic sizes.
mlir::Value gatherGeneric(
    mlir::OpBuilder &b, mlir::Location loc, mlir::RankedTensorType outType,
    mlir::ValueRange inputs, llvm::ArrayRef<mlir::AffineMap> inputMaps,
    llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location, mlir::ValueRange,
                                   llvm::ArrayRef<mlir::Value>)>
        element,
    mlir::ValueRange dynSizes = {});

/// An index constant.
mlir::Value indexConst(mlir::OpBuilder &b, mlir::Location loc, int64_t v);

} // namespace kiln

#endif // KILN_LIB_LOWERING_KILNTOLINALG_UTILS_H

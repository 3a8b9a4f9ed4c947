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

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

namespace kiln {

/// Index arithmetic at the node's point.
struct IndexMath {
  mlir::OpBuilder &b;
  mlir::Location loc;
  mlir::Value c(int64_t v) { return mlir::arith::ConstantIndexOp::create(b, loc, v); }
  mlir::Value cmp(mlir::arith::CmpIPredicate p, mlir::Value x, mlir::Value y) {
    return mlir::arith::CmpIOp::create(b, loc, p, x, y);
  }
  mlir::Value eq(mlir::Value x, mlir::Value y) { return cmp(mlir::arith::CmpIPredicate::eq, x, y); }
  mlir::Value sel(mlir::Value cond, mlir::Value x, mlir::Value y) { return mlir::arith::SelectOp::create(b, loc, cond, x, y); }
  mlir::Value add(mlir::Value x, mlir::Value y) { return mlir::arith::AddIOp::create(b, loc, x, y); }
  mlir::Value sub(mlir::Value x, mlir::Value y) { return mlir::arith::SubIOp::create(b, loc, x, y); }
  mlir::Value falseValue() { return mlir::arith::ConstantIntOp::create(b, loc, 0, 1); }
  mlir::Value both(mlir::Value x, mlir::Value y) { return mlir::arith::AndIOp::create(b, loc, x, y); }
  mlir::Value either(mlir::Value x, mlir::Value y) { return mlir::arith::OrIOp::create(b, loc, x, y); }
  mlir::Value count(mlir::Value cond) { return sel(cond, c(1), c(0)); }
  /// a < 0 ? a + rank : a
  mlir::Value normalize(mlir::Value a, int64_t rank) {
    return sel(cmp(mlir::arith::CmpIPredicate::slt, a, c(0)), add(a, c(rank)), a);
  }
};

/// f64 arithmetic at a builder's point.
struct F64 {
  mlir::OpBuilder &b;
  mlir::Location loc;
  mlir::Value c(double v) { return mlir::arith::ConstantOp::create(b, loc, b.getF64FloatAttr(v)); }
  mlir::Value add(mlir::Value x, mlir::Value y) { return mlir::arith::AddFOp::create(b, loc, x, y); }
  mlir::Value sub(mlir::Value x, mlir::Value y) { return mlir::arith::SubFOp::create(b, loc, x, y); }
  mlir::Value mul(mlir::Value x, mlir::Value y) { return mlir::arith::MulFOp::create(b, loc, x, y); }
  mlir::Value div(mlir::Value x, mlir::Value y) { return mlir::arith::DivFOp::create(b, loc, x, y); }
  mlir::Value cmp(mlir::arith::CmpFPredicate p, mlir::Value x, mlir::Value y) {
    return mlir::arith::CmpFOp::create(b, loc, p, x, y);
  }
  mlir::Value sel(mlir::Value cond, mlir::Value x, mlir::Value y) { return mlir::arith::SelectOp::create(b, loc, cond, x, y); }
  mlir::Value floor(mlir::Value x) { return mlir::math::FloorOp::create(b, loc, x); }
  mlir::Value toI64(mlir::Value x) { return mlir::arith::FPToSIOp::create(b, loc, b.getI64Type(), x); }
  mlir::Value fromI64(mlir::Value x) { return mlir::arith::SIToFPOp::create(b, loc, b.getF64Type(), x); }
};

/// Input `i`, one number, read at run time in its own type.
mlir::FailureOr<mlir::Value> runtimeScalar(NodeContext &nc, size_t i, llvm::StringRef what);

/// Tells the importer's symbolic sizes that `v`'s dimensions are `dims`
/// (index values computed at run time; a static dimension of `v` stays
/// its size).
void recordRuntimeDims(NodeContext &nc, mlir::Value v, llvm::ArrayRef<mlir::Value> dims);

/// Input `i`, an integer tensor of static shape with at most 64 elements,
/// read element by element at run time (sign-extended to `index`).
mlir::FailureOr<llvm::SmallVector<mlir::Value>> runtimeInts(NodeContext &nc, size_t i,
                                                            llvm::StringRef what);

/// Reshape to a target read at run time (0 copies the input's dimension
/// unless `allowZero`, -1 is inferred). A target that does not fit the
/// input's element count makes the first size -1, which the runtime
/// refuses when it reaches an output.
mlir::LogicalResult reshapeRuntime(NodeContext &nc, mlir::Value x, bool allowZero);


/// Range with a start, limit or delta known only at run time:
/// max(ceil((limit - start) / delta), 0) elements (a zero delta is refused
/// at run time when the length reaches an output).
mlir::LogicalResult rangeRuntime(NodeContext &nc);

/// A generalized cosine window (Windows.cpp) of a size known only at run
/// time, computed in f64 and rounded once to `type`.
mlir::LogicalResult cosineWindowRuntime(NodeContext &nc, double a0, double a1, double a2,
                                        mlir::Type type, bool periodic);

/// Squeeze or Unsqueeze by axes known only at run time (their count fixes
/// the rank): a reshape to sizes computed from them; repeated or
/// out-of-range axes, or a squeezed dimension that is not 1, make the first
/// size -1, refused at run time when it reaches an output.
mlir::LogicalResult squeezeRuntime(NodeContext &nc, mlir::Value x, bool unsqueeze);

/// ConstantOfShape of a shape known only at run time: a splat.
mlir::LogicalResult constantOfShapeRuntime(NodeContext &nc);

/// Expand to a shape known only at run time: x + a splat of zeros of the
/// broadcast sizes (sizes that do not broadcast are refused at run time).
mlir::LogicalResult expandRuntime(NodeContext &nc, mlir::Value x);

/// Slice with starts, ends, axes or steps known only at run time: a
/// gather of x at first + i * step per dimension, ONNX's clamping done at
/// run time (a zero step or a repeated axis refused there).
mlir::LogicalResult sliceRuntime(NodeContext &nc, mlir::Value x);


enum class ReduceKind { Sum, Mean, Max, Min, Prod };

/// A reduction over axes known only at run time (their count fixes the
/// rank with keepdims=0): each output element loops over its reduced box.
/// Repeated or out-of-range axes are refused at run time.
mlir::FailureOr<mlir::Value> reduceRuntime(NodeContext &nc, mlir::Value x, ReduceKind kind,
                                           bool keepdims);

/// Split by sizes known only at run time (their count is the outputs'):
/// slices at their running offsets; sizes that are negative or do not add
/// up to the axis are refused at run time.
mlir::LogicalResult splitRuntime(NodeContext &nc);

/// Pad (constant, edge or reflect) by pads known only at run time: a
/// gather at the clamped or reflected coordinates.
mlir::LogicalResult padRuntime(NodeContext &nc);

/// Makes the handlers of Trilu, CumSum, Tile, OneHot, Split, Pad and TopK take
/// their argument (input 1) at run time when it is no constant: Trilu's
/// mask of `j - i >= k`, CumSum's run along the chosen axis, Tile's modular
/// gather, OneHot's comparison with a depth read at run time, Split's and
/// Pad's above, TopK's selection by rank (RuntimeValues.cpp).
void wrapRuntimeArguments(HandlerTable &t);

/// NonZero, Compress and Unique, whose output lengths are counts over the
/// data (DataDependent.cpp).
void registerDataDependentHandlers(HandlerTable &t);
/// NonMaxSuppression: greedy selection per batch and class as loops
/// (NonMaxSuppression.cpp).
void registerNonMaxSuppression(HandlerTable &t);
/// Det: Gaussian elimination per matrix as loops (Determinant.cpp).
void registerDeterminant(HandlerTable &t);
/// RoiAlign: bilinear samples per output element (RoiAlign.cpp).
void registerRoiAlign(HandlerTable &t);

} // namespace kiln

#endif // KILN_LIB_LOWERING_ONNXTOKILN_RUNTIMESHAPES_H

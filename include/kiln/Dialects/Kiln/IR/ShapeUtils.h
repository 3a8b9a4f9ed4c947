//===- ShapeUtils.h - shape rules shared by ops and lowerings ---*- C++ -*-===//
//
// The shape arithmetic of ONNX ops (broadcasting, slicing, pooling windows)
// in one place, so that type inference and lowering can never disagree.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECTS_KILN_IR_SHAPEUTILS_H
#define KILN_DIALECTS_KILN_IR_SHAPEUTILS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include <cstdint>
#include <optional>

namespace kiln {

/// Numpy broadcast of two shapes; nullopt when they are incompatible.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// Maps a possibly negative axis into [0, rank); nullopt when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// One dimension of an ONNX Slice after clamping: first index, step, count.
struct SliceDim {
  int64_t start = 0, step = 1, size = 0;
};

/// Resolves ONNX Slice parameters against `shape`, one entry per dimension
/// (untouched dimensions get the full range); nullopt on invalid arguments.
std::optional<llvm::SmallVector<SliceDim>>
resolveSlice(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> starts,
             llvm::ArrayRef<int64_t> ends, llvm::ArrayRef<int64_t> axes,
             llvm::ArrayRef<int64_t> steps);

/// Output size of a pooling/convolution window along one dimension: dynamic
/// for a dynamic input, 0 when no window fits (or the sizes overflow).
int64_t windowOutputSize(int64_t in, int64_t kernel, int64_t stride,
                         int64_t padBegin, int64_t padEnd, int64_t dilation,
                         bool ceilMode);

/// The divisor of average pooling at every output position (row-major over
/// the output's spatial dims): the window's elements inside the input, or
/// inside the explicitly padded input with `countIncludePad`; at least 1.
llvm::SmallVector<int64_t> avgPoolDivisors(llvm::ArrayRef<int64_t> inSpatial,
                                           llvm::ArrayRef<int64_t> outSpatial,
                                           llvm::ArrayRef<int64_t> kernel,
                                           llvm::ArrayRef<int64_t> strides,
                                           llvm::ArrayRef<int64_t> pads, bool countIncludePad);

/// Whether transposing a tensor of `shape` by `perm` only moves its unit
/// dimensions (a dynamic one counts as not unit): the others keep their
/// order, so it is a reshape.
bool onlyUnitDimsMove(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> perm);

/// Total number of elements of a static shape.
int64_t numElements(llvm::ArrayRef<int64_t> shape);

} // namespace kiln

#endif // KILN_DIALECTS_KILN_IR_SHAPEUTILS_H

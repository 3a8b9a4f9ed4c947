//===- ShapeUtils.cpp - shape rules shared by ops and lowerings -----------===//

#include "kiln/Dialects/Kiln/IR/ShapeUtils.h"

#include <limits>

#include <algorithm>

using namespace llvm;

namespace kiln {

// mlir::ShapedType::kDynamic, without the IR headers.
static constexpr int64_t kDynamic = std::numeric_limits<int64_t>::min();

std::optional<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                    ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    // A dynamic dimension is taken not to broadcast: it equals the other
    // (checked at run time) unless that one is 1.
    if (da == kDynamic || db == kDynamic) {
      out[i] = da == 1 ? db : db == 1 ? da : da == kDynamic ? db : da;
      continue;
    }
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

std::optional<SmallVector<SliceDim>>
resolveSlice(ArrayRef<int64_t> shape, ArrayRef<int64_t> starts,
             ArrayRef<int64_t> ends, ArrayRef<int64_t> axes,
             ArrayRef<int64_t> steps) {
  int64_t rank = shape.size();
  if (starts.size() != ends.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return std::nullopt;
  SmallVector<SliceDim> dims(rank);
  for (int64_t d = 0; d < rank; ++d)
    dims[d] = {0, 1, shape[d]};
  SmallVector<bool> seen(rank, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    auto axis = normalizeAxis(axes[i], rank);
    if (!axis || seen[*axis] || steps[i] == 0)
      return std::nullopt;
    seen[*axis] = true;
    int64_t dim = shape[*axis], step = steps[i];
    if (dim == kDynamic) // only axes of known size are sliced
      return std::nullopt;
    int64_t start = starts[i], end = ends[i];
    if (start < 0)
      start += dim;
    if (end < 0 && end > INT64_MIN / 2)
      end += dim;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
    }
    int64_t span = step > 0 ? end - start : start - end;
    int64_t absStep = step > 0 ? step : -step;
    int64_t size = span <= 0 ? 0 : (span + absStep - 1) / absStep;
    dims[*axis] = {start, step, size};
  }
  return dims;
}

int64_t windowOutputSize(int64_t in, int64_t kernel, int64_t stride,
                         int64_t padBegin, int64_t padEnd, int64_t dilation,
                         bool ceilMode) {
  if (in == kDynamic || kernel == kDynamic)
    return kDynamic;
  // Fuzzed kernels, dilations or pads overflow: report no window (an error).
  int64_t effective, span;
  if (__builtin_mul_overflow(dilation, kernel - 1, &effective) ||
      __builtin_add_overflow(effective, 1, &effective) ||
      __builtin_add_overflow(in, padBegin, &span) || __builtin_add_overflow(span, padEnd, &span) ||
      __builtin_sub_overflow(span, effective, &span) || span < 0)
    return 0;
  int64_t out = ceilMode ? (span + stride - 1) / stride + 1 : span / stride + 1;
  // With ceil mode the last window must start inside the input or left pad.
  if (ceilMode && (out - 1) * stride >= in + padBegin)
    --out;
  return out;
}

int64_t numElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n))
      return std::numeric_limits<int64_t>::max(); // no real tensor is that large
  return n;
}

SmallVector<int64_t> avgPoolDivisors(ArrayRef<int64_t> inSpatial, ArrayRef<int64_t> outSpatial,
                                     ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                                     ArrayRef<int64_t> pads, bool countIncludePad) {
  // Separable: the product of the per-dimension counts.
  size_t n = kernel.size();
  SmallVector<SmallVector<int64_t>> counts(n);
  for (size_t i = 0; i < n; ++i)
    for (int64_t o = 0; o < outSpatial[i]; ++o) {
      int64_t lo = o * strides[i] - pads[i], hi = lo + kernel[i];
      int64_t minIdx = countIncludePad ? -pads[i] : 0;
      int64_t maxIdx = inSpatial[i] + (countIncludePad ? pads[i + n] : 0);
      counts[i].push_back(std::max<int64_t>(0, std::min(hi, maxIdx) - std::max(lo, minIdx)));
    }
  SmallVector<int64_t> divisors;
  int64_t total = numElements(outSpatial);
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t rem = flat, cnt = 1;
    for (int64_t i = (int64_t)n - 1; i >= 0; --i) {
      cnt *= counts[i][rem % outSpatial[i]];
      rem /= outSpatial[i];
    }
    divisors.push_back(std::max<int64_t>(1, cnt));
  }
  return divisors;
}

bool onlyUnitDimsMove(ArrayRef<int64_t> shape, ArrayRef<int64_t> perm) {
  SmallVector<int64_t> kept;
  for (int64_t d : perm)
    if (shape[d] != 1)
      kept.push_back(d);
  return llvm::is_sorted(kept);
}

} // namespace kiln

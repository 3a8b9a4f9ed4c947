//===- Resize.h - Resize's parameters, for both of its paths ---*- C++ -*-===//
//
// Resize.cpp computes the taps at compile time when the scales or sizes
// are known; ResizeRuntime.cpp computes them at run time otherwise.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_ONNXTOKILN_RESIZE_H
#define KILN_LIB_LOWERING_ONNXTOKILN_RESIZE_H

#include "NodeContext.h"

#include <string>

namespace kiln {

struct ResizeParams {
  std::string mode, transform, nearestMode;
  double cubicA = -0.75;
  bool excludeOutside = false;
  /// tf_crop_and_resize: outputs whose coordinate falls outside the input
  /// take this value (the region of interest is input 1, read at run time).
  double extrapolation = 0;
};

/// Resize of `x` along `axes` (normalized) by scales (input `input`, f32)
/// or sizes (input `input`, i64, when `sizes`) known only at run time: each
/// axis's taps (indices and weights, ONNX's coordinate transforms) are
/// computed by the model, then gathered and summed as at compile time.
mlir::LogicalResult resizeRuntime(NodeContext &nc, mlir::Value x, const ResizeParams &p,
                                  llvm::ArrayRef<int64_t> axes, size_t input, bool sizes);

} // namespace kiln

#endif // KILN_LIB_LOWERING_ONNXTOKILN_RESIZE_H

//===- Quantize.h - linear (de)quantization for ONNX handlers ---*- C++ -*-===//
//
// Shared by QuantizeLinear/DequantizeLinear and the quantized ops built
// from them (the QLinear* ops, QGemm).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_ONNXTOKILN_QUANTIZE_H
#define KILN_LIB_LOWERING_ONNXTOKILN_QUANTIZE_H

#include "NodeContext.h"

#include <utility>

namespace kiln {

/// The integer type's range, as floats.
std::pair<double, double> quantizedRange(mlir::Type t);

/// saturate(round_half_even(x / scale) + zeroPoint) in `qt`; `scale` and
/// `zeroPoint` (null: 0) broadcast against `x`.
mlir::Value quantizeValue(NodeContext &nc, mlir::Value x, mlir::Value scale,
                          mlir::Value zeroPoint, mlir::Type qt);

/// (q - zeroPoint) * scale in the scale's type; `zeroPoint` null: 0.
mlir::Value dequantizeValue(NodeContext &nc, mlir::Value q, mlir::Value scale,
                            mlir::Value zeroPoint);

} // namespace kiln

#endif // KILN_LIB_LOWERING_ONNXTOKILN_QUANTIZE_H

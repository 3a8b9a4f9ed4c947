//===- Quantize.h - linear (de)quantization for ONNX handlers ---*- C++ -*-===//
//
// Shared by QuantizeLinear/DequantizeLinear and the quantized ops built
// from them (the QLinear* ops, QGemm).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_ONNXTOKILN_QUANTIZE_H
#define KILN_LIB_LOWERING_ONNXTOKILN_QUANTIZE_H

#include "NodeContext.h"

#include <optional>
#include <utility>

namespace kiln {

/// The integer type's range, as floats.
std::pair<double, double> quantizedRange(mlir::Type t);

/// saturate(round_half_even(x / scale) + zeroPoint) in `qt`; `scale` and
/// `zeroPoint` (null: 0) broadcast against `x`.
mlir::Value quantizeValue(NodeContext &nc, mlir::Value x, mlir::Value scale,
                          mlir::Value zeroPoint, mlir::Type qt);

/// saturate(round_half_even(x) + zeroPoint) in `qt` (quantizeValue with x
/// already scaled: a product's accumulator times its multiplier).
mlir::Value roundToQuantized(NodeContext &nc, mlir::Value x, mlir::Value zeroPoint,
                             mlir::Type qt);

/// (q - zeroPoint) * scale in the scale's type; `zeroPoint` null: 0.
mlir::Value dequantizeValue(NodeContext &nc, mlir::Value q, mlir::Value scale,
                            mlir::Value zeroPoint);

/// The values of an integer constant, widened; none for any other value.
std::optional<llvm::SmallVector<int64_t>> constantInts(mlir::Value v);

/// (q - zero) * scale as f32, computed now, when q is an integer constant
/// and zero (null: 0) and scale (null: 1) are f32/integer constants, one
/// value or one per index of q's dimension `axis`; null otherwise. Weights
/// so folded are ordinary f32 constants later passes pack.
mlir::Value foldDequantized(NodeContext &nc, mlir::Value q, mlir::Value zero, mlir::Value scale,
                            int64_t axis);

/// A QDQ model's product DQ(a) x DQ(b) (MatMul, or with `gemm` a Gemm with
/// its transB, alpha, beta and C) on the integers where the target has a
/// tile for them
/// (NodeContext::integerProducts): uint8 a with one scale and zero point,
/// constant int8 b with one or one per column; the i32 sums
/// (kiln.matmul_integer) scaled once by a_scale * b_scale, as onnxruntime
/// runs the pattern. Null when the operands are not such.
mlir::Value dequantizedProduct(NodeContext &nc, bool gemm);

/// A zero point's value when it is absent (0) or one constant value.
std::optional<int64_t> scalarZeroPoint(mlir::Value zero);

/// int8 activations as the uint8 ones vpdpbusd takes: x + 128 and its zero
/// point + 128 ((x + 128) - (z + 128) = x - z, exactly); none unless the
/// zero point is absent or one constant value (QuantizedProducts.cpp).
std::optional<std::pair<mlir::Value, mlir::Value>>
unsignedActivations(NodeContext &nc, mlir::Value x, mlir::Value zero);

/// sum_k (a - aZero)(b - bZero) exactly in i32 as kiln.matmul_integer
/// (VNNI's operand types: uint8 a [.., M, K] (int8 shifted to it) with one zero point, constant
/// int8 b [K, N], K a multiple of 4), the zero points applied around it;
/// null when the operands are not of that form or the target has no tile
/// for it (QuantizedProducts.cpp).
mlir::Value integerMatmul(NodeContext &nc, mlir::Value a, mlir::Value aZero, mlir::Value b,
                          mlir::Value bZero);

/// A 2-D 8-bit convolution run channels last as one integer product
/// (QuantizedConv.cpp): `acc` [N, OH*OW, F] i32, a row per output pixel and
/// a column per output channel.
struct ChannelsLastConv {
  mlir::Value acc;
  int64_t n = 0, oh = 0, ow = 0, f = 0;
  /// A scalar or per-output-channel parameter broadcast along acc's columns.
  mlir::FailureOr<mlir::Value> perChannel(NodeContext &nc, mlir::Value param,
                                          const llvm::Twine &what) const;
  /// `v` shaped like acc as the convolution's [N, F, OH, OW].
  mlir::Value toNchw(NodeContext &nc, mlir::Value v) const;
};

/// sum (x - xZero)(w - wZero) over the node's windows (its strides, pads,
/// dilations; group 1) as an integer product over x's channels-last
/// columns, where integerMatmul takes them: uint8 x of a static shape (but
/// perhaps its batch) with
/// a constant zero point (the padding's value), constant int8 weights.
std::optional<ChannelsLastConv> integerConv(NodeContext &nc, mlir::Value x, mlir::Value xZero,
                                            mlir::Value w, mlir::Value wZero);

/// A QDQ model's Conv of DequantizeLinear'd uint8 activations (one scale)
/// and int8 weights (one scale or one per output channel) as integerConv,
/// its i32 sums scaled once and `bias` (the node's, null when absent)
/// added; null when not of that form.
mlir::Value dequantizedConv(NodeContext &nc, mlir::Value bias);

} // namespace kiln

#endif // KILN_LIB_LOWERING_ONNXTOKILN_QUANTIZE_H

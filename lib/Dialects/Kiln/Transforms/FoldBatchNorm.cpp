//===- FoldBatchNorm.cpp - kiln-fold-batch-norm ---------------------------===//
//
//   %c = kiln.conv %x, %W, %b           (W, b, and the batch-norm's
//   %y = kiln.batch_norm %c, %g, %beta, %m, %v     parameters constant)
// =>
//   %y = kiln.conv %x, %W', %b'
//   s = g / sqrt(v + eps);  W'[f] = W[f] * s[f];  b' = (b - m) * s + beta
//
// An inference batch-norm after a convolution is an affine map per output
// channel, which the convolution's weights and bias absorb at compile time:
// the normalization's square root, division and memory pass disappear (what
// onnxruntime and PyTorch's inference fusion do). The result differs from
// normalizing the convolution's output only by rounding (the products are
// formed in double, then rounded once).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/Transforms/Passes.h"

#include "kiln/Dialects/Kiln/IR/ConstantData.h"
#include "kiln/Dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cmath>
#include <cstring>

namespace kiln {
#define GEN_PASS_DEF_KILNFOLDBATCHNORM
#include "kiln/Dialects/Kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// A constant's float values (f32, f16 or bf16; inline or a resource
/// blob) as doubles, or nothing.
std::optional<std::vector<double>> constantValues(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(constant.getType());
  auto et = type ? dyn_cast<FloatType>(type.getElementType()) : nullptr;
  if (!et || !(et.isF32() || et.isF16() || et.isBF16()) || !type.hasStaticShape())
    return std::nullopt;
  std::vector<double> values(type.getNumElements());
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(constant.getValue())) {
    auto *blob = resource.getRawHandle().getBlob();
    unsigned bytes = et.getWidth() / 8;
    if (!blob || blob->getData().size() != values.size() * bytes)
      return std::nullopt;
    const char *data = blob->getData().data();
    for (size_t i = 0; i < values.size(); ++i) {
      uint32_t raw = 0;
      std::memcpy(&raw, data + i * bytes, bytes);
      APFloat x(et.getFloatSemantics(), APInt(et.getWidth(), raw));
      values[i] = x.convertToDouble();
    }
    return values;
  }
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!dense)
    return std::nullopt;
  auto all = dense.getValues<APFloat>();
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = (dense.isSplat() ? *all.begin() : all[i]).convertToDouble();
  return values;
}

/// `values` rounded to nearest in `type`'s element type, as a resource
/// constant; null when one of them is not finite there (an f16 weight
/// scaled past 65504).
Value resourceConstant(OpBuilder &b, Location loc, RankedTensorType type, StringRef name,
                       ArrayRef<double> values) {
  auto et = cast<FloatType>(type.getElementType());
  unsigned bytes = et.getWidth() / 8;
  std::vector<char> data(values.size() * bytes);
  for (size_t i = 0; i < values.size(); ++i) {
    APFloat x(values[i]);
    bool lost;
    x.convert(et.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    if (!x.isFinite())
      return Value();
    uint64_t raw = x.bitcastToAPInt().getZExtValue();
    std::memcpy(data.data() + i * bytes, &raw, bytes);
  }
  return ConstantOp::create(b, loc, bytesAttr(type, name, data));
}

/// Folds `bn` into the convolution producing its input; false when it
/// can't (the convolution has other users, or something is not constant).
bool foldIntoConv(BatchNormOp bn) {
  auto conv = bn.getInput().getDefiningOp<ConvOp>();
  // (A channels-last convolution's channels are not batch-norm's.)
  if (!conv || !conv->hasOneUse() || conv.getChannelsLast())
    return false;
  auto wType = dyn_cast<RankedTensorType>(conv.getWeight().getType());
  auto w = constantValues(conv.getWeight());
  auto gamma = constantValues(bn.getScale()), beta = constantValues(bn.getBias());
  auto mean = constantValues(bn.getMean()), var = constantValues(bn.getVariance());
  if (!wType || !w || !gamma || !beta || !mean || !var)
    return false;
  int64_t F = wType.getDimSize(0);
  if (gamma->size() != (size_t)F || beta->size() != (size_t)F || mean->size() != (size_t)F ||
      var->size() != (size_t)F)
    return false;
  std::vector<double> bias(F, 0.0);
  if (Value b = conv.getBias()) {
    auto values = constantValues(b);
    if (!values || values->size() != (size_t)F)
      return false;
    bias = *values;
  }
  double eps = bn.getEpsilon().convertToDouble();
  int64_t per = w->size() / F; // weights per output channel
  std::vector<double> newW(w->size()), newB(F);
  for (int64_t f = 0; f < F; ++f) {
    double s = (*gamma)[f] / std::sqrt((*var)[f] + eps);
    for (int64_t i = 0; i < per; ++i)
      newW[f * per + i] = (*w)[f * per + i] * s;
    newB[f] = (bias[f] - (*mean)[f]) * s + (*beta)[f];
  }
  OpBuilder b(bn);
  Location loc = bn.getLoc();
  // The folded weights keep the convolution's type (f16 models: f16
  // weights, rounded once from the double products).
  Value weights = resourceConstant(b, loc, wType, "bn_folded_weight", newW);
  Value biasValue = resourceConstant(
      b, loc, RankedTensorType::get({F}, wType.getElementType()), "bn_folded_bias", newB);
  if (!weights || !biasValue) { // out of the type's range: normalize at run time
    for (Value v : {weights, biasValue})
      if (v)
        v.getDefiningOp()->erase();
    return false;
  }
  // Both nodes' locations: kernels still list the batch-norm they absorbed.
  Location fused = b.getFusedLoc({conv.getLoc(), loc});
  auto folded = ConvOp::create(b, fused, bn.getType(), conv.getInput(), weights, biasValue,
                               conv.getStridesAttr(), conv.getPadsAttr(),
                               conv.getDilationsAttr(), conv.getGroupAttr());
  bn.replaceAllUsesWith(folded.getResult());
  bn.erase();
  conv.erase();
  return true;
}

struct KilnFoldBatchNormPass final : impl::KilnFoldBatchNormBase<KilnFoldBatchNormPass> {
  void runOnOperation() override {
    SmallVector<BatchNormOp> norms;
    getOperation().walk([&](BatchNormOp bn) { norms.push_back(bn); });
    for (BatchNormOp bn : norms)
      (void)foldIntoConv(bn);
  }
};

} // namespace
} // namespace kiln

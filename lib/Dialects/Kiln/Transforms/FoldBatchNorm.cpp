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

/// The f32 values of a constant (inline or a resource blob), or nothing.
std::optional<std::vector<float>> constantFloats(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(constant.getType());
  if (!type || !type.getElementType().isF32() || !type.hasStaticShape())
    return std::nullopt;
  std::vector<float> values(type.getNumElements());
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(constant.getValue())) {
    auto *blob = resource.getRawHandle().getBlob();
    if (!blob || blob->getData().size() != values.size() * sizeof(float))
      return std::nullopt;
    std::memcpy(values.data(), blob->getData().data(), blob->getData().size());
    return values;
  }
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!dense)
    return std::nullopt;
  auto it = dense.getValues<float>().begin();
  for (float &x : values)
    x = dense.isSplat() ? *dense.getValues<float>().begin() : *it++;
  return values;
}

Value resourceConstant(OpBuilder &b, Location loc, RankedTensorType type, StringRef name,
                       ArrayRef<float> values) {
  ArrayRef<char> bytes(reinterpret_cast<const char *>(values.data()),
                       values.size() * sizeof(float));
  auto blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, alignof(std::max_align_t));
  return ConstantOp::create(
      b, loc, cast<ElementsAttr>(DenseResourceElementsAttr::get(type, name, std::move(blob))));
}

/// Folds `bn` into the convolution producing its input; false when it
/// can't (the convolution has other users, or something is not constant).
bool foldIntoConv(BatchNormOp bn) {
  auto conv = bn.getInput().getDefiningOp<ConvOp>();
  if (!conv || !conv->hasOneUse())
    return false;
  auto wType = dyn_cast<RankedTensorType>(conv.getWeight().getType());
  auto w = constantFloats(conv.getWeight());
  auto gamma = constantFloats(bn.getScale()), beta = constantFloats(bn.getBias());
  auto mean = constantFloats(bn.getMean()), var = constantFloats(bn.getVariance());
  if (!wType || !w || !gamma || !beta || !mean || !var)
    return false;
  int64_t F = wType.getDimSize(0);
  if (gamma->size() != (size_t)F || beta->size() != (size_t)F || mean->size() != (size_t)F ||
      var->size() != (size_t)F)
    return false;
  std::vector<float> bias(F, 0.0f);
  if (Value b = conv.getBias()) {
    auto values = constantFloats(b);
    if (!values || values->size() != (size_t)F)
      return false;
    bias = *values;
  }
  double eps = bn.getEpsilon().convertToDouble();
  int64_t per = w->size() / F; // weights per output channel
  std::vector<float> newW(w->size()), newB(F);
  for (int64_t f = 0; f < F; ++f) {
    double s = (double)(*gamma)[f] / std::sqrt((double)(*var)[f] + eps);
    for (int64_t i = 0; i < per; ++i)
      newW[f * per + i] = (float)((double)(*w)[f * per + i] * s);
    newB[f] = (float)(((double)bias[f] - (*mean)[f]) * s + (*beta)[f]);
  }
  OpBuilder b(bn);
  Location loc = bn.getLoc();
  Value weights = resourceConstant(b, loc, wType, "bn_folded_weight", newW);
  Value biasValue = resourceConstant(
      b, loc, RankedTensorType::get({F}, wType.getElementType()), "bn_folded_bias", newB);
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

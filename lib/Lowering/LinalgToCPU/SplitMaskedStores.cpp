//===- SplitMaskedStores.cpp - kiln-split-masked-stores -------------------===//
//
//   vector.maskedstore %m[%i], %mask, %v : vector<8xf32>
//     (%mask a constant: lanes 0..6 on)
// =>
//   vector.store (lanes 0..3 of %v), %m[%i]      : vector<4xf32>
//   vector.store (lanes 4..5 of %v), %m[%i + 4]  : vector<2xf32>
//   vector.store (lane 6 of %v),     %m[%i + 6]  : vector<1xf32>
//
// Without AVX-512's mask registers a masked store is VMASKMOVPS, which AMD
// cores before Zen 4 run as microcode: a 2-core Zen 2 spent half of a
// Winograd input transform on them (a store every ~12 cycles). Each run
// of set lanes of a mask known at compile time becomes plain stores of
// power-of-two pieces instead (never more than log2(lanes) + 1 per run):
// nothing outside the mask is touched, so tiles that threads write side
// by side stay race-free. Masks known only at run time stay.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPLITMASKEDSTORES
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The lanes of a 1-D mask known at compile time, or none.
std::optional<SmallVector<bool>> constantLanes(Value mask) {
  auto type = dyn_cast<VectorType>(mask.getType());
  if (!type || type.getRank() != 1 || type.isScalable())
    return std::nullopt;
  int64_t lanes = type.getNumElements();
  if (auto c = mask.getDefiningOp<vector::ConstantMaskOp>()) {
    int64_t on = c.getMaskDimSizes()[0];
    SmallVector<bool> bits(lanes, false);
    for (int64_t k = 0; k < std::min(on, lanes); ++k)
      bits[k] = true;
    return bits;
  }
  if (auto c = mask.getDefiningOp<vector::CreateMaskOp>()) {
    APInt on;
    if (!matchPattern(c.getOperand(0), m_ConstantInt(&on)))
      return std::nullopt;
    SmallVector<bool> bits(lanes, false);
    for (int64_t k = 0; k < std::min<int64_t>(on.getSExtValue(), lanes); ++k)
      bits[k] = true;
    return bits;
  }
  DenseElementsAttr dense;
  if (matchPattern(mask, m_Constant(&dense)) && dense.getElementType().isInteger(1))
    return llvm::to_vector(dense.getValues<bool>());
  return std::nullopt;
}

struct SplitConstantMask : OpRewritePattern<vector::MaskedStoreOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(vector::MaskedStoreOp op, PatternRewriter &b) const override {
    std::optional<SmallVector<bool>> bits = constantLanes(op.getMask());
    if (!bits)
      return b.notifyMatchFailure(op, "mask not known at compile time");
    Location loc = op.getLoc();
    Value v = op.getValueToStore();
    auto type = cast<VectorType>(v.getType());
    SmallVector<Value> indices(op.getIndices());
    int64_t lanes = type.getNumElements();
    for (int64_t k = 0; k < lanes;) {
      if (!(*bits)[k]) {
        ++k;
        continue;
      }
      int64_t end = k;
      while (end < lanes && (*bits)[end])
        ++end;
      // The run [k, end) as pieces of 2^p lanes, the largest first.
      while (k < end) {
        int64_t piece = int64_t(1) << llvm::Log2_64(end - k);
        Value part = piece == lanes ? v
                                    : vector::ExtractStridedSliceOp::create(
                                          b, loc, v, ArrayRef<int64_t>{k},
                                          ArrayRef<int64_t>{piece}, ArrayRef<int64_t>{1})
                                          .getResult();
        SmallVector<Value> at(indices);
        if (k)
          at.back() = arith::AddIOp::create(b, loc, at.back(),
                                            arith::ConstantIndexOp::create(b, loc, k));
        vector::StoreOp::create(b, loc, part, op.getBase(), at);
        k += piece;
      }
    }
    b.eraseOp(op);
    return success();
  }
};

struct KilnSplitMaskedStoresPass final
    : impl::KilnSplitMaskedStoresBase<KilnSplitMaskedStoresPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SplitConstantMask>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace kiln

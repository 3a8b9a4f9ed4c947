//===- CollapseReductionLoops.cpp - kiln-collapse-reduction-loops ---------===//
//
//   linalg.generic {parallel, reduction, reduction}
//       ins(%x : tensor<32x112x112xf32>) outs(%s : tensor<32xf32>)
// =>
//   %r = tensor.collapse_shape %x [[0], [1, 2]] : ... into tensor<32x12544xf32>
//   linalg.generic {parallel, reduction} ins(%r) outs(%s)
//
// EfficientNet-B0's 16 SE means took 1.2 of its 8.7 ms as scalar loops;
// as rows of 12544 in vector accumulators the first one takes 18 us
// instead of 164. Collapsed on tensors, before kernel formation tiles the
// parallel loops: a tile's buffer is then a strided view whose rows are
// still contiguous, which a view of two reduced dimensions is not known
// to be.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCOLLAPSEREDUCTIONLOOPS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Rows shorter than this stay as they are.
constexpr int64_t kMinCollapsedRow = 128;

/// The trailing loops of `op` as one group, when there are two or more and
/// all are reductions of a generic on tensors; else nothing.
SmallVector<ReassociationIndices> trailingReductions(linalg::LinalgOp op) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic || !generic.hasPureTensorSemantics() || generic.getNumReductionLoops() < 2)
    return {};
  unsigned loops = generic.getNumLoops(), reductions = generic.getNumReductionLoops();
  // Rows of something (channels): a whole tensor's sum (a loss) is left
  // to the loops, as a dynamic artifact's of the same model is.
  if (reductions == loops)
    return {};
  auto iterators = generic.getIteratorTypesArray();
  ReassociationIndices group;
  for (unsigned l = loops - reductions; l < loops; ++l) {
    if (iterators[l] != utils::IteratorType::reduction)
      return {};
    group.push_back(l);
  }
  // Every operand that reads them reads them as its last dimensions, in
  // order (a batch norm's (n, h, w) around its channels does not, nor a
  // pool's window).
  for (AffineMap map : generic.getIndexingMapsArray()) {
    if (!map.isProjectedPermutation())
      return {};
    if (llvm::none_of(group, [&](int64_t l) { return map.isFunctionOfDim(l); }))
      continue;
    if (map.getNumResults() < group.size())
      return {};
    ArrayRef<AffineExpr> tail = map.getResults().take_back(group.size());
    for (auto [expr, l] : llvm::zip(tail, group))
      if (expr != getAffineDimExpr(l, map.getContext()))
        return {};
  }
  // Long rows of a static length only: a sum of a few dozen terms costs
  // little as loops, and one of a run-time length would sum in another
  // order than the static artifact of the same model (kept bit for bit).
  SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
  int64_t row = 1;
  for (int64_t l : group) {
    if (ShapedType::isDynamic(ranges[l]))
      return {};
    row *= ranges[l];
  }
  if (row < kMinCollapsedRow)
    return {};
  return {group};
}

struct KilnCollapseReductionLoopsPass final
    : impl::KilnCollapseReductionLoopsBase<KilnCollapseReductionLoopsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateCollapseDimensions(patterns, trailingReductions);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
} // namespace kiln

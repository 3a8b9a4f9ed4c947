//===- ParallelFirst.cpp - kiln-gpu-parallel-first pass -------------------===//
//
// linalg.generic {iterator_types = [reduction, parallel]}  (a column sum)
//   => the same op with its loops permuted to [parallel, reduction],
// so the parallel loops lower to one outer scf.parallel: one thread each.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln {
#define GEN_PASS_DEF_KILNGPUPARALLELFIRST
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct KilnGpuParallelFirstPass final
    : impl::KilnGpuParallelFirstBase<KilnGpuParallelFirstPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> ops;
    getOperation().walk([&](linalg::LinalgOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops) {
      auto iterators = op.getIteratorTypesArray();
      SmallVector<unsigned> order;
      for (unsigned i = 0; i < iterators.size(); ++i)
        if (linalg::isParallelIterator(iterators[i]))
          order.push_back(i);
      for (unsigned i = 0; i < iterators.size(); ++i)
        if (!linalg::isParallelIterator(iterators[i]))
          order.push_back(i);
      bool sorted = llvm::all_of(llvm::enumerate(order),
                                 [](auto e) { return e.index() == e.value(); });
      if (sorted)
        continue;
      rewriter.setInsertionPoint(op);
      auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
      if (!generic) {
        auto generalized = linalg::generalizeNamedOp(rewriter, op);
        if (failed(generalized))
          continue; // stays as it is: correct, only less parallel
        generic = *generalized;
      }
      if (failed(linalg::interchangeGenericOp(rewriter, generic, order)))
        continue;
    }
  }
};

} // namespace
} // namespace kiln

//===- StackTemporaries.cpp - kiln-stack-temporaries ----------------------===//
//
//   scf.parallel (%r) ... {                 scf.parallel (%r) ... {
//     %t = memref.alloc() : memref<64xf32>    memref.alloca_scope {
//     ... uses of %t ...               =>       %t = memref.alloca() : memref<64xf32>
//     memref.dealloc %t                         ... uses of %t ...
//   }                                         }
//                                           }
//
// Kernels formed by tiling need per-tile temporaries (a row's mean, a row
// of a hidden layer). They live inside loop bodies, where the memory plan
// can't place them (iterations run in parallel); as allocas in a scope per
// iteration they cost nothing and can't fail the way a malloc can.
// Temporaries above `max-bytes` keep their alloc. A temporary sized at run
// time counts at its largest where each size has a constant bound (a
// partial tile's `affine.min(8, n - i)` images, under a dynamic batch) or
// a declared maximum (a row of a dynamic sequence, `--dim seq=2..256`):
// its alloca keeps the run-time sizes. (A dynamic BERT's scaled key
// transpose at 1x8 had malloc'd and freed one such row per head and
// feature: 17 us a layer.)
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Passes.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Lowering/Host/DimBounds.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "llvm/ADT/SetVector.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSTACKTEMPORARIES
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The bytes of `alloc` at its largest when at most `limit`, else -1 (also
/// when a size has no constant bound nor a maximum from `inputMax`).
int64_t allocBytes(memref::AllocOp alloc, int64_t limit, ArrayAttr inputMax) {
  MemRefType t = alloc.getType();
  if (!t.getLayout().isIdentity() || !t.getElementType().isIntOrFloat())
    return -1;
  int64_t bytes = (t.getElementType().getIntOrFloatBitWidth() + 7) / 8;
  unsigned next = 0;
  for (int64_t size : t.getShape()) {
    if (ShapedType::isDynamic(size)) {
      Value dynamicSize = alloc.getDynamicSizes()[next++];
      FailureOr<int64_t> bound = ValueBoundsConstraintSet::computeConstantBound(
          presburger::BoundType::UB, ValueBoundsConstraintSet::Variable(dynamicSize),
          /*stopCondition=*/nullptr, /*closedUB=*/true);
      if (failed(bound))
        if (std::optional<std::pair<int64_t, int64_t>> range = indexRange(dynamicSize, inputMax))
          bound = range->second;
      if (failed(bound) || *bound < 0)
        return -1;
      size = *bound;
    }
    // Checked per size: a loose bound must not wrap the product round.
    if (size && bytes > limit / size)
      return -1;
    bytes *= size;
  }
  return bytes;
}

struct KilnStackTemporariesPass final
    : impl::KilnStackTemporariesBase<KilnStackTemporariesPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    // The inputs' maxima bound @main's arguments (not another function's).
    auto module = fn->getParentOfType<ModuleOp>();
    ArrayAttr inputMax = module && fn.getSymName() == "main"
                             ? module->getAttrOfType<ArrayAttr>(KilnDialect::getInputDimMaxAttrName())
                             : nullptr;
    // Temporaries in loop bodies whose only other use than compute is their
    // dealloc in the same block.
    SmallVector<memref::AllocOp> candidates;
    fn.walk([&](memref::AllocOp alloc) {
      Operation *parent = alloc->getParentOp();
      if (parent == fn || !isa<LoopLikeOpInterface>(parent) || allocBytes(alloc, maxBytes, inputMax) < 0)
        return;
      bool ok = llvm::all_of(alloc->getUsers(), [&](Operation *u) {
        return !isa<memref::DeallocOp>(u) || u->getBlock() == alloc->getBlock();
      });
      if (ok)
        candidates.push_back(alloc);
    });
    // One scope per loop body, holding everything but its terminator.
    llvm::SetVector<Block *> bodies;
    for (memref::AllocOp alloc : candidates)
      bodies.insert(alloc->getBlock());
    IRRewriter rewriter(&getContext());
    for (Block *body : bodies) {
      Operation *terminator = body->getTerminator();
      if (!terminator || terminator->getNumOperands() || body->without_terminator().empty())
        continue; // loops yielding values: leave their allocs alone
      rewriter.setInsertionPointToStart(body);
      auto scope = memref::AllocaScopeOp::create(rewriter, fn.getLoc(), TypeRange{});
      Block *inner = rewriter.createBlock(&scope.getBodyRegion());
      inner->getOperations().splice(inner->end(), body->getOperations(),
                                    std::next(Block::iterator(scope)),
                                    Block::iterator(terminator));
      rewriter.setInsertionPointToEnd(inner);
      memref::AllocaScopeReturnOp::create(rewriter, fn.getLoc(), ValueRange{});
    }
    for (memref::AllocOp alloc : candidates) {
      if (!isa<memref::AllocaScopeOp>(alloc->getParentOp()))
        continue;
      for (Operation *u : llvm::make_early_inc_range(alloc->getUsers()))
        if (isa<memref::DeallocOp>(u))
          rewriter.eraseOp(u);
      rewriter.setInsertionPoint(alloc);
      rewriter.replaceOpWithNewOp<memref::AllocaOp>(alloc, alloc.getType(), alloc.getDynamicSizes(),
                                                    alloc.getAlignmentAttr());
    }
  }
};

} // namespace
} // namespace kiln

//===- ImageChains.cpp - kiln-image-chains --------------------------------===//
//
//   scf.parallel (%n, %i) = (0, 0) to (8, I) { A }     scf.parallel (%n) = (0) to (8) {
//   scf.parallel (%n, %j) = (0, 0) to (8, J) { B }  =>   scf.parallel (%i) = (0) to (I) { A }
//                                                        scf.parallel (%j) = (0) to (J) { B }
//                                                      }
//
// At batch 8 a MobileNet's first layers hand 3 MB per image from kernel to
// kernel: each kernel over the whole batch streams 25 MB through DRAM,
// where a thread running the kernels one image after the other finds what
// the last one wrote still in its caches (the first two inverted-residual
// blocks of MobileNetV3 on 2 Zen 2 cores: 7.7 ms at batch 8, 4 x 0.9 ms for
// four images on one core). Kernels whose every access to a buffer written
// in the model is to the image of their first loop are run so: one task per
// image, the kernels in order inside it. Only kernels whose weights are
// small beside an image's data join: each image reads them again. A buffer
// only the run uses becomes one image's, allocated in each iteration (8.1
// -> 5.4 ms as a run, 3.9 with those buffers).
//
// A dynamic batch chooses at run time: with fewer images than threads a
// chain would leave threads idle, so an scf.if runs the chain from
// `min-images` images up and the kernels over the whole batch below
// (MobileNetV3 at batch 8, one artifact for 1..16: 36.8 -> 32.0 ms).
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Passes.h"
#include "ImageKernels.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Lowering/Host/DimBounds.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

namespace kiln {
#define GEN_PASS_DEF_KILNIMAGECHAINS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Top-level ops between a chain's kernels that move out of its way:
/// views, constants and allocations before it, deallocations after.
bool hoistable(Operation *op) {
  return isa<memref::AllocOp, memref::GetGlobalOp>(op) ||
         (isPure(op) && op->getNumRegions() == 0);
}

/// `op` on the image `image` of the operands it reads at its first loop,
/// at `b`.
void imageGeneric(OpBuilder &b, linalg::GenericOp op, Value image) {
  IRMapping map;
  for (OpOperand &operand : op->getOpOperands()) {
    if (!op.getMatchingIndexingMap(&operand).isFunctionOfDim(0))
      continue;
    auto type = cast<MemRefType>(operand.get().getType());
    SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0)), sizes, strides;
    offsets[0] = image;
    sizes.push_back(b.getIndexAttr(1));
    for (int64_t d = 1; d < type.getRank(); ++d)
      sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
    strides.assign(type.getRank(), b.getIndexAttr(1));
    map.map(operand.get(), memref::SubViewOp::create(b, op.getLoc(), operand.get(), offsets,
                                                     sizes, strides)
                               .getResult());
  }
  b.clone(*op, map);
  op.erase();
}

/// The top-level ops among `kernels` moved out of their way: before the
/// first (or, deallocations, after the last).
void clearBetween(ArrayRef<Kernel> kernels, ArrayRef<Operation *> between) {
  Operation *first = kernels.front().op, *after = kernels.back().op;
  for (Operation *op : between) {
    if (isa<memref::DeallocOp>(op)) {
      op->moveAfter(after);
      after = op;
    } else {
      op->moveBefore(first);
    }
  }
}

Location fusedLoc(ArrayRef<Kernel> kernels) {
  SmallVector<Location> locs;
  for (Kernel k : kernels)
    locs.push_back(k.op->getLoc());
  return FusedLoc::get(kernels.front().op->getContext(), locs);
}

/// One task per image of `count` running `kernels`, consecutive ops of one
/// block, in order.
scf::ParallelOp buildChain(ArrayRef<Kernel> kernels, Value count) {
  OpBuilder b(kernels.front().op);
  Location loc = fusedLoc(kernels);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto chain = scf::ParallelOp::create(b, loc, ValueRange{zero}, ValueRange{count},
                                       ValueRange{one});
  Value image = chain.getInductionVars()[0];
  for (Kernel k : kernels) {
    b.setInsertionPoint(chain.getBody()->getTerminator());
    if (auto generic = dyn_cast<linalg::GenericOp>(k.op)) {
      imageGeneric(b, generic, image);
      continue;
    }
    auto loop = cast<scf::ParallelOp>(k.op);
    Block *body = loop.getBody();
    Block *dest = chain.getBody();
    Operation *before = chain.getBody()->getTerminator();
    if (loop.getNumLoops() > 1) {
      auto rest = [](SmallVector<Value> v) { return SmallVector<Value>(ArrayRef(v).drop_front()); };
      auto inner = scf::ParallelOp::create(b, loop.getLoc(), rest(loop.getLowerBound()),
                                           rest(loop.getUpperBound()), rest(loop.getStep()));
      for (auto [from, to] : llvm::zip(rest(loop.getInductionVars()), inner.getInductionVars()))
        from.replaceAllUsesWith(to);
      dest = inner.getBody();
      before = dest->getTerminator();
    }
    loop.getInductionVars()[0].replaceAllUsesWith(image);
    body->getTerminator()->erase();
    dest->getOperations().splice(before->getIterator(), body->getOperations());
    loop.erase();
  }
  return chain;
}

/// The number of images the first of `kernels` runs over at run time.
Value countAtRunTime(ArrayRef<Kernel> kernels) {
  Operation *first = kernels.front().op;
  if (auto loop = dyn_cast<scf::ParallelOp>(first))
    return loop.getUpperBound()[0];
  OpBuilder b(first);
  return memref::DimOp::create(b, first->getLoc(),
                               imageOperand(cast<linalg::GenericOp>(first)), 0);
}

/// A dynamic batch's run that may have fewer than `minImages` images:
/// the chain where it has as many or more (fewer would leave threads
/// idle), the kernels as they were otherwise. Returns the chain.
scf::ParallelOp buildChoice(ArrayRef<Kernel> kernels, Value count, int64_t minImages) {
  OpBuilder b(kernels.front().op);
  Location loc = fusedLoc(kernels);
  Value enough = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, count,
                                       arith::ConstantIndexOp::create(b, loc, minImages));
  auto choice = scf::IfOp::create(b, loc, enough, /*withElseRegion=*/true);
  SmallVector<Kernel> chained;
  b.setInsertionPoint(choice.thenBlock()->getTerminator());
  for (Kernel k : kernels) {
    k.op->moveBefore(choice.elseBlock()->getTerminator());
    chained.push_back({b.clone(*k.op), k.imageBytes, k.weightBytes});
  }
  return buildChain(chained, count);
}

/// The uses of `root`, a buffer of @main, and of the reshapes of it made
/// outside `scope` (the chain, or the choice holding it): true when all
/// are inside `scope` or the buffer's deallocation (or, where the choice's
/// other branch keeps the buffer, its sizes). `views` gets the reshapes,
/// sources first.
bool onlyInChain(memref::AllocOp root, Operation *scope, bool kept,
                 SmallVector<Operation *> &views) {
  SmallVector<Value> work{root.getResult()};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (scope->isProperAncestor(user) || (isa<memref::DeallocOp>(user) && v == root) ||
          (kept && isa<memref::DimOp>(user)))
        continue;
      if (!isa<memref::CollapseShapeOp, memref::ExpandShapeOp>(user) ||
          user->getBlock() != root->getBlock())
        return false;
      views.push_back(user);
      work.push_back(user->getResult(0));
    }
  }
  return true;
}

/// The same reshape as `view` of a buffer of one image, `source`.
Value reshapeImage(OpBuilder &b, Operation *view, Value source) {
  auto type = cast<MemRefType>(view->getResult(0).getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = 1;
  auto one = MemRefType::get(shape, type.getElementType());
  if (auto c = dyn_cast<memref::CollapseShapeOp>(view))
    return memref::CollapseShapeOp::create(b, view->getLoc(), one, source,
                                           c.getReassociationIndices());
  auto e = cast<memref::ExpandShapeOp>(view);
  return memref::ExpandShapeOp::create(b, view->getLoc(), one, source, e.getReassociationIndices());
}

/// Buffers only the kernels of `chain` use, at their image, become one
/// image's buffer allocated in each of its iterations: the thread running
/// an image writes and reads the same memory, still in its caches, for
/// every image it runs, and not a new part of a buffer of all of them
/// (written back to memory in time). Under a dynamic batch the choice's
/// other branch keeps the batch's buffers.
void privatizeBuffers(scf::ParallelOp chain, Operation *scope, const Images &images) {
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(chain.getRegion(), captured);
  llvm::SetVector<memref::AllocOp> roots;
  for (Value v : captured) {
    while (v.getDefiningOp<memref::CollapseShapeOp>() || v.getDefiningOp<memref::ExpandShapeOp>())
      v = v.getDefiningOp()->getOperand(0);
    if (auto alloc = v.getDefiningOp<memref::AllocOp>())
      if (alloc.getType().getLayout().isIdentity() && images.sized(alloc.getType()) &&
          imageBytesOf(alloc.getType()) >= 0 && alloc->getBlock() == scope->getBlock())
        roots.insert(alloc);
  }
  for (memref::AllocOp root : roots) {
    SmallVector<Operation *> views;
    if (!onlyInChain(root, scope, scope != chain.getOperation(), views))
      continue;
    SmallVector<Value> values{root.getResult()};
    for (Operation *view : views)
      values.push_back(view->getResult(0));
    // Allocated before the first kernel of the chain using it, given back
    // after the last one: what a thread's images keep live at a time is
    // then the buffers between two kernels, not all of the chain's.
    Block *body = chain.getBody();
    // Through the views made of it in the chain too: an elementwise op's
    // slice is a subview of its own in the chain's body, before the op.
    Operation *first = nullptr, *last = nullptr;
    SmallVector<Value> aliases(values);
    while (!aliases.empty()) {
      Value v = aliases.pop_back_val();
      for (Operation *user : v.getUsers()) {
        Operation *at = body->findAncestorOpInBlock(*user);
        if (!at)
          continue;
        if (!first || at->isBeforeInBlock(first))
          first = at;
        if (!last || last->isBeforeInBlock(at))
          last = at;
        if (isa<ViewLikeOpInterface, memref::CastOp>(user) && user == at)
          llvm::append_range(aliases, user->getResults());
      }
    }
    if (!first)
      continue;
    OpBuilder b(first);
    Location loc = root.getLoc();
    SmallVector<int64_t> shape(root.getType().getShape());
    shape[0] = 1;
    auto type = MemRefType::get(shape, root.getType().getElementType());
    Value own = memref::AllocOp::create(b, loc, type, root.getAlignmentAttr());
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    IRMapping map;
    map.map(root.getResult(), own);
    for (Operation *view : views)
      map.map(view->getResult(0), reshapeImage(b, view, map.lookup(view->getOperand(0))));
    b.setInsertionPointAfter(last);
    memref::DeallocOp::create(b, loc, own);
    for (Value v : values) {
      for (OpOperand &use : llvm::make_early_inc_range(v.getUses())) {
        Operation *user = use.getOwner();
        if (!chain->isProperAncestor(user))
          continue;
        Value mine = map.lookup(v);
        if (auto sub = dyn_cast<memref::SubViewOp>(user)) {
          // The image's offset becomes 0, still a value: the view's type
          // (a dynamic offset) stays.
          b.setInsertionPoint(sub);
          SmallVector<OpFoldResult> offsets = sub.getMixedOffsets();
          offsets[0] = zero;
          auto view = memref::SubViewOp::create(b, sub.getLoc(), sub.getType(), mine, offsets,
                                                sub.getMixedSizes(), sub.getMixedStrides());
          sub.replaceAllUsesWith(view.getResult());
          sub.erase();
        } else {
          use.set(mine);
          auto indices = isa<memref::LoadOp>(user) ? cast<memref::LoadOp>(user).getIndicesMutable()
                                                   : cast<memref::StoreOp>(user).getIndicesMutable();
          indices[0].set(zero);
        }
      }
    }
    if (scope != chain.getOperation())
      continue; // the batch's kernels still use it
    for (Operation *view : llvm::reverse(views))
      view->erase();
    for (Operation *user : llvm::make_early_inc_range(root->getUsers()))
      user->erase(); // the deallocation
    root.erase();
  }
}

struct KilnImageChainsPass final : impl::KilnImageChainsBase<KilnImageChainsPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func.getBody().hasOneBlock())
      return;
    SmallVector<Operation *> ops;
    for (Operation &op : func.getBody().front())
      ops.push_back(&op);
    // Found first, then built, then their buffers privatized: each step
    // moves or erases ops a later run's scan would see.
    struct Run {
      SmallVector<Kernel> kernels;
      SmallVector<Operation *> between;
      Images images;
    };
    SmallVector<Run> runs;
    SmallVector<Kernel> kernels;
    SmallVector<Operation *> between, pending;
    Images images;
    auto finish = [&] {
      if (kernels.size() >= 2)
        runs.push_back({kernels, between, images});
      kernels.clear();
      between.clear();
      pending.clear();
    };
    for (Operation *op : ops) {
      std::optional<Kernel> k;
      std::optional<Images> n = imagesOf(op);
      // A dynamic batch chooses at run time (buildChoice).
      if (n && (n->dynamic() ? bool(n->size) : n->count >= minImages)) {
        if (*n != images)
          finish();
        k = asKernel(op, *n);
        if (k)
          images = *n;
      }
      if (k) {
        if (kernels.empty())
          pending.clear();
        llvm::append_range(between, pending);
        pending.clear();
        kernels.push_back(*k);
      } else if (hoistable(op) || isa<memref::DeallocOp>(op)) {
        pending.push_back(op);
      } else {
        finish();
      }
    }
    finish();
    // The inputs' maxima are @main's arguments'.
    ArrayAttr inputMax = func.getSymName() == "main"
                             ? func->getParentOfType<ModuleOp>()->getAttrOfType<ArrayAttr>(
                                   KilnDialect::getInputDimMaxAttrName())
                             : nullptr;
    SmallVector<std::tuple<scf::ParallelOp, Operation *, Images>> chains;
    for (Run &run : runs) {
      if (!run.images.dynamic()) {
        clearBetween(run.kernels, run.between);
        OpBuilder b(run.kernels.front().op);
        Value count =
            arith::ConstantIndexOp::create(b, fusedLoc(run.kernels), run.images.count);
        scf::ParallelOp chain = buildChain(run.kernels, count);
        chains.push_back({chain, chain, run.images});
        continue;
      }
      // A batch whose declared maximum (--dim batch=1..3) is too few
      // images takes none.
      Operation *first = run.kernels.front().op;
      auto loop = dyn_cast<scf::ParallelOp>(first);
      std::optional<std::pair<int64_t, int64_t>> range =
          loop ? indexRange(loop.getUpperBound()[0], inputMax)
               : dimRange(imageOperand(cast<linalg::GenericOp>(first)), 0, inputMax);
      if (range && range->second < minImages)
        continue;
      clearBetween(run.kernels, run.between);
      scf::ParallelOp chain = buildChoice(run.kernels, countAtRunTime(run.kernels), minImages);
      chains.push_back({chain, chain->getParentOp(), run.images});
    }
    for (auto [chain, scope, images] : chains)
      privatizeBuffers(chain, scope, images);
  }
};

} // namespace
} // namespace kiln

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
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Passes.h"
#include "kiln/Lowering/Host/KernelCaptures.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/CallInterfaces.h"
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

/// Whether index `v` is the image loop's variable `iv` (plus zeros, as
/// kiln-implicit-padding writes its rows' indices).
bool isImage(Value v, Value iv) {
  while (v != iv) {
    if (auto add = v.getDefiningOp<arith::AddIOp>()) {
      if (constIndex(add.getLhs()) == 0)
        v = add.getRhs();
      else if (constIndex(add.getRhs()) == 0)
        v = add.getLhs();
      else
        return false;
    } else if (auto apply = v.getDefiningOp<affine::AffineApplyOp>()) {
      AffineMap m = apply.getAffineMap();
      if (m.getNumResults() != 1 || apply.getMapOperands().size() != 1 ||
          !isa<AffineDimExpr, AffineSymbolExpr>(m.getResult(0)))
        return false;
      v = apply.getMapOperands()[0];
    } else {
      return false;
    }
  }
  return true;
}

/// Weights a kernel may read again for each image, whatever its images'
/// size: they stay in L2 (an SE block's 96 x 4 layers).
constexpr int64_t kCachedWeightBytes = 64 << 10;

enum class Source { Constant, Images, Other };

/// What a buffer a kernel uses is a view of: a global (the weights, a pad
/// row), a buffer or argument of @main whose dimension 0 is its `images`
/// and stays the view's dimension 0, or anything else.
Source classify(Value v, int64_t images) {
  if (!isa<MemRefType>(v.getType()))
    return Source::Other;
  bool imageMajor = true; // every view on the way keeps the images in dimension 0
  while (true) {
    auto t = cast<MemRefType>(v.getType());
    imageMajor &= t.getRank() > 0 && t.getDimSize(0) == images;
    Operation *def = v.getDefiningOp();
    if (def && isa<memref::GetGlobalOp>(def))
      return Source::Constant;
    if (!def || isa<memref::AllocOp>(def)) // @main's argument or a buffer of its own
      return imageMajor ? Source::Images : Source::Other;
    if (auto c = dyn_cast<memref::CollapseShapeOp>(def)) {
      imageMajor &= c.getReassociationIndices()[0] == ReassociationIndices{0};
      v = c.getSrc();
    } else if (auto e = dyn_cast<memref::ExpandShapeOp>(def)) {
      imageMajor &= e.getReassociationIndices()[0] == ReassociationIndices{0};
      v = e.getSrc();
    } else if (auto cast = dyn_cast<memref::CastOp>(def)) {
      v = cast.getSource();
    } else if (auto sub = dyn_cast<memref::SubViewOp>(def)) {
      imageMajor &= sub.getStaticOffsets()[0] == 0 && sub.getStaticSizes()[0] == images &&
                    sub.getStaticStrides()[0] == 1 && !sub.getDroppedDims().test(0);
      v = sub.getSource();
    } else {
      return Source::Other;
    }
  }
}

/// Whether `use` of an image-major buffer inside a kernel reads or writes
/// only the image `iv`.
bool touchesOneImage(OpOperand &use, Value iv) {
  Operation *user = use.getOwner();
  if (auto sub = dyn_cast<memref::SubViewOp>(user)) {
    SmallVector<OpFoldResult> offsets = sub.getMixedOffsets();
    auto offset = dyn_cast<Value>(offsets[0]);
    return offset && isImage(offset, iv) && sub.getStaticSizes()[0] == 1;
  }
  if (auto load = dyn_cast<memref::LoadOp>(user))
    return isImage(load.getIndices()[0], iv);
  if (auto store = dyn_cast<memref::StoreOp>(user))
    return use.get() == store.getMemRef() && isImage(store.getIndices()[0], iv);
  return false;
}

int64_t bytesOf(MemRefType t) {
  if (!t.hasStaticShape() || !t.getElementType().isIntOrFloat())
    return -1;
  return t.getNumElements() * ((t.getElementType().getIntOrFloatBitWidth() + 7) / 8);
}

/// A kernel of @main that may run image by image, with the bytes each of
/// its images touches and those of its weights.
struct Kernel {
  Operation *op; // an scf.parallel, or a linalg.generic not tiled
  int64_t imageBytes = 0, weightBytes = 0;
};

/// `loop` as a kernel over `images` in its first dimension, if every
/// buffer it uses besides globals is image-major and used only at the
/// image of that dimension.
std::optional<Kernel> asImageKernel(scf::ParallelOp loop, int64_t images) {
  if (loop.getNumResults() || constIndex(loop.getLowerBound()[0]) != 0 ||
      constIndex(loop.getStep()[0]) != 1 || constIndex(loop.getUpperBound()[0]) != images)
    return std::nullopt;
  bool calls = false;
  loop.getBody()->walk([&](CallOpInterface) { calls = true; });
  if (calls)
    return std::nullopt;
  Value iv = loop.getInductionVars()[0];
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(loop.getRegion(), captured);
  Kernel k{loop.getOperation()};
  for (Value v : captured) {
    if (!isa<BaseMemRefType>(v.getType()))
      continue;
    int64_t bytes = isa<MemRefType>(v.getType()) ? bytesOf(cast<MemRefType>(v.getType())) : -1;
    switch (classify(v, images)) {
    case Source::Constant:
      k.weightBytes += std::max<int64_t>(bytes, 0);
      break;
    case Source::Images:
      for (OpOperand &use : v.getUses())
        if (loop->isProperAncestor(use.getOwner()) && !touchesOneImage(use, iv))
          return std::nullopt;
      k.imageBytes += bytes > 0 ? bytes / images : 0;
      break;
    case Source::Other:
      return std::nullopt;
    }
  }
  return k;
}

/// Whether `map` reads dimension 0 of its operand at loop 0 and loop 0
/// nowhere else (true), or does not use loop 0 (false).
std::optional<bool> atImage(AffineMap map) {
  if (!map.isFunctionOfDim(0))
    return false;
  if (map.getNumResults() == 0 || map.getResult(0) != getAffineDimExpr(0, map.getContext()))
    return std::nullopt;
  for (AffineExpr e : map.getResults().drop_front())
    if (e.isFunctionOfDim(0))
      return std::nullopt;
  return true;
}

/// A top-level elementwise op (kernel formation left an SE block's scaling
/// untiled) as a kernel over the `images` of its first loop: each operand
/// read or written at the image of that loop, or a global not depending
/// on it.
std::optional<Kernel> asImageGeneric(linalg::GenericOp op, int64_t images) {
  if (!op.hasPureBufferSemantics() || op.getNumLoops() != op.getNumParallelLoops())
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ranges.empty() || ranges[0] != images)
    return std::nullopt;
  // A body reading its loop indices (which restart at 0 on the slice) or
  // memory besides its operands (a gather) is not the same op per image.
  bool elementwise = true;
  op.getBody()->walk([&](Operation *inner) {
    if (isa<linalg::IndexOp>(inner) || (!isPure(inner) && !isa<linalg::YieldOp>(inner)))
      elementwise = false;
  });
  if (!elementwise)
    return std::nullopt;
  Kernel k{op.getOperation()};
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    std::optional<bool> perImage = atImage(op.getMatchingIndexingMap(&operand));
    if (!type || !type.hasStaticShape() || !perImage)
      return std::nullopt;
    Source source = classify(operand.get(), images);
    int64_t bytes = std::max<int64_t>(bytesOf(type), 0);
    if (*perImage && source == Source::Images)
      k.imageBytes += bytes / images;
    else if (!*perImage && source == Source::Constant)
      k.weightBytes += bytes;
    else
      return std::nullopt;
  }
  return k;
}

/// The kernel `op` is over `images`, or none.
std::optional<Kernel> asKernel(Operation *op, int64_t images) {
  std::optional<Kernel> k;
  if (auto loop = dyn_cast<scf::ParallelOp>(op))
    k = asImageKernel(loop, images);
  else if (auto generic = dyn_cast<linalg::GenericOp>(op))
    k = asImageGeneric(generic, images);
  // Each image reads the weights again: only where they stay in L2 or are
  // small beside what the image reads and writes.
  if (k && k->weightBytes > kCachedWeightBytes && k->weightBytes * 4 > k->imageBytes)
    return std::nullopt;
  return k;
}

/// The images a top-level op's first loop goes over, if it has such loops.
std::optional<int64_t> imagesOf(Operation *op) {
  if (auto loop = dyn_cast<scf::ParallelOp>(op))
    return constIndex(loop.getUpperBound()[0]);
  if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
    SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
    if (!ranges.empty() && !ShapedType::isDynamic(ranges[0]))
      return ranges[0];
  }
  return std::nullopt;
}

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

/// One task per image running `kernels` in order; `between` are the
/// top-level ops among them, moved before (or, deallocations, after).
scf::ParallelOp buildChain(ArrayRef<Kernel> kernels, ArrayRef<Operation *> between, int64_t images) {
  Operation *first = kernels.front().op, *last = kernels.back().op;
  Operation *after = last;
  for (Operation *op : between) {
    if (isa<memref::DeallocOp>(op)) {
      op->moveAfter(after);
      after = op;
    } else {
      op->moveBefore(first);
    }
  }
  OpBuilder b(first);
  SmallVector<Location> locs;
  for (Kernel k : kernels)
    locs.push_back(k.op->getLoc());
  Location loc = b.getFusedLoc(locs);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value count = arith::ConstantIndexOp::create(b, loc, images);
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

/// The uses of `root`, a buffer of @main, and of the reshapes of it made
/// outside `chain`: true when all are inside `chain` or the buffer's
/// deallocation. `views` gets the reshapes, sources first.
bool onlyInChain(memref::AllocOp root, scf::ParallelOp chain, SmallVector<Operation *> &views) {
  SmallVector<Value> work{root.getResult()};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (chain->isProperAncestor(user) || (isa<memref::DeallocOp>(user) && v == root))
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
/// (written back to memory in time).
void privatizeBuffers(scf::ParallelOp chain, int64_t images) {
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(chain.getRegion(), captured);
  llvm::SetVector<memref::AllocOp> roots;
  for (Value v : captured) {
    while (v.getDefiningOp<memref::CollapseShapeOp>() || v.getDefiningOp<memref::ExpandShapeOp>())
      v = v.getDefiningOp()->getOperand(0);
    if (auto alloc = v.getDefiningOp<memref::AllocOp>())
      if (alloc.getType().hasStaticShape() && alloc.getType().getLayout().isIdentity() &&
          alloc.getType().getDimSize(0) == images)
        roots.insert(alloc);
  }
  for (memref::AllocOp root : roots) {
    SmallVector<Operation *> views;
    if (!onlyInChain(root, chain, views))
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
      int64_t images;
    };
    SmallVector<Run> runs;
    SmallVector<Kernel> kernels;
    SmallVector<Operation *> between, pending;
    int64_t images = 0;
    auto finish = [&] {
      if (kernels.size() >= 2)
        runs.push_back({kernels, between, images});
      kernels.clear();
      between.clear();
      pending.clear();
    };
    for (Operation *op : ops) {
      std::optional<Kernel> k;
      std::optional<int64_t> n = imagesOf(op);
      if (n && *n >= minImages) {
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
    SmallVector<scf::ParallelOp> chains;
    for (Run &run : runs)
      chains.push_back(buildChain(run.kernels, run.between, run.images));
    for (auto [chain, run] : llvm::zip(chains, runs))
      privatizeBuffers(chain, run.images);
  }
};

} // namespace
} // namespace kiln

//===- ImageKernels.cpp - kernels that may run image by image -------------===//
//
// kiln-image-chains' questions of a top-level kernel (ImageKernels.h). A
// kernel may join a run when every buffer of @main it uses, besides the
// globals, is image-major (its dimension 0 the images, kept first through
// every view) and touched only at the image of its first loop: then the
// kernels' images are disjoint, and a thread may run them one image after
// the other.
//
//===----------------------------------------------------------------------===//

#include "ImageKernels.h"
#include "kiln/Lowering/Host/KernelCaptures.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

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

/// The buffer `view` is a view of, with `first` cleared unless its
/// dimension 0 is that buffer's (images stay first); null if not a view.
Value viewSource(Operation *view, bool &first) {
  if (auto c = dyn_cast<memref::CollapseShapeOp>(view)) {
    first &= c.getReassociationIndices()[0] == ReassociationIndices{0};
    return c.getSrc();
  }
  if (auto e = dyn_cast<memref::ExpandShapeOp>(view)) {
    first &= e.getReassociationIndices()[0] == ReassociationIndices{0};
    return e.getSrc();
  }
  if (auto cast = dyn_cast<memref::CastOp>(view))
    return cast.getSource();
  if (auto sub = dyn_cast<memref::SubViewOp>(view)) {
    first &= sub.getStaticOffsets()[0] == 0 && sub.getStaticStrides()[0] == 1 &&
             !sub.getDroppedDims().test(0) &&
             (ShapedType::isDynamic(sub.getStaticSizes()[0]) ||
              sub.getStaticSizes()[0] == sub.getSourceType().getDimSize(0));
    return sub.getSource();
  }
  return {};
}

Value batchOf(Value memref);

/// An index, followed through `memref.dim %m, 0` to the batch of %m: the
/// loops of a dynamic batch's kernels measure different views of it.
Value sizeKey(Value v) {
  if (auto dim = v.getDefiningOp<memref::DimOp>())
    if (constIndex(dim.getIndex()) == 0)
      if (Value b = batchOf(dim.getSource()))
        return b;
  return v;
}

/// What the dynamic dimension 0 of `memref` is the size of: @main's
/// argument, or what its allocation's size is; null when unknown.
Value batchOf(Value v) {
  while (true) {
    auto t = dyn_cast<MemRefType>(v.getType());
    if (!t || t.getRank() == 0 || !t.isDynamicDim(0))
      return {};
    Operation *def = v.getDefiningOp();
    if (!def)
      return v;
    if (auto alloc = dyn_cast<memref::AllocOp>(def))
      return sizeKey(alloc.getDynamicSizes()[0]);
    bool first = true;
    v = viewSource(def, first);
    if (!v || !first)
      return {};
  }
}

/// What a buffer a kernel uses is a view of: a global (the weights, a pad
/// row), a buffer or argument of @main whose dimension 0 is its `images`
/// and stays the view's dimension 0, or anything else.
Source classify(Value v, const Images &images) {
  if (!isa<MemRefType>(v.getType()))
    return Source::Other;
  bool imageMajor = true; // every view on the way keeps the images in dimension 0
  while (true) {
    imageMajor &= images.sized(cast<MemRefType>(v.getType()));
    Operation *def = v.getDefiningOp();
    if (def && isa<memref::GetGlobalOp>(def))
      return Source::Constant;
    if (!def || isa<memref::AllocOp>(def)) // @main's argument or a buffer of its own
      return imageMajor ? Source::Images : Source::Other;
    v = viewSource(def, imageMajor);
    if (!v)
      return Source::Other;
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

} // namespace

/// The bytes of one image of `t` (its dimensions after the first static).
int64_t imageBytesOf(MemRefType t) {
  if (t.getRank() == 0)
    return -1;
  SmallVector<int64_t> shape(t.getShape());
  shape[0] = 1;
  return bytesOf(MemRefType::get(shape, t.getElementType()));
}

namespace {

/// `loop` as a kernel over `images` in its first dimension, if every
/// buffer it uses besides globals is image-major and used only at the
/// image of that dimension.
std::optional<Kernel> asImageKernel(scf::ParallelOp loop, const Images &images) {
  if (loop.getNumResults() || constIndex(loop.getLowerBound()[0]) != 0 ||
      constIndex(loop.getStep()[0]) != 1)
    return std::nullopt;
  Value ub = loop.getUpperBound()[0];
  if (images.dynamic() ? sizeKey(ub) != images.size : constIndex(ub) != images.count)
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
    auto type = dyn_cast<MemRefType>(v.getType());
    switch (classify(v, images)) {
    case Source::Constant:
      k.weightBytes += std::max<int64_t>(bytesOf(type), 0);
      break;
    case Source::Images:
      for (OpOperand &use : v.getUses())
        if (loop->isProperAncestor(use.getOwner()) && !touchesOneImage(use, iv))
          return std::nullopt;
      k.imageBytes += std::max<int64_t>(imageBytesOf(type), 0);
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

} // namespace

/// The first operand of `op` read at the image of its first loop (its
/// dimension 0 that loop), or null.
Value imageOperand(linalg::GenericOp op) {
  for (OpOperand &operand : op->getOpOperands())
    if (atImage(op.getMatchingIndexingMap(&operand)) == std::optional<bool>(true))
      return operand.get();
  return {};
}

/// The images a top-level op's first loop goes over, if it has such loops.
std::optional<Images> imagesOf(Operation *op) {
  if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
    Value ub = loop.getUpperBound()[0];
    if (std::optional<int64_t> n = constIndex(ub))
      return Images{*n, {}};
    return Images{ShapedType::kDynamic, sizeKey(ub)};
  }
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic)
    return std::nullopt;
  SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
  if (ranges.empty())
    return std::nullopt;
  if (!ShapedType::isDynamic(ranges[0]))
    return Images{ranges[0], {}};
  // A dynamic batch: what its operand read at the image measures.
  if (Value images = imageOperand(generic))
    if (Value size = batchOf(images))
      return Images{ShapedType::kDynamic, size};
  return std::nullopt;
}

namespace {

/// A top-level elementwise op (kernel formation left an SE block's scaling
/// untiled) as a kernel over the `images` of its first loop: each operand
/// read or written at the image of that loop, or a global not depending
/// on it.
std::optional<Kernel> asImageGeneric(linalg::GenericOp op, const Images &images) {
  if (!op.hasPureBufferSemantics() || op.getNumLoops() != op.getNumParallelLoops() ||
      imagesOf(op) != images)
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
    if (!type || !perImage || imageBytesOf(type) < 0)
      return std::nullopt;
    Source source = classify(operand.get(), images);
    if (*perImage && source == Source::Images)
      k.imageBytes += imageBytesOf(type);
    else if (!*perImage && source == Source::Constant && type.hasStaticShape())
      k.weightBytes += bytesOf(type);
    else
      return std::nullopt;
  }
  return k;
}

} // namespace

/// The kernel `op` is over `images`, or none.
std::optional<Kernel> asKernel(Operation *op, const Images &images) {
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

} // namespace kiln

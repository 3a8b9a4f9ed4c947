//===- ImplicitPadding.cpp - kiln-implicit-padding -------------------------===//
//
//   linalg.fill ins(%zero) outs(%p : memref<C x H+2 x W+2>)
//   linalg.copy ins(%x) outs(subview %p[0, 1, 1] [C, H, W])
//   scf.parallel (...) {
//     linalg.depthwise_conv_2d_nchw_chw ins(subview (expand_shape %p)[0, c, r, 0] ...)
//   }
// =>
//   scf.parallel (...) { the conv's register tile reading %x, zeros outside }
//
// A zero pad before a convolution wrote the whole padded image once more:
// MobileNetV3's pads took 0.6 of 4.1 ms at batch 1, memory-bound (one of
// 64 channels at 112x112, 3.3 MB, 136 us). When every reader of the padded
// buffer is a register-tiled NCHW convolution (kiln-vectorize-conv's), the
// tiles read the image itself: rows outside it are skipped by a masked load
// (only row blocks at the top and bottom check), columns left of it are
// shuffled in as zeros and right of it masked (only the chunks at the row's
// ends, emitted one by one). The fill, the copy and the buffer are gone.
//
// A packed convolution's tile (channels in the lanes: RGB stems) reads
// the image too: pixel tiles whose windows lie inside it as they are,
// those at its border element by element, through the zero row and a
// column test (VectorizePackedConv.cpp).
//
// A max pool's -inf pad goes the same way (a sum pool's zero pad too): a
// pad is the identity of its readers' reduction. Rows outside the image
// read a constant row of -inf, columns outside it are -inf shifted in or
// a masked load's pass-through (ResNet-50's stem pool at batch 8: pad
// 1.84 + pool 2.73 ms -> 2.23 ms).
//
// Runs before kiln-plan-memory: the image's buffer now lives until the
// convolutions, and the padded one takes no space.
//
//===----------------------------------------------------------------------===//

#include "BufferizedPad.h"
#include "ConvEpilogue.h"
#include "kiln/Lowering/ConvTiles.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <limits>

namespace kiln {
#define GEN_PASS_DEF_KILNIMPLICITPADDING
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {

namespace {

/// A convolution or a pool reading the padded buffer: through an optional
/// reshape adding unit dimensions, then the tile's window.
struct Reader {
  linalg::LinalgOp op;
  memref::ExpandShapeOp expand; // or null: the buffer is [N, C, H, W]
  memref::SubViewOp window;     // or null: the whole buffer
};

bool isNchwConv(linalg::LinalgOp op) {
  return isa<linalg::Conv2DNchwFchwOp, linalg::DepthwiseConv2DNchwChwOp>(op.getOperation()) &&
         op.hasPureBufferSemantics() && isRegisterTiledConv(op) && !matchPackedConv(op);
}

/// The convolution or pool `user` of `v` (a view of the padded buffer)
/// is, or reads through a window, as its image.
std::optional<Reader> readerOf(Operation *user, Value v, memref::ExpandShapeOp expand,
                               unsigned vectorBits) {
  Reader r{{}, expand, {}};
  if (auto window = dyn_cast<memref::SubViewOp>(user)) {
    if (!window.getResult().hasOneUse() ||
        window.getType().getRank() != window.getSourceType().getRank() ||
        !llvm::all_of(window.getStaticStrides(), [](int64_t s) { return s == 1; }))
      return std::nullopt;
    r.window = window;
    user = *window.getResult().getUsers().begin();
    v = window.getResult();
  }
  auto op = dyn_cast<linalg::LinalgOp>(user);
  if (!op ||
      !(isNchwConv(op) || isVectorizedPool(op) || takesPackedConv(op, vectorBits) ||
        (isChannelsLastDepthwise(op) && op.hasPureBufferSemantics())) ||
      op.getDpsInputs()[0] != v ||
      llvm::count(op->getOperands(), v) != 1)
    return std::nullopt;
  r.op = op;
  return r;
}

/// Per dimension of the convolution's image, the padded buffer's dimension
/// it is (or -1 for a unit dimension the reshape added).
std::optional<SmallVector<int64_t>> bufferDims(Reader r, MemRefType padded) {
  SmallVector<int64_t> dims;
  if (!r.expand) {
    for (int64_t d = 0; d < padded.getRank(); ++d)
      dims.push_back(d);
    return dims;
  }
  ArrayRef<int64_t> shape = r.expand.getResultType().getShape();
  for (auto [p, group] : llvm::enumerate(r.expand.getReassociationIndices())) {
    // One dimension of the group carries the buffer's; the others are 1.
    int64_t carrier = -1;
    for (int64_t d : group)
      if (shape[d] != 1)
        carrier = carrier < 0 ? d : -2;
    if (carrier == -2)
      return std::nullopt;
    if (carrier == -1)
      carrier = group.back();
    for (int64_t d : group)
      dims.push_back(d == carrier ? (int64_t)p : -1);
  }
  return dims;
}

/// The pad's value when reading it adds nothing to any reader: zeros to
/// a convolution or a sum, -inf to a maximum.
std::optional<float> identityOfAll(ArrayRef<Reader> readers, const APFloat &pad) {
  Reader first = readers.front();
  bool maxima = isa<linalg::PoolingNchwMaxOp>(first.op.getOperation());
  for (Reader r : readers)
    if (isa<linalg::PoolingNchwMaxOp>(r.op.getOperation()) != maxima)
      return std::nullopt;
  if (maxima)
    return pad.isInfinity() && pad.isNegative()
               ? std::optional<float>(-std::numeric_limits<float>::infinity())
               : std::nullopt;
  return pad.isZero() && !pad.isNegative() ? std::optional<float>(0.0f) : std::nullopt;
}

struct KilnImplicitPaddingPass final : impl::KilnImplicitPaddingBase<KilnImplicitPaddingPass> {
  using Base::Base;
  ModuleOp module;

  /// A constant row of `width` copies of `value`, 0 or -inf (in the
  /// weights blob after planning).
  Value padRow(OpBuilder &b, Location loc, int64_t width, float value) {
    auto type = MemRefType::get({width}, b.getF32Type());
    std::string name =
        (value == 0 ? "__kiln_zero_row_" : "__kiln_ninf_row_") + std::to_string(width);
    if (!module.lookupSymbol(name)) {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(module.getBody());
      auto tensor = RankedTensorType::get({width}, b.getF32Type());
      memref::GlobalOp::create(b, loc, name, b.getStringAttr("private"), type,
                               DenseElementsAttr::get(tensor, b.getF32FloatAttr(value)),
                               /*constant=*/true, b.getI64IntegerAttr(64));
    }
    return memref::GetGlobalOp::create(b, loc, type, name);
  }

  void runOnOperation() override {
    SmallVector<linalg::CopyOp> copies;
    getOperation().walk([&](linalg::CopyOp op) { copies.push_back(op); });
    module = getOperation();
    for (linalg::CopyOp copy : copies)
      if (std::optional<BufferizedPad> pad = matchBufferizedPad(copy))
        rewrite(*pad);
  }

  /// Emits reader `r` of `pad`'s buffer reading the image itself (viewed
  /// as `image`, padded by `lowRows` and `lowColumns` before).
  void emitReader(IRRewriter &rewriter, const BufferizedPad &pad, Reader r, int64_t lowRows,
                  int64_t lowColumns, MemRefType image, Value row, float value) {
    rewriter.setInsertionPoint(pad.copy);
    Value source = pad.source;
    if (r.expand)
      source = memref::ExpandShapeOp::create(rewriter, r.expand.getLoc(), image, pad.source,
                                             r.expand.getReassociationIndices());
    // (At the window: a constant right before the convolution would part
    // it from its fill, and the epilogue would not be matched.)
    rewriter.setInsertionPoint(r.window ? r.window.getOperation() : r.op.getOperation());
    ImplicitPad implicit{source, {}, lowRows, lowColumns, row, value};
    bool last = isChannelsLastDepthwise(r.op);
    // The window's image, channel and row (channels last: image, row,
    // channel).
    SmallVector<int64_t, 3> dims =
        last ? SmallVector<int64_t, 3>{0, 1, 3} : SmallVector<int64_t, 3>{0, 1, 2};
    for (int64_t d : dims) {
      OpFoldResult offset = r.window ? r.window.getMixedOffsets()[d] : rewriter.getIndexAttr(0);
      implicit.offsets.push_back(getValueOrCreateConstantIndexOp(rewriter, r.op.getLoc(), offset));
    }
    if (isVectorizedPool(r.op))
      emitPaddedPool(r.op, vectorBits, implicit);
    else if (matchPackedConv(r.op))
      emitPackedConvRegisterTile(rewriter, r.op, vectorBits, &implicit);
    else if (last)
      emitChannelsLastDepthwise(rewriter, r.op, vectorBits, &implicit);
    else
      emitConvRegisterTile(rewriter, r.op, vectorBits, &implicit);
    if (r.window && r.window->use_empty())
      rewriter.eraseOp(r.window);
  }

  void rewrite(BufferizedPad pad) {
    auto paddedType = cast<MemRefType>(pad.padded.getType());
    auto sourceType = cast<MemRefType>(pad.source.getType());
    auto alloc = pad.padded.getDefiningOp<memref::AllocOp>();
    APFloat padValue(0.0f);
    if (!alloc || !matchPattern(pad.value, m_ConstantFloat(&padValue)))
      return;
    // Static but for a batch known at run time, unpadded: the window's size
    // is the buffer's.
    Operation *interior = pad.copy.getOutputs()[0].getDefiningOp();
    bool dynamicBatch = paddedType.isDynamicDim(0);
    if (dynamicBatch && (pad.low[0] != 0 || alloc.getDynamicSizes().size() != 1 ||
                         cast<memref::SubViewOp>(interior).getMixedSizes()[0] !=
                             OpFoldResult(alloc.getDynamicSizes()[0])))
      return;
    // Every user of the buffer: the pad's own ops, deallocations, and
    // convolutions or pools reading it as their image.
    SmallVector<Reader> readers;
    SmallVector<Operation *> deallocs;
    for (Operation *user : pad.padded.getUsers()) {
      if (user == pad.fill || user == interior)
        continue;
      if (isa<memref::DeallocOp>(user)) {
        deallocs.push_back(user);
        continue;
      }
      if (auto expand = dyn_cast<memref::ExpandShapeOp>(user)) {
        for (Operation *next : expand->getUsers()) {
          std::optional<Reader> reader = readerOf(next, expand.getResult(), expand, vectorBits);
          if (!reader)
            return;
          readers.push_back(*reader);
        }
        continue;
      }
      std::optional<Reader> reader = readerOf(user, pad.padded, nullptr, vectorBits);
      if (!reader)
        return;
      readers.push_back(*reader);
    }
    if (readers.empty() || !interior->hasOneUse())
      return;
    std::optional<float> value = identityOfAll(readers, padValue);
    if (!value)
      return;

    // Where the convolutions' images read: the buffer's dimensions, the
    // image's extents and pads in the convolution's dimensions.
    struct Plan {
      SmallVector<int64_t> dims;
      int64_t lowRows, lowColumns;
      MemRefType image; // the image reshaped as the convolution reads it
    };
    SmallVector<Plan> plans;
    ArrayRef<int64_t> low = pad.low;
    for (Reader r : readers) {
      std::optional<SmallVector<int64_t>> dims = bufferDims(r, paddedType);
      if (!dims || dims->size() != 4)
        return;
      // Images and channels unpadded; the window from the row's start.
      auto padOf = [&](int64_t d) { return (*dims)[d] < 0 ? 0 : low[(*dims)[d]]; };
      auto extraOf = [&](int64_t d) {
        int64_t p = (*dims)[d];
        return p < 0 || (p == 0 && dynamicBatch)
                   ? 0
                   : paddedType.getDimSize(p) - sourceType.getDimSize(p);
      };
      // Channels last (n, h, w, c), else (n, c, h, w).
      bool last = isChannelsLastDepthwise(r.op);
      int64_t rowDim = last ? 1 : 2, columnDim = last ? 2 : 3, channelDim = last ? 3 : 1;
      if (extraOf(0) || extraOf(channelDim))
        return;
      if (r.window && r.window.getStaticOffsets()[columnDim] != 0)
        return;
      MemRefType image = sourceType;
      if (r.expand && dynamicBatch)
        return;
      if (r.expand) { // the same reshape of the image
        SmallVector<int64_t> shape(r.expand.getResultType().getShape());
        for (auto [d, p] : llvm::enumerate(*dims))
          if (p >= 0)
            shape[d] = sourceType.getDimSize(p);
        FailureOr<MemRefType> type = memref::ExpandShapeOp::computeExpandedType(
            sourceType, shape, r.expand.getReassociationIndices());
        if (failed(type))
          return;
        image = *type;
      }
      // Its rows contiguous and wider than one element (a row view of one
      // element has no one stride to drop the unit dimensions by).
      if (!image.isLastDimUnitStride() || image.getShape().back() < 2)
        return;
      plans.push_back({*dims, padOf(rowDim), padOf(columnDim), image});
    }

    // Nothing may write the image between the copy and the convolutions.
    Block *block = pad.copy->getBlock();
    Operation *last = pad.copy;
    for (Reader r : readers) {
      Operation *anchor = block->findAncestorOpInBlock(*r.op);
      if (!anchor || anchor->isBeforeInBlock(pad.copy))
        return;
      if (last->isBeforeInBlock(anchor))
        last = anchor;
    }
    SmallVector<Operation *> frees; // the image's, before the last reader
    if (!writtenOnlyBy(viewRoot(pad.source), pad.copy, last, frees))
      return;

    IRRewriter rewriter(&getContext());
    rewriter.setInsertionPoint(pad.copy);
    // (Channels-last tiles skip the rows outside the image instead.)
    Value row;
    if (!llvm::all_of(readers, [](Reader r) { return isChannelsLastDepthwise(r.op); }))
      row = padRow(rewriter, pad.copy.getLoc(), sourceType.getShape().back(), *value);
    for (auto [r, plan] : llvm::zip(readers, plans))
      emitReader(rewriter, pad, r, plan.lowRows, plan.lowColumns, plan.image, row, *value);
    llvm::SmallPtrSet<Operation *, 2> reshapes;
    for (Reader r : readers)
      if (r.expand && reshapes.insert(r.expand).second && r.expand->use_empty())
        rewriter.eraseOp(r.expand);
    // The image is read until the last convolution's tile now (the
    // convolution itself, `last` when at the top level, is gone).
    if (!frees.empty()) {
      Operation *lastRead = lastUse(viewRoot(pad.source), block, frees);
      for (Operation *free : frees)
        free->moveAfter(lastRead);
    }
    rewriter.eraseOp(pad.copy);
    rewriter.eraseOp(interior);
    rewriter.eraseOp(pad.fill);
    for (Operation *d : deallocs)
      rewriter.eraseOp(d);
    rewriter.eraseOp(alloc);
  }

  /// The last op of `block` that uses `image` through any view (a select
  /// of row views included), but for `frees`.
  static Operation *lastUse(Value image, Block *block, ArrayRef<Operation *> frees) {
    Operation *last = nullptr;
    SmallVector<Value> work{image};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      for (Operation *user : v.getUsers()) {
        if (isa<memref::SubViewOp, memref::ExpandShapeOp, memref::CollapseShapeOp, memref::CastOp,
                arith::SelectOp>(user))
          work.push_back(user->getResult(0));
        Operation *anchor = block->findAncestorOpInBlock(*user);
        if (anchor && !llvm::is_contained(frees, user) && (!last || last->isBeforeInBlock(anchor)))
          last = anchor;
      }
    }
    return last;
  }

  /// Whether nothing but `copy` writes `image` (a buffer, through any view)
  /// after `copy` up to `last`, in the block; `frees` gets its
  /// deallocations in that range, which must be the block's own ops to be
  /// moved after `last` (one inside a branch refuses).
  static bool writtenOnlyBy(Value image, Operation *copy, Operation *last,
                            SmallVectorImpl<Operation *> &frees) {
    SmallVector<Value> work{image};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      for (Operation *user : v.getUsers()) {
        if (isa<memref::SubViewOp, memref::ExpandShapeOp, memref::CollapseShapeOp, memref::CastOp>(
                user)) {
          work.push_back(user->getResult(0));
          continue;
        }
        if (user == copy ||
            !mightHaveEffect<MemoryEffects::Write, MemoryEffects::Free>(user, v))
          continue; // (another pad of the image reads it)
        Operation *anchor = copy->getBlock()->findAncestorOpInBlock(*user);
        if (!anchor)
          return false;
        if (!copy->isBeforeInBlock(anchor) || last->isBeforeInBlock(anchor))
          continue;
        if (!isa<memref::DeallocOp>(user) || anchor != user)
          return false;
        frees.push_back(user);
      }
    }
    return true;
  }
};

} // namespace
} // namespace kiln

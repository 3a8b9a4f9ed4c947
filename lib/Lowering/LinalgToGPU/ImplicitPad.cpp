//===- ImplicitPad.cpp - convolutions that read their image unpadded -----===//
//
// Bufferization leaves a convolution's zero padding as two ops before it:
//   linalg.map/fill outs(%P) { 0 }                 (the padded buffer)
//   linalg.copy ins(%image) outs(subview %P[.., top, left])
//   conv ins(reshape %P, %W)
// The tensor-core kernel can read %image itself, zero-filling what falls
// outside it; this finds when that is safe.
//
//===----------------------------------------------------------------------===//

#include "KernelFactory.h"
#include "kiln/Lowering/Host/KernelCaptures.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace kiln {
namespace {

/// The buffer `v` views through reshapes.
Value reshapeRoot(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(def))
      break;
    v = def->getOperand(0);
  }
  return v;
}

/// The uses of `root` through reshapes and subviews: what reads or writes it.
void aliasUses(Value root, SmallVectorImpl<OpOperand *> &uses) {
  for (OpOperand &u : root.getUses()) {
    if (isa<memref::ExpandShapeOp, memref::CollapseShapeOp, memref::SubViewOp>(u.getOwner())) {
      aliasUses(u.getOwner()->getResult(0), uses);
      continue;
    }
    uses.push_back(&u);
  }
}

/// The constant a linalg.fill or linalg.map writes to every element of its
/// output, if it does.
std::optional<double> constantFill(Operation *op) {
  Value v;
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    v = fill.getInputs()[0];
  if (auto map = dyn_cast<linalg::MapOp>(op)) {
    auto yield = cast<linalg::YieldOp>(map.getBlock()->getTerminator());
    if (map.getInputs().empty() && yield.getNumOperands() == 1)
      v = yield.getOperand(0);
  }
  FloatAttr f;
  if (!v || !matchPattern(v, m_Constant(&f)))
    return std::nullopt;
  return f.getValueAsDouble();
}

} // namespace

std::optional<ImplicitPad> matchImplicitPad(ArrayRef<Operation *> ops, size_t at) {
  // The kernel that reads the image must be sure to take the convolution
  // (the pad's fill and copy never run): a tensor-core one, or (grouped
  // too) the direct one.
  auto conv = dyn_cast<linalg::LinalgOp>(ops[at]);
  bool tensorCores = conv && isa<linalg::Conv2DNchwFchwOp>(ops[at]) && isTensorCoreMatmul(conv);
  if (!conv || !(tensorCores || isDirectConv(conv)))
    return std::nullopt;
  Value x = conv.getDpsInputs()[0];
  Value padded = reshapeRoot(x);
  // [n, C, Hp, Wp], or grouped [n, g, C/g, Hp, Wp]: as [n, C, Hp, Wp].
  ArrayRef<int64_t> xFull = cast<MemRefType>(x.getType()).getShape();
  if (xFull.size() < 4)
    return std::nullopt;
  int64_t channels = 1;
  for (int64_t d : xFull.drop_front().drop_back(2))
    channels *= d;
  SmallVector<int64_t> xShape{xFull[0], channels, xFull[xFull.size() - 2], xFull.back()};
  SmallVector<OpOperand *> uses;
  aliasUses(padded, uses);
  ImplicitPad pad;
  for (OpOperand *u : uses) {
    Operation *o = u->getOwner();
    if (o == conv.getOperation())
      continue;
    auto lop = dyn_cast<linalg::LinalgOp>(o);
    if (!pad.fill && lop && constantFill(o) && lop.isDpsInit(u) &&
        reshapeRoot(u->get()) == padded) {
      pad.fill = o; // the whole buffer (not through a subview)
      pad.value = *constantFill(o);
      continue;
    }
    auto copy = dyn_cast<linalg::CopyOp>(o);
    auto sub = copy ? copy.getOutputs()[0].getDefiningOp<memref::SubViewOp>() : nullptr;
    if (pad.copy || !copy || u->get() != copy.getOutputs()[0] || !sub ||
        reshapeRoot(sub.getSource()) != padded)
      return std::nullopt; // another reader or writer
    ArrayRef<int64_t> full = sub.getSourceType().getShape();
    unsigned r = full.size();
    ArrayRef<int64_t> offsets = sub.getStaticOffsets(), sizes = sub.getStaticSizes(),
                      strides = sub.getStaticStrides();
    if (r < 2 || full[r - 2] != xShape[2] || full[r - 1] != xShape[3] ||
        llvm::any_of(strides, [](int64_t v) { return v != 1; }) ||
        llvm::any_of(offsets, ShapedType::isDynamic) || llvm::any_of(sizes, ShapedType::isDynamic))
      return std::nullopt;
    for (unsigned d = 0; d + 2 < r; ++d)
      if (offsets[d] != 0 || sizes[d] != full[d])
        return std::nullopt;
    pad.copy = o;
    pad.image = copy.getInputs()[0];
    pad.top = offsets[r - 2];
    pad.left = offsets[r - 1];
    pad.height = sizes[r - 2];
    pad.width = sizes[r - 1];
  }
  // The tensor cores' copies zero-fill; the direct kernel takes any value.
  if (!pad.fill || !pad.copy || (tensorCores && pad.value != 0))
    return std::nullopt;
  auto position = [&](Operation *o) -> size_t {
    return std::find(ops.begin(), ops.end(), o) - ops.begin();
  };
  size_t fillAt = position(pad.fill), copyAt = position(pad.copy);
  if (!(fillAt < copyAt && copyAt < at))
    return std::nullopt;
  // The image as [n, C, H, W] (or [C, H, W] for one image), identity layout.
  auto imageType = dyn_cast<MemRefType>(pad.image.getType());
  if (!imageType || !imageType.getLayout().isIdentity() || !imageType.hasStaticShape() ||
      imageType.getElementType() != cast<MemRefType>(x.getType()).getElementType())
    return std::nullopt;
  SmallVector<int64_t> nchw{xShape[0], xShape[1], pad.height, pad.width};
  if (imageType.getShape() != ArrayRef<int64_t>(nchw) &&
      !(xShape[0] == 1 && imageType.getShape() == ArrayRef<int64_t>(nchw).drop_front()))
    return std::nullopt;
  // The kernel reads the image when the copy did: nothing in between, the
  // convolution's own output included, may write its bytes (the memory
  // plan may have given them away after the copy).
  auto image = bytesOf(pad.image);
  if (!image)
    return std::nullopt;
  for (size_t j = copyAt + 1; j <= at; ++j) {
    auto lop = dyn_cast<linalg::LinalgOp>(ops[j]);
    if (!lop) {
      if (!isMemoryEffectFree(ops[j]))
        return std::nullopt;
      continue;
    }
    for (OpOperand &init : lop.getDpsInitsMutable()) {
      auto written = bytesOf(init.get());
      if (!written || written->overlaps(*image))
        return std::nullopt;
    }
  }
  SetVector<Value> args;
  SetVector<Operation *> clones;
  if (!collectCaptures({conv.getOperation(), pad.copy}, args, clones))
    return std::nullopt;
  return pad;
}

} // namespace kiln

//===- EpilogueChain.cpp - elementwise ops that join a matmul's kernel ----===//
//
// After a tensor-core matmul or convolution, the elementwise ops that read
// the tile's values where they write (bias, activation, residual, GELU's
// steps) run in the same kernel, element by element of each block's tile,
// when no other block can see the difference.
//
//===----------------------------------------------------------------------===//

#include "KernelFactory.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace kiln {

EpilogueChain::EpilogueChain(linalg::LinalgOp matmul) {
  if (matmul->getNumOperands() != 3 || matmul.getNumDpsInits() != 1)
    return; // not a matmul: nothing joins
  Value c = matmul.getDpsInitOperand(0)->get();
  shape.assign(cast<MemRefType>(c.getType()).getShape().begin(),
               cast<MemRefType>(c.getType()).getShape().end());
  auto cBytes = bytesOf(c), aBytes = bytesOf(matmul->getOperand(0)),
       bBytes = bytesOf(matmul->getOperand(1));
  valid = cBytes && aBytes && bBytes;
  if (!valid)
    return;
  tile.push_back(*cBytes);
  external.push_back(*aBytes); // other blocks still read A and B
  external.push_back(*bBytes);
}

/// C's dimensions that an epilogue op's loops run over: C's own permuted,
/// for a transpose of the tile (an input over C's shape read through a
/// permutation); all of them in order; or, for an op over a view with C's
/// unit dimensions folded away (unit-extent folding leaves a convolution's
/// bias/BN/ReLU on [F, OH, OW] of a batch-1 [1, F, OH, OW]), the others;
/// nullopt when none fits. EpilogueChain::add checks that this is how the
/// op reads the tile.
std::optional<SmallVector<unsigned>> epilogueDims(linalg::GenericOp e,
                                                  ArrayRef<int64_t> cShape) {
  SmallVector<int64_t> ranges = e.getStaticLoopRanges();
  for (OpOperand *in : e.getDpsInputOperands()) {
    auto type = dyn_cast<MemRefType>(in->get().getType());
    AffineMap m = e.getMatchingIndexingMap(in);
    if (!type || type.getShape() != cShape || !m.isPermutation() || m.isIdentity() ||
        ranges.size() != cShape.size())
      continue;
    SmallVector<unsigned> dims(cShape.size());
    for (unsigned j = 0; j < m.getNumResults(); ++j)
      dims[m.getDimPosition(j)] = j;
    return dims;
  }
  SmallVector<unsigned> dims;
  if (ArrayRef<int64_t>(ranges) == cShape) {
    for (unsigned d = 0; d < cShape.size(); ++d)
      dims.push_back(d);
    return dims;
  }
  SmallVector<int64_t> squeezed;
  for (unsigned d = 0; d < cShape.size(); ++d)
    if (cShape[d] != 1) {
      dims.push_back(d);
      squeezed.push_back(cShape[d]);
    }
  if (squeezed != ranges)
    return std::nullopt;
  return dims;
}

bool EpilogueChain::add(linalg::GenericOp e) {
  if (!valid || closed || !e.hasPureBufferSemantics() || e.getNumResults() ||
      e.getNumParallelLoops() != e.getNumLoops() || !epilogueDims(e, shape))
    return false;
  SmallVector<int64_t> ranges = e.getStaticLoopRanges();
  for (Operation &inner : e.getBlock()->without_terminator())
    if (inner.getNumRegions() || !(isPure(&inner) || isa<linalg::IndexOp>(inner)))
      return false;
  // Element by element of each block's tile: what it reads of the tile's
  // values (C, earlier outputs of the chain) at the element it writes, and
  // nothing it writes may be what other blocks still read.
  bool readsTile = false;
  // A transpose of the tile: the op's loops are C's dimensions permuted.
  std::optional<SmallVector<unsigned>> permuted;
  SmallVector<Bytes> ins, outs, sameElement;
  auto inTile = [&](const Bytes &x) { return llvm::is_contained(tile, x); };
  auto overlapsAny = [](const Bytes &x, ArrayRef<Bytes> set) {
    return llvm::any_of(set, [&](const Bytes &y) { return x.overlaps(y); });
  };
  for (OpOperand &operand : e->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type)
      continue;
    AffineMap m = e.getMatchingIndexingMap(&operand);
    auto bytes = bytesOf(operand.get());
    if (!bytes || !type.hasStaticShape() || !type.getLayout().isIdentity() ||
        !type.getElementType().isIntOrFloat() || !m.isProjectedPermutation())
      return false;
    if (e.isDpsInit(&operand)) {
      if (!m.isIdentity())
        return false;
      outs.push_back(*bytes);
      continue;
    }
    // The tile's values at the element written: C or an earlier output, as
    // itself or a view of the same bytes in the op's own (folded) shape.
    if (inTile(*bytes) && m.isIdentity() && type.getShape() == ArrayRef<int64_t>(ranges)) {
      readsTile = true;
      continue;
    }
    if (inTile(*bytes) && m.isPermutation() && type.getShape() == ArrayRef<int64_t>(shape) &&
        !permuted) {
      permuted.emplace(shape.size());
      for (unsigned j = 0; j < m.getNumResults(); ++j)
        (*permuted)[m.getDimPosition(j)] = j;
      continue;
    }
    if (overlapsAny(*bytes, tile))
      return false;
    ins.push_back(*bytes);
    if (m.isIdentity() && type.getShape() == ArrayRef<int64_t>(ranges))
      sameElement.push_back(*bytes);
  }
  // An output may take the bytes of an input read at the element written
  // (a residual added in place): each thread reads its element first.
  auto otherInput = [&](const Bytes &o) {
    return llvm::any_of(ins, [&](const Bytes &in) {
      return in.overlaps(o) && !(in == o && llvm::is_contained(sameElement, in));
    });
  };
  for (const Bytes &o : outs)
    if (!inTile(o) && (overlapsAny(o, tile) || overlapsAny(o, external) || otherInput(o)))
      return false;
  // Either at the element written or transposed, not both; and read the
  // way the kernels' emitEpilogueAt will index it.
  std::optional<SmallVector<unsigned>> dims = epilogueDims(e, shape);
  if (readsTile == permuted.has_value() || !dims ||
      (permuted ? *dims != *permuted : !llvm::is_sorted(*dims)))
    return false;
  llvm::append_range(external, ins);
  if (permuted) { // its output is in another order than C: nothing reads it here
    closed = true;
    ops.push_back(e);
    return true;
  }
  for (const Bytes &o : outs)
    if (!inTile(o))
      tile.push_back(o);
  ops.push_back(e);
  return true;
}

} // namespace kiln

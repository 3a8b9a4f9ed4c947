//===- DropTransposeUnitDims.cpp - kiln-gpu-drop-transpose-unit-dims ------===//
//
// %t = memref.alloc() : memref<1x4x16x16xf32>
// linalg.transpose ins(%x : memref<1x16x4x16xf32, strided<...>>) outs(%t)
//     permutation = [0, 2, 1, 3]
// %c = memref.collapse_shape %t [[0, 1], [2], [3]] : ... into memref<4x16x16xf32>
//   =>
// %c = memref.collapse_shape %t [[0, 1], [2], [3]]
// %x1 = memref.collapse_shape %x [[0, 1], [2], [3]] : ... into memref<16x4x16xf32, ...>
// linalg.transpose ins(%x1) outs(%c) permutation = [1, 0, 2]
//
// At batch 1 the heads' split (Q, K^T, V from one projection) transposes
// with a unit batch, and attention reads the results through collapses
// that drop it. Written into the collapsed view, the transpose is the one
// its readers read, so the CUDA outliner can fold it into the attention
// row group (reading the projection through the permutation) as it does
// at larger batches, and the group's marks keep the projection live.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace kiln {
#define GEN_PASS_DEF_KILNGPUDROPTRANSPOSEUNITDIMS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Rewrites `transpose` when its result has a collapse user whose groups
/// each hold exactly one dimension longer than 1: the same bytes, only the
/// unit dimensions gone, so whoever else uses the buffer sees no change.
bool dropUnitDims(linalg::TransposeOp transpose) {
  Value x = transpose.getInput(), t = transpose.getInit();
  auto xType = dyn_cast<MemRefType>(x.getType());
  auto tType = dyn_cast<MemRefType>(t.getType());
  if (!xType || !tType || !xType.hasStaticShape() || !tType.hasStaticShape())
    return false;
  ArrayRef<int64_t> tShape = tType.getShape(), xShape = xType.getShape();
  // The collapse and t's dimension behind each of its dimensions.
  memref::CollapseShapeOp collapse;
  SmallVector<int64_t> kept;
  for (Operation *user : t.getUsers()) {
    auto c = dyn_cast<memref::CollapseShapeOp>(user);
    if (!c || c->getBlock() != transpose->getBlock() || c.getReassociationIndices().empty())
      continue;
    SmallVector<int64_t> dims;
    for (const ReassociationIndices &group : c.getReassociationIndices()) {
      SmallVector<int64_t> long_;
      for (int64_t d : group)
        if (tShape[d] != 1)
          long_.push_back(d);
      if (long_.size() != 1)
        break;
      dims.push_back(long_.front());
    }
    if (dims.size() == c.getReassociationIndices().size() &&
        (!collapse || c->isBeforeInBlock(collapse))) {
      collapse = c;
      kept = dims;
    }
  }
  if (!collapse)
    return false;
  // x's dimensions longer than 1, in order, each with the unit ones after
  // it (those before the first go with the first).
  SmallVector<ReassociationIndices> xGroups;
  SmallVector<int64_t> position(xShape.size(), -1);
  for (int64_t d = 0; d < (int64_t)xShape.size(); ++d) {
    if (xShape[d] != 1) {
      position[d] = xGroups.size();
      xGroups.push_back({});
    }
    if (!xGroups.empty())
      xGroups.back().push_back(d);
  }
  if (xGroups.size() != kept.size())
    return false;
  for (int64_t d = 0; d < (int64_t)xShape.size() && xShape[d] == 1; ++d)
    xGroups.front().insert(xGroups.front().begin() + d, d);
  if (!memref::CollapseShapeOp::isGuaranteedCollapsible(xType, xGroups))
    return false;
  // t's dimension i is x's perm[i]: the collapse's g is x1's position of
  // x's perm[kept[g]].
  ArrayRef<int64_t> perm = transpose.getPermutation();
  SmallVector<int64_t> newPerm;
  for (int64_t d : kept)
    newPerm.push_back(position[perm[d]]);
  OpBuilder b(transpose);
  if (transpose->isBeforeInBlock(collapse))
    collapse->moveBefore(transpose);
  Value x1 = memref::CollapseShapeOp::create(b, transpose.getLoc(), x, xGroups);
  linalg::TransposeOp::create(b, transpose.getLoc(), x1, collapse.getResult(), newPerm);
  transpose.erase();
  return true;
}

struct KilnGpuDropTransposeUnitDimsPass final
    : impl::KilnGpuDropTransposeUnitDimsBase<KilnGpuDropTransposeUnitDimsPass> {
  void runOnOperation() override {
    SmallVector<linalg::TransposeOp> transposes;
    getOperation().walk([&](linalg::TransposeOp op) { transposes.push_back(op); });
    for (linalg::TransposeOp op : transposes)
      (void)dropUnitDims(op);
  }
};

} // namespace
} // namespace kiln

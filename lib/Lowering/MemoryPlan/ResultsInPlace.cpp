//===- ResultsInPlace.cpp - kiln-results-in-place pass --------------------===//
//
// %a = memref.alloc() : memref<1x10xf32>
// %c = memref.collapse_shape %a [[0, 1]] : ... into memref<10xf32>
// ... computes into %c ...
// %e = memref.expand_shape %c [[0, 1]] ... into memref<1x10xf32>
// memref.copy %e, %out
//   =>
// ... computes into memref.collapse_shape %out ..., no copy
//
// and a dynamic buffer copied whole to a result of its own type likewise.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace kiln {
#define GEN_PASS_DEF_KILNRESULTSINPLACE
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// `out` as a view of `type` (static, identity layout, as many elements):
/// itself, or flattened and expanded again.
Value viewAs(OpBuilder &b, Location loc, Value out, MemRefType type) {
  auto outType = cast<MemRefType>(out.getType());
  if (outType == type)
    return out;
  Value flat = out;
  if (outType.getRank() != 1) {
    SmallVector<ReassociationIndices> all(1);
    for (int64_t d = 0; d < outType.getRank(); ++d)
      all[0].push_back(d);
    flat = memref::CollapseShapeOp::create(b, loc, out, all);
  }
  if (type.getRank() == 1)
    return flat;
  SmallVector<ReassociationIndices> all(1);
  for (int64_t d = 0; d < type.getRank(); ++d)
    all[0].push_back(d);
  return memref::ExpandShapeOp::create(b, loc, type, flat, all);
}

struct KilnResultsInPlacePass final : impl::KilnResultsInPlaceBase<KilnResultsInPlacePass> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn.isExternal())
      return;
    Block &body = fn.getBody().front();
    SmallVector<memref::CopyOp> copies(body.getOps<memref::CopyOp>());
    for (memref::CopyOp copy : copies) {
      auto out = dyn_cast<BlockArgument>(copy.getTarget());
      if (!out || out.getOwner() != &body || !out.hasOneUse())
        continue;
      // Back through reshapes to the allocation.
      Value v = copy.getSource();
      while (Operation *def = v.getDefiningOp()) {
        if (!isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(def))
          break;
        v = def->getOperand(0);
      }
      auto alloc = v.getDefiningOp<memref::AllocOp>();
      if (!alloc || alloc->getBlock() != &body)
        continue;
      auto type = cast<MemRefType>(alloc.getType());
      auto outType = cast<MemRefType>(out.getType());
      // A buffer of the result's own dynamic type is the result (the copy
      // says their sizes are equal): dynamic models' outputs. Static ones
      // come through reshapes here, or are written in place before.
      bool dynamicSame = v == copy.getSource() && type == outType && !type.hasStaticShape() &&
                         type.getLayout().isIdentity();
      if (v == copy.getSource() && !dynamicSame)
        continue;
      if (!dynamicSame &&
          (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
           !outType.hasStaticShape() || !outType.getLayout().isIdentity() ||
           type.getNumElements() != outType.getNumElements() ||
           type.getElementType() != outType.getElementType() ||
           type.getMemorySpace() != outType.getMemorySpace() ||
           (type != outType && (type.getRank() == 0 || outType.getRank() == 0))))
        continue; // (a 0-d memref neither collapses nor expands to 1-d)
      // Nothing may touch the buffer, or a view of it, after the copy (nor
      // dealloc it).
      bool last = true;
      SmallVector<Value> views{alloc.getResult()};
      while (!views.empty() && last) {
        Value view = views.pop_back_val();
        for (Operation *user : view.getUsers()) {
          Operation *top = body.findAncestorOpInBlock(*user);
          if (!top || (top != copy && !top->isBeforeInBlock(copy)))
            last = false;
          if (isa<ViewLikeOpInterface>(user) && user != copy)
            llvm::append_range(views, user->getResults());
        }
      }
      if (!last)
        continue;
      OpBuilder b(alloc);
      Value view = viewAs(b, alloc.getLoc(), out, type);
      alloc.getResult().replaceAllUsesWith(view);
      alloc.erase();
      copy.erase();
    }
  }
};

} // namespace
} // namespace kiln

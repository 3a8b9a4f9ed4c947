//===- KernelCaptures.cpp - what an outlined kernel takes from its caller -===//

#include "kiln/Lowering/Host/KernelCaptures.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include <functional>

using namespace mlir;

namespace kiln {

std::optional<int64_t> constIndex(Value v) {
  if (auto c = v.getDefiningOp<arith::ConstantIndexOp>())
    return c.value();
  return std::nullopt;
}

bool isRecomputable(Operation *op) {
  if (op->hasAttr(kArgumentAttr))
    return false;
  // Scalar arithmetic (index math of a view, the sizes computed from
  // values read before the run, divisions included: every top-level op
  // runs anyway) is as cheap to redo.
  if (isMemoryEffectFree(op) && op->getNumRegions() == 0 &&
      llvm::all_of(op->getResultTypes(), [](Type t) { return t.isIntOrIndexOrFloat(); }))
    return true;
  // A choice between two buffers on a condition the host computed (a
  // Dropout's training_mode given as data) is a view of one of them.
  if (isa<arith::SelectOp>(op) && isa<MemRefType>(op->getResult(0).getType()))
    return true;
  return op->hasTrait<OpTrait::ConstantLike>() ||
         isa<memref::SubViewOp, memref::ExpandShapeOp, memref::CollapseShapeOp,
             memref::ReinterpretCastOp, memref::CastOp, memref::GetGlobalOp,
             memref::TransposeOp>(op);
}

bool collectCaptures(ArrayRef<Operation *> ops, SetVector<Value> &args,
                     SetVector<Operation *> &clones, bool scalars) {
  auto inside = [&](Value v) {
    Operation *owner = v.getParentBlock()->getParentOp();
    for (Operation *op : ops)
      if (v.getDefiningOp() == op || op->isAncestor(owner))
        return true;
    return false;
  };
  SmallVector<Value> worklist;
  for (Operation *op : ops)
    op->walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        if (!inside(v))
          worklist.push_back(v);
    });
  SetVector<Operation *> seen;
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    Operation *def = v.getDefiningOp();
    if (def && isRecomputable(def)) {
      if (seen.insert(def))
        llvm::append_range(worklist, def->getOperands());
      continue;
    }
    // A scalar the host computed (a value read before the run) is a
    // parameter of its own; i1 has no parameter type the launcher writes.
    if (scalars && v.getType().isIntOrIndexOrFloat() && !v.getType().isInteger(1)) {
      args.insert(v);
      continue;
    }
    // Whole buffers otherwise (dynamic sizes too: kiln-split-dynamic-args
    // passes them as a pointer and sizes).
    auto type = dyn_cast<MemRefType>(v.getType());
    if (!type || !type.getLayout().isIdentity())
      return false;
    args.insert(v);
  }
  // Recompute in dominance order: sort by position in the parent block.
  SmallVector<Operation *> ordered(seen.begin(), seen.end());
  llvm::sort(ordered, [](Operation *a, Operation *b) {
    if (a->getBlock() == b->getBlock())
      return a->isBeforeInBlock(b);
    return a->getBlock()->getParentOp()->isAncestor(b); // outer blocks first
  });
  clones.insert(ordered.begin(), ordered.end());
  return true;
}

void materializeCaptures(OpBuilder &b, ArrayRef<Value> args, ValueRange params,
                         ArrayRef<Operation *> clones, IRMapping &map) {
  for (auto [v, param] : llvm::zip(args, params))
    map.map(v, param);
  for (Operation *c : clones)
    b.clone(*c, map);
}

void recordNodes(Operation *fn, Operation *body) {
  llvm::SetVector<StringRef> names;
  std::function<void(Location)> visit = [&](Location loc) {
    if (auto fused = dyn_cast<FusedLoc>(loc))
      for (Location l : fused.getLocations())
        visit(l);
    else if (auto name = dyn_cast<NameLoc>(loc)) {
      if (name.getName().strref().starts_with("node '"))
        names.insert(name.getName().strref());
      visit(name.getChildLoc());
    } else if (auto site = dyn_cast<CallSiteLoc>(loc))
      visit(site.getCallee());
  };
  // Views and constants do no work of their own, and CSE gives one that
  // several nodes made all of their locations: they would name nodes the
  // kernel does not compute.
  body->walk([&](Operation *op) {
    if (!isa<ViewLikeOpInterface>(op) && !op->hasTrait<OpTrait::ConstantLike>())
      visit(op->getLoc());
  });
  if (names.empty())
    return;
  Builder b(fn->getContext());
  fn->setAttr(KilnDialect::getOpsAttrName(), b.getStrArrayAttr(names.getArrayRef()));
}

} // namespace kiln

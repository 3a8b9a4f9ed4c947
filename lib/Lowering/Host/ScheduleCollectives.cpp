//===- ScheduleCollectives.cpp - kiln-schedule-collectives ----------------===//
//
//   %g = ... (the gradient, written by a kernel)
//   kiln.all_reduce_in_place "mean" %g        kiln.all_reduce_start "mean" %g
//   ... (the backward pass goes on)      =>   ...
//   use(%g)                                   kiln.all_reduce_wait %g
//                                             use(%g)
//
// The runtime reduces %g while the ops between run, as PyTorch's DDP
// reduces a bucket of gradients while autograd computes the next. Runs
// before the memory plan, while buffers are allocations and their views
// (not views of one arena), so "touches %g" is a walk over its aliases.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSCHEDULECOLLECTIVES
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The buffer `v` is a view of, one step up (null for a root).
Value viewSource(Value v) {
  Operation *def = v.getDefiningOp();
  if (auto view = dyn_cast_or_null<ViewLikeOpInterface>(def))
    return view.getViewSource();
  if (auto cast = dyn_cast_or_null<memref::CastOp>(def))
    return cast.getSource();
  if (auto t = dyn_cast_or_null<memref::TransposeOp>(def))
    return t.getIn();
  return Value();
}

/// Every value whose memory overlaps `buffer`'s: its root and all views of it.
llvm::SmallPtrSet<Value, 8> aliasesOf(Value buffer) {
  Value root = buffer;
  while (Value up = viewSource(root))
    root = up;
  llvm::SmallPtrSet<Value, 8> set{root};
  SmallVector<Value> work{root};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers())
      for (Value r : user->getResults())
        if (isa<BaseMemRefType>(r.getType()) && viewSource(r) == v && set.insert(r).second)
          work.push_back(r);
  }
  return set;
}

bool touches(Operation *op, const llvm::SmallPtrSet<Value, 8> &aliases) {
  WalkResult found = op->walk([&](Operation *inner) {
    for (Value operand : inner->getOperands())
      if (aliases.contains(operand))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return found.wasInterrupted();
}

struct KilnScheduleCollectivesPass final
    : impl::KilnScheduleCollectivesBase<KilnScheduleCollectivesPass> {
  void runOnOperation() override {
    SmallVector<AllReduceInPlaceOp> reductions;
    getOperation().walk([&](AllReduceInPlaceOp op) { reductions.push_back(op); });
    for (AllReduceInPlaceOp op : reductions) {
      Value buffer = op.getBuffer();
      auto aliases = aliasesOf(buffer);
      Operation *next = op->getNextNode();
      while (!next->hasTrait<OpTrait::IsTerminator>() && !touches(next, aliases))
        next = next->getNextNode();
      OpBuilder b(op);
      AllReduceStartOp::create(b, op.getLoc(), buffer, op.getReductionAttr());
      b.setInsertionPoint(next);
      AllReduceWaitOp::create(b, op.getLoc(), buffer);
      op.erase();
    }
  }
};

} // namespace
} // namespace kiln

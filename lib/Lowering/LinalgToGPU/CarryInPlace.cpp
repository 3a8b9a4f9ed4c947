//===- CarryInPlace.cpp - kiln-gpu-carry-in-place ------------------------===//
//
//   scf.for ... iter_args(%h = %h0) {          scf.for ... iter_args(%h = %h0) {
//     %n = <computed from %h>          =>        %n = <computed from %h>
//     scf.yield %n                               %c = linalg.copy ins(%n) outs(%h)
//                                                scf.yield %c
// so one-shot bufferization writes the new state into the loop's one
// buffer (the copy comes after every read of %h) instead of yielding a new
// allocation each iteration; an scf.if's branches likewise copy into one
// destination made before it. The CUDA host program then runs the loop,
// launching its body's kernels on buffers the memory plan placed.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace kiln {
#define GEN_PASS_DEF_KILNGPUCARRYINPLACE
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Whether `v` is `to` written in place: through the destinations of
/// inserts and destination-style ops (a loop's own updates of its state,
/// NonZero's filling loop), which bufferization keeps in `to`'s buffer.
bool writtenInPlace(Value v, Value to) {
  while (v && v != to) {
    Operation *def = v.getDefiningOp();
    if (auto insert = dyn_cast_or_null<tensor::InsertOp>(def))
      v = insert.getDest();
    else if (auto slice = dyn_cast_or_null<tensor::InsertSliceOp>(def))
      v = slice.getDest();
    else if (auto dps = dyn_cast_or_null<DestinationStyleOpInterface>(def))
      v = dps.getTiedOpOperand(cast<OpResult>(v))->get();
    else if (auto loop = dyn_cast_or_null<scf::ForOp>(def))
      v = loop.getInits()[cast<OpResult>(v).getResultNumber()];
    else
      return false;
  }
  return v == to;
}

/// Replaces each tensor operand of `yield` not already `dest(i)` written in
/// place by a copy into it.
void copyInto(scf::YieldOp yield, function_ref<Value(unsigned)> dest) {
  OpBuilder b(yield);
  for (OpOperand &operand : yield->getOpOperands()) {
    Value to = dest(operand.getOperandNumber());
    if (!to || !isa<RankedTensorType>(operand.get().getType()) || writtenInPlace(operand.get(), to))
      continue;
    operand.set(linalg::CopyOp::create(b, yield.getLoc(), operand.get(), to).getResult(0));
  }
}

/// `loop` rebuilt so that its condition passes on every before-region
/// argument, in order, when it passes on some of them (a Loop's condition
/// flag is not passed on). Bufferization keeps a while loop's state in
/// place only when condition operand i is before-region argument i; else
/// it copies every state each iteration.
scf::WhileOp passEveryArgument(scf::WhileOp loop) {
  scf::ConditionOp cond = loop.getConditionOp();
  ValueRange before = loop.getBeforeArguments();
  if (cond.getArgs() == before)
    return loop;
  SmallVector<unsigned> source; // condition operand j: before argument source[j]
  for (Value v : cond.getArgs()) {
    auto it = llvm::find(before, v);
    if (it == before.end() || llvm::count(cond.getArgs(), v) != 1)
      return loop;
    source.push_back(it - before.begin());
  }
  OpBuilder b(loop);
  auto aligned = scf::WhileOp::create(b, loop.getLoc(), before.getTypes(), loop.getInits());
  aligned.getBefore().takeBody(loop.getBefore());
  aligned.getAfter().takeBody(loop.getAfter());
  Block *after = aligned.getAfterBody();
  unsigned old = after->getNumArguments();
  for (Value v : before)
    after->addArgument(v.getType(), v.getLoc());
  for (unsigned j = 0; j < old; ++j)
    after->getArgument(j).replaceAllUsesWith(after->getArgument(old + source[j]));
  after->eraseArguments(0, old);
  aligned.getConditionOp().getArgsMutable().assign(aligned.getBeforeArguments());
  for (unsigned j = 0; j < old; ++j)
    loop.getResult(j).replaceAllUsesWith(aligned.getResult(source[j]));
  loop.erase();
  return aligned;
}

struct KilnGpuCarryInPlacePass final : impl::KilnGpuCarryInPlaceBase<KilnGpuCarryInPlacePass> {
  void runOnOperation() override {
    getOperation().walk([](Operation *op) {
      // Loops and branches of the host program, not a kernel's.
      if (op->getParentOfType<linalg::LinalgOp>())
        return;
      if (auto loop = dyn_cast<scf::ForOp>(op)) {
        auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
        copyInto(yield, [&](unsigned i) { return Value(loop.getRegionIterArgs()[i]); });
        return;
      }
      // A while loop: the body's new state i goes into the after region's
      // argument j that the condition passes state i on as (a Loop's own
      // condition flag is not passed on), which is then the before
      // region's argument i too. Only sizes that cannot change: a state
      // whose size the body computes would overrun the buffer, and keeps
      // a new buffer per iteration.
      if (auto loop = dyn_cast<scf::WhileOp>(op)) {
        loop = passEveryArgument(loop);
        ValueRange passed = loop.getConditionOp().getArgs();
        copyInto(loop.getYieldOp(), [&](unsigned i) {
          auto at = llvm::find(passed, loop.getBeforeArguments()[i]);
          if (at == passed.end() || llvm::count(passed, *at) != 1)
            return Value();
          Value to = loop.getAfterArguments()[at - passed.begin()];
          auto tensor = dyn_cast<RankedTensorType>(to.getType());
          return tensor && tensor.hasStaticShape() ? to : Value();
        });
        return;
      }
      auto branch = dyn_cast<scf::IfOp>(op);
      if (!branch || branch.getNumResults() == 0 || branch.getElseRegion().empty())
        return;
      OpBuilder b(branch);
      SmallVector<Value> dests;
      for (Type t : branch.getResultTypes()) {
        auto tensor = dyn_cast<RankedTensorType>(t);
        dests.push_back(tensor && tensor.hasStaticShape()
                            ? tensor::EmptyOp::create(b, branch.getLoc(), tensor.getShape(),
                                                      tensor.getElementType())
                                  .getResult()
                            : Value());
      }
      for (Region *r : {&branch.getThenRegion(), &branch.getElseRegion()})
        copyInto(cast<scf::YieldOp>(r->front().getTerminator()),
                 [&](unsigned i) { return dests[i]; });
    });
  }
};

} // namespace
} // namespace kiln

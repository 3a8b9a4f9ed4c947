//===- SplitSharedFills.cpp - kiln-split-shared-fills pass ----------------===//
//
// %z = linalg.fill ins(0) outs(%e)             %z = linalg.fill ins(0) outs(%e)
// %a = conv ins(..) outs(%z)           =>      %a = conv ins(..) outs(%z)
// %b = conv ins(..) outs(%z)                   %e2 = tensor.empty; %z2 = linalg.fill ins(0)
// outs(%e2)
//                                              %b = conv ins(..) outs(%z2)
//
// Without it, bufferization fills one buffer and copies it into %b's.
// Every destination gets a tensor.empty of its own; with `empties`, uses
// through reshapes of a shared empty are split as well.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <functional>
#include <utility>

namespace kiln {
#define GEN_PASS_DEF_KILNSPLITSHAREDFILLS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// A fill used as the destination of several ops: each gets a fill of its own.
void splitFills(Operation *root) {
  SmallVector<linalg::FillOp> fills;
  root->walk([&](linalg::FillOp fill) {
    if (fill.hasPureTensorSemantics())
      fills.push_back(fill);
  });
  for (linalg::FillOp fill : fills) {
    // Destination uses: a linalg op's init (it reads and overwrites it).
    SmallVector<OpOperand *> inits;
    for (OpOperand &use : fill->getResult(0).getUses())
      if (auto user = dyn_cast<linalg::LinalgOp>(use.getOwner()))
        if (user.isDpsInit(&use))
          inits.push_back(&use);
    if (inits.size() < 2 && !(inits.size() == 1 && !fill->getResult(0).hasOneUse()))
      continue;
    // The first use in program order keeps the fill unless another use
    // (a read) also needs its value; then every destination gets its own.
    bool keepFirst = inits.size() == size_t(std::distance(fill->getResult(0).use_begin(),
                                                          fill->getResult(0).use_end()));
    llvm::sort(inits, [](OpOperand *a, OpOperand *b) {
      return a->getOwner()->isBeforeInBlock(b->getOwner());
    });
    for (auto [i, use] : llvm::enumerate(inits)) {
      if (keepFirst && i == 0)
        continue;
      Operation *user = use->getOwner();
      if (user->getBlock() != fill->getBlock())
        continue;
      OpBuilder b(user);
      Value dest = fill.getOutputs()[0];
      if (auto empty = dest.getDefiningOp<tensor::EmptyOp>())
        dest = b.clone(*empty)->getResult(0);
      auto copy = linalg::FillOp::create(b, fill.getLoc(), fill.getInputs()[0], dest);
      use->set(copy.getResult(0));
    }
  }
}

/// Each destination (a linalg op's init, a concat's insert_slice chain)
/// gets an empty of its own. CSE gives every op of one result type the
/// same tensor.empty, and one-shot bufferization then analyses all of
/// them as writers of one buffer, at a cost growing with their square:
/// an unrolled 2-layer bidirectional LSTM (100 steps, 316 ops sharing one
/// empty) spent 144 s there, 22 s with its own. The memory plan places
/// the buffers by liveness: arenas stayed the same or shrank (GPT 65 -> 57
/// KB on the CPU, 148 -> 107 KB on CUDA).
void splitEmpties(Operation *root) {
  SmallVector<tensor::EmptyOp> shared;
  root->walk([&](tensor::EmptyOp empty) {
    if (!empty->hasOneUse())
      shared.push_back(empty);
  });
  for (tensor::EmptyOp empty : shared) {
    bool first = true;
    for (OpOperand &use : llvm::make_early_inc_range(empty->getUses())) {
      auto insert = dyn_cast<tensor::InsertSliceOp>(use.getOwner());
      auto dps = dyn_cast<DestinationStyleOpInterface>(use.getOwner());
      bool init =
          insert ? use.get() == insert.getDest()
                 : dps && dps.isDpsInit(&use) && use.getOwner()->getBlock() == empty->getBlock();
      if (!init || std::exchange(first, false))
        continue;
      OpBuilder b(use.getOwner());
      use.set(b.clone(*empty)->getResult(0));
    }
  }
}

/// (`empties`) A destination use of a shared tensor.empty by an
/// elementwise op over a contraction's result (a kernel's epilogue, maybe)
/// gets its own when another user of that empty produced what the
/// contraction reads (itself, or through a tensor.pad or reshapes):
/// bufferization would write the epilogue over the contraction's image.
/// The others keep sharing it, as bufferization's in-place reuse is what
/// keeps the arena small.
void splitClobberedEmpties(Operation *root) {
  // `v` seen through the pads and reshapes around a (grouped) convolution.
  auto source = [](Value v) {
    for (;;) {
      Operation *def = v.getDefiningOp();
      if (auto pad = dyn_cast_or_null<tensor::PadOp>(def))
        v = pad.getSource();
      else if (isa_and_nonnull<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def))
        v = def->getOperand(0);
      else
        return v;
    }
  };
  auto reads = [&](linalg::LinalgOp contraction, Value x) {
    return llvm::any_of(contraction.getDpsInputs(), [&](Value in) { return source(in) == x; });
  };
  // The contractions are looked for among the few linalg ops the
  // elementwise op's inputs come from (a softmax's division, over the
  // exponentials of Q K^T's scores: a row group the CUDA outliner fuses
  // with Q K^T, and K^T's empty is the one CSE gave P).
  auto clobbers = [&](OpOperand *use, ArrayRef<OpOperand *> others) {
    auto l = dyn_cast<linalg::LinalgOp>(use->getOwner());
    if (!l || l.getNumReductionLoops())
      return false;
    SmallVector<Value> work(l.getDpsInputs());
    llvm::SmallPtrSet<Operation *, 16> seen;
    while (!work.empty() && seen.size() < 16) {
      auto producer = source(work.pop_back_val()).getDefiningOp<linalg::LinalgOp>();
      if (!producer || !seen.insert(producer).second)
        continue;
      llvm::append_range(work, producer.getDpsInputs());
      llvm::append_range(work, producer.getDpsInits());
      if (!producer.getNumReductionLoops())
        continue;
      for (OpOperand *other : others)
        if (other != use && llvm::any_of(other->getOwner()->getResults(),
                                         [&](Value r) { return reads(producer, r); }))
          return true;
    }
    return false;
  };
  SmallVector<tensor::EmptyOp> emptyOps;
  root->walk([&](tensor::EmptyOp e) { emptyOps.push_back(e); });
  for (tensor::EmptyOp empty : emptyOps) {
    // Destination uses, directly or through reshapes of the empty (CSE
    // merges those as well), each with the reshapes between.
    struct Init {
      OpOperand *use;
      SmallVector<Operation *, 2> reshapes;
    };
    SmallVector<Init> inits;
    std::function<void(Value, SmallVector<Operation *, 2> &)> collect =
        [&](Value v, SmallVector<Operation *, 2> &chain) {
          for (OpOperand &use : v.getUses()) {
            Operation *user = use.getOwner();
            if (user->getBlock() != empty->getBlock())
              continue;
            if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(user)) {
              chain.push_back(user);
              collect(user->getResult(0), chain);
              chain.pop_back();
            } else if (auto dps = dyn_cast<DestinationStyleOpInterface>(user);
                       dps && dps.isDpsInit(&use)) {
              inits.push_back({&use, chain});
            }
          }
        };
    SmallVector<Operation *, 2> chain;
    collect(empty.getResult(), chain);
    if (inits.size() < 2)
      continue;
    llvm::sort(inits, [](const Init &a, const Init &b) {
      return a.use->getOwner()->isBeforeInBlock(b.use->getOwner());
    });
    SmallVector<OpOperand *> uses;
    for (const Init &init : inits)
      uses.push_back(init.use);
    SmallVector<const Init *> split;
    for (const Init &init : llvm::drop_begin(inits))
      if (clobbers(init.use, uses))
        split.push_back(&init);
    for (const Init *init : split) {
      OpBuilder b(init->use->getOwner());
      Value dest = b.clone(*empty)->getResult(0);
      for (Operation *reshape : init->reshapes) {
        IRMapping map;
        map.map(reshape->getOperand(0), dest);
        dest = b.clone(*reshape, map)->getResult(0);
      }
      init->use->set(dest);
    }
  }
}

struct KilnSplitSharedFillsPass final : impl::KilnSplitSharedFillsBase<KilnSplitSharedFillsPass> {
  using KilnSplitSharedFillsBase::KilnSplitSharedFillsBase;
  void runOnOperation() override {
    splitFills(getOperation());
    splitEmpties(getOperation());
    if (empties)
      splitClobberedEmpties(getOperation());
  }
};

} // namespace
} // namespace kiln

//===- PlanMemory.cpp - kiln-plan-memory: one arena for @main ------------===//
//
//   %a = memref.alloc() : memref<2x16xf32>        %a = memref.view %arena[%c0][]
//   ... uses of %a ...                        =>   ... uses of %a ...
//   memref.dealloc %a                              (gone)
//
// with %arena a new last argument of @main. Liveness is by op index in the
// host program's order (straight-line, an If's branches after it: the one
// taken runs in that order), placement greedy by size as in TFLite's arena
// planner: a few percent above the optimum on real graphs and linear in
// practice.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Passes.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Lowering/Host/DimBounds.h"
#include "kiln/Lowering/OutputDims.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/CastInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include <map>
#include <tuple>

namespace kiln {
#define GEN_PASS_DEF_KILNPLANMEMORY
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct Buffer {
  memref::AllocOp alloc;
  int64_t bytes = 0;
  unsigned first = ~0u, last = 0; // inclusive, indices in the Schedule
  int64_t offset = 0;
  unsigned id = 0; // program order
  SmallVector<Operation *> deallocs;
  bool atRunTime = false; // allocated by the runtime: not in the arena
};

/// Bytes of one element as the LLVM lowering stores it (i1 takes a byte).
int64_t elementBytes(Type t) {
  if (auto it = dyn_cast<IntegerType>(t))
    return (it.getWidth() + 7) / 8;
  if (auto ft = dyn_cast<FloatType>(t))
    return (ft.getWidth() + 7) / 8;
  if (isa<IndexType>(t))
    return 8;
  return 0;
}

int64_t staticBytes(MemRefType t) {
  if (!t.hasStaticShape() || !t.getLayout().isIdentity())
    return -1;
  int64_t e = elementBytes(t.getElementType());
  return e ? t.getNumElements() * e : -1;
}

/// The bytes `alloc` takes at its largest sizes (identity layout), or -1.
int64_t maxBytes(memref::AllocOp alloc, ArrayAttr inputMax) {
  MemRefType t = alloc.getType();
  int64_t bytes = elementBytes(t.getElementType());
  if (!bytes || !t.getLayout().isIdentity() || !alloc.getSymbolOperands().empty())
    return -1;
  unsigned next = 0;
  for (int64_t d = 0; d < t.getRank(); ++d) {
    int64_t size = t.getDimSize(d);
    if (t.isDynamicDim(d)) {
      auto range = indexRange(alloc.getDynamicSizes()[next++], inputMax);
      if (!range)
        return -1;
      size = std::max<int64_t>(range->second, 0);
    }
    if (__builtin_mul_overflow(bytes, size, &bytes))
      return -1;
  }
  return bytes;
}

/// Whether some size of `alloc` comes from a scalar the runtime computes
/// from the inputs' data before the run (kiln-host-values): no largest
/// size bounds it.
bool sizedByHostValues(memref::AllocOp alloc) {
  SmallVector<Value> work(alloc.getDynamicSizes());
  DenseSet<Operation *> seen;
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || !seen.insert(def).second)
      continue;
    if (auto call = dyn_cast<func::CallOp>(def); call && call.getCallee() == kHostValueFunctionName)
      return true;
    llvm::append_range(work, def->getOperands());
  }
  return false;
}

/// Whether only loops and branches of the host program (scf.for, scf.if,
/// scf.while) enclose `op` in `main`: a buffer made there is one per
/// iteration, not one per thread of a parallel loop.
bool onlySequentialAbove(Operation *op, func::FuncOp main) {
  for (Operation *p = op->getParentOp(); p != main.getOperation(); p = p->getParentOp())
    if (!isa<scf::ForOp, scf::IfOp, scf::WhileOp>(p))
      return false;
  return true;
}

/// The host program's ops in the order they run: @main's, each If followed
/// by the ops of its branches (a dynamic batch's choice of image chains).
/// Only one branch runs, and once: buffers live in one branch only may
/// share bytes with the other's. Any other op with regions (a loop, a
/// kernel) is one step.
struct Schedule {
  std::vector<Operation *> ops;
  DenseMap<Operation *, unsigned> index;

  explicit Schedule(Block &top) { add(top); }
  void add(Block &block) {
    for (Operation &op : block) {
      index[&op] = ops.size();
      ops.push_back(&op);
      if (isa<scf::IfOp>(op))
        for (Region &region : op.getRegions())
          for (Block &inner : region)
            add(inner);
    }
  }
  /// The step `op` runs in: itself or the ancestor that is one.
  Operation *step(Operation *op) const {
    while (op && !index.count(op))
      op = op->getParentOp();
    return op;
  }
};

/// Follows `buf.alloc` through its views; false when some use lets it escape
/// what a straight-line interval can describe.
bool computeInterval(Buffer &buf, const Schedule &schedule) {
  Value root = buf.alloc.getResult();
  SmallVector<Value> work{root};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (isa<memref::DeallocOp>(user)) {
        if (v != root)
          return false;
        buf.deallocs.push_back(user);
        continue;
      }
      if (user->hasTrait<OpTrait::IsTerminator>() || isa<CallOpInterface>(user) ||
          user->getDialect()->getNamespace() == "bufferization")
        return false;
      // memref.transpose is a view too (not a ViewLikeOpInterface in MLIR
      // 22): a row group writes permuted through one. A select of buffers
      // is either (a padded convolution's row, or the zero row).
      bool aliases =
          isa<ViewLikeOpInterface, CastOpInterface, memref::TransposeOp, arith::SelectOp>(user);
      for (Value r : user->getResults())
        if (isa<BaseMemRefType>(r.getType())) {
          if (!aliases)
            return false; // an op returning memrefs we don't know the aliasing of
          work.push_back(r);
        }
      // A view or a size reads and writes nothing: their users do. (Those
      // made before the buffer is written, a dynamic batch's reshapes and
      // sizes hoisted before its choice of image chains, would otherwise
      // keep it live from there.)
      if (aliases || isa<memref::DimOp>(user))
        continue;
      Operation *anchor = schedule.step(user);
      if (!anchor)
        return false;
      unsigned i = schedule.index.lookup(anchor);
      buf.first = std::min(buf.first, i);
      buf.last = std::max(buf.last, i);
    }
  }
  return true;
}

/// Greedy by size: each buffer, largest first, at the lowest aligned offset
/// that no already placed, time-overlapping buffer occupies. Returns the
/// arena size.
int64_t place(std::vector<Buffer *> &buffers, int64_t alignment) {
  // Deterministic: ties broken by first use, then by program order.
  std::sort(buffers.begin(), buffers.end(), [](Buffer *a, Buffer *b) {
    return std::make_tuple(-a->bytes, a->first, a->id) < std::make_tuple(-b->bytes, b->first, b->id);
  });
  auto alignUp = [&](int64_t x) { return (x + alignment - 1) / alignment * alignment; };
  std::vector<Buffer *> placed;
  int64_t total = 0;
  for (Buffer *b : buffers) {
    std::vector<Buffer *> live;
    for (Buffer *p : placed)
      if (p->first <= b->last && b->first <= p->last)
        live.push_back(p);
    std::sort(live.begin(), live.end(), [](Buffer *x, Buffer *y) {
      return std::make_pair(x->offset, x->id) < std::make_pair(y->offset, y->id);
    });
    int64_t candidate = 0;
    for (Buffer *p : live) {
      if (candidate + b->bytes <= p->offset)
        break;
      candidate = std::max(candidate, alignUp(p->offset + p->bytes));
    }
    b->offset = candidate;
    total = std::max(total, alignUp(candidate + b->bytes));
    placed.push_back(b);
  }
  return total;
}

/// The alloc a memref value is a view of, or null.
Operation *rootAlloc(Value v) {
  while (v) {
    Operation *def = v.getDefiningOp();
    if (!def)
      return nullptr;
    if (isa<memref::AllocOp>(def))
      return def;
    if (auto view = dyn_cast<ViewLikeOpInterface>(def))
      v = view.getViewSource();
    else if (auto transpose = dyn_cast<memref::TransposeOp>(def))
      v = transpose.getIn();
    else if (auto cast = dyn_cast<CastOpInterface>(def); cast && def->getNumOperands() == 1)
      v = def->getOperand(0);
    else
      return nullptr;
  }
  return nullptr;
}

/// Keeps each contraction's inputs live through the elementwise ops that
/// follow it (up to `reach` of them): a GPU kernel may run them as its
/// epilogue while other blocks still read the inputs. An input made just
/// before by copying another buffer into it (a padded image: a fill, then
/// the image copied into its interior) keeps that buffer live too, since
/// the kernel may read the image in place of the padded copy.
void extendForEpilogues(const Schedule &schedule, std::vector<Buffer> &buffers, unsigned reach) {
  DenseMap<Operation *, Buffer *> byAlloc;
  for (Buffer &b : buffers)
    byAlloc[b.alloc] = &b;
  const std::vector<Operation *> &ops = schedule.ops;
  SmallVector<unsigned> linalgAt; // indices into ops
  for (unsigned i = 0; i < ops.size(); ++i)
    if (isa<linalg::LinalgOp>(ops[i]))
      linalgAt.push_back(i);
  auto extend = [&](Value v, unsigned end) {
    if (Operation *alloc = rootAlloc(v))
      if (Buffer *b = byAlloc.lookup(alloc))
        b->last = std::max(b->last, end);
  };
  for (size_t k = 0; k < linalgAt.size(); ++k) {
    auto op = cast<linalg::LinalgOp>(ops[linalgAt[k]]);
    if (op.getNumReductionLoops() == 0)
      continue;
    unsigned end = linalgAt[k];
    for (size_t j = k + 1; j < linalgAt.size() && j <= k + reach; ++j) {
      if (cast<linalg::LinalgOp>(ops[linalgAt[j]]).getNumReductionLoops() != 0)
        break;
      end = linalgAt[j];
    }
    for (OpOperand *in : op.getDpsInputOperands()) {
      extend(in->get(), end);
      Operation *input = rootAlloc(in->get());
      if (!input)
        continue;
      // Copies into it among the few ops before.
      for (unsigned i = linalgAt[k], seen = 0; i-- > 0 && seen < 8; ++seen) {
        if (auto copy = dyn_cast<memref::CopyOp>(ops[i])) {
          if (rootAlloc(copy.getTarget()) == input)
            extend(copy.getSource(), end);
        } else if (auto l = dyn_cast<linalg::LinalgOp>(ops[i]);
                   l && l.getNumReductionLoops() == 0 && l.getNumDpsInits() == 1 &&
                   rootAlloc(l.getDpsInitOperand(0)->get()) == input) {
          for (OpOperand *src : l.getDpsInputOperands())
            extend(src->get(), end);
        }
      }
    }
  }
}

/// Keeps every buffer the ops of a fused span use (the top-level ops marked
/// `kiln.fused_span` with one id, kiln-gpu-mark-row-groups) live until the
/// span's last op: one kernel runs them all, its blocks each a row through
/// every op, so a buffer dead midway in program order is still read by
/// blocks behind, and nothing written in the span may take its bytes.
void extendForFusedSpans(const Schedule &schedule, std::vector<Buffer> &buffers) {
  DenseMap<Operation *, Buffer *> byAlloc;
  for (Buffer &b : buffers)
    byAlloc[b.alloc] = &b;
  // Each span: its first and last top-level op.
  std::map<int64_t, std::pair<unsigned, unsigned>> spans;
  const std::vector<Operation *> &ops = schedule.ops;
  for (unsigned at = 0; at < ops.size(); ++at)
    if (auto id = ops[at]->getAttrOfType<IntegerAttr>(KilnDialect::getFusedSpanAttrName())) {
      auto [it, fresh] = spans.try_emplace(id.getInt(), at, at);
      if (!fresh)
        it->second = {std::min(it->second.first, at), std::max(it->second.second, at)};
      ops[at]->removeAttr(KilnDialect::getFusedSpanAttrName());
    }
  for (auto &[id, span] : spans)
    for (unsigned i = span.first; i <= span.second; ++i)
      for (Value v : ops[i]->getOperands())
        if (Operation *alloc = rootAlloc(v))
          if (Buffer *b = byAlloc.lookup(alloc))
            b->last = std::max(b->last, span.second);
}

int64_t weightBytes(ModuleOp module) {
  int64_t total = 0;
  module.walk([&](memref::GlobalOp g) {
    if (g.getConstant() && g.getInitialValue())
      total += std::max<int64_t>(0, staticBytes(g.getType()));
  });
  return total;
}

/// Buffers the runtime allocates are given back right after their last
/// use, not where bufferization's deallocation put them (the end of
/// @main): the runtime's block cache then hands their memory, still in
/// cache, to the buffers made after, as the arena's plan reuses it for
/// static shapes. Held to the end, a dynamic ResNet-50 at batch 1 wrote
/// each layer into memory untouched since the last call (Winograd's input
/// transform at 56x56 3x slower).
void releaseAfterLastUse(Block &top, const Schedule &schedule, std::vector<Buffer> &buffers) {
  for (Buffer &b : buffers) {
    if (!b.atRunTime || b.deallocs.size() != 1 || b.deallocs[0]->getBlock() != &top ||
        b.last >= schedule.ops.size())
      continue;
    // After the If holding the last use, whichever branch runs.
    Operation *last = top.findAncestorOpInBlock(*schedule.ops[b.last]);
    if (last && last->isBeforeInBlock(b.deallocs[0]))
      b.deallocs[0]->moveAfter(last);
  }
}

struct KilnPlanMemoryPass final : impl::KilnPlanMemoryBase<KilnPlanMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal() || !main.getBody().hasOneBlock()) {
      module.emitError("kiln-plan-memory expects a @main with a single-block body "
                       "(run it after bufferization, before lowering loops)");
      return signalPassFailure();
    }
    if (alignment <= 0 || (alignment & (alignment - 1))) {
      module.emitError("kiln-plan-memory: alignment must be a power of two");
      return signalPassFailure();
    }
    Block &top = main.getBody().front();
    Schedule schedule(top);

    std::vector<Buffer> buffers;
    auto inputMax = module->getAttrOfType<ArrayAttr>(KilnDialect::getInputDimMaxAttrName());
    SmallVector<memref::AllocOp> allocs(top.getOps<memref::AllocOp>());
    if (inLoops)
      main.walk([&](memref::AllocOp alloc) {
        if (alloc->getBlock() != &top && onlySequentialAbove(alloc, main))
          allocs.push_back(alloc);
      });
    for (memref::AllocOp alloc : allocs) {
      Buffer b;
      b.alloc = alloc;
      b.id = buffers.size();
      b.bytes = staticBytes(alloc.getType());
      if (dynamicAtMax && !alloc.getDynamicSizes().empty()) {
        b.bytes = maxBytes(alloc, inputMax);
        bool tooBig = dynamicMaxBytes > 0 && b.bytes > dynamicMaxBytes;
        // Sized by data read before the run, or inside a loop (its sizes
        // may change each iteration): allocated at run time.
        b.atRunTime = (!requireBounds && (b.bytes < 0 || tooBig)) ||
                      (b.bytes < 0 && (sizedByHostValues(alloc) || alloc->getBlock() != &top));
        if (b.atRunTime) {
          // Given back after its last use (see releaseAfterLastUse).
          if (alloc->getBlock() == &top && computeInterval(b, schedule) && b.first <= b.last)
            buffers.push_back(std::move(b));
          continue;
        }
        if (b.bytes < 0) {
          alloc.emitError("kiln-plan-memory: cannot bound this buffer's dynamic sizes (every "
                          "dynamic input dimension needs a maximum: --dim SYMBOL=MIN..MAX)");
          return signalPassFailure();
        }
      } else if (b.bytes < 0 || !alloc.getDynamicSizes().empty() ||
                 !alloc.getSymbolOperands().empty()) {
        continue;
      }
      if (!computeInterval(b, schedule))
        continue;
      if (b.first > b.last) // only deallocated: needs no bytes
        b.bytes = 0, b.first = b.last = 0;
      buffers.push_back(std::move(b));
    }
    if (epilogueReach)
      extendForEpilogues(schedule, buffers, epilogueReach);
    extendForFusedSpans(schedule, buffers);
    std::vector<Buffer *> order;
    for (Buffer &b : buffers)
      if (!b.atRunTime)
        order.push_back(&b);
    int64_t arenaBytes = place(order, alignment);

    MLIRContext *ctx = &getContext();
    auto arenaType = MemRefType::get({arenaBytes}, IntegerType::get(ctx, 8));
    if (failed(main.insertArgument(main.getNumArguments(), arenaType, DictionaryAttr(),
                                   main.getLoc())))
      return signalPassFailure();
    Value arena = main.getArgument(main.getNumArguments() - 1);
    releaseAfterLastUse(top, schedule, buffers);
    for (Buffer &b : buffers) {
      if (b.atRunTime)
        continue;
      for (Operation *d : b.deallocs)
        d->erase();
      OpBuilder builder(b.alloc);
      Location loc = b.alloc.getLoc();
      if (b.alloc.use_empty()) {
        b.alloc.erase();
        continue;
      }
      Value offset = arith::ConstantIndexOp::create(builder, loc, b.offset);
      Value view = memref::ViewOp::create(builder, loc, b.alloc.getType(), arena, offset,
                                          b.alloc.getDynamicSizes());
      b.alloc.replaceAllUsesWith(view);
      b.alloc.erase();
    }
    Builder attrs(ctx);
    module->setAttr(KilnDialect::getArenaBytesAttrName(), attrs.getI64IntegerAttr(arenaBytes));
    module->setAttr(KilnDialect::getWeightBytesAttrName(),
                    attrs.getI64IntegerAttr(weightBytes(module)));
  }
};

} // namespace
} // namespace kiln

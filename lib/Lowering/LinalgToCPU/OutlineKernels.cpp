//===- OutlineKernels.cpp - kiln-outline-kernels pass ---------------------===//
//
// scf.parallel (%i, %j) = (0, 0) to (64, 128) { body(%i, %j, %buf, %view) }
//   =>
// func.call @__kiln_parallel_0(%c64, %buf)
// func.func private @main_task0(%begin, %end, %buf {llvm.noalias}) {
//   %view = <recomputed from %buf>
//   scf.for %i = %begin to %end { scf.parallel (%j) = (0) to (128) { body } }
// }
// and any other top-level loop nest => func.call @main_kernel1(%a, %b).
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Passes.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Lowering/Host/KernelCaptures.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SetVector.h"

#include <functional>

namespace kiln {
#define GEN_PASS_DEF_KILNOUTLINEKERNELS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

constexpr int64_t kWorkCap = int64_t(1) << 50;

/// a * b and a + b, saturating at kWorkCap (shapes may be huge).
int64_t satMul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) || r > kWorkCap ? kWorkCap : r;
}
int64_t satAdd(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) || r > kWorkCap ? kWorkCap : r;
}

/// An upper bound known only at run time, estimated: a product's known
/// factors kept, each unknown one taken as `unknown` (a dynamic batch
/// merged with 384 channel blocks is 384 x the batch, not one batch).
int64_t estimateBound(Value ub, int64_t unknown) {
  if (auto c = constIndex(ub))
    return *c;
  if (auto mul = ub.getDefiningOp<arith::MulIOp>())
    return satMul(estimateBound(mul.getLhs(), unknown), estimateBound(mul.getRhs(), unknown));
  return unknown;
}

/// Trip count of a loop with constant bounds; with an upper bound known
/// only at run time, `unknown` times its known factors.
int64_t tripCount(Value lb, Value ub, Value step, int64_t unknown = 1) {
  auto l = constIndex(lb), u = constIndex(ub), s = constIndex(step);
  if (!l || !s)
    return unknown;
  if (!u) // from 0 by 1 (a merged dynamic nest): its estimated bound
    return *l == 0 && *s == 1 ? estimateBound(ub, unknown) : unknown;
  return *s > 0 && *u > *l ? (*u - *l + *s - 1) / *s : 1;
}

/// What the work estimate takes a loop over a dynamic dimension (a batch,
/// a sequence) to run: splitting a loop that turns out small costs one
/// dispatch to the pool, not splitting a big one half the machine.
constexpr int64_t kDynamicTrips = 64;

/// The lanes of an op's widest vector operand or result (1 for scalars).
int64_t lanesOf(Operation &op) {
  // An AMX tile product: its multiply-adds (rows x 16 columns x k bytes),
  // like vpdpbusd's lanes of byte pairs. Counted as one lane, a product
  // that runs on tiles stayed on one thread (quantized BERT's 3072 -> 768
  // layer, 0.32 ms).
  if (auto mul = dyn_cast<amx::TileMulIOp>(op)) {
    amx::TileType a = mul.getLhsTileType();
    return a.getDimSize(0) * a.getDimSize(1) * 16;
  }
  int64_t lanes = 1;
  for (Type t : llvm::concat<Type>(op.getResultTypes(), op.getOperandTypes()))
    if (auto v = dyn_cast<VectorType>(t))
      lanes = std::max(lanes, v.getNumElements());
  return lanes;
}

/// An op's scalar work: its lanes (a register-tiled kernel does as much per
/// vector FMA as a loop did in that many steps), a store's eight times
/// over: a fill or copy is all stores, mostly to lines not in cache, and
/// counted like arithmetic it stayed on one core (a pad's fill of 3.5 MB,
/// 98 us; MobileNetV2's example at batch 8 0.86 -> 0.71 ms split).
int64_t opWork(Operation &op) {
  constexpr int64_t kStoreWeight = 8;
  if (isa<memref::StoreOp, vector::StoreOp, vector::MaskedStoreOp>(op))
    return kStoreWeight * lanesOf(op);
  return lanesOf(op);
}

/// Floating-point operations: arithmetic and math on floats count one per
/// lane, fused multiply-adds two; and an 8-bit product's vpdpbusd two per
/// byte pair it multiplies (the profiler's GFLOP/s are its GOP/s).
int64_t opFlops(Operation &op) {
  if (isa<vector::FMAOp, math::FmaOp>(op))
    return 2 * lanesOf(op);
  if (auto call = dyn_cast<LLVM::CallIntrinsicOp>(op);
      call && (call.getIntrin().starts_with("llvm.x86.avx512.vpdpbusd") ||
               call.getIntrin() == "llvm.x86.avx2.pmadd.ub.sw"))
    return 2 * lanesOf(op); // lanes: its byte pairs (64, 32)
  if (isa<amx::TileMulIOp>(op))
    return 2 * lanesOf(op);
  bool arithmetic = isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp,
                        arith::RemFOp, arith::NegFOp, arith::MaximumFOp, arith::MinimumFOp,
                        arith::MaxNumFOp, arith::MinNumFOp, arith::CmpFOp>(op) ||
                    (op.getDialect() && op.getDialect()->getNamespace() == "math");
  return arithmetic ? lanesOf(op) : 0;
}

int64_t regionCost(Region &region, llvm::function_ref<int64_t(Operation &)> cost,
                   int64_t unknownTrips, bool oneBranch);

/// The cost of executing `op`: its own, plus, for a loop, its trip count
/// times its body's. Kernels formed by tiling hold whole loop nests per
/// iteration, so the body's work, not just its depth, matters. With
/// `oneBranch`, a branch (scf.if, scf.index_switch) costs its costliest
/// region, the one that may run: a column tile's reduction with and
/// without its prefetches (kiln-vectorize-matmul's NextPanel) had counted
/// twice its product's flops. The work estimate that decides a nest's
/// split over the pool sums them, as its thresholds were measured.
int64_t opCost(Operation &op, llvm::function_ref<int64_t(Operation &)> cost,
               int64_t unknownTrips, bool oneBranch = false) {
  int64_t trips = 1;
  if (auto f = dyn_cast<scf::ForOp>(op))
    trips = tripCount(f.getLowerBound(), f.getUpperBound(), f.getStep(), unknownTrips);
  else if (auto p = dyn_cast<scf::ParallelOp>(op))
    for (auto [l, u, s] : llvm::zip(p.getLowerBound(), p.getUpperBound(), p.getStep()))
      trips = satMul(trips, tripCount(l, u, s, unknownTrips));
  bool oneRegion = oneBranch && isa<scf::IfOp, scf::IndexSwitchOp>(op);
  int64_t inner = 0;
  for (Region &r : op.getRegions()) {
    int64_t c = regionCost(r, cost, unknownTrips, oneBranch);
    inner = oneRegion ? std::max(inner, c) : satAdd(inner, c);
  }
  return satAdd(cost(op), satMul(trips, inner));
}

/// The cost of the ops a region executes.
int64_t regionCost(Region &region, llvm::function_ref<int64_t(Operation &)> cost,
                   int64_t unknownTrips, bool oneBranch) {
  int64_t total = 0;
  for (Block &block : region)
    for (Operation &op : block)
      total = satAdd(total, opCost(op, cost, unknownTrips, oneBranch));
  return total;
}

/// Scalar work of the whole nest under `op`.
int64_t estimateWork(scf::ParallelOp op) { return opCost(*op, opWork, kDynamicTrips); }

/// The buffer a memory access reaches through views: a value from outside
/// `nest` (a tensor's buffer, a view of the arena or the weights), or null
/// for a temporary of the nest's own.
Value rootBuffer(Value v, Operation *nest) {
  while (Operation *def = v.getDefiningOp()) {
    if (!nest->isAncestor(def) || isa<memref::ViewOp>(def))
      return v;
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      return {}; // an allocation inside the nest
    v = view.getViewSource();
  }
  return nest->isAncestor(v.getParentBlock()->getParentOp()) ? Value() : v;
}

/// Records on `fn` what the nest `op` costs: `kiln.cost = [flops, bytes]`,
/// the floating-point operations it executes and the bytes of the distinct
/// buffers it reads or writes (each counted once: the traffic a kernel
/// can't avoid). `kiln bench --per-kernel` turns them into GFLOP/s and GB/s.
void recordCost(func::FuncOp fn, Operation *op) {
  int64_t flops = opCost(*op, opFlops, /*unknownTrips=*/1, /*oneBranch=*/true);
  llvm::SetVector<Value> buffers;
  op->walk([&](Operation *inner) {
    if (!isa<memref::LoadOp, memref::StoreOp, vector::LoadOp, vector::StoreOp,
             vector::MaskedLoadOp, vector::MaskedStoreOp, vector::TransferReadOp,
             vector::TransferWriteOp, memref::CopyOp>(inner) &&
        !isa<DestinationStyleOpInterface>(inner))
      return;
    for (Value v : inner->getOperands())
      if (isa<MemRefType>(v.getType()))
        if (Value root = rootBuffer(v, op))
          buffers.insert(root);
  });
  int64_t bytes = 0;
  for (Value b : buffers) {
    auto t = cast<MemRefType>(b.getType());
    // (An index buffer, a loop's positions, counts 8 bytes an element.)
    int64_t width = t.getElementType().isIndex() ? 8 : t.getElementTypeBitWidth() / 8;
    if (t.hasStaticShape())
      bytes = satAdd(bytes, satMul(t.getNumElements(), width));
  }
  Builder b(fn.getContext());
  fn->setAttr(KilnDialect::getCostAttrName(), b.getI64ArrayAttr({flops, bytes}));
}

/// Kernel arguments are distinct root buffers live at the same time: the
/// memory plan keeps those disjoint, so LLVM may assume they don't alias.
/// Also marks `fn` as a kernel (`kiln.kernel`), which kiln-emit-entry keeps
/// out of line.
void markNoAlias(func::FuncOp fn, unsigned firstBuffer) {
  for (unsigned i = firstBuffer; i < fn.getNumArguments(); ++i)
    fn.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(), UnitAttr::get(fn.getContext()));
  fn->setAttr(KilnDialect::getKernelAttrName(), UnitAttr::get(fn.getContext()));
}

struct KilnOutlineKernelsPass final : impl::KilnOutlineKernelsBase<KilnOutlineKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    unsigned counter = 0;
    SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
    for (func::FuncOp fn : funcs) {
      if (fn.isExternal())
        continue;
      for (Block &block : fn.getBody())
        outlineBlock(module, fn, block, counter);
    }
    scopeLoopAllocas(module);
  }

  /// The nests of `block` as tasks or kernels. The branches of an If
  /// (a model's If, a dynamic batch's choice of image chains) are blocks
  /// of the host program too: their loops become tasks of their own, where
  /// the If as one kernel would run them all on one thread.
  void outlineBlock(ModuleOp module, func::FuncOp fn, Block &block, unsigned &counter) {
    SmallVector<Operation *> nests;
    for (Operation &op : block)
      if (op.getNumRegions() && !op.hasTrait<OpTrait::IsTerminator>())
        nests.push_back(&op);
    for (Operation *op : nests) {
      if (isa<scf::IfOp>(op)) {
        for (Region &region : op->getRegions())
          for (Block &inner : region)
            outlineBlock(module, fn, inner, counter);
        continue;
      }
      auto par = dyn_cast<scf::ParallelOp>(op);
      if (par)
        op = par = mergeFirstLoops(par, batchSize(fn)); // a new loop in its place
      if (!par || !outlineTask(module, fn, par, counter))
        outlineKernel(module, fn, op, counter);
    }
  }

  /// A parallel nest whose first loop is a dynamic batch, (n, c, ...):
  /// n and c merged into one loop, so that the pool splits the channel
  /// blocks of every image (one image, split over n alone, ran on one
  /// thread: ResNet-18's convolutions at batch 1 half as fast). Likewise a
  /// static batch's images in a nest big enough to be a task anyway: split
  /// over the images alone, 3 images ran as 2 + 1 on 2 threads (ResNet-50
  /// at batch 3, its convolutions at 0.7 of the FMA peak where batch 8's
  /// ran at 0.9); merged, the pool's contiguous chunks still give each
  /// thread the same images in every kernel where the threads divide the
  /// batch.
  scf::ParallelOp mergeFirstLoops(scf::ParallelOp op, int64_t batch) {
    if (op.getNumLoops() < 2 || !op.getInitVals().empty())
      return op;
    if (std::optional<int64_t> ub = constIndex(op.getUpperBound()[0])) {
      auto lb = constIndex(op.getLowerBound()[0]), st = constIndex(op.getStep()[0]);
      auto lb1 = constIndex(op.getLowerBound()[1]), st1 = constIndex(op.getStep()[1]),
           ub1 = constIndex(op.getUpperBound()[1]);
      bool images = batch > 1 && lb == 0 && st == 1 && *ub == batch;
      if (!images || !lb1 || !st1 || !ub1 || *ub1 - *lb1 < 2 * *st1 ||
          estimateWork(op) < minWork)
        return op;
    }
    SmallVector<std::vector<unsigned>> groups{{0, 1}};
    for (unsigned d = 2; d < op.getNumLoops(); ++d)
      groups.push_back({d});
    IRRewriter rewriter(op.getContext());
    // collapseParallelLoops replaces the loop: find the new one after it.
    Operation *prev = op->getPrevNode();
    Block *block = op->getBlock();
    collapseParallelLoops(rewriter, op, groups);
    Operation *next = prev ? prev->getNextNode() : &block->front();
    while (next && !isa<scf::ParallelOp>(next))
      next = next->getNextNode();
    return cast_or_null<scf::ParallelOp>(next);
  }

  /// kiln-stack-temporaries scopes each loop iteration's stack
  /// temporaries, but canonicalization inlines a scope that is all of an
  /// scf.parallel body (the parallel loop counts as an allocation scope),
  /// and an scf.parallel run as a loop (a task's chunk, a serial kernel)
  /// does not release its stack: 4096 rows of a layer-norm's 4 KiB row
  /// buffers overflowed it. So every loop body holding allocas saves the
  /// stack pointer first and restores it last, as LLVM intrinsics (an
  /// alloca_scope can't hold the blocks its loops become before it is
  /// lowered itself).
  void scopeLoopAllocas(ModuleOp module) {
    llvm::SetVector<Block *> bodies;
    module.walk([&](memref::AllocaOp alloca) {
      if (isa<scf::ForOp, scf::ParallelOp>(alloca->getParentOp()))
        bodies.insert(alloca->getBlock());
    });
    OpBuilder b(&getContext());
    auto ptr = LLVM::LLVMPointerType::get(&getContext());
    for (Block *body : bodies) {
      Location loc = body->getParentOp()->getLoc();
      b.setInsertionPointToStart(body);
      Value saved = LLVM::StackSaveOp::create(b, loc, ptr);
      b.setInsertionPoint(body->getTerminator());
      LLVM::StackRestoreOp::create(b, loc, saved);
    }
  }

  /// A loop nest without results becomes a call to a kernel function.
  void outlineKernel(ModuleOp module, func::FuncOp fn, Operation *op, unsigned &counter) {
    SetVector<Value> args;
    SetVector<Operation *> clones;
    if (op->getNumResults() || !collectCaptures({op}, args, clones))
      return;
    MLIRContext *ctx = &getContext();
    Location loc = op->getLoc();
    OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
    auto kernel = func::FuncOp::create(
        mb, loc, (fn.getName() + "_kernel" + Twine(counter++)).str(),
        FunctionType::get(ctx, llvm::map_to_vector(args, [](Value v) { return v.getType(); }), {}));
    kernel.setPrivate();
    markNoAlias(kernel, 0);
    Block *entry = kernel.addEntryBlock();
    OpBuilder b = OpBuilder::atBlockBegin(entry);
    IRMapping map;
    materializeCaptures(b, args.getArrayRef(), entry->getArguments(), clones.getArrayRef(), map);
    b.clone(*op, map);
    func::ReturnOp::create(b, loc);
    recordNodes(kernel, kernel);
    recordCost(kernel, op);
    OpBuilder cb(op);
    func::CallOp::create(cb, loc, kernel, args.getArrayRef());
    op->erase();
  }

  /// The batch size: the leading dimension of the function's first
  /// argument, the model's first input (1 when unknown).
  static int64_t batchSize(func::FuncOp fn) {
    if (fn.getNumArguments() == 0)
      return 1;
    auto t = dyn_cast<MemRefType>(fn.getArgument(0).getType());
    return t && t.getRank() >= 2 && !t.isDynamicDim(0) ? t.getDimSize(0) : 1;
  }

  /// ceil((ub - lb) / step), at least 0, for an upper bound known at run time.
  static Value tripsAtRunTime(OpBuilder &b, Location loc, Value ub, int64_t lb, int64_t step) {
    Value span = arith::SubIOp::create(b, loc, ub, arith::ConstantIndexOp::create(b, loc, lb));
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    span = arith::MaxSIOp::create(b, loc, span, zero);
    return arith::CeilDivUIOp::create(b, loc, span, arith::ConstantIndexOp::create(b, loc, step));
  }

  /// A big enough parallel loop becomes a task for the thread pool.
  bool outlineTask(ModuleOp module, func::FuncOp fn, scf::ParallelOp op, unsigned &counter) {
    auto lb0 = constIndex(op.getLowerBound()[0]), st0 = constIndex(op.getStep()[0]),
         ub0 = constIndex(op.getUpperBound()[0]);
    // An upper bound known only at run time (a dynamic batch) is split too.
    bool dynamicUb = !ub0;
    if (!lb0 || !st0 || *st0 < 1 || (ub0 && *ub0 - *lb0 < 2 * *st0) ||
        !op.getInitVals().empty())
      return false;
    // A loop over the batch's images is split even when small (down to a
    // 32nd of the threshold): every kernel of the model then hands the
    // same images to the same thread, and activations stay in that core's
    // cache instead of moving between cores at every serial kernel
    // (padding between two split convolutions, say).
    int64_t batch = batchSize(fn);
    bool overImages = batch > 1 && *lb0 == 0 && *st0 == 1 && ub0 && *ub0 == batch;
    // Likewise a loop marked to split like the kernels around it (one
    // image's rows or channels: kiln.spread).
    bool marked = op->hasAttr(kSpreadAttr);
    if (estimateWork(op) < (overImages || marked ? minWork / 32 : minWork))
      return false;
    // The pool splits [0, count) of the first loop's iterations; a block
    // tiling (step 16: blocks of output channels) maps i to lb + i * step.
    int64_t count = dynamicUb ? 0 : (*ub0 - *lb0 + *st0 - 1) / *st0;
    SetVector<Value> args;
    SetVector<Operation *> clones;
    if (!collectCaptures({op}, args, clones))
      return false;
    MLIRContext *ctx = &getContext();
    Location loc = op.getLoc();
    unsigned id = counter++;
    auto indexType = IndexType::get(ctx);

    // The task: for %i in [begin, end) run the rest of the nest.
    SmallVector<Type> taskInputs{indexType, indexType};
    for (Value v : args)
      taskInputs.push_back(v.getType());
    OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
    auto task = func::FuncOp::create(mb, loc, (fn.getName() + "_task" + Twine(id)).str(),
                                     FunctionType::get(ctx, taskInputs, {}));
    task.setPrivate();
    markNoAlias(task, 2);
    Block *entry = task.addEntryBlock();
    OpBuilder b = OpBuilder::atBlockBegin(entry);
    IRMapping map;
    materializeCaptures(b, args.getArrayRef(), entry->getArguments().drop_front(2),
                        clones.getArrayRef(), map);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto outer = scf::ForOp::create(b, loc, entry->getArgument(0), entry->getArgument(1), one);
    func::ReturnOp::create(b, loc);
    b.setInsertionPointToStart(outer.getBody());
    Value iv = outer.getInductionVar();
    if (*st0 != 1)
      iv = arith::MulIOp::create(b, loc, iv, arith::ConstantIndexOp::create(b, loc, *st0));
    if (*lb0 != 0)
      iv = arith::AddIOp::create(b, loc, iv, arith::ConstantIndexOp::create(b, loc, *lb0));
    map.map(op.getInductionVars()[0], iv);
    if (op.getNumLoops() == 1) {
      for (Operation &inner : op.getBody()->without_terminator())
        b.clone(inner, map);
    } else {
      auto rest = scf::ParallelOp::create(
          b, loc, llvm::map_to_vector(op.getLowerBound().drop_front(), [&](Value v) { return map.lookupOrDefault(v); }),
          llvm::map_to_vector(op.getUpperBound().drop_front(), [&](Value v) { return map.lookupOrDefault(v); }),
          llvm::map_to_vector(op.getStep().drop_front(), [&](Value v) { return map.lookupOrDefault(v); }));
      SmallVector<Value> ivs = op.getInductionVars();
      for (auto [from, to] : llvm::zip(ArrayRef<Value>(ivs).drop_front(), rest.getInductionVars()))
        map.map(from, to);
      b.setInsertionPointToStart(rest.getBody());
      for (Operation &inner : op.getBody()->without_terminator())
        b.clone(inner, map);
    }
    // The dispatcher declaration and the call replacing the loop.
    SmallVector<Type> dispatchInputs{indexType};
    for (Value v : args)
      dispatchInputs.push_back(v.getType());
    auto dispatch = func::FuncOp::create(mb, loc, ("__kiln_parallel_" + Twine(id)).str(),
                                         FunctionType::get(ctx, dispatchInputs, {}));
    dispatch.setPrivate();
    dispatch->setAttr(KilnDialect::getTaskAttrName(),
                      FlatSymbolRefAttr::get(task.getSymNameAttr()));
    OpBuilder cb(op);
    Value trips = *lb0 == 0 && *st0 == 1 ? op.getUpperBound()[0]
                  : dynamicUb ? tripsAtRunTime(cb, loc, op.getUpperBound()[0], *lb0, *st0)
                              : arith::ConstantIndexOp::create(cb, loc, count);
    SmallVector<Value> callArgs{trips};
    llvm::append_range(callArgs, args);
    func::CallOp::create(cb, loc, dispatch, callArgs);
    recordCost(task, op);
    op.erase();
    recordNodes(task, task);
    return true;
  }
};

} // namespace
} // namespace kiln

//===- Reductions.cpp - a block or a warp per reduced output element ------===//
//
// linalg.generic {iterators = [parallel x P, reduction x R]}
//     ins(%x) outs(%out) { %v = f(%x); %r = combine(%v, %out) }
//   =>
// gpu.func (block b = output element p) {
//   %acc = scf.for %r = thread_id to R step blockDim iter_args(%a = identity) {
//     combine(f(x[p, r]), %a) }
//   %all = gpu.all_reduce <combine> %acc uniform
//   if thread_id == 0 { out[p] = combine(%all, out[p]) }
// }
// Reassociating the reduction is the usual GPU trade (float sums change in
// their last bits).
//
//===----------------------------------------------------------------------===//

#include "KernelFactory.h"
#include "kiln/Lowering/Host/KernelCaptures.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <limits>

using namespace mlir;

namespace kiln {
namespace {

/// Fewer outputs than this, and at least kMinReduced reduced elements each,
/// and cooperating threads beat a thread per output.
constexpr int64_t kMaxOutputs = 65536;
constexpr int64_t kMinReduced = 64;
/// Reduced extents from here on get a 256-thread block, shorter ones a warp.
constexpr int64_t kBlockReduced = 1024;

/// The gpu.all_reduce kind of a combiner, and its identity element.
std::optional<std::pair<gpu::AllReduceOperation, TypedAttr>> combinerKind(Operation *op) {
  Type t = op->getResult(0).getType();
  auto f = dyn_cast<FloatType>(t);
  auto i = dyn_cast<IntegerType>(t);
  if (!(f && (f.getWidth() == 32 || f.getWidth() == 64)) &&
      !(i && (i.getWidth() == 32 || i.getWidth() == 64)))
    return std::nullopt;
  Builder b(op->getContext());
  auto fl = [&](double v) -> TypedAttr { return b.getFloatAttr(t, v); };
  auto in = [&](const APInt &v) -> TypedAttr { return b.getIntegerAttr(t, v); };
  unsigned w = i ? i.getWidth() : 0;
  using K = gpu::AllReduceOperation;
  double inf = std::numeric_limits<double>::infinity();
  if (f) {
    if (isa<arith::AddFOp>(op)) return {{K::ADD, fl(0)}};
    if (isa<arith::MulFOp>(op)) return {{K::MUL, fl(1)}};
    if (isa<arith::MaximumFOp>(op)) return {{K::MAXIMUMF, fl(-inf)}};
    if (isa<arith::MinimumFOp>(op)) return {{K::MINIMUMF, fl(inf)}};
    if (isa<arith::MaxNumFOp>(op)) return {{K::MAXNUMF, fl(-inf)}};
    if (isa<arith::MinNumFOp>(op)) return {{K::MINNUMF, fl(inf)}};
    return std::nullopt;
  }
  if (isa<arith::AddIOp>(op)) return {{K::ADD, in(APInt(w, 0))}};
  if (isa<arith::MulIOp>(op)) return {{K::MUL, in(APInt(w, 1))}};
  if (isa<arith::MaxSIOp>(op)) return {{K::MAXSI, in(APInt::getSignedMinValue(w))}};
  if (isa<arith::MinSIOp>(op)) return {{K::MINSI, in(APInt::getSignedMaxValue(w))}};
  if (isa<arith::MaxUIOp>(op)) return {{K::MAXUI, in(APInt(w, 0))}};
  if (isa<arith::MinUIOp>(op)) return {{K::MINUI, in(APInt::getMaxValue(w))}};
  if (isa<arith::AndIOp>(op)) return {{K::AND, in(APInt::getMaxValue(w))}};
  if (isa<arith::OrIOp>(op)) return {{K::OR, in(APInt(w, 0))}};
  if (isa<arith::XOrIOp>(op)) return {{K::XOR, in(APInt(w, 0))}};
  return std::nullopt;
}

} // namespace

std::optional<RowReduction> matchRowReduction(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 || op->getNumResults())
    return std::nullopt;
  auto iterators = op.getIteratorTypesArray();
  unsigned numParallel = 0;
  while (numParallel < iterators.size() && linalg::isParallelIterator(iterators[numParallel]))
    ++numParallel;
  if (numParallel == iterators.size() ||
      !llvm::all_of(ArrayRef(iterators).drop_front(numParallel),
                    [](auto t) { return linalg::isReductionIterator(t); }))
    return std::nullopt;
  // The output is indexed by the parallel loops, in order.
  OpOperand *init = op.getDpsInitOperand(0);
  AffineMap outMap = op.getMatchingIndexingMap(init);
  if (outMap.getNumResults() != numParallel)
    return std::nullopt;
  for (auto [k, e] : llvm::enumerate(outMap.getResults()))
    if (e != getAffineDimExpr(k, op.getContext()))
      return std::nullopt;
  auto c = matchCombiner(op);
  if (!c)
    return std::nullopt;
  return RowReduction{numParallel, c->combiner, c->kind, c->identity};
}

std::optional<Combiner> matchCombiner(linalg::LinalgOp op) {
  // The body: a value computed from the inputs, combined with the output.
  Block &body = *op.getBlock();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  BlockArgument outArg = body.getArgument(op.getNumDpsInputs());
  Operation *combiner = yield.getNumOperands() == 1 ? yield.getOperand(0).getDefiningOp() : nullptr;
  if (!combiner || combiner->getBlock() != &body || combiner->getNumOperands() != 2 ||
      !outArg.hasOneUse() || outArg.getUses().begin()->getOwner() != combiner)
    return std::nullopt;
  for (Operation &inner : body.without_terminator())
    if (inner.getNumRegions() || !(isPure(&inner) || isa<linalg::IndexOp>(inner)))
      return std::nullopt;
  auto kind = combinerKind(combiner);
  if (!kind)
    return std::nullopt;
  return Combiner{combiner, kind->first, kind->second};
}

bool readsRowsContiguously(linalg::LinalgOp op) {
  unsigned innermost = op.getNumLoops() - 1;
  for (OpOperand *in : op.getDpsInputOperands()) {
    if (!isa<MemRefType>(in->get().getType()))
      continue;
    AffineMap m = op.getMatchingIndexingMap(in);
    for (auto [i, e] : llvm::enumerate(m.getResults()))
      if (e.isFunctionOfDim(innermost) &&
          (i + 1 != m.getNumResults() || e != getAffineDimExpr(innermost, op.getContext())))
        return false;
  }
  return true;
}

void emitRowReduction(OpBuilder &b, Location loc, linalg::LinalgOp op, const RowReduction &r,
                      ArrayRef<Value> pivs, Value tid, int64_t block, IRMapping &map) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  // The reduced sizes, read from the kernel's buffers where dynamic (a
  // softmax over a sequence known at run time).
  SmallVector<Value> reducedSizes =
      llvm::to_vector(ArrayRef(loopSizesIn(b, loc, op, map)).drop_front(r.numParallel));
  Value reduced = productOf(b, loc, reducedSizes);
  Block &body = *op.getBlock();
  BlockArgument outArg = body.getArgument(op.getNumDpsInputs());
  Value identity = arith::ConstantOp::create(b, loc, r.identity);
  // Each thread takes `width` consecutive elements a step (16-byte loads)
  // when the inputs run along the innermost loop, one otherwise.
  int64_t width = reductionVectorWidth(op);
  int64_t step = std::max<int64_t>(width, 1);
  Value start = tid;
  if (width)
    start = arith::MulIOp::create(b, loc, tid, arith::ConstantIndexOp::create(b, loc, width));
  auto loop = scf::ForOp::create(b, loc, start, reduced,
                                 arith::ConstantIndexOp::create(b, loc, block * step),
                                 ValueRange{identity});
  {
    OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
    SmallVector<Value> ivs(pivs);
    llvm::append_range(ivs, delinearize(lb, loc, loop.getInductionVar(), reducedSizes));
    LaneValues lanes;
    if (width) {
      lanes = loadLanes(lb, loc, op, ivs, width, map, /*inputsOnly=*/true);
    } else {
      lanes.ivs = {ivs};
      lanes.maps = {map};
      for (OpOperand *in : op.getDpsInputOperands())
        lanes.maps[0].map(body.getArgument(in->getOperandNumber()),
                          loadAt(lb, loc, op, *in, ivs, map));
    }
    Value acc = loop.getRegionIterArg(0);
    for (size_t k = 0; k < lanes.maps.size(); ++k) {
      IRMapping &bodyMap = lanes.maps[k];
      bodyMap.map(outArg, acc);
      cloneBody(lb, op, lanes.ivs[k], bodyMap);
      acc = bodyMap.lookup(r.combiner->getResult(0));
    }
    scf::YieldOp::create(lb, loc, acc);
  }
  Value total = gpu::AllReduceOp::create(
      b, loc, loop.getResult(0), gpu::AllReduceOperationAttr::get(op.getContext(), r.kind),
      b.getUnitAttr());
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                                      arith::ConstantIndexOp::create(b, loc, 0));
  auto onlyFirst = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(onlyFirst.thenBlock());
  Value out = map.lookupOrDefault(op.getDpsInitOperand(0)->get());
  Value old = memref::LoadOp::create(b, loc, out, pivs);
  IRMapping finalMap;
  for (Value operand : r.combiner->getOperands())
    finalMap.map(operand, operand == outArg ? old : total);
  Value result = b.clone(*r.combiner, finalMap)->getResult(0);
  memref::StoreOp::create(b, loc, result, out, pivs);
}

LogicalResult outlineCooperativeReduction(KernelFactory &kernels, func::FuncOp fn,
                                          linalg::GenericOp op) {
  auto r = matchRowReduction(op);
  if (!r || llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic))
    return failure();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t outputs = 1, reduced = 1;
  for (unsigned d = 0; d < ranges.size(); ++d)
    (d < r->numParallel ? outputs : reduced) *= ranges[d];
  // With no parallel loop there is no thread per output to fall back on
  // (one thread would do it all): a warp, whatever the length and layout.
  bool whole = r->numParallel == 0;
  if (!whole && (outputs >= kMaxOutputs || reduced < kMinReduced || !readsRowsContiguously(op)))
    return failure();
  SetVector<Value> args;
  SetVector<Operation *> clones;
  if (!collectCaptures({op.getOperation()}, args, clones))
    return failure();
  int64_t block = reduced >= kBlockReduced ? 256 : 32;
  IRMapping map;
  OpBuilder b(op.getContext());
  kernels.create(fn, op, args, clones, outputs, block, map, b);
  Location loc = op.getLoc();
  SmallVector<int64_t> parallelSizes(ranges.begin(), ranges.begin() + r->numParallel);
  Value blockId = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  SmallVector<Value> pivs = delinearize(b, loc, blockId, parallelSizes);
  emitRowReduction(b, loc, op, *r, pivs, tid, block, map);
  op.erase();
  return success();
}

} // namespace kiln

//===- ColumnReduction.cpp - a warp's lanes over 32 outputs of a row ------===//
//
// linalg.generic {(r, n): x[r, n] -> out[n], iterators [reduction, parallel]}
//   =>
// gpu.func (block: outputs 32 t .. 32 t + 31, W warps; lane l, warp w) {
//   %acc = scf.for %r = w to R step W iter_args(%a = identity) {
//     combine(f(x[r, 32 t + l]), %a) }          (a warp: 128 bytes of a row)
//   partial[w][l] = %acc; barrier
//   warp 0: out[32 t + l] = combine(partial[0..W-1][l]..., out[32 t + l])
// }
// Leading parallel loops (a batch of such sums) take blocks of their own.
// The warps' partial results meet in a fixed order: the sum is the same
// from run to run (reassociated, as every GPU reduction is).
//
//===----------------------------------------------------------------------===//

#include "KernelFactory.h"
#include "kiln/Lowering/KernelCaptures.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace kiln {
namespace {

constexpr int64_t kLanes = 32;
/// Fewer reduced rows than this, and a thread per output does as well.
constexpr int64_t kMinRows = 64;
/// Blocks under this many (a GPU has 100-odd multiprocessors) get 32 warps
/// each instead of 8, so the few there are keep more rows in flight.
constexpr int64_t kFewBlocks = 128;

struct ColumnPlan {
  SmallVector<int64_t> ranges;
  SmallVector<unsigned> parallel, reduced;
  SmallVector<int64_t> reducedSizes, outerSizes;
  int64_t rows = 1, tiles = 0, blocks = 0;
  Combiner c;
  SetVector<Value> args;
  SetVector<Operation *> clones;
};

std::optional<ColumnPlan> planColumnReduction(linalg::LinalgOp op) {
  ColumnPlan p;
  if (!isa<linalg::GenericOp>(op.getOperation()) || !op.hasPureBufferSemantics() ||
      op.getNumDpsInits() != 1 || op->getNumResults())
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  const unsigned rank = ranges.size();
  auto iterators = op.getIteratorTypesArray();
  if (rank < 2 || op.getNumReductionLoops() == 0 || op.getNumParallelLoops() == 0 ||
      llvm::any_of(ranges, ShapedType::isDynamic))
    return std::nullopt;
  // The output: the parallel loops in order, the last one (`inner`)
  // contiguous. kiln-gpu-parallel-first has put the parallel loops first,
  // so it is no longer the innermost loop; what matters is that the
  // inputs run along it in memory (a warp's lanes, 32 consecutive
  // outputs, read consecutive elements).
  SmallVector<unsigned> parallel, reduced;
  for (unsigned d = 0; d < rank; ++d)
    (linalg::isParallelIterator(iterators[d]) ? parallel : reduced).push_back(d);
  const unsigned inner = parallel.back();
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (outMap.getNumResults() != parallel.size())
    return std::nullopt;
  for (auto [e, d] : llvm::zip(outMap.getResults(), parallel))
    if (e != getAffineDimExpr(d, op.getContext()))
      return std::nullopt;
  auto outType = dyn_cast<MemRefType>(op.getDpsInitOperand(0)->get().getType());
  if (!outType || !outType.isLastDimUnitStride())
    return std::nullopt;
  bool along = false; // some input runs along `inner` (else rows are the way)
  for (OpOperand *in : op.getDpsInputOperands()) {
    auto type = dyn_cast<MemRefType>(in->get().getType());
    if (!type)
      continue;
    AffineMap m = op.getMatchingIndexingMap(in);
    for (auto [i, e] : llvm::enumerate(m.getResults()))
      if (e.isFunctionOfDim(inner) &&
          (i + 1 != m.getNumResults() || e != getAffineDimExpr(inner, op.getContext()) ||
           !type.isLastDimUnitStride()))
        return std::nullopt;
    along |= m.isFunctionOfDim(inner);
  }
  if (!along)
    return std::nullopt;
  auto c = matchCombiner(op);
  if (!c)
    return std::nullopt;
  int64_t rows = 1, outer = 1;
  SmallVector<int64_t> reducedSizes, outerSizes;
  for (unsigned d : reduced) {
    rows *= ranges[d];
    reducedSizes.push_back(ranges[d]);
  }
  for (unsigned d : ArrayRef(parallel).drop_back()) {
    outer *= ranges[d];
    outerSizes.push_back(ranges[d]);
  }
  if (rows < kMinRows)
    return std::nullopt;
  const int64_t tiles = (ranges[inner] + kLanes - 1) / kLanes;
  int64_t blocks;
  if (__builtin_mul_overflow(outer, tiles, &blocks) ||
      blocks > std::numeric_limits<int32_t>::max())
    return std::nullopt;
  SetVector<Value> args;
  SetVector<Operation *> clones;
  if (!collectCaptures({op.getOperation()}, args, clones))
    return std::nullopt;
  p.ranges = ranges;
  p.parallel = parallel;
  p.reduced = reduced;
  p.reducedSizes = reducedSizes;
  p.outerSizes = outerSizes;
  p.rows = rows;
  p.tiles = tiles;
  p.blocks = blocks;
  p.c = *c;
  p.args = std::move(args);
  p.clones = std::move(clones);
  return p;
}
} // namespace

bool isColumnReduction(linalg::LinalgOp op) { return planColumnReduction(op).has_value(); }

LogicalResult outlineColumnReduction(KernelFactory &kernels, func::FuncOp fn,
                                     linalg::GenericOp op, std::optional<double> init) {
  auto plan = planColumnReduction(op);
  if (!plan)
    return failure();
  auto &ranges = plan->ranges;
  auto &parallel = plan->parallel;
  auto &reduced = plan->reduced;
  const unsigned rank = ranges.size(), inner = parallel.back();
  const int64_t rows = plan->rows, tiles = plan->tiles, blocks = plan->blocks;
  const Combiner *c = &plan->c;
  const int64_t warps = blocks < kFewBlocks ? 32 : 8;

  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  IRMapping map;
  OpBuilder b(ctx);
  auto kernel = kernels.create(fn, op, plan->args, plan->clones, blocks, warps * kLanes, map, b);
  Type elt = c->identity.getType();
  auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Value partial = kernel.addWorkgroupAttribution(
      MemRefType::get({warps, kLanes}, elt, MemRefLayoutAttrInterface(), workgroup), loc);
  auto cst = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value lane = arith::RemUIOp::create(b, loc, tid, cst(kLanes));
  Value warp = arith::DivUIOp::create(b, loc, tid, cst(kLanes));
  SmallVector<int64_t> gridSizes(plan->outerSizes);
  gridSizes.push_back(tiles);
  SmallVector<Value> at =
      delinearize(b, loc, gpu::BlockIdOp::create(b, loc, gpu::Dimension::x), gridSizes);
  SmallVector<Value> pivs(at.begin(), at.end() - 1);
  pivs.push_back(arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, at.back(), cst(kLanes)), lane));
  Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, pivs.back(),
                                       cst(ranges[inner]));

  // This thread's rows: warp, warp + W, ... (each row 128 bytes across the
  // warp), combined in order.
  Block &body = *op.getBlock();
  BlockArgument outArg = body.getArgument(op.getNumDpsInputs());
  Value identity = arith::ConstantOp::create(b, loc, c->identity);
  auto loop = scf::ForOp::create(b, loc, warp, cst(rows), cst(warps), ValueRange{identity});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value acc = loop.getRegionIterArg(0);
    // Lanes past the outputs' end add nothing (and read nothing).
    auto check = scf::IfOp::create(b, loc, TypeRange{elt}, inside, /*withElseRegion=*/true);
    b.setInsertionPointToStart(check.elseBlock());
    scf::YieldOp::create(b, loc, acc);
    b.setInsertionPointToStart(check.thenBlock());
    SmallVector<Value> ivs(rank);
    for (auto [d, v] : llvm::zip(parallel, pivs))
      ivs[d] = v;
    for (auto [d, v] :
         llvm::zip(reduced, delinearize(b, loc, loop.getInductionVar(), plan->reducedSizes)))
      ivs[d] = v;
    IRMapping bodyMap = map;
    for (OpOperand *in : op.getDpsInputOperands())
      bodyMap.map(body.getArgument(in->getOperandNumber()), loadAt(b, loc, op, *in, ivs, map));
    bodyMap.map(outArg, acc);
    for (Operation &inner : body.without_terminator()) {
      if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
        bodyMap.map(index.getResult(), ivs[index.getDim()]);
        continue;
      }
      b.clone(inner, bodyMap);
    }
    scf::YieldOp::create(b, loc, bodyMap.lookup(c->combiner->getResult(0)));
    b.setInsertionPointAfter(check);
    scf::YieldOp::create(b, loc, check.getResult(0));
  }
  memref::StoreOp::create(b, loc, loop.getResult(0), partial, ValueRange{warp, lane});
  gpu::BarrierOp::create(b, loc);
  // Warp 0 adds the warps' results in order, then into the output.
  Value last = arith::AndIOp::create(
      b, loc, inside,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, warp, cst(0)));
  auto store = scf::IfOp::create(b, loc, last, /*withElseRegion=*/false);
  b.setInsertionPointToStart(store.thenBlock());
  Value total = memref::LoadOp::create(b, loc, partial, ValueRange{cst(0), lane});
  auto combine = [&](Value x, Value y) {
    IRMapping m;
    m.map(c->combiner->getOperand(0), x);
    m.map(c->combiner->getOperand(1), y);
    return b.clone(*c->combiner, m)->getResult(0);
  };
  for (int64_t w = 1; w < warps; ++w)
    total = combine(total, memref::LoadOp::create(b, loc, partial, ValueRange{cst(w), lane}));
  Value out = map.lookupOrDefault(op.getDpsInitOperand(0)->get());
  // combine(value, out) in the body's operand order; `out` as the fill
  // before left it, when that fill is gone.
  Value old = init ? arith::ConstantOp::create(b, loc, b.getFloatAttr(elt, *init)).getResult()
                   : memref::LoadOp::create(b, loc, out, pivs).getResult();
  Value result = c->combiner->getOperand(0) == outArg ? combine(old, total) : combine(total, old);
  memref::StoreOp::create(b, loc, result, out, pivs);
  op.erase();
  return success();
}

} // namespace kiln

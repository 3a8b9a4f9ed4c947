//===- ColumnReduction.cpp - a warp's lanes over a row of outputs ---------===//
//
// linalg.generic {(n, r): x[r, n] -> out[n], iterators [parallel, reduction]}
//   =>
// gpu.func (block: outputs C t .. C t + C - 1; W warps; lane l of warp w:
//           output l % C, slot s = w * 32/C + l / C) {
//   acc0..acc3 = scf.for %r = s to R step 4 * S {     (S = W * 32/C slots)
//     acc_u = combine(f(x[r + u S, C t + l % C]), acc_u) }  (4 loads in flight)
//   partial[s][l % C] = combine(acc0, acc1, acc2, acc3); barrier
//   threads 0..C-1: out[C t + l] = combine(partial[0..S-1][l]..., out[..])
// }
// C is 32 (a warp reads 128 bytes of a row), or 16 or 8 (2 or 4 rows an
// access, whole sectors still) when 32 would leave too few blocks to fill
// a GPU. Leading parallel loops (a batch of such sums) take blocks of their
// own. The partial results meet in a fixed order: the sum is the same from
// run to run (reassociated, as every GPU reduction is).
//
//===----------------------------------------------------------------------===//

#include "KernelFactory.h"
#include "kiln/Lowering/Host/KernelCaptures.h"

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
/// Outputs a block goes down to 8 (32 bytes of f32 a row: a sector) while
/// the blocks are fewer than two for each of 132 multiprocessors; blocks
/// still that few get 32 warps each instead of 8, to keep more rows in
/// flight (a GPU needs megabytes in flight to stream at full bandwidth).
constexpr int64_t kMinCols = 8, kWantBlocks = 264, kFewBlocks = kWantBlocks;
/// Rows a thread has in flight: independent loads, combined in order.
constexpr int64_t kUnroll = 4;

struct ColumnPlan {
  SmallVector<int64_t> ranges;
  SmallVector<unsigned> parallel, reduced;
  SmallVector<int64_t> reducedSizes, outerSizes;
  int64_t rows = 1, tiles = 0, blocks = 0, cols = 0;
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
  // Outputs a block: 32 (a warp's row access 128 bytes), or 16 or 8 (2 or
  // 4 rows an access, still whole sectors) when 32 leave the GPU short of
  // blocks.
  int64_t cols = kLanes, tiles = 0, blocks = 0;
  for (;; cols /= 2) {
    tiles = (ranges[inner] + cols - 1) / cols;
    if (__builtin_mul_overflow(outer, tiles, &blocks) ||
        blocks > std::numeric_limits<int32_t>::max())
      return std::nullopt;
    if (cols == kMinCols || blocks >= kWantBlocks)
      break;
  }
  p.cols = cols;
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
  const int64_t cols = plan->cols, slots = kLanes / cols; // rows a warp access
  const int64_t stride = warps * slots;                    // rows a block step

  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  IRMapping map;
  OpBuilder b(ctx);
  auto kernel = kernels.create(fn, op, plan->args, plan->clones, blocks, warps * kLanes, map, b);
  Type elt = c->identity.getType();
  auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Value partial = kernel.addWorkgroupAttribution(
      MemRefType::get({stride, cols}, elt, MemRefLayoutAttrInterface(), workgroup), loc);
  auto cst = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  auto cmp = [&](arith::CmpIPredicate pred, Value x, Value y) -> Value {
    return arith::CmpIOp::create(b, loc, pred, x, y);
  };
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  // Lane l: output l % cols, row slot l / cols of its warp's access.
  Value col = arith::RemUIOp::create(b, loc, tid, cst(cols));
  Value slot = arith::DivUIOp::create(b, loc, tid, cst(cols)); // warp * slots + l / cols
  SmallVector<int64_t> gridSizes(plan->outerSizes);
  gridSizes.push_back(tiles);
  SmallVector<Value> at =
      delinearize(b, loc, gpu::BlockIdOp::create(b, loc, gpu::Dimension::x), gridSizes);
  SmallVector<Value> pivs(at.begin(), at.end() - 1);
  pivs.push_back(arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, at.back(), cst(cols)), col));
  Value inside = cmp(arith::CmpIPredicate::ult, pivs.back(), cst(ranges[inner]));

  // This thread's rows: slot, slot + stride, ..., kUnroll of them a step
  // (loads in flight together), each row of the block's outputs one access
  // across the warp; the accumulators combined in order at the end.
  Block &body = *op.getBlock();
  BlockArgument outArg = body.getArgument(op.getNumDpsInputs());
  Value identity = arith::ConstantOp::create(b, loc, c->identity);
  auto combine = [&](Value x, Value y) {
    IRMapping m;
    m.map(c->combiner->getOperand(0), x);
    m.map(c->combiner->getOperand(1), y);
    return b.clone(*c->combiner, m)->getResult(0);
  };
  // combine(f(inputs at `row`), acc) when `row` is one of the rows and the
  // lane's output exists; acc otherwise.
  auto step = [&](Value acc, Value row) -> Value {
    Value valid = arith::AndIOp::create(b, loc, inside, cmp(arith::CmpIPredicate::ult, row,
                                                            cst(rows)));
    auto check = scf::IfOp::create(b, loc, TypeRange{elt}, valid, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(check.elseBlock());
    scf::YieldOp::create(b, loc, acc);
    b.setInsertionPointToStart(check.thenBlock());
    SmallVector<Value> ivs(rank);
    for (auto [d, v] : llvm::zip(parallel, pivs))
      ivs[d] = v;
    for (auto [d, v] : llvm::zip(reduced, delinearize(b, loc, row, plan->reducedSizes)))
      ivs[d] = v;
    IRMapping bodyMap = map;
    for (OpOperand *in : op.getDpsInputOperands())
      bodyMap.map(body.getArgument(in->getOperandNumber()), loadAt(b, loc, op, *in, ivs, map));
    bodyMap.map(outArg, acc);
    cloneBody(b, op, ivs, bodyMap);
    scf::YieldOp::create(b, loc, bodyMap.lookup(c->combiner->getResult(0)));
    return check.getResult(0);
  };
  auto loop = scf::ForOp::create(b, loc, slot, cst(rows), cst(stride * kUnroll),
                                 SmallVector<Value>(kUnroll, identity));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> accs;
    for (int64_t u = 0; u < kUnroll; ++u)
      accs.push_back(step(loop.getRegionIterArg(u),
                          arith::AddIOp::create(b, loc, loop.getInductionVar(), cst(u * stride))));
    scf::YieldOp::create(b, loc, accs);
  }
  Value mine = loop.getResult(0);
  for (int64_t u = 1; u < kUnroll; ++u)
    mine = combine(mine, loop.getResult(u));
  memref::StoreOp::create(b, loc, mine, partial, ValueRange{slot, col});
  gpu::BarrierOp::create(b, loc);
  // The first `cols` threads add the slots' results in order, then into
  // the output.
  Value last = arith::AndIOp::create(b, loc, inside,
                                     cmp(arith::CmpIPredicate::ult, tid, cst(cols)));
  auto store = scf::IfOp::create(b, loc, last, /*withElseRegion=*/false);
  b.setInsertionPointToStart(store.thenBlock());
  Value total = memref::LoadOp::create(b, loc, partial, ValueRange{cst(0), col});
  for (int64_t w = 1; w < stride; ++w)
    total = combine(total, memref::LoadOp::create(b, loc, partial, ValueRange{cst(w), col}));
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

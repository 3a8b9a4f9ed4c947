//===- RowGroups.cpp - softmax, layer-norm... as one kernel ---------------===//
//
// Consecutive linalg ops over the same leading (row) loops P, at least one a
// row reduction:
//   max[p] = reduce(x[p, :]); e[p, :] = exp(x[p, :] - max[p]);
//   sum[p] = reduce(e[p, :]); y[p, :] = e[p, :] / sum[p]
//   =>
// gpu.func (block b = row p) {
//   threads stride over row p for each op in turn (a reduction ends in
//   gpu.all_reduce and one thread's store), gpu.barrier between ops
// }
// A block sees its own row's earlier writes after the barrier. A buffer
// only the group touches, written before it is read, keeps its row in
// shared memory instead (one row per block: the rows' strides are 0). Rows of
// different blocks run in any order, so an op joins only when what it
// writes can't be what another row still reads: intermediates are read
// back at the same row, and no buffer written in the group shares bytes
// with another buffer the group touches (the memory plan reuses bytes of
// buffers that are dead in program order, which a fused kernel is not).
//
// A small contraction over the rows joins too: parallel loops past the
// rows, then reduced ones, each thread computing its outputs whole (a
// sequential loop over the reduced indices). Attention's Q K^T, mask,
// softmax and P V over short sequences are then one kernel, a block per
// query row with its scores in shared memory, instead of three launches:
// each row reads its head's K and V again (from L1/L2), so only while that
// is small (kMaxRowWork products a row).
//
//===----------------------------------------------------------------------===//

#include "KernelFactory.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Lowering/Host/KernelCaptures.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <limits>

using namespace mlir;

namespace kiln {
namespace {

/// Rows shorter than this stay with the per-op kernels (a block is at least
/// a warp; half of it idle still beats a launch per op).
constexpr int64_t kMinRow = 16;

/// The most multiply-adds a row of a contraction may take (its parallel
/// extent past the rows times its reduced one): each row reads as many
/// elements of the operands that are not its own (attention's K and V,
/// 16x16 per head in the examples; 64x64 at most).
constexpr int64_t kMaxRowWork = 4096;

/// The ops whose sizes are compared for one group at most.
constexpr size_t kMaxGroupOps = 64;

/// What a row of unknown largest length counts as: wide.
constexpr int64_t kUnboundedRow = 1 << 20;

enum class RowOp { Elementwise, Reduction, Contraction };

/// True when `map` indexes by the first `rows` loops in order, and by them
/// nowhere else.
bool rowConsistent(AffineMap map, unsigned rows) {
  if (map.getNumResults() < rows)
    return false;
  for (auto [i, e] : llvm::enumerate(map.getResults())) {
    if (i < rows) {
      if (e != getAffineDimExpr(i, map.getContext()))
        return false;
      continue;
    }
    for (unsigned d = 0; d < rows; ++d)
      if (e.isFunctionOfDim(d))
        return false;
  }
  return true;
}

/// How `op` runs in a row group with `rows` leading loops (already checked
/// parallel): all parallel; reduced over the rest by the block's threads
/// together; or parallel past the rows, then reduced, by one thread an
/// output. nullopt when none fits.
std::optional<RowOp> rowOpKind(linalg::LinalgOp op, unsigned rows) {
  auto iterators = op.getIteratorTypesArray();
  if (op.getNumParallelLoops() == op.getNumLoops())
    return RowOp::Elementwise;
  if (auto r = matchRowReduction(op); r && r->numParallel == rows && readsRowsContiguously(op))
    return RowOp::Reduction;
  unsigned parallel = rows;
  while (parallel < iterators.size() && linalg::isParallelIterator(iterators[parallel]))
    ++parallel;
  if (parallel == rows || parallel == iterators.size() ||
      !llvm::all_of(ArrayRef(iterators).drop_front(parallel),
                    [](auto t) { return linalg::isReductionIterator(t); }))
    return std::nullopt;
  // Matmul-like: each operand indexed by loops (a convolution's windows
  // and padding stay with their own kernels).
  if (!llvm::all_of(op.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isProjectedPermutation(); }))
    return std::nullopt;
  // A size known at run time counts at its largest (attention's keys over
  // a dynamic sequence: the declared maximum).
  int64_t work = 1;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges(); // outlives the loop
  auto inputMax = op->getParentOfType<ModuleOp>()->getAttrOfType<ArrayAttr>(
      KilnDialect::getInputDimMaxAttrName());
  for (unsigned d = rows; d < ranges.size(); ++d) {
    std::optional<int64_t> r = ranges[d];
    if (ShapedType::isDynamic(*r))
      r = largestLoop(op, d, inputMax);
    if (!r || *r > kMaxRowWork || (work *= std::max<int64_t>(*r, 1)) > kMaxRowWork)
      return std::nullopt;
  }
  return RowOp::Contraction;
}

struct Access {
  Bytes bytes;
  bool row; // indexed by the rows first, its leading dimensions the rows
};

/// One op's accesses when it can run row by row with `rows` leading loops
/// of sizes `rowSizes` (`same` knows which sizes known at run time are
/// equal): reads then writes.
std::optional<std::pair<SmallVector<Access>, SmallVector<Access>>>
rowAccesses(linalg::LinalgOp op, ArrayRef<Extent> rowSizes, const SameExtents &same) {
  unsigned rows = rowSizes.size();
  if (!op.hasPureBufferSemantics() || op->getNumResults() || op.getNumLoops() < rows)
    return std::nullopt;
  auto iterators = op.getIteratorTypesArray();
  for (unsigned d = 0; d < rows; ++d)
    if (!same.equal(loopExtent(op, d), rowSizes[d]) || !linalg::isParallelIterator(iterators[d]))
      return std::nullopt;
  if (!rowOpKind(op, rows))
    return std::nullopt;
  for (Operation &inner : op.getBlock()->without_terminator())
    if (inner.getNumRegions() || !(isPure(&inner) || isa<linalg::IndexOp>(inner)))
      return std::nullopt;
  SmallVector<Access> reads, writes;
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType()))
      continue;
    auto bytes = bytesOf(operand.get());
    if (!bytes)
      return std::nullopt;
    bool row = rowConsistent(op.getMatchingIndexingMap(&operand), rows);
    for (unsigned d = 0; row && d < rows; ++d)
      row = same.equal(dimExtent(operand.get(), d), rowSizes[d]);
    Access a{*bytes, row};
    if (op.isDpsInit(&operand)) {
      if (!a.row)
        return std::nullopt; // each block writes its own row only
      writes.push_back(a);
      if (!op.getMatchingBlockArgument(&operand).use_empty())
        reads.push_back(a);
    } else {
      reads.push_back(a);
    }
  }
  return std::make_pair(reads, writes);
}

/// Whether `w` (written) and `x` may meet across rows: the same bytes laid
/// out by rows (any view of them) don't.
bool conflict(const Access &w, const Access &x) {
  bool same = w.bytes.root == x.bytes.root && w.bytes.begin == x.bytes.begin &&
              w.bytes.end == x.bytes.end;
  return w.bytes.overlaps(x.bytes) && !(same && w.row && x.row);
}

/// The buffers (kernel arguments) that only `group` touches, each first
/// written whole by an op that does not read it, always at the block's own
/// row: their rows can live in shared memory instead. With their bytes
/// per row; at most `budget` bytes in all.
SmallVector<std::pair<Value, int64_t>> rowLocalBuffers(ArrayRef<linalg::LinalgOp> group,
                                                       const SetVector<Value> &args,
                                                       const SetVector<Operation *> &clones,
                                                       ArrayRef<int64_t> rowSizes,
                                                       int64_t budget) {
  unsigned rows = rowSizes.size();
  llvm::SmallPtrSet<Operation *, 8> members;
  for (linalg::LinalgOp op : group)
    members.insert(op);
  SmallVector<std::pair<Value, int64_t>> local;
  int64_t used = 0;
  // Scratch the memory plan placed (a view of the arena): inputs, outputs
  // and weights are seen from outside. Or a reshape of such scratch that
  // nothing else views (a reduction's row scalars, [rows] of [rows, 1]).
  auto scratch = [](Value v) {
    return isa_and_nonnull<memref::ViewOp, memref::AllocOp>(v.getDefiningOp());
  };
  SmallVector<Value> candidates(args.begin(), args.end());
  for (Operation *c : clones)
    if (isa<memref::CollapseShapeOp, memref::ExpandShapeOp>(c) && scratch(c->getOperand(0)) &&
        c->getOperand(0).hasOneUse())
      candidates.push_back(c->getResult(0));
  for (Value v : candidates) {
    auto type = dyn_cast<MemRefType>(v.getType());
    bool reshaped = isa_and_nonnull<memref::CollapseShapeOp, memref::ExpandShapeOp>(v.getDefiningOp());
    if (!type || !(scratch(v) || reshaped) || !type.hasStaticShape() ||
        !type.getLayout().isIdentity() ||
        type.getRank() < (int64_t)rows || type.getShape().take_front(rows) != rowSizes ||
        !type.getElementType().isIntOrFloat() ||
        !llvm::all_of(v.getUsers(), [&](Operation *u) { return members.contains(u); }))
      continue;
    bool written = false, ok = true;
    for (linalg::LinalgOp op : group) {
      for (OpOperand &operand : op->getOpOperands()) {
        if (operand.get() != v)
          continue;
        ok &= rowConsistent(op.getMatchingIndexingMap(&operand), rows);
        bool init = op.isDpsInit(&operand);
        bool reads = !init || !op.getMatchingBlockArgument(&operand).use_empty();
        // The first op to touch it writes all of its row without reading
        // it (an elementwise op: every element of the row, once).
        if (!written)
          ok &= init && !reads && op.getNumParallelLoops() == op.getNumLoops();
      }
      written |= llvm::is_contained(op->getOperands(), v);
    }
    int64_t bytes = type.getElementTypeBitWidth() / 8;
    for (int64_t d : type.getShape().drop_front(rows))
      bytes *= d;
    bytes = (bytes + 15) / 16 * 16;
    if (!ok || !written || bytes <= 0 || used + bytes > budget)
      continue;
    local.push_back({v, bytes});
    used += bytes;
  }
  return local;
}

/// The iterations of a row the block's threads share: a contraction's
/// outputs (each thread reduces its own), every other op's loops past the
/// rows; a dynamic one's at most (`same` bounds it), or kUnboundedRow.
int64_t rowWidth(linalg::LinalgOp op, unsigned rows, const SameExtents &same) {
  int64_t n = 1;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  auto iterators = op.getIteratorTypesArray();
  bool contraction = rowOpKind(op, rows) == RowOp::Contraction;
  auto inputMax = op->getParentOfType<ModuleOp>()->getAttrOfType<ArrayAttr>(
      KilnDialect::getInputDimMaxAttrName());
  for (unsigned d = rows; d < ranges.size(); ++d) {
    if (contraction && !linalg::isParallelIterator(iterators[d]))
      continue;
    int64_t r = ranges[d];
    if (ShapedType::isDynamic(r))
      r = same.bound(loopExtent(op, d), inputMax).value_or(kUnboundedRow);
    n = std::min(n * std::max<int64_t>(r, 1), kUnboundedRow);
  }
  return n;
}

/// A contraction's row: threads stride over its outputs, each looping over
/// the reduced indices from the output's value (the fill before it, in the
/// group), the body folded in order.
void emitRowContraction(OpBuilder &b, Location loc, linalg::LinalgOp op, ArrayRef<Value> pivs,
                        Value tid, int64_t block, IRMapping &map) {
  unsigned rows = pivs.size();
  unsigned parallel = op.getNumParallelLoops();
  // The sizes (read from the kernel's buffers where dynamic), made above
  // the loops that use them.
  SmallVector<Value> sizes = loopSizesIn(b, loc, op, map);
  SmallVector<Value> inner(sizes.begin() + rows, sizes.begin() + parallel);
  SmallVector<Value> reduced(sizes.begin() + parallel, sizes.end());
  auto loop = scf::ForOp::create(b, loc, tid, productOf(b, loc, inner),
                                 arith::ConstantIndexOp::create(b, loc, block));
  OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
  // Constants at the top of the loop's body, above every use.
  auto cst = [&](int64_t v) { return arith::ConstantIndexOp::create(lb, loc, v).getResult(); };
  SmallVector<Value> ivs(pivs);
  llvm::append_range(ivs, delinearize(lb, loc, loop.getInductionVar(), ArrayRef<Value>(inner)));
  // The outputs' maps don't use the reduced loops: any index does.
  SmallVector<Value> outIvs(ivs);
  outIvs.append(reduced.size(), cst(0));
  SmallVector<Value> accs;
  for (OpOperand &init : op.getDpsInitsMutable())
    accs.push_back(loadAt(lb, loc, op, init, outIvs, map));
  // One loop per reduced dimension, innermost last, carrying the outputs
  // (their bounds made first, above the outermost).
  ArrayRef<Value> bounds = reduced;
  Value zero = cst(0), one = cst(1);
  SmallVector<scf::ForOp> nest;
  OpBuilder nb = lb;
  for (Value bound : bounds) {
    auto f = scf::ForOp::create(nb, loc, zero, bound, one,
                                nest.empty() ? ValueRange(accs) : nest.back().getRegionIterArgs());
    if (!nest.empty())
      scf::YieldOp::create(nb, loc, f.getResults());
    nest.push_back(f);
    ivs.push_back(f.getInductionVar());
    nb = OpBuilder::atBlockBegin(f.getBody());
  }
  IRMapping bodyMap = map;
  for (OpOperand *in : op.getDpsInputOperands())
    if (!op.getMatchingBlockArgument(in).use_empty())
      bodyMap.map(op.getMatchingBlockArgument(in), loadAt(nb, loc, op, *in, ivs, map));
  for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable()))
    bodyMap.map(op.getMatchingBlockArgument(&init), nest.back().getRegionIterArgs()[i]);
  cloneBody(nb, op, ivs, bodyMap);
  auto yield = cast<linalg::YieldOp>(op.getBlock()->getTerminator());
  scf::YieldOp::create(nb, loc,
                       llvm::map_to_vector(yield.getOperands(), [&](Value v) {
                         return bodyMap.lookupOrDefault(v);
                       }));
  for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable()))
    memref::StoreOp::create(lb, loc, nest.front().getResult(i), map.lookupOrDefault(init.get()),
                            indicesAt(lb, loc, op, init, outIvs));
}

} // namespace

RowGroup formRowGroup(ArrayRef<Operation *> ops, size_t start,
                      function_ref<bool(Operation &)> isHostOnly) {
  // The candidates: linalg ops from `start`, host-only ops skipped.
  SmallVector<linalg::LinalgOp> run;
  for (size_t i = start; i < ops.size(); ++i) {
    if (auto op = dyn_cast<linalg::LinalgOp>(ops[i])) {
      run.push_back(op);
      continue;
    }
    if (!isHostOnly(*ops[i]))
      break;
  }
  // What the ops require of their sizes; a group is a prefix of the run,
  // so the first few ops say what it needs (this runs at every op).
  SameExtents same;
  for (linalg::LinalgOp op : ArrayRef(run).take_front(kMaxGroupOps))
    same.add(op);
  // The ops from the first that join a group over rows `rowSizes`.
  auto grow = [&](ArrayRef<Extent> rowSizes) {
    RowGroup g;
    g.rows = rowSizes.size();
    SmallVector<Access> reads, writes;
    bool hasReduction = false;
    int64_t widest = 0;
    for (linalg::LinalgOp op : run) {
      auto acc = rowAccesses(op, rowSizes, same);
      if (!acc)
        break;
      auto &[r, w] = *acc;
      bool ok = true;
      for (const Access &x : w) {
        for (const Access &y : reads)
          ok &= !conflict(x, y);
        for (const Access &y : writes)
          ok &= !conflict(x, y);
        for (const Access &y : r)
          ok &= !conflict(x, y);
      }
      for (const Access &x : r)
        for (const Access &y : writes)
          ok &= !conflict(y, x);
      if (!ok)
        break;
      g.ops.push_back(op);
      llvm::append_range(reads, r);
      llvm::append_range(writes, w);
      hasReduction |= rowOpKind(op, g.rows) == RowOp::Reduction;
      widest = std::max(widest, rowWidth(op, g.rows, same));
    }
    // Worth one kernel: a reduction with something around it, and rows
    // wide enough to keep a block's threads busy.
    if (g.ops.size() < 2 || !hasReduction || widest < kMinRow)
      g.ops.clear();
    g.widest = widest;
    return g;
  };
  // The rows are the parallel loops of a reduction over contiguous rows:
  // the first few such reductions are tried (attention's Q K^T reduces
  // along K's columns, its softmax after it along the rows), the longest
  // group wins.
  // A group starts at the run's first op, so a reduction behind several
  // others could only join if they all did: a few are looked at, not the
  // whole function (this runs at every op).
  RowGroup best;
  SmallVector<unsigned> tried;
  int examined = 0;
  for (linalg::LinalgOp op : run) {
    if (op.getNumParallelLoops() == op.getNumLoops())
      continue;
    if (tried.size() == 3 || ++examined > 4)
      break;
    auto r = matchRowReduction(op);
    if (!r || !readsRowsContiguously(op) || llvm::is_contained(tried, r->numParallel))
      continue;
    tried.push_back(r->numParallel);
    SmallVector<Extent> rowSizes;
    int64_t numRows = 1; // its static part (the launch checks the whole)
    for (unsigned d = 0; d < r->numParallel; ++d) {
      rowSizes.push_back(loopExtent(op, d));
      if (!rowSizes.back().dynamic())
        numRows *= rowSizes.back().size;
    }
    if (rowSizes.empty() || numRows > std::numeric_limits<int32_t>::max()) // a block per row
      continue;
    RowGroup g = grow(rowSizes);
    if (g.ops.size() > best.ops.size())
      best = std::move(g);
  }
  if (best.ops.empty())
    return best;
  // Only identity-layout buffers can be kernel parameters.
  SetVector<Value> args;
  SetVector<Operation *> clones;
  SmallVector<Operation *> members =
      llvm::map_to_vector(best.ops, [](linalg::LinalgOp op) { return op.getOperation(); });
  if (!collectCaptures(members, args, clones))
    return {};
  return best;
}

bool RowGroup::hasContraction() const {
  return llvm::any_of(ops, [&](linalg::LinalgOp op) {
    return rowOpKind(op, rows) == RowOp::Contraction;
  });
}

void outlineRowGroup(KernelFactory &kernels, func::FuncOp fn, const RowGroup &rowGroup) {
  SmallVector<linalg::LinalgOp> group(rowGroup.ops);
  unsigned rows = rowGroup.rows;
  SmallVector<int64_t> ranges = group.front().getStaticLoopRanges();
  SmallVector<int64_t> rowSizes(ranges.begin(), ranges.begin() + rows);
  bool dynamicRows = llvm::any_of(rowSizes, ShapedType::isDynamic);
  int64_t numRows = 1, widest = std::max<int64_t>(rowGroup.widest, 1);
  for (int64_t s : rowSizes)
    numRows *= dynamicRows ? 1 : s;
  int64_t block = widest >= 1024 ? 256 : widest >= 256 ? 128 : 32;
  SmallVector<Operation *> ops = llvm::map_to_vector(group, [](linalg::LinalgOp op) {
    return op.getOperation();
  });
  SetVector<Value> args;
  SetVector<Operation *> clones;
  (void)collectCaptures(ops, args, clones); // formRowGroup checked it can
  IRMapping map;
  OpBuilder b(group.front().getContext());
  // Intermediates the group writes and reads back at its own row only (a
  // softmax's exponentials, a layer norm's centered values) stay in shared
  // memory: one row per block, the rows' strides 0, so the ops index it
  // as they would the buffer. 32 KiB at most, leaving room for blocks.
  SmallVector<std::pair<Value, int64_t>> local;
  if (!dynamicRows)
    local = rowLocalBuffers(group, args, clones, rowSizes, /*budget=*/32 * 1024);
  // Rows known at run time: the host counts them for the grid (at least
  // one block: an empty launch is an error; a block past the rows idles).
  Value hostRows;
  if (dynamicRows) {
    OpBuilder hb(ops.back());
    IRMapping host;
    SmallVector<Value> sizes = loopSizesIn(hb, group.front().getLoc(), group.front(), host);
    hostRows = productOf(hb, group.front().getLoc(), ArrayRef(sizes).take_front(rows));
    hostRows = arith::MaxUIOp::create(hb, group.front().getLoc(), hostRows,
                                      arith::ConstantIndexOp::create(hb, group.front().getLoc(), 1));
  }
  // Launched where the last op was: every view the group uses is defined.
  auto kernel = kernels.create(fn, ops.back(), args, clones, numRows, block, map, b, hostRows);
  // Every op's nodes (a transpose read through among them) for kiln inspect.
  Location loc = FusedLoc::get(b.getContext(), llvm::map_to_vector(group, [](linalg::LinalgOp op) {
                                 return op.getLoc();
                               }));
  if (!local.empty()) {
    MLIRContext *ctx = b.getContext();
    auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    Value dyn = gpu::DynamicSharedMemoryOp::create(
        b, loc,
        MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), MemRefLayoutAttrInterface(),
                        workgroup));
    int64_t offset = 0;
    for (auto [v, bytes] : local) {
      auto type = cast<MemRefType>(v.getType());
      int64_t elems = bytes * 8 / type.getElementTypeBitWidth();
      Value row = memref::ViewOp::create(
          b, loc, MemRefType::get({elems}, type.getElementType(), MemRefLayoutAttrInterface(),
                                  workgroup),
          dyn, arith::ConstantIndexOp::create(b, loc, offset), ValueRange{});
      SmallVector<int64_t> strides(type.getRank(), 0);
      int64_t stride = 1;
      for (int64_t d = type.getRank() - 1; d >= (int64_t)rows; --d) {
        strides[d] = stride;
        stride *= type.getDimSize(d);
      }
      auto viewType = MemRefType::get(type.getShape(), type.getElementType(),
                                      StridedLayoutAttr::get(ctx, 0, strides), workgroup);
      map.map(v, memref::ReinterpretCastOp::create(b, loc, viewType, row, 0, type.getShape(),
                                                   strides)
                     .getResult());
      offset += bytes;
    }
    kernels.setSharedBytes(kernel, offset);
  }
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value row = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  SmallVector<Value> pivs;
  if (dynamicRows) {
    SmallVector<Value> sizes = loopSizesIn(b, loc, group.front(), map);
    sizes.resize(rows);
    // The whole block takes the branch or not: its barriers stay uniform.
    Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row,
                                         productOf(b, loc, sizes));
    auto guard = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
    b.setInsertionPoint(guard.thenBlock()->getTerminator());
    pivs = delinearize(b, loc, row, ArrayRef<Value>(sizes));
  } else {
    pivs = delinearize(b, loc, row, rowSizes);
  }
  for (auto [n, groupOp] : llvm::enumerate(group)) {
    linalg::LinalgOp op = groupOp;
    if (n > 0)
      gpu::BarrierOp::create(b, loc);
    RowOp kind = *rowOpKind(op, rows);
    if (kind == RowOp::Reduction) {
      emitRowReduction(b, loc, op, *matchRowReduction(op), pivs, tid, block, map);
      continue;
    }
    if (kind == RowOp::Contraction) {
      emitRowContraction(b, loc, op, pivs, tid, block, map);
      continue;
    }
    // Elementwise: threads stride over the row's elements, 16 bytes at a
    // time where the accesses allow.
    // (The row's sizes read from the kernel's buffers where dynamic.)
    SmallVector<Value> inner = loopSizesIn(b, loc, op, map);
    inner.erase(inner.begin(), inner.begin() + rows);
    int64_t width = inner.empty() ? 0 : elementwiseVectorWidth(op);
    int64_t step = std::max<int64_t>(width, 1);
    Value start = tid;
    if (width)
      start = arith::MulIOp::create(b, loc, tid, arith::ConstantIndexOp::create(b, loc, width));
    auto loop = scf::ForOp::create(b, loc, start, productOf(b, loc, inner),
                                   arith::ConstantIndexOp::create(b, loc, block * step));
    OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
    SmallVector<Value> ivs(pivs);
    if (!inner.empty())
      llvm::append_range(ivs, delinearize(lb, loc, loop.getInductionVar(), ArrayRef<Value>(inner)));
    if (width)
      emitVectorizedElementwiseAt(lb, loc, op, ivs, width, map);
    else
      emitElementwiseAt(lb, loc, op, ivs, map);
  }
  for (linalg::LinalgOp op : llvm::reverse(group))
    op->erase();
}

} // namespace kiln

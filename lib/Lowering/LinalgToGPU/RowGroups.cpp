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
//===----------------------------------------------------------------------===//

#include "KernelFactory.h"
#include "kiln/Lowering/KernelCaptures.h"

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

struct Access {
  Bytes bytes;
  bool row; // indexed by the rows first, its leading dimensions the rows
};

/// One op's accesses when it can run row by row with `rows` leading loops
/// of sizes `rowSizes`: reads then writes.
std::optional<std::pair<SmallVector<Access>, SmallVector<Access>>>
rowAccesses(linalg::LinalgOp op, ArrayRef<int64_t> rowSizes) {
  unsigned rows = rowSizes.size();
  if (!op.hasPureBufferSemantics() || op->getNumResults() || op.getNumLoops() < rows)
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  auto iterators = op.getIteratorTypesArray();
  for (unsigned d = 0; d < rows; ++d)
    if (ranges[d] != rowSizes[d] || !linalg::isParallelIterator(iterators[d]))
      return std::nullopt;
  bool elementwise = op.getNumParallelLoops() == op.getNumLoops();
  if (!elementwise) {
    auto r = matchRowReduction(op);
    if (!r || r->numParallel != rows || !readsRowsContiguously(op))
      return std::nullopt;
  }
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
    auto shape = cast<MemRefType>(operand.get().getType()).getShape();
    bool row = rowConsistent(op.getMatchingIndexingMap(&operand), rows) &&
               shape.size() >= rows && shape.take_front(rows) == rowSizes;
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

int64_t rowLength(linalg::LinalgOp op, unsigned rows) {
  int64_t n = 1;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  for (unsigned d = rows; d < ranges.size(); ++d)
    n *= ranges[d];
  return n;
}

} // namespace

SmallVector<linalg::LinalgOp> formRowGroup(ArrayRef<Operation *> ops, size_t start,
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
  // The rows are the parallel loops of the first reduction.
  SmallVector<int64_t> rowSizes;
  for (linalg::LinalgOp op : run)
    if (op.getNumParallelLoops() != op.getNumLoops()) {
      auto r = matchRowReduction(op);
      if (!r || !readsRowsContiguously(op))
        return {};
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      rowSizes.assign(ranges.begin(), ranges.begin() + r->numParallel);
      break;
    }
  int64_t numRows = 1;
  for (int64_t r : rowSizes)
    numRows *= r;
  if (rowSizes.empty() || numRows > std::numeric_limits<int32_t>::max()) // a block per row
    return {};
  SmallVector<linalg::LinalgOp> group;
  SmallVector<Access> reads, writes;
  bool hasReduction = false;
  int64_t longest = 0;
  for (linalg::LinalgOp op : run) {
    auto acc = rowAccesses(op, rowSizes);
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
    group.push_back(op);
    llvm::append_range(reads, r);
    llvm::append_range(writes, w);
    hasReduction |= op.getNumParallelLoops() != op.getNumLoops();
    longest = std::max(longest, rowLength(op, rowSizes.size()));
  }
  // Worth one kernel: a reduction with something around it, and rows long
  // enough to keep a block's threads busy.
  if (group.size() < 2 || !hasReduction || longest < kMinRow)
    return {};
  // Only identity-layout buffers can be kernel parameters.
  SetVector<Value> args;
  SetVector<Operation *> clones;
  SmallVector<Operation *> members =
      llvm::map_to_vector(group, [](linalg::LinalgOp op) { return op.getOperation(); });
  if (!collectCaptures(members, args, clones))
    return {};
  return group;
}

void outlineRowGroup(KernelFactory &kernels, func::FuncOp fn,
                     ArrayRef<linalg::LinalgOp> ops_) {
  SmallVector<linalg::LinalgOp> group(ops_.begin(), ops_.end());
  unsigned rows = matchRowReduction(*llvm::find_if(group, [](linalg::LinalgOp op) {
                    return op.getNumParallelLoops() != op.getNumLoops();
                  }))->numParallel;
  SmallVector<int64_t> ranges = group.front().getStaticLoopRanges();
  SmallVector<int64_t> rowSizes(ranges.begin(), ranges.begin() + rows);
  int64_t numRows = 1, longest = 1;
  for (int64_t s : rowSizes)
    numRows *= s;
  for (linalg::LinalgOp op : group)
    longest = std::max(longest, rowLength(op, rows));
  int64_t block = longest >= 1024 ? 256 : longest >= 256 ? 128 : 32;
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
  SmallVector<std::pair<Value, int64_t>> local =
      rowLocalBuffers(group, args, clones, rowSizes, /*budget=*/32 * 1024);
  // Launched where the last op was: every view the group uses is defined.
  auto kernel = kernels.create(fn, ops.back(), args, clones, numRows, block, map, b);
  Location loc = group.front().getLoc();
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
  SmallVector<Value> pivs = delinearize(b, loc, row, rowSizes);
  for (auto [n, groupOp] : llvm::enumerate(group)) {
    linalg::LinalgOp op = groupOp;
    if (n > 0)
      gpu::BarrierOp::create(b, loc);
    if (auto r = matchRowReduction(op); r && op.getNumParallelLoops() != op.getNumLoops()) {
      emitRowReduction(b, loc, op, *r, pivs, tid, block, map);
      continue;
    }
    // Elementwise: threads stride over the row's elements, 16 bytes at a
    // time where the accesses allow.
    SmallVector<int64_t> all = op.getStaticLoopRanges();
    SmallVector<int64_t> inner(all.begin() + rows, all.end());
    int64_t length = rowLength(op, rows);
    int64_t width = inner.empty() ? 0 : elementwiseVectorWidth(op);
    int64_t step = std::max<int64_t>(width, 1);
    Value start = tid;
    if (width)
      start = arith::MulIOp::create(b, loc, tid, arith::ConstantIndexOp::create(b, loc, width));
    auto loop = scf::ForOp::create(b, loc, start, arith::ConstantIndexOp::create(b, loc, length),
                                   arith::ConstantIndexOp::create(b, loc, block * step));
    OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
    SmallVector<Value> ivs(pivs);
    if (!inner.empty())
      llvm::append_range(ivs, delinearize(lb, loc, loop.getInductionVar(), inner));
    if (width)
      emitVectorizedElementwiseAt(lb, loc, op, ivs, width, map);
    else
      emitElementwiseAt(lb, loc, op, ivs, map);
  }
  for (linalg::LinalgOp op : llvm::reverse(group))
    op->erase();
}

} // namespace kiln

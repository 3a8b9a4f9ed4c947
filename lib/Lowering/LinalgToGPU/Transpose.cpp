//===- Transpose.cpp - elementwise ops that read across, in 32x32 tiles ---===//
//
// linalg.generic {(i, j) -> (j, i), (i, j) -> (i, j)} ins(%x) outs(%y)
//   =>
// gpu.func (block: tile (ti, tj) of 32 x 32; 256 threads, lane l of warp w) {
//   tile[32][33] (workgroup)
//   for r < 4: tile[w + 8r][l] = x[32 tj + l, 32 ti + w + 8r]   (along x's rows)
//   barrier
//   for r < 4: y[32 ti + w + 8r, 32 tj + l] = body(tile[l][w + 8r])  (along y's)
// }
// A thread per element reads x down its columns: a warp's 32 loads touch
// 32 sectors for 128 bytes. Here both sides go along rows, and the column
// reads of the tile, 33 words apart (rows of narrower elements padded to
// an odd number of words too), fall in 32 different banks.
//
//===----------------------------------------------------------------------===//

#include "KernelFactory.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Lowering/Host/KernelCaptures.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"

using namespace mlir;

namespace kiln {
namespace {

constexpr int64_t kTile = 32, kRows = 8; // a 32 x 32 tile; 8 warps

/// The loop `across` that inputs read through a transposing map have
/// innermost (their contiguous dimension), and those inputs; nullopt when
/// `op` has none or is no elementwise op writing along its innermost loop.
std::optional<std::pair<unsigned, SmallVector<OpOperand *>>> transposedInputs(
    linalg::GenericOp op) {
  unsigned rank = op.getNumLoops();
  if (rank < 2 || op.getNumParallelLoops() != rank || op.getNumDpsInits() == 0)
    return std::nullopt;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    auto type = dyn_cast<MemRefType>(init.get().getType());
    if (!type || !type.getLayout().isIdentity() || !op.getMatchingIndexingMap(&init).isIdentity())
      return std::nullopt;
  }
  const unsigned inner = rank - 1;
  std::optional<unsigned> across;
  SmallVector<OpOperand *> inputs;
  for (OpOperand *in : op.getDpsInputOperands()) {
    auto type = dyn_cast<MemRefType>(in->get().getType());
    AffineMap m = op.getMatchingIndexingMap(in);
    if (!type || !type.isLastDimUnitStride() || !m.isProjectedPermutation() ||
        m.getNumResults() < 2 || !m.isFunctionOfDim(inner))
      continue;
    unsigned last = cast<AffineDimExpr>(m.getResults().back()).getPosition();
    if (last == inner || (across && *across != last))
      continue; // along the output's rows already, or across another loop
    across = last;
    inputs.push_back(in);
  }
  if (!across)
    return std::nullopt;
  return std::make_pair(*across, inputs);
}

} // namespace

LogicalResult outlineTiledTranspose(KernelFactory &kernels, func::FuncOp fn,
                                    linalg::GenericOp op) {
  auto found = transposedInputs(op);
  if (!found)
    return failure();
  const unsigned across = found->first;
  SmallVector<OpOperand *> inputs = found->second;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  const unsigned inner = ranges.size() - 1;
  // Narrower tiles would be mostly empty: a head's 16 x 16 of attention's
  // K^T is a few sectors a row either way, and stays a launch the
  // neighbouring transposes merge into. A size known at run time counts at
  // its largest (a dynamic sequence's keys); the grid is then the host's.
  auto inputMax = fn->getParentOfType<ModuleOp>()->getAttrOfType<ArrayAttr>(
      KilnDialect::getInputDimMaxAttrName());
  auto largest = [&](unsigned d) {
    return ShapedType::isDynamic(ranges[d])
               ? largestLoop(op, d, inputMax).value_or(std::numeric_limits<int64_t>::max())
               : ranges[d];
  };
  bool dynamic = llvm::any_of(ranges, ShapedType::isDynamic);
  if (largest(across) < kTile || largest(inner) < kTile)
    return failure();
  // A tile per transposed input, in static shared memory (48 KiB at most).
  int64_t tileBytes = 0;
  for (OpOperand *in : inputs) {
    Type elt = cast<MemRefType>(in->get().getType()).getElementType();
    if (!elt.isIntOrFloat())
      return failure();
    tileBytes += kTile * (kTile + 4) * std::max<int64_t>(1, elt.getIntOrFloatBitWidth() / 8);
  }
  if (tileBytes > 48 * 1024)
    return failure();
  SetVector<Value> args;
  SetVector<Operation *> clones;
  if (!collectCaptures({op.getOperation()}, args, clones))
    return failure();
  // The grid: the other loops (outermost first), then the tiles of `across`
  // and of the innermost loop, linearized into x.
  SmallVector<unsigned> dims;
  for (unsigned d = 0; d < ranges.size(); ++d)
    if (d != across && d != inner)
      dims.push_back(d);
  // Those counts from the loops' sizes (constants, or the buffers' sizes
  // read where `b` is: the host's for the grid, the kernel's for its ids).
  auto blockCounts = [&](OpBuilder &b, Location loc, IRMapping &m) {
    SmallVector<Value> loop = loopSizesIn(b, loc, op, m), sizes;
    for (unsigned d : dims)
      sizes.push_back(loop[d]);
    Value tile = arith::ConstantIndexOp::create(b, loc, kTile);
    for (unsigned d : {across, inner})
      sizes.push_back(arith::CeilDivUIOp::create(b, loc, loop[d], tile));
    return sizes;
  };
  int64_t blocks = 1;
  for (unsigned d : dims)
    blocks = dynamic ? 1 : blocks * ranges[d];
  for (unsigned d : {across, inner})
    if (!dynamic && __builtin_mul_overflow(blocks, (ranges[d] + kTile - 1) / kTile, &blocks))
      return failure();
  if (blocks > std::numeric_limits<int32_t>::max())
    return failure();

  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  IRMapping map;
  OpBuilder b(ctx);
  Value hostBlocks; // (the launch checks it fits)
  if (dynamic) {
    OpBuilder hb(op);
    IRMapping host;
    hostBlocks = productOf(hb, loc, blockCounts(hb, loc, host));
    hostBlocks = arith::MaxUIOp::create(hb, loc, hostBlocks,
                                        arith::ConstantIndexOp::create(hb, loc, 1));
  }
  auto kernel = kernels.create(fn, op, args, clones, blocks, kTile * kRows, map, b, hostBlocks);
  auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  SmallVector<Value> tiles;
  for (OpOperand *in : inputs) {
    Type elt = cast<MemRefType>(in->get().getType()).getElementType();
    // Rows padded to an odd number of 4-byte words (33 f32, 34 f16, 36
    // bytes; 8-byte elements go in half-warp phases, 33 of them do), so a
    // column's reads fall in different banks, and no two rows share a word.
    int64_t bytes = std::max<int64_t>(1, elt.getIntOrFloatBitWidth() / 8);
    int64_t row = bytes >= 4 ? kTile + 1 : kTile + 4 / bytes;
    tiles.push_back(kernel.addWorkgroupAttribution(
        MemRefType::get({kTile, row}, elt, MemRefLayoutAttrInterface(), workgroup), loc));
  }
  auto cst = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value lane = arith::RemUIOp::create(b, loc, tid, cst(kTile));
  Value warp = arith::DivUIOp::create(b, loc, tid, cst(kTile));
  SmallVector<Value> sizes = blockCounts(b, loc, map);
  SmallVector<Value> loopSizes = loopSizesIn(b, loc, op, map);
  Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  if (dynamic) { // a block past the tiles (none at all: one block) idles
    Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, block,
                                         productOf(b, loc, sizes));
    auto guard = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
    b.setInsertionPoint(guard.thenBlock()->getTerminator());
  }
  SmallVector<Value> at = delinearize(b, loc, block, ArrayRef<Value>(sizes));
  SmallVector<Value> ivs(ranges.size());
  for (auto [d, v] : llvm::zip(dims, at))
    ivs[d] = v;
  Value acrossBase = arith::MulIOp::create(b, loc, at[at.size() - 2], cst(kTile));
  Value innerBase = arith::MulIOp::create(b, loc, at.back(), cst(kTile));
  // Iteration (across0 + a, inner0 + i), when inside the loops: `body` at it.
  auto atIteration = [&](Value a, Value i, llvm::function_ref<void()> body) {
    ivs[across] = arith::AddIOp::create(b, loc, acrossBase, a);
    ivs[inner] = arith::AddIOp::create(b, loc, innerBase, i);
    Value inside = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, ivs[across], loopSizes[across]),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, ivs[inner], loopSizes[inner]));
    auto check = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&check.getThenRegion().front());
    body();
  };
  // The tiles in, along the inputs' rows (consecutive lanes, consecutive
  // `across`): tile[i][a].
  for (int64_t r = 0; r < kTile / kRows; ++r) {
    Value row = arith::AddIOp::create(b, loc, warp, cst(r * kRows));
    atIteration(lane, row, [&] {
      for (auto [in, tile] : llvm::zip(inputs, tiles))
        memref::StoreOp::create(b, loc, loadAt(b, loc, op, *in, ivs, map), tile,
                                ValueRange{row, lane});
    });
  }
  gpu::BarrierOp::create(b, loc);
  // The results out, along the outputs' rows (consecutive lanes,
  // consecutive innermost), the transposed inputs from the tiles.
  for (int64_t r = 0; r < kTile / kRows; ++r) {
    Value row = arith::AddIOp::create(b, loc, warp, cst(r * kRows));
    atIteration(row, lane, [&] {
      emitElementwiseAt(b, loc, op, ivs, map, [&](OpOperand &operand) -> Value {
        for (auto [in, tile] : llvm::zip(inputs, tiles))
          if (in == &operand)
            return memref::LoadOp::create(b, loc, tile, ValueRange{lane, row});
        return Value();
      });
    });
  }
  op.erase();
  return success();
}

bool readThroughTranspose(linalg::TransposeOp transpose, linalg::LinalgOp next) {
  auto consumer = dyn_cast_or_null<linalg::GenericOp>(next.getOperation());
  if (!consumer || consumer.getNumParallelLoops() != consumer.getNumLoops())
    return false;
  Value x = transpose.getInput(), t = transpose.getInit();
  // Only the consumer reads the transposed buffer (any reshape of it would
  // be a user too): an intermediate of the arena, or what the consumer
  // overwrites in place without reading (an output written so).
  if (llvm::any_of(t.getUsers(), [&](Operation *user) {
        return user != transpose.getOperation() && user != consumer.getOperation();
      }))
    return false;
  bool overwritten = false;
  for (OpOperand &init : consumer.getDpsInitsMutable())
    if (init.get() == t) {
      if (!consumer.getMatchingBlockArgument(&init).use_empty() ||
          !consumer.getMatchingIndexingMap(&init).isIdentity())
        return false;
      overwritten = true;
    }
  if (!overwritten && !isa_and_nonnull<memref::ViewOp>(t.getDefiningOp()))
    return false;
  // x is now read when the consumer runs: nothing it writes may reuse x's
  // bytes (the memory plan let x die at the transpose).
  auto xBytes = bytesOf(x);
  if (!xBytes)
    return false;
  for (Value out : consumer.getDpsInits()) {
    auto outBytes = bytesOf(out);
    if (!outBytes || outBytes->overlaps(*xBytes))
      return false;
  }
  readInputThrough(transpose, consumer);
  transpose.erase();
  return true;
}

void readInputThrough(linalg::TransposeOp transpose, linalg::GenericOp reader) {
  Value x = transpose.getInput(), t = transpose.getInit();
  // t[i] = x[p(i)], so x is read at p o (t's map).
  AffineMap fromT = AffineMap::getPermutationMap(
      invertPermutationVector(transpose.getPermutation()), transpose.getContext());
  SmallVector<AffineMap> maps = reader.getIndexingMapsArray();
  for (OpOperand *in : reader.getDpsInputOperands())
    if (in->get() == t) {
      maps[in->getOperandNumber()] = fromT.compose(maps[in->getOperandNumber()]);
      in->set(x);
    }
  reader.setIndexingMapsAttr(ArrayAttr::get(
      reader.getContext(), llvm::map_to_vector(maps, [](AffineMap m) -> Attribute {
        return AffineMapAttr::get(m);
      })));
  // The kernel computes both nodes (kiln inspect lists each).
  reader->setLoc(FusedLoc::get(reader.getContext(), {transpose.getLoc(), reader.getLoc()}));
}

bool readThroughTransposeIn(linalg::TransposeOp transpose, ArrayRef<linalg::LinalgOp> group) {
  Value x = transpose.getInput(), t = transpose.getInit();
  llvm::SmallPtrSet<Operation *, 16> members;
  for (linalg::LinalgOp op : group)
    members.insert(op);
  // Read only, by generics of the group; an intermediate of the arena. The
  // buffer may serve other ops before the transpose (each layer's K^T, one
  // buffer), and after the group once something overwrites it whole.
  SmallVector<linalg::GenericOp> readers;
  SmallVector<OpOperand *> later;
  Block *top = transpose->getBlock();
  for (OpOperand &use : t.getUses()) {
    Operation *user = top->findAncestorOpInBlock(*use.getOwner());
    if (!user)
      return false;
    if (user == transpose.getOperation() || user->isBeforeInBlock(transpose))
      continue;
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (generic && members.contains(user) && generic.isDpsInput(&use)) {
      if (!llvm::is_contained(readers, generic))
        readers.push_back(generic);
      continue;
    }
    if (members.contains(user) || use.getOwner() != user)
      return false;
    later.push_back(&use);
  }
  if (!later.empty()) {
    OpOperand *next = *llvm::min_element(later, [](OpOperand *a, OpOperand *b) {
      return a->getOwner()->isBeforeInBlock(b->getOwner());
    });
    auto writer = dyn_cast<linalg::LinalgOp>(next->getOwner());
    if (!writer || !writer.isDpsInit(next) ||
        !writer.getMatchingBlockArgument(next).use_empty() ||
        !writer.getMatchingIndexingMap(next).isProjectedPermutation() || // every element
        llvm::any_of(writer.getDpsInputs(), [&](Value in) { return in == t; }))
      return false;
  }
  // The arena's scratch, or a reshape of it (batch 1's collapsed heads,
  // kiln-gpu-drop-transpose-unit-dims) that only the transpose and the
  // group read.
  Value scratch = t;
  while (isa_and_nonnull<memref::CollapseShapeOp, memref::ExpandShapeOp>(scratch.getDefiningOp())) {
    scratch = scratch.getDefiningOp()->getOperand(0);
    if (!scratch.hasOneUse())
      return false;
  }
  if (readers.empty() || !isa_and_nonnull<memref::ViewOp>(scratch.getDefiningOp()))
    return false;
  // x is now read while the group runs: nothing it writes may take x's bytes.
  auto xBytes = bytesOf(x);
  if (!xBytes)
    return false;
  for (linalg::LinalgOp op : group)
    for (Value out : op.getDpsInits()) {
      auto outBytes = bytesOf(out);
      if (!outBytes || outBytes->overlaps(*xBytes))
        return false;
    }
  for (linalg::GenericOp reader : readers)
    readInputThrough(transpose, reader);
  transpose.erase();
  return true;
}

} // namespace kiln

//===- Elementwise.cpp - 16 bytes per thread for elementwise ops ----------===//
//
// linalg.generic {iterators = [parallel...]} ins(%x, %bias) outs(%y)
//   =>
// gpu.func (thread t: the 4 consecutive f32 at [i, 4j .. 4j+3]) {
//   %xv = vector.load %x[i, 4j] {alignment = 16} : vector<4xf32>   (contiguous)
//   %b  = memref.load %bias[i]                                      (invariant)
//   lane k: y_k = body(extract %xv[k], %b)
//   vector.store from_elements(y_0..y_3), %y[i, 4j] {alignment = 16}
// }
// The body stays scalar (cloned per lane): LLVM's NVPTX backend needs no
// vector math, and only the memory accesses are what 16 bytes buy.
//
//===----------------------------------------------------------------------===//

#include "KernelFactory.h"
#include "kiln/Lowering/Host/KernelCaptures.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace kiln {
namespace {

constexpr int64_t kVectorBytes = 16;
constexpr int64_t kBlock = 256;

/// How an operand is read along the innermost loop.
enum class Access { Contiguous, Invariant, Strided };

Access classify(AffineMap map, unsigned last) {
  bool uses = false;
  for (AffineExpr e : map.getResults())
    uses |= e.isFunctionOfDim(last);
  if (!uses)
    return Access::Invariant;
  if (map.getNumResults() && map.getResults().back() == getAffineDimExpr(last, map.getContext())) {
    for (AffineExpr e : map.getResults().drop_back())
      if (e.isFunctionOfDim(last))
        return Access::Strided;
    return Access::Contiguous;
  }
  return Access::Strided;
}

unsigned byteWidth(Type t) { return (t.getIntOrFloatBitWidth() + 7) / 8; }

/// A memref of i1 holds a byte per element, but LLVM lays a vector<16xi1>
/// out as 16 bits: a vector access would read and write bits of the bytes.
bool wholeBytes(Type t) { return t.isIntOrFloat() && t.getIntOrFloatBitWidth() % 8 == 0; }

} // namespace

int64_t elementwiseVectorWidth(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op->getNumResults() || op.getNumLoops() == 0 ||
      op.getNumParallelLoops() != op.getNumLoops() || !isa<linalg::GenericOp>(op))
    return 0;
  // Only the innermost extent must be known: with identity layouts every
  // stride is a multiple of it, so a lane group's start stays aligned
  // whatever the outer sizes (a row group over rows known at run time).
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ShapedType::isDynamic(ranges.back()))
    return 0;
  unsigned last = ranges.size() - 1;
  // The lanes of a thread: 16 bytes of the widest output element... of each
  // output, so all outputs must agree.
  int64_t width = 0;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    auto type = dyn_cast<MemRefType>(init.get().getType());
    if (!type || !wholeBytes(type.getElementType()) ||
        classify(op.getMatchingIndexingMap(&init), last) != Access::Contiguous)
      return 0;
    int64_t w = kVectorBytes / byteWidth(type.getElementType());
    if (width && w != width)
      return 0;
    width = w;
  }
  if (width < 2 || ranges[last] % width != 0)
    return 0;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type)
      continue;
    // Identity layouts from 16-byte aligned buffers (the arena, the weights
    // and the runtime's allocations are); a strided view could start anywhere.
    if (!type.getLayout().isIdentity() || !wholeBytes(type.getElementType()) ||
        !op.getMatchingIndexingMap(&operand).isProjectedPermutation())
      return 0;
    if (classify(op.getMatchingIndexingMap(&operand), last) == Access::Contiguous &&
        (byteWidth(type.getElementType()) * width > kVectorBytes ||
         type.isDynamicDim(type.getRank() - 1)))
      return 0;
  }
  Block &body = *op.getBlock();
  for (Operation &inner : body.without_terminator())
    if (inner.getNumRegions() || !(isPure(&inner) || isa<linalg::IndexOp>(inner)))
      return 0;
  return width;
}

LaneValues loadLanes(OpBuilder &b, Location loc, linalg::LinalgOp op, ArrayRef<Value> ivs,
                     int64_t width, IRMapping &map, bool inputsOnly) {
  Block &body = *op.getBlock();
  unsigned last = op.getNumLoops() - 1;
  LaneValues lanes;
  lanes.ivs.assign(width, SmallVector<Value>(ivs));
  for (int64_t k = 1; k < width; ++k)
    lanes.ivs[k][last] = arith::AddIOp::create(
        b, loc, ivs[last], arith::ConstantIndexOp::create(b, loc, k));
  lanes.maps.assign(width, map);
  for (OpOperand &operand : op->getOpOperands()) {
    BlockArgument arg = body.getArgument(operand.getOperandNumber());
    if (arg.use_empty() || (inputsOnly && op.isDpsInit(&operand)))
      continue;
    Value v = map.lookupOrDefault(operand.get());
    auto type = dyn_cast<MemRefType>(v.getType());
    if (!type) {
      for (auto &lane : lanes.maps)
        lane.map(arg, v);
      continue;
    }
    switch (classify(op.getMatchingIndexingMap(&operand), last)) {
    case Access::Invariant: {
      Value s = loadAt(b, loc, op, operand, ivs, map);
      for (auto &lane : lanes.maps)
        lane.map(arg, s);
      break;
    }
    case Access::Contiguous: {
      auto vecType = VectorType::get({width}, type.getElementType());
      Value vec = vector::LoadOp::create(
          b, loc, vecType, v, indicesAt(b, loc, op, operand, ivs), /*nontemporal=*/false,
          llvm::MaybeAlign(width * byteWidth(type.getElementType())));
      for (int64_t k = 0; k < width; ++k)
        lanes.maps[k].map(arg, vector::ExtractOp::create(b, loc, vec, k));
      break;
    }
    case Access::Strided:
      for (int64_t k = 0; k < width; ++k)
        lanes.maps[k].map(arg, loadAt(b, loc, op, operand, lanes.ivs[k], map));
      break;
    }
  }
  return lanes;
}

int64_t reductionVectorWidth(linalg::LinalgOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ranges.empty() || ShapedType::isDynamic(ranges.back())) // (as elementwiseVectorWidth)
    return 0;
  unsigned last = ranges.size() - 1;
  int64_t widest = 0;
  for (OpOperand *in : op.getDpsInputOperands()) {
    auto type = dyn_cast<MemRefType>(in->get().getType());
    if (!type)
      continue;
    AffineMap m = op.getMatchingIndexingMap(in);
    Access a = classify(m, last);
    if (!type.getLayout().isIdentity() || !wholeBytes(type.getElementType()) ||
        !m.isProjectedPermutation() || a == Access::Strided ||
        (a == Access::Contiguous && type.isDynamicDim(type.getRank() - 1)))
      return 0;
    if (a == Access::Contiguous)
      widest = std::max<int64_t>(widest, byteWidth(type.getElementType()));
  }
  int64_t width = widest ? kVectorBytes / widest : 0;
  return width >= 2 && ranges[last] % width == 0 ? width : 0;
}

void emitVectorizedElementwiseAt(OpBuilder &b, Location loc, linalg::LinalgOp op,
                                 ArrayRef<Value> ivs, int64_t width, IRMapping &map) {
  Block &body = *op.getBlock();
  LaneValues lanesAll = loadLanes(b, loc, op, ivs, width, map, /*inputsOnly=*/false);
  auto &laneIvs = lanesAll.ivs;
  auto &lanes = lanesAll.maps;
  for (int64_t k = 0; k < width; ++k)
    cloneBody(b, op, laneIvs[k], lanes[k]);
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable())) {
    Value out = map.lookupOrDefault(init.get());
    auto type = cast<MemRefType>(out.getType());
    SmallVector<Value> values;
    for (int64_t k = 0; k < width; ++k)
      values.push_back(lanes[k].lookupOrDefault(yield.getOperand(i)));
    auto vecType = VectorType::get({width}, type.getElementType());
    Value vec = vector::FromElementsOp::create(b, loc, vecType, values);
    vector::StoreOp::create(b, loc, vec, out, indicesAt(b, loc, op, init, ivs),
                            /*nontemporal=*/false,
                            llvm::MaybeAlign(width * byteWidth(type.getElementType())));
  }
}

LogicalResult outlineVectorizedElementwise(KernelFactory &kernels, func::FuncOp fn,
                                           linalg::GenericOp op) {
  int64_t width = elementwiseVectorWidth(op);
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (!width || llvm::any_of(ranges, ShapedType::isDynamic))
    return failure();
  unsigned last = ranges.size() - 1;
  SetVector<Value> args;
  SetVector<Operation *> clones;
  if (!collectCaptures({op.getOperation()}, args, clones))
    return failure();
  int64_t threads = 1;
  SmallVector<int64_t> sizes = ranges;
  sizes[last] /= width;
  for (int64_t s : sizes)
    threads *= s;
  if (threads == 0) {
    op.erase();
    return success();
  }
  auto [block, grid] = launchShape(threads, kBlock);
  if (grid > std::numeric_limits<int32_t>::max())
    return failure();
  IRMapping map;
  OpBuilder b(op.getContext());
  kernels.create(fn, op, args, clones, grid, block, map, b);
  Location loc = op.getLoc();
  Value lin = linearThreadIndex(b, loc, threads, block, grid);
  SmallVector<Value> ivs = delinearize(b, loc, lin, sizes);
  ivs[last] = arith::MulIOp::create(b, loc, ivs[last],
                                    arith::ConstantIndexOp::create(b, loc, width));
  emitVectorizedElementwiseAt(b, loc, op, ivs, width, map);
  op.erase();
  return success();
}

} // namespace kiln

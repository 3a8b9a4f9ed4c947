//===- DirectConv.cpp - convolutions off the tensor cores, in one kernel --===//
//
// A convolution the tensor cores do not take (a 3-channel stem, a grouped
// or depthwise one), or a max or sum pool, with what bufferization left
// around it (a pool's padding and start hold -inf or 0):
//   fill(P, 0); copy(image -> P[.., top:, left:])   (its zero padding)
//   fill(Y, 0)                                      (its accumulator)
//   conv(P, W) -> Y
//   Y = epilogue(Y)                                 (bias / BN, activation)
//   =>
// gpu.func (a thread per output element, 256-thread blocks) {
//   acc = 0
//   for c, kh, kw: acc += (inside ? image[.., ih - top, iw - left] : 0) * W[..]
//   Y[..] = acc; the epilogue at that element
// }
// One kernel where there were five (the pad's fill and copy, the zero fill,
// the convolution, the epilogue).
//
//===----------------------------------------------------------------------===//

#include "KernelFactory.h"
#include "TensorCorePlan.h"
#include "kiln/Lowering/Host/KernelCaptures.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;

namespace kiln {
namespace {

constexpr int64_t kBlock = 256;

/// The windowed ops this kernel takes: NCHW convolutions, plain or grouped
/// (the grouped form's image is [n, g, C/g, H, W]), and max and sum pools.
bool isConv(linalg::LinalgOp op) {
  if (!isa<linalg::Conv2DNchwFchwOp, linalg::Conv2DNgchwGfchwOp, linalg::PoolingNchwMaxOp,
           linalg::PoolingNchwSumOp>(op.getOperation()) ||
      !op.hasPureBufferSemantics() || op.getNumDpsInits() != 1)
    return false;
  for (Value v : op->getOperands()) {
    auto t = dyn_cast<MemRefType>(v.getType());
    if (!t || !t.hasStaticShape() || !t.getLayout().isIdentity() ||
        !isa<FloatType>(t.getElementType()))
      return false;
  }
  // Parallel loops first, then the reductions (the loop order the
  // thread's indices and its loops follow).
  auto iterators = op.getIteratorTypesArray();
  size_t parallel = op.getNumParallelLoops();
  for (size_t d = 0; d < iterators.size(); ++d)
    if ((d < parallel) != (iterators[d] == utils::IteratorType::parallel))
      return false;
  // The output indexed by the parallel loops, in order.
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (out.getNumResults() != parallel)
    return false;
  for (auto [i, e] : llvm::enumerate(out.getResults()))
    if (e != getAffineDimExpr(i, op.getContext()))
      return false;
  return true;
}

} // namespace

bool isDirectConv(linalg::LinalgOp op) {
  SetVector<Value> args;
  SetVector<Operation *> clones;
  Operation *o = op;
  if (!isConv(op))
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t threads = 1;
  for (int64_t r : ArrayRef<int64_t>(ranges).take_front(op.getNumParallelLoops()))
    threads *= r;
  return threads > 0 && (threads + kBlock - 1) / kBlock <= std::numeric_limits<int32_t>::max() &&
         collectCaptures({o}, args, clones);
}

FailureOr<bool> outlineDirectConv(KernelFactory &kernels, func::FuncOp fn, linalg::LinalgOp op,
                                  std::optional<double> init, ArrayRef<linalg::GenericOp> epilogue,
                                  const ImplicitPad *pad) {
  if (!isDirectConv(op))
    return failure();
  SmallVector<int64_t> cShape(cast<MemRefType>(op.getDpsInitOperand(0)->get().getType()).getShape());
  SetVector<Value> args;
  SetVector<Operation *> clones;
  SmallVector<Operation *> fused;
  SmallVector<Operation *> also;
  if (pad)
    also.push_back(pad->copy);
  if (!captureFused(op, epilogue, also, fused, args, clones))
    return failure();
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  unsigned parallel = op.getNumParallelLoops();
  ArrayRef<int64_t> outer = ArrayRef<int64_t>(ranges).take_front(parallel);
  int64_t threads = 1;
  for (int64_t r : outer)
    threads *= r;
  auto [block, grid] = launchShape(threads, kBlock);
  IRMapping map;
  OpBuilder b(ctx);
  kernels.create(fn, fused.back(), args, clones, grid, block, map, b);
  auto cst = [&](OpBuilder &at, int64_t v) {
    return arith::ConstantIndexOp::create(at, loc, v).getResult();
  };
  Value lin = linearThreadIndex(b, loc, threads, block, grid);
  SmallVector<Value> ivs = delinearize(b, loc, lin, outer);
  Value y = map.lookup(op.getDpsInitOperand(0)->get());
  Type t = cast<MemRefType>(y.getType()).getElementType();
  Value start = init ? arith::ConstantOp::create(b, loc, b.getFloatAttr(t, *init)).getResult()
                     : memref::LoadOp::create(b, loc, y, ivs).getResult();
  // The unpadded image as [leading, H, W]: the padded input's leading
  // dimensions (n, C or n, g, C/g) linearize the same way.
  OpOperand *x = op.getDpsInputOperand(0);
  ArrayRef<int64_t> xShape = cast<MemRefType>(x->get().getType()).getShape();
  unsigned xr = xShape.size();
  Value image = pad ? foldLeading(b, loc, map.lookup(pad->image), 3) : Value();
  if (image && cast<MemRefType>(image.getType()).getRank() == 2) // [C, H, W] of one image
    image = memref::ExpandShapeOp::create(
        b, loc,
        MemRefType::get({1, pad->height, pad->width},
                        cast<MemRefType>(image.getType()).getElementType()),
        image, SmallVector<ReassociationIndices>{{0, 1}, {2}});
  // The reductions (c, kh, kw ...) as nested loops around the body.
  SmallVector<Value> all(ivs);
  Value acc = start;
  SmallVector<scf::ForOp> loops;
  OpBuilder lb = b;
  for (unsigned d = parallel; d < ranges.size(); ++d) {
    auto loop = scf::ForOp::create(lb, loc, cst(lb, 0), cst(lb, ranges[d]), cst(lb, 1),
                                   ValueRange{acc});
    if (!loops.empty())
      scf::YieldOp::create(lb, loc, loop.getResult(0));
    loops.push_back(loop);
    all.push_back(loop.getInductionVar());
    acc = loop.getRegionIterArgs()[0];
    lb = OpBuilder::atBlockBegin(loop.getBody());
  }
  Block *body = op.getBlock();
  IRMapping bodyMap = map;
  for (OpOperand *operand : op.getDpsInputOperands()) {
    BlockArgument arg = op.getMatchingBlockArgument(operand);
    if (arg.use_empty())
      continue;
    if (operand != x || !pad) {
      bodyMap.map(arg, loadAt(lb, loc, op, *operand, all, map));
      continue;
    }
    // Inside the image: its element; outside: the padding's zero.
    SmallVector<Value> idx = indicesAt(lb, loc, op, *operand, all);
    AffineExpr e0, e1;
    bindDims(ctx, e0, e1);
    SmallVector<int64_t> lead(xShape.take_front(xr - 2));
    SmallVector<Value> at{affine::AffineLinearizeIndexOp::create(
        lb, loc, ArrayRef<Value>(idx).take_front(xr - 2), lead, /*disjoint=*/true)};
    Value h = arith::SubIOp::create(lb, loc, idx[xr - 2], cst(lb, pad->top));
    Value w = arith::SubIOp::create(lb, loc, idx[xr - 1], cst(lb, pad->left));
    auto within = [&](Value v, int64_t size) {
      Value lo = arith::CmpIOp::create(lb, loc, arith::CmpIPredicate::sge, v, cst(lb, 0));
      Value hi = arith::CmpIOp::create(lb, loc, arith::CmpIPredicate::slt, v, cst(lb, size));
      return arith::AndIOp::create(lb, loc, lo, hi).getResult();
    };
    Value inside = arith::AndIOp::create(lb, loc, within(h, pad->height), within(w, pad->width));
    auto read = scf::IfOp::create(lb, loc, TypeRange{cast<MemRefType>(x->get().getType()).getElementType()},
                                  inside, /*withElse=*/true);
    OpBuilder tb = OpBuilder::atBlockEnd(read.thenBlock());
    at.push_back(h);
    at.push_back(w);
    scf::YieldOp::create(tb, loc, memref::LoadOp::create(tb, loc, image, at).getResult());
    OpBuilder eb = OpBuilder::atBlockEnd(read.elseBlock());
    Type xt = cast<MemRefType>(x->get().getType()).getElementType();
    scf::YieldOp::create(
        eb, loc, arith::ConstantOp::create(eb, loc, eb.getFloatAttr(xt, pad->value)).getResult());
    bodyMap.map(arg, read.getResult(0));
  }
  bodyMap.map(op.getMatchingBlockArgument(op.getDpsInitOperand(0)), acc);
  for (Operation &inner : body->without_terminator())
    lb.clone(inner, bodyMap);
  scf::YieldOp::create(lb, loc, bodyMap.lookup(body->getTerminator()->getOperand(0)));
  Value result = loops.empty() ? acc : loops.front().getResult(0);
  memref::StoreOp::create(b, loc, result, y, ivs);
  emitEpilogueAt(b, loc, epilogue, cShape, ivs, map);
  return eraseFused(op, epilogue, pad);
}

} // namespace kiln

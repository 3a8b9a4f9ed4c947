//===- Matvec.cpp - matrix-vector products: warps split the reduction -----===//
//
// linalg.generic {iterators = [parallel x P (.., n), reduction k]}
//     ins(%x (no n), %W (.., k, .., n: n innermost)) outs(%y (.., n))
//     { %y = %y + %x * %W }            (a batch-1 linear layer, M < 16)
//   =>
// gpu.func (grid [ceil(N/32), L]; 256 threads: lane = n in a 32-wide
//           tile, warp w = a slice of k) {
//   acc = sum over k = w, w+8, ... of x[.., k] * W[.., k, n]   (a warp reads
//         128 contiguous bytes of a row of W per step)
//   partial[w][lane] = acc; bar.sync
//   warp 0: y[.., n] = (y[.., n] +) sum over w of partial[w][lane];
//           then the epilogue (bias, activation) at that element
// }
// One thread per output with the whole k loop each, as before, used a
// sliver of the GPU (a 128-wide layer: 128 threads) for K dependent steps.
//
//===----------------------------------------------------------------------===//

#include "KernelFactory.h"
#include "TensorCorePlan.h"
#include "kiln/Lowering/Host/KernelCaptures.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;

namespace kiln {
namespace {

constexpr int64_t kLanes = 32, kWarps = 8;

/// The operand numbers of x and W when `op` is a matrix-vector product.
struct Matvec {
  unsigned x, w;
  int64_t n, k, rows; // N, K, and the other parallel iterations
};

std::optional<Matvec> matchMatvec(linalg::LinalgOp op) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic || !generic.hasPureBufferSemantics() || generic.getNumDpsInputs() != 2 ||
      generic.getNumDpsInits() != 1 || generic.getNumReductionLoops() != 1)
    return std::nullopt;
  unsigned loops = generic.getNumLoops();
  auto iterators = generic.getIteratorTypesArray();
  if (loops < 2 || iterators.back() != utils::IteratorType::reduction)
    return std::nullopt;
  for (Value v : generic->getOperands()) {
    auto t = dyn_cast<MemRefType>(v.getType());
    if (!t || !t.hasStaticShape() || !t.getLayout().isIdentity())
      return std::nullopt;
  }
  // The body: out + a * b on floats (16-bit operands may be widened first):
  // then the warps' partial sums may simply be added.
  if (!isMulAdd(generic))
    return std::nullopt;
  AffineMap outMap = generic.getIndexingMapsArray()[2];
  MLIRContext *ctx = op.getContext();
  AffineExpr n = getAffineDimExpr(loops - 2, ctx);
  SmallVector<AffineExpr> lead;
  for (unsigned d = 0; d + 1 < loops; ++d)
    lead.push_back(getAffineDimExpr(d, ctx));
  if (outMap != AffineMap::get(loops, 0, lead, ctx))
    return std::nullopt;
  // W runs along n contiguously (its last index), x not at all.
  auto maps = generic.getIndexingMapsArray();
  std::optional<Matvec> m;
  for (unsigned w = 0; w < 2; ++w) {
    AffineMap wm = maps[w], xm = maps[1 - w];
    if (!wm.isProjectedPermutation() || !xm.isProjectedPermutation() ||
        wm.getResults().back() != n || !wm.isFunctionOfDim(loops - 1) ||
        xm.isFunctionOfDim(loops - 2))
      continue;
    m = Matvec{1 - w, w, 0, 0, 1};
  }
  if (!m)
    return std::nullopt;
  SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
  m->n = ranges[loops - 2];
  m->k = ranges[loops - 1];
  for (unsigned d = 0; d + 2 < loops; ++d)
    m->rows *= ranges[d];
  if (m->n == 0 || m->k == 0 || m->rows == 0 || m->rows > 65535 ||
      (m->n + kLanes - 1) / kLanes > std::numeric_limits<int32_t>::max())
    return std::nullopt;
  return m;
}

} // namespace

bool isMatvec(linalg::LinalgOp op) {
  SetVector<Value> args;
  SetVector<Operation *> clones;
  Operation *o = op;
  return matchMatvec(op).has_value() && collectCaptures({o}, args, clones);
}

FailureOr<bool> outlineMatvec(KernelFactory &kernels, func::FuncOp fn, linalg::LinalgOp op,
                              bool zeroInit, ArrayRef<linalg::GenericOp> epilogue) {
  std::optional<Matvec> m = matchMatvec(op);
  if (!m)
    return failure();
  SmallVector<int64_t> cShape(cast<MemRefType>(op.getDpsInitOperand(0)->get().getType()).getShape());
  SetVector<Value> args;
  SetVector<Operation *> clones;
  SmallVector<Operation *> fused;
  if (!captureFused(op, epilogue, {}, fused, args, clones))
    return failure();
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  IRMapping map;
  OpBuilder b(ctx);
  SmallVector<int64_t> grid{(m->n + kLanes - 1) / kLanes, m->rows, 1};
  auto kernel = kernels.create(fn, fused.back(), args, clones, grid, kLanes * kWarps, map, b);
  Type t = cast<MemRefType>(op.getDpsInitOperand(0)->get().getType()).getElementType();
  auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Value partial = kernel.addWorkgroupAttribution(
      MemRefType::get({kWarps, kLanes}, t, MemRefLayoutAttrInterface(), workgroup), loc);
  AffineExpr d0, d1;
  bindDims(ctx, d0, d1);
  auto apply = [&](AffineExpr e, ValueRange operands) -> Value {
    return affine::AffineApplyOp::create(b, loc, AffineMap::get(operands.size(), 0, e, ctx),
                                         operands);
  };
  auto cst = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value bx = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value by = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value lane = apply(d0 % kLanes, {tid}), warp = apply(d0.floorDiv(kLanes), {tid});
  Value n = apply(d0 * kLanes + d1, {bx, lane});
  // The output's indices: the other parallel loops (from block y), then n.
  unsigned loops = op.getNumLoops();
  SmallVector<int64_t> leadSizes = op.getStaticLoopRanges();
  leadSizes.resize(loops - 2);
  SmallVector<Value> ivs = delinearize(b, loc, by, leadSizes);
  ivs.push_back(n);
  Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, n, cst(m->n));
  Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(t, 0));
  // This thread's share of the sum; lanes past N add nothing but still
  // meet the barrier.
  auto share = scf::IfOp::create(b, loc, TypeRange{t}, inRange, /*withElse=*/true);
  {
    OpBuilder tb = OpBuilder::atBlockEnd(share.thenBlock());
    auto loop = scf::ForOp::create(tb, loc, warp, arith::ConstantIndexOp::create(tb, loc, m->k),
                                   arith::ConstantIndexOp::create(tb, loc, kWarps),
                                   ValueRange{zero});
    OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
    SmallVector<Value> at(ivs);
    at.push_back(loop.getInductionVar());
    Block *body = op.getBlock();
    IRMapping bodyMap = map;
    for (unsigned i : {m->x, m->w})
      bodyMap.map(body->getArgument(i), loadAt(lb, loc, op, op->getOpOperand(i), at, map));
    bodyMap.map(body->getArgument(2), loop.getRegionIterArgs()[0]);
    for (Operation &inner : body->without_terminator())
      lb.clone(inner, bodyMap);
    scf::YieldOp::create(lb, loc, bodyMap.lookup(body->getTerminator()->getOperand(0)));
    scf::YieldOp::create(tb, loc, loop.getResult(0));
    OpBuilder eb = OpBuilder::atBlockEnd(share.elseBlock());
    scf::YieldOp::create(eb, loc, zero);
  }
  memref::StoreOp::create(b, loc, share.getResult(0), partial, ValueRange{warp, lane});
  gpu::BarrierOp::create(b, loc);
  // Warp 0 adds the slices up and writes the element, then its epilogue.
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, warp, cst(0));
  Value writes = arith::AndIOp::create(b, loc, first, inRange);
  auto store = scf::IfOp::create(b, loc, writes, /*withElse=*/false);
  OpBuilder sb = OpBuilder::atBlockBegin(store.thenBlock());
  auto slice = [&](int64_t w) -> Value {
    return memref::LoadOp::create(
        sb, loc, partial, ValueRange{arith::ConstantIndexOp::create(sb, loc, w), lane});
  };
  Value sum = slice(0);
  for (int64_t w = 1; w < kWarps; ++w)
    sum = arith::AddFOp::create(sb, loc, sum, slice(w));
  Value y = map.lookup(op.getDpsInitOperand(0)->get());
  if (!zeroInit)
    sum = arith::AddFOp::create(sb, loc, memref::LoadOp::create(sb, loc, y, ivs), sum);
  memref::StoreOp::create(sb, loc, sum, y, ivs);
  emitEpilogueAt(sb, loc, epilogue, cShape, ivs, map);
  return eraseFused(op, epilogue, nullptr);
}

} // namespace kiln

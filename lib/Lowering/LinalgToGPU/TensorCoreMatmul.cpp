//===- TensorCoreMatmul.cpp - matmuls on tensor cores (mma.sync) ----------===//
//
// C[.., m, n] += A[.., m, k] * B[.., k, n] on f32, f16 or bf16 buffers
// (linalg.matmul, batch_matmul, or the generic form, also with a 2-D B
// shared by every leading index of A and C: a linear layer on [batch, seq,
// features]; convolutions as implicit GEMMs) =>
// gpu.func (grid [N/BN, M/BM, batch]; warps of WM x WN; dynamic shared A SxBMx(BK+pad), B
// SxBKx(BN+pad)) {
//   acc[i][j] = C[warp tile (i, j)] (or 0 after a zero fill)    (16x8 tiles)
//   cp.async step 0's A, B tiles -> stage 0; commit
//   scf.for k0 step BK iter_args(acc) {
//     cp.async step k0+BK's tiles -> the other stage; commit; wait for all but it
//     gpu.barrier
//     for kk in steps of one mma's k: acc[i][j] = vector.contract(A[i][kk], B[kk][j], acc[i][j])
//     gpu.barrier
//   }
//   C[warp tile (i, j)] = acc[i][j]; then the epilogue, if any, per tile
// }
// kiln-gpu-lower-mma then gives ldmatrix and mma.sync with upstream's
// fragment layouts: m16n8k8 tf32 for f32 (BK 16), m16n8k16 for f16 and
// bf16 (BK 32) with f32 accumulators, which start and end in an f32 tile
// in shared memory, widened from and narrowed into C element by element.
// Index math is affine.apply: the vector-to-nvgpu conversion would take
// index arith on the path to a contraction for matrix arithmetic.
//
//===----------------------------------------------------------------------===//

#include "KernelFactory.h"
#include "TensorCorePlan.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Lowering/Host/KernelCaptures.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace kiln {

bool isTensorCoreMatmul(linalg::LinalgOp op) {
  // Everything outlineTensorCoreMatmul checks: once this holds, it succeeds
  // (a dropped zero fill relies on that).
  SetVector<Value> args;
  SetVector<Operation *> clones;
  Operation *o = op;
  return planMatmul(op).has_value() && collectCaptures({o}, args, clones);
}

namespace {

/// One mma.sync kernel for a planned matmul; its pieces share the tiles'
/// views, the operands and the thread's coordinates.
class MmaSyncKernel {
public:
  MmaSyncKernel(KernelFactory &kernels, linalg::LinalgOp op, const Plan &p, bool zeroInit,
                ArrayRef<linalg::GenericOp> epilogue, const ImplicitPad *pad)
      : kernels(kernels), op(op), p(p), zeroInit(zeroInit), epilogue(epilogue), pad(pad),
        ctx(op.getContext()), loc(op.getLoc()), b(ctx), elt(p.elt), tileK(p.tileK()),
        mmaK(p.mmaK()), vec(p.vec()), S(p.stages), eltBytes(elt.getIntOrFloatBitWidth() / 8) {
    bindDims(ctx, d0, d1, d2);
  }

  FailureOr<bool> emit(func::FuncOp fn);

private:
  Value apply(AffineExpr e, ValueRange operands) {
    return affine::AffineApplyOp::create(b, loc, AffineMap::get(operands.size(), 0, e, ctx),
                                         operands);
  }
  Value cst(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); }
  Value minOf(ArrayRef<AffineExpr> es, ValueRange xs) {
    return affine::AffineMinOp::create(b, loc, AffineMap::get(xs.size(), 0, es, ctx), xs);
  }
  Value maxOf(ArrayRef<AffineExpr> es, ValueRange xs) {
    return affine::AffineMaxOp::create(b, loc, AffineMap::get(xs.size(), 0, es, ctx), xs);
  }
  AffineMap minorIdentity(Value mem) {
    unsigned rank = cast<MemRefType>(mem.getType()).getRank();
    return AffineMap::getMinorIdentityMap(rank, 2, ctx);
  }
  void setUpSharedTiles();
  void setUpOperands();
  void setUpCoordinates();
  /// Global coordinates of the warp tile (i, j)'s corner.
  Value rowOf(int64_t i) { return apply(d0 * p.tileM + d1 + i * kMmaM, {bm, warpM}); }
  Value colOf(int64_t j) { return apply(d0 * p.tileN + d1 + j * kMmaN, {bn, warpN}); }
  SmallVector<Value> global(Value row, Value col) {
    SmallVector<Value> idx;
    if (batched)
      idx.push_back(bb);
    idx.push_back(row);
    idx.push_back(col);
    return idx;
  }
  /// The accumulators' home, where they start and end: C itself, or for
  /// 16-bit data the f32 tile in shared memory (at the warp tile's corner).
  SmallVector<Value> accAt(int64_t i, int64_t j) {
    if (!p.staged())
      return global(rowOf(i), colOf(j));
    return {apply(d0 + i * kMmaM, {warpM}), apply(d0 + j * kMmaN, {warpN})};
  }
  SmallVector<Value> loadAccumulators();
  std::pair<Value, Value> pieceOf(Value q, int64_t pieces, int64_t stride);
  Value clampTo(Value i, int64_t n, bool overhangs, Value &present);
  void copy(Value dst, ValueRange dstIdx, Value src, ValueRange srcIdx, Value present);
  void gather(Value dst, ValueRange dstIdx, Value src, ValueRange srcIdx, Value present);
  void storePending();
  void copyA(Value k0, Value stage);
  void copyConvB(Value k0, Value stage);
  void copyB(Value k0, Value stage);
  Value copyTiles(Value k0, Value stage);
  void emitStep(scf::ForOp loop);
  void emitEpilogue(scf::ForOp loop, Value firstGroup);

  KernelFactory &kernels;
  linalg::LinalgOp op;
  const Plan &p;
  bool zeroInit;
  ArrayRef<linalg::GenericOp> epilogue;
  const ImplicitPad *pad;
  MLIRContext *ctx;
  Location loc;
  OpBuilder b;
  IRMapping map;
  gpu::GPUFuncOp kernel;
  SmallVector<int64_t> cShape;
  SmallVector<Operation *> fused;
  Type elt, fragElt;
  const int64_t tileK, mmaK, vec, S, eltBytes;
  SmallVector<int64_t> shapeA, shapeB;
  Value smemA, fragA, smemB, fragB, smemC;
  Value A, B, C, cOriginal, accHome;
  bool batched = false, batchedA = false;
  AffineExpr d0, d1, d2;
  Value tid, bn, bm, bb, warpM, warpN, zero, zeroElt;
  SmallVector<Value> ids;
  int64_t TI = 0, TJ = 0;
  const bool inBounds2[2] = {true, true};
  ArrayRef<bool> inBounds = llvm::ArrayRef(inBounds2);
  /// 16-bit elements gathered through registers, waiting to be stored into
  /// their stage: in the loop, after this step's products (the stage is
  /// the one the last step read, which nobody reads again before step
  /// k+S-1), so the loads' latency hides behind the tensor cores' work.
  struct Pending {
    Value value, dst;
    SmallVector<Value> idx;
  };
  SmallVector<Pending> pending;
  SmallVector<Value> tokens; // the cp.async copies of the group being issued
};

void MmaSyncKernel::setUpSharedTiles() {
  auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  // Upstream's fragment loads know f16 but not bf16: bf16 tiles are read
  // as f16 (bytes are bytes) and kiln-gpu-lower-mma retypes the mma.sync.
  bool asF16 = elt.isBF16();
  fragElt = asF16 ? Type(b.getF16Type()) : elt;
  if (asF16)
    kernel->setAttr(KilnDialect::getMmaBf16AttrName(), b.getUnitAttr());
  // The tiles live in dynamic shared memory (views of one buffer; the
  // launch asks for its size), their rows padded against bank conflicts:
  // A's by 16 bytes, so ldmatrix's 8 rows of a phase start in 8 different
  // 16-byte bank groups; B's by 16 bytes for 16-bit data (ldmatrix.trans,
  // likewise) and by 32 for f32, whose fragments are single words from 4
  // k rows, which a row stride of 8 words (mod 32 banks) keeps apart.
  // Unpadded, the PTX emulator's profile counted 4 to 8 wavefronts a phase.
  const int64_t padA = 16 / eltBytes, padB = (p.halves() ? 16 : 32) / eltBytes;
  shapeA = {S, p.tileM, tileK + padA};
  shapeB = {S, tileK, p.tileN + padB};
  const int64_t bytesA = S * p.tileM * (tileK + padA) * eltBytes;
  const int64_t bytesB = S * tileK * (p.tileN + padB) * eltBytes;
  const int64_t offsetB = llvm::alignTo(bytesA, 128),
                offsetC = offsetB + llvm::alignTo(bytesB, 128);
  // The staged f32 tile's rows 8 banks apart (mod 32): the accumulator
  // fragments' 8-byte stores (8 rows, a 2-column pair each per quarter of
  // the lanes) would otherwise meet in the same banks, 8 rows deep.
  const int64_t rowC = p.tileN + ((8 - p.tileN) % 32 + 32) % 32;
  const int64_t sharedBytes = offsetC + (p.staged() ? p.tileM * rowC * 4 : 0);
  kernels.setSharedBytes(kernel, sharedBytes);
  Value dynamicShared =
      gpu::DynamicSharedMemoryOp::create(b, loc,
                                         MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                                                         MemRefLayoutAttrInterface(), workgroup));
  auto view = [&](int64_t offset, ArrayRef<int64_t> shape, Type t) -> Value {
    return memref::ViewOp::create(
        b, loc, MemRefType::get(shape, t, MemRefLayoutAttrInterface(), workgroup), dynamicShared,
        arith::ConstantIndexOp::create(b, loc, offset), ValueRange{});
  };
  // Each tile as cp.async writes it (C's type) and as the fragment loads
  // read it (fragElt), over the same bytes.
  smemA = view(0, shapeA, elt), fragA = view(0, shapeA, fragElt);
  smemB = view(offsetB, shapeB, elt), fragB = view(offsetB, shapeB, fragElt);
  // 16-bit data accumulates in f32 (bf16 mma.sync has no other): in C when
  // it is f32, else staged through shared memory to and from C's type.
  smemC = p.staged() ? view(offsetC, {p.tileM, rowC}, b.getF32Type()) : Value();
}

void MmaSyncKernel::setUpOperands() {
  A = map.lookup(op->getOperand(0)), B = map.lookup(op->getOperand(1)),
  C = map.lookup(op->getOperand(2));
  cOriginal = C;            // in C's own shape, as the tile loops index it
  if (p.form == Plan::Conv) // ins(X, W): the weights are the GEMM's A, the image its B
    std::swap(A, B);
  if (pad) { // the unpadded image, as [n, C, H, W]
    B = map.lookup(pad->image);
    if (cast<MemRefType>(B.getType()).getRank() == 3)
      B = memref::ExpandShapeOp::create(
          b, loc,
          MemRefType::get({1, cast<MemRefType>(B.getType()).getDimSize(0), pad->height, pad->width},
                          cast<MemRefType>(B.getType()).getElementType()),
          B, SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}});
  }
  auto fold = [&](Value v, unsigned keep) { return foldLeading(b, loc, v, keep); };
  if (p.form == Plan::SharedB) { // [lead..., m, x] as [M, x]
    A = fold(A, 2);
    C = fold(C, 2);
  } else if (p.form == Plan::Conv) { // W [F, C, KH, KW] as [F, K]; Y [n, F, OH, OW] as [n, F, P]
    A = memref::CollapseShapeOp::create(b, loc, A,
                                        SmallVector<ReassociationIndices>{{0}, {1, 2, 3}});
    C = memref::CollapseShapeOp::create(b, loc, C,
                                        SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  } else if (p.form == Plan::Batched) { // [lead..., m, x] as [batch, m, x]
    A = fold(A, 3);
    B = fold(B, 3);
    C = fold(C, 3);
  }
  // C (and, except for a convolution's weights, A and B) per batch index.
  batched = p.form == Plan::Batched || p.form == Plan::Conv;
  batchedA = p.form == Plan::Batched;
}

void MmaSyncKernel::setUpCoordinates() {
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  bn = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  bm = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  bb = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  ids = {tid, bn, bm, bb};
  int64_t warpsN = p.tileN / p.warpN;
  // The warp's corner in the block tile.
  warpM = apply(d0.floorDiv(32).floorDiv(warpsN) * p.warpM, {tid});
  warpN = apply((d0.floorDiv(32) % warpsN) * p.warpN, {tid});
}

SmallVector<Value> MmaSyncKernel::loadAccumulators() {
  auto f32 = b.getF32Type();
  auto accType = VectorType::get({kMmaM, kMmaN}, f32);
  zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
  zeroElt = arith::ConstantOp::create(b, loc, b.getFloatAttr(fragElt, 0));
  TI = p.warpM / kMmaM, TJ = p.warpN / kMmaN;
  SmallVector<Value> init;
  // C was just zero-filled: the accumulators start at zero instead.
  Value zeros =
      zeroInit
          ? arith::ConstantOp::create(b, loc, DenseElementsAttr::get(accType, b.getF32FloatAttr(0)))
                .getResult()
          : Value();
  accHome = p.staged() ? smemC : C;
  if (p.staged() && !zeroInit) {
    // C's tile, widened, into shared memory first.
    emitTileFunction(kernels, b, loc, (kernel.getName() + "_load_c").str(), p, cShape, ids,
                     {cOriginal, smemC}, {}, map,
                     [&](OpBuilder &fb, ArrayRef<Value> ivs, Value row, Value col, ValueRange extra,
                         IRMapping &) {
                       Value v = memref::LoadOp::create(fb, loc, extra[0], ivs);
                       if (p.narrows())
                         v = arith::ExtFOp::create(fb, loc, f32, v);
                       memref::StoreOp::create(fb, loc, v, extra[1], ValueRange{row, col});
                     });
    gpu::BarrierOp::create(b, loc);
  }
  for (int64_t i = 0; i < TI; ++i)
    for (int64_t j = 0; j < TJ; ++j)
      init.push_back(zeroInit
                         ? zeros
                         : vector::TransferReadOp::create(b, loc, accType, accHome, accAt(i, j),
                                                          zero, minorIdentity(accHome), inBounds)
                               .getResult());
  return init;
}

/// The row and column of 16-byte piece `q` of a tile whose rows hold
/// `pieces` pieces, `stride` bytes apart in shared memory. Row by row, a
/// quarter warp (8 pieces: what one shared-memory wavefront serves) covers
/// two rows of 64-byte rows, which collide in the banks when the rows are
/// padded for ldmatrix (80 bytes apart: bytes 80-143 meet 0-63 at 128).
/// Then each quarter warp takes rows r and r + d instead, d rows being 64
/// bytes apart modulo 128 (4 rows at 80 bytes, 2 at 96): conflict-free,
/// and each row's 64 bytes still come from two whole global sectors.
std::pair<Value, Value> MmaSyncKernel::pieceOf(Value q, int64_t pieces, int64_t stride) {
  int64_t d = 0;
  for (int64_t c = 1; pieces == 4 && c < 8 && !d; ++c)
    if (stride * c % 128 == 64)
      d = c;
  if (!d) // (the tiles' rows come in whole blocks of 2d: 8 or 4)
    return {apply(d0.floorDiv(pieces), {q}), apply((d0 % pieces) * vec, {q})};
  int64_t rows = 2 * d;
  // Blocks of 2d rows (8d pieces); quarter warp w of a block: rows w, w + d.
  AffineExpr w = (d0 % (8 * d)).floorDiv(8), within = d0 % 8;
  return {apply(d0.floorDiv(8 * d) * rows + w + within.floorDiv(4) * d, {q}),
          apply((within % 4) * vec, {q})};
}

/// `i` clamped below `n` when the tiles may reach past it (`overhangs`),
/// and `present` (index 1, else 0) narrowed to whether it was inside.
Value MmaSyncKernel::clampTo(Value i, int64_t n, bool overhangs, Value &present) {
  if (!overhangs)
    return i;
  auto c0 = b.getAffineConstantExpr(0), c1 = b.getAffineConstantExpr(1);
  Value inside = maxOf({c0, d0}, {minOf({c1, n - d0}, {i})});
  present = present ? minOf({d0, d1}, {present, inside}) : inside;
  return minOf({d0, b.getAffineConstantExpr(n - 1)}, {i});
}

/// A 16-byte piece, zero-filled when `present` (0 or 1) is 0.
void MmaSyncKernel::copy(Value dst, ValueRange dstIdx, Value src, ValueRange srcIdx,
                         Value present) {
  tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
      b, loc, nvgpu::DeviceAsyncTokenType::get(ctx), dst, dstIdx, src, srcIdx, b.getIndexAttr(vec),
      present ? apply(d0 * vec, {present}) : Value(), b.getUnitAttr()));
}

/// One element into shared memory, zero when `present` (index 0 or 1, or
/// none: always) is 0, from `srcIdx` all the same (clamped in bounds).
/// cp.async copies 4 bytes at least: 16-bit elements go through registers
/// (stored by storePending). Either way the stage is free (the barrier
/// ending the step that last read it) and is read S-1 barriers later.
void MmaSyncKernel::gather(Value dst, ValueRange dstIdx, Value src, ValueRange srcIdx,
                           Value present) {
  if (!p.halves()) {
    tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(b, loc, nvgpu::DeviceAsyncTokenType::get(ctx),
                                                      dst, dstIdx, src, srcIdx, b.getIndexAttr(1),
                                                      present, UnitAttr()));
    return;
  }
  Value v = memref::LoadOp::create(b, loc, src, srcIdx);
  if (present)
    v = arith::SelectOp::create(
        b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, present, cst(0)), v,
        arith::ConstantOp::create(b, loc, b.getFloatAttr(elt, 0)));
  pending.push_back({v, dst, llvm::to_vector(dstIdx)});
}

void MmaSyncKernel::storePending() {
  for (Pending &s : pending)
    memref::StoreOp::create(b, loc, s.value, s.dst, s.idx);
  pending.clear();
}

/// A: tileM rows of tileK/vec 16-byte pieces (or of tileK elements, when
/// K ends inside a k step: its rows are not 16-byte aligned). Rows past M
/// (and a convolution's k past K) read as zeros.
void MmaSyncKernel::copyA(Value k0, Value stage) {
  int64_t T = p.threads();
  for (int64_t s = 0; p.gatheredA() && s < p.tileM * tileK / T; ++s) {
    Value row = apply((d0 + s * T).floorDiv(tileK), {tid});
    Value col = apply((d0 + s * T) % tileK, {tid});
    Value present;
    Value m = clampTo(apply(d0 * p.tileM + d1, {bm, row}), p.M, p.raggedM(), present);
    Value k = clampTo(apply(d0 + d1, {k0, col}), p.K, true, present);
    gather(smemA, {stage, row, col}, A, {m, k}, present);
  }
  for (int64_t s = 0; !p.gatheredA() && s < p.tileM * tileK / vec / T; ++s) {
    auto [row, col] = pieceOf(apply(d0 + s * T, {tid}), tileK / vec, shapeA[2] * eltBytes);
    Value present;
    SmallVector<Value> idx{clampTo(apply(d0 * p.tileM + d1, {bm, row}), p.M, p.raggedM(), present),
                           apply(d0 + d1, {k0, col})};
    if (batchedA)
      idx.insert(idx.begin(), bb);
    copy(smemA, {stage, row, col}, A, idx, present);
  }
}

/// B = im2col(X[n]): element (k, p) is X[n, c, oh*s + kh*d, ow*s + kw*d]
/// for k = (c, kh, kw), p = (oh, ow); one element at a time. With implicit
/// padding the image is unpadded: a position outside it reads as zero
/// (cp.async copies no source bytes), from a clamped address.
void MmaSyncKernel::copyConvB(Value k0, Value stage) {
  int64_t T = p.threads();
  auto c0 = b.getAffineConstantExpr(0), c1 = b.getAffineConstantExpr(1);
  for (int64_t s = 0; s < tileK * p.tileN / T; ++s) {
    Value kk = apply((d0 + s * T).floorDiv(p.tileN), {tid});
    Value pp = apply((d0 + s * T) % p.tileN, {tid});
    Value within;
    Value k = clampTo(apply(d0 + d1, {k0, kk}), p.K, p.gatheredA(), within);
    Value pix = clampTo(apply(d0 * p.tileN + d1, {bn, pp}), p.N, p.raggedN(), within);
    int64_t window = p.kh * p.kw;
    Value c = apply(d0.floorDiv(window), {k});
    int64_t top = pad ? pad->top : 0, left = pad ? pad->left : 0;
    AffineExpr eh = d0.floorDiv(p.ow) * p.strideH + (d1 % window).floorDiv(p.kw) * p.dilH - top;
    AffineExpr ew = (d0 % p.ow) * p.strideW + (d1 % p.kw) * p.dilW - left;
    Value ih = apply(eh, {pix, k}), iw = apply(ew, {pix, k});
    Value present = within;
    if (pad) {
      int64_t H = pad->height, W = pad->width;
      // 1 inside the image (and K), else 0: min(1, ih + 1, H - ih, iw +
      // 1, W - iw[, present]) clamped at 0.
      SmallVector<AffineExpr> bounds{c1, d0 + 1, H - d0, d1 + 1, W - d1};
      SmallVector<Value> xs{ih, iw};
      if (within) {
        bounds.push_back(d2);
        xs.push_back(within);
      }
      present = maxOf({c0, d0}, {minOf(bounds, xs)});
      ih = maxOf({c0, d0}, {minOf({b.getAffineConstantExpr(H - 1), d0}, {ih})});
      iw = maxOf({c0, d0}, {minOf({b.getAffineConstantExpr(W - 1), d0}, {iw})});
    }
    gather(smemB, {stage, kk, pp}, B, {bb, c, ih, iw}, present);
  }
}

/// B: tileK rows of tileN/vec 16-byte pieces; columns past N read as zeros.
void MmaSyncKernel::copyB(Value k0, Value stage) {
  int64_t T = p.threads();
  for (int64_t s = 0; s < tileK * p.tileN / vec / T; ++s) {
    auto [row, col] = pieceOf(apply(d0 + s * T, {tid}), p.tileN / vec, shapeB[2] * eltBytes);
    Value present;
    SmallVector<Value> idx{apply(d0 + d1, {k0, row}),
                           clampTo(apply(d0 * p.tileN + d1, {bn, col}), p.N, p.raggedN(), present)};
    if (batched)
      idx.insert(idx.begin(), bb);
    copy(smemB, {stage, row, col}, B, idx, present);
  }
}

/// One k step's tiles of A and B into shared memory `stage`, as 16-byte
/// asynchronous copies (cp.async.cg, bypassing L1), committed as a group.
Value MmaSyncKernel::copyTiles(Value k0, Value stage) {
  tokens.clear();
  copyA(k0, stage);
  if (p.form == Plan::Conv)
    copyConvB(k0, stage);
  else
    copyB(k0, stage);
  return nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, nvgpu::DeviceAsyncTokenType::get(ctx),
                                                 tokens);
}

/// A step of the main loop: the next tiles in flight, this step's landed,
/// then every warp's products from them.
void MmaSyncKernel::emitStep(scf::ForOp loop) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value k0 = loop.getInductionVar();
  Value stage = apply(d0.floorDiv(tileK) % S, {k0});
  // Prefetch step k+S-1 into the stage step k-1 used, which every warp
  // is done with (the barrier ending the last step). Past the last step
  // the last tiles are copied again, into a stage nobody reads: no branch.
  Value next = affine::AffineMinOp::create(
      b, loc,
      AffineMap::get(1, 0, {d0 + (S - 1) * tileK, b.getAffineConstantExpr(p.loopK() - tileK)}, ctx),
      ValueRange{k0});
  Value group = copyTiles(next, apply((d0.floorDiv(tileK) + (S - 1)) % S, {k0}));
  // All but the newest S-1 groups done: this step's tiles have landed.
  nvgpu::DeviceAsyncWaitOp::create(b, loc, group, b.getI32IntegerAttr(S - 1));
  // This step's stage as 2-D views, what the fragment loads read (rows
  // as far apart as the padded buffer's).
  auto stageView = [&](Value smem, int64_t rows, int64_t cols) -> Value {
    auto type = cast<MemRefType>(smem.getType());
    auto view =
        MemRefType::get({rows, cols}, fragElt,
                        StridedLayoutAttr::get(ctx, ShapedType::kDynamic, {type.getDimSize(2), 1}),
                        type.getMemorySpace());
    return memref::SubViewOp::create(
        b, loc, view, smem, ArrayRef<OpFoldResult>{stage, b.getIndexAttr(0), b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(rows), b.getIndexAttr(cols)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1), b.getIndexAttr(1)});
  };
  Value tileA = stageView(fragA, p.tileM, tileK), tileB = stageView(fragB, tileK, p.tileN);
  gpu::BarrierOp::create(b, loc);
  SmallVector<Value> acc(loop.getRegionIterArgs().begin(), loop.getRegionIterArgs().end());
  AffineMap identity2 = AffineMap::getMinorIdentityMap(2, 2, ctx);
  auto contractMaps = b.getAffineMapArrayAttr({AffineMap::get(3, 0, {d0, d2}, ctx),
                                               AffineMap::get(3, 0, {d2, d1}, ctx),
                                               AffineMap::get(3, 0, {d0, d1}, ctx)});
  auto iterators =
      b.getArrayAttr({vector::IteratorTypeAttr::get(ctx, vector::IteratorType::parallel),
                      vector::IteratorTypeAttr::get(ctx, vector::IteratorType::parallel),
                      vector::IteratorTypeAttr::get(ctx, vector::IteratorType::reduction)});
  auto aType = VectorType::get({kMmaM, mmaK}, fragElt);
  auto bType = VectorType::get({mmaK, kMmaN}, fragElt);
  for (int64_t kk = 0; kk < tileK; kk += mmaK) {
    SmallVector<Value> as, bs;
    for (int64_t i = 0; i < TI; ++i)
      as.push_back(vector::TransferReadOp::create(
          b, loc, aType, tileA, ValueRange{apply(d0 + i * kMmaM, {warpM}), cst(kk)}, zeroElt,
          identity2, inBounds));
    for (int64_t j = 0; j < TJ; ++j)
      bs.push_back(vector::TransferReadOp::create(
          b, loc, bType, tileB, ValueRange{cst(kk), apply(d0 + j * kMmaN, {warpN})}, zeroElt,
          identity2, inBounds));
    for (int64_t i = 0; i < TI; ++i)
      for (int64_t j = 0; j < TJ; ++j)
        acc[i * TJ + j] = vector::ContractionOp::create(b, loc, as[i], bs[j], acc[i * TJ + j],
                                                        contractMaps, iterators);
  }
  storePending();
  gpu::BarrierOp::create(b, loc);
  scf::YieldOp::create(b, loc, acc);
}

/// The accumulators back home, then C's tile narrowed (16-bit data) and
/// the epilogue applied.
void MmaSyncKernel::emitEpilogue(scf::ForOp loop, Value firstGroup) {
  // The last step's redundant prefetch lands before the kernel goes on.
  nvgpu::DeviceAsyncWaitOp::create(b, loc, firstGroup, b.getI32IntegerAttr(0));
  for (int64_t i = 0; i < TI; ++i)
    for (int64_t j = 0; j < TJ; ++j)
      vector::TransferWriteOp::create(b, loc, loop.getResult(i * TJ + j), accHome, accAt(i, j),
                                      minorIdentity(accHome), inBounds);
  if (!p.staged() && epilogue.empty())
    return;
  // The block's tile is complete once every warp wrote its part; then its
  // threads narrow it into C (16-bit data) and apply the epilogue, element
  // by element, in a device function: the vector-to-nvgpu conversion of
  // the kernel would take scalar arithmetic for matrix arithmetic.
  gpu::BarrierOp::create(b, loc);
  SmallVector<Value> extra;
  if (p.staged())
    extra = {cOriginal, smemC};
  emitTileFunction(kernels, b, loc, (kernel.getName() + "_epilogue").str(), p, cShape, ids, extra,
                   ArrayRef<Operation *>(fused).drop_front(), map,
                   [&](OpBuilder &fb, ArrayRef<Value> ivs, Value row, Value col, ValueRange extra,
                       IRMapping &emap) {
                     if (p.staged()) {
                       Value v = memref::LoadOp::create(fb, loc, extra[1], ValueRange{row, col});
                       if (p.narrows())
                         v = arith::TruncFOp::create(fb, loc, p.cElt, v);
                       memref::StoreOp::create(fb, loc, v, extra[0], ivs);
                     }
                     emitEpilogueAt(fb, loc, epilogue, cShape, ivs, emap);
                   });
}

FailureOr<bool> MmaSyncKernel::emit(func::FuncOp fn) {
  cShape = llvm::to_vector(cast<MemRefType>(op.getDpsInitOperand(0)->get().getType()).getShape());
  SetVector<Value> args;
  SetVector<Operation *> clones;
  // An implicitly padded convolution reads the pad copy's source instead.
  SmallVector<Operation *> also;
  if (pad)
    also.push_back(pad->copy);
  if (!captureFused(op, epilogue, also, fused, args, clones))
    return failure();
  SmallVector<int64_t> grid{(p.N + p.tileN - 1) / p.tileN, (p.M + p.tileM - 1) / p.tileM, p.batch};
  kernel = kernels.create(fn, fused.back(), args, clones, grid, p.threads(), map, b);
  kernel->setAttr(KilnDialect::getMmaAttrName(), b.getUnitAttr()); // for kiln-gpu-lower-mma
  setUpSharedTiles();
  setUpOperands();
  setUpCoordinates();
  SmallVector<Value> init = loadAccumulators();
  // Steps 0 .. S-2 in flight before the loop (a K of fewer steps copies its
  // last tiles again, into stages no step reads).
  Value firstGroup;
  for (int64_t s = 0; s + 1 < S; ++s) {
    Value g = copyTiles(cst(std::min(s * tileK, p.loopK() - tileK)), cst(s));
    storePending();
    if (!firstGroup)
      firstGroup = g;
  }
  auto loop = scf::ForOp::create(b, loc, cst(0), cst(p.loopK()), cst(tileK), init);
  emitStep(loop);
  emitEpilogue(loop, firstGroup);
  return eraseFused(op, epilogue, pad);
}

} // namespace

FailureOr<bool> outlineTensorCoreMatmul(KernelFactory &kernels, func::FuncOp fn,
                                        linalg::LinalgOp op, bool zeroInit,
                                        ArrayRef<linalg::GenericOp> epilogue,
                                        const ImplicitPad *pad) {
  // Hopper: warpgroup MMA from shared memory, where the shape allows.
  if (!pad && kernels.chip() == "sm_90a")
    if (std::optional<Plan> wide = planWarpgroupMatmul(op, kernels.tuning()))
      return outlineWarpgroupMatmul(kernels, fn, op, *wide, zeroInit, epilogue);
  auto plan = planMatmul(op, kernels.tuning());
  if (!plan)
    return failure();
  return MmaSyncKernel(kernels, op, *plan, zeroInit, epilogue, pad).emit(fn);
}

} // namespace kiln

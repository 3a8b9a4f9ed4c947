//===- MmaSyncCopies.cpp - an mma.sync kernel's tiles into shared memory ===//
//
// Each k step's tiles of A and B as cp.async copies (16-byte pieces, or
// elements where rows are not 16-byte aligned), zero-filled past the
// matmul's M, N and K; a convolution's B gathered as the im2col of its
// image.
//
//===----------------------------------------------------------------------===//

#include "MmaSyncKernel.h"

using namespace mlir;

namespace kiln {

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

/// `i` clamped below `n` (the run's size `run`, when it is known only at
/// run time) when the tiles may reach past it (`overhangs`), and `present`
/// (index 1, else 0) narrowed to whether it was inside.
Value MmaSyncKernel::clampTo(Value i, int64_t n, Value run, bool overhangs, Value &present) {
  if (!overhangs)
    return i;
  auto c0 = b.getAffineConstantExpr(0), c1 = b.getAffineConstantExpr(1);
  if (run) { // past the end, and (a size of 0) before the start, clamped
    Value inside = maxOf({c0, d0}, {minOf({c1, d1 - d0}, {i, run})});
    present = present ? minOf({d0, d1}, {present, inside}) : inside;
    return maxOf({c0, d0}, {minOf({d0, d1 - 1}, {i, run})});
  }
  Value inside = maxOf({c0, d0}, {minOf({c1, n - d0}, {i})});
  present = present ? minOf({d0, d1}, {present, inside}) : inside;
  return minOf({d0, b.getAffineConstantExpr(n - 1)}, {i});
}

Value MmaSyncKernel::lastStepAt(Value k, int64_t ahead) {
  if (runLoopK)
    return minOf({d0 + ahead, d1 - tileK}, {k, runLoopK});
  return minOf({d0 + ahead, b.getAffineConstantExpr(p.loopK() - tileK)}, {k});
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
    Value m = clampTo(apply(d0 * p.tileM + d1, {bm, row}), p.M, runM, p.raggedM(), present);
    Value k = clampTo(apply(d0 + d1, {k0, col}), p.K, runK, true, present);
    SmallVector<Value> idx{m, k};
    if (batchedA)
      idx.insert(idx.begin(), bb);
    gather(smemA, {stage, row, col}, A, idx, present);
  }
  for (int64_t s = 0; !p.gatheredA() && s < p.tileM * tileK / vec / T; ++s) {
    auto [row, col] = pieceOf(apply(d0 + s * T, {tid}), tileK / vec, shapeA[2] * eltBytes);
    Value present;
    SmallVector<Value> idx{
        clampTo(apply(d0 * p.tileM + d1, {bm, row}), p.M, runM, p.raggedM(), present),
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
    Value k = clampTo(apply(d0 + d1, {k0, kk}), p.K, Value(), p.gatheredA(), within);
    Value pix = clampTo(apply(d0 * p.tileN + d1, {bn, pp}), p.N, Value(), p.raggedN(), within);
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

/// B: tileK rows of tileN/vec 16-byte pieces; columns past N (and rows
/// past a run-time K) read as zeros.
void MmaSyncKernel::copyB(Value k0, Value stage) {
  int64_t T = p.threads();
  for (int64_t s = 0; s < tileK * p.tileN / vec / T; ++s) {
    auto [row, col] = pieceOf(apply(d0 + s * T, {tid}), p.tileN / vec, shapeB[2] * eltBytes);
    Value present;
    Value k = clampTo(apply(d0 + d1, {k0, row}), p.K, runK, p.dynK, present);
    SmallVector<Value> idx{k, clampTo(apply(d0 * p.tileN + d1, {bn, col}), p.N, runN,
                                      p.raggedN(), present)};
    if (batched)
      idx.insert(idx.begin(), bb);
    copy(smemB, {stage, row, col}, B, idx, present);
  }
}

/// B element by element (its rows' stride, N, a run-time size: 16-byte
/// pieces might not be aligned); past N and K zeros.
void MmaSyncKernel::copyGatheredB(Value k0, Value stage) {
  int64_t T = p.threads();
  for (int64_t s = 0; s < tileK * p.tileN / T; ++s) {
    Value row = apply((d0 + s * T).floorDiv(p.tileN), {tid});
    Value col = apply((d0 + s * T) % p.tileN, {tid});
    Value present;
    SmallVector<Value> idx{
        clampTo(apply(d0 + d1, {k0, row}), p.K, runK, p.dynK, present),
        clampTo(apply(d0 * p.tileN + d1, {bn, col}), p.N, runN, p.raggedN(), present)};
    if (batched)
      idx.insert(idx.begin(), bb);
    gather(smemB, {stage, row, col}, B, idx, present);
  }
}

/// One k step's tiles of A and B into shared memory `stage`, as 16-byte
/// asynchronous copies (cp.async.cg, bypassing L1), committed as a group.
Value MmaSyncKernel::copyTiles(Value k0, Value stage) {
  tokens.clear();
  copyA(k0, stage);
  if (p.form == Plan::Conv)
    copyConvB(k0, stage);
  else if (p.gatheredB())
    copyGatheredB(k0, stage);
  else
    copyB(k0, stage);
  return nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, nvgpu::DeviceAsyncTokenType::get(ctx),
                                                 tokens);
}

} // namespace kiln

//===- WarpgroupMatmul.cpp - matmuls on Hopper's wgmma (sm_90a) -----------===//
//
// C[.., m, n] += A[.., m, k] * B[.., k, n] for f32, f16 or bf16 A and B
// (C f32, or 16-bit), M and N multiples of 128 =>
// gpu.func (grid [N/TN, M/128, batch]; 256 threads = 2 warpgroups;
//           TN = 128 or 256 (TensorCorePlan.cpp);
//           S = 4 stages of A 128xBK and B BKxTN in dynamic shared memory,
//           BK = 128 bytes of k: 64 for 16-bit data, 32 for f32) {
//   tiles 0, 1 -> stages 0, 1 (one cp.async commit group each)
//   acc = 0                                   (TN/2 f32 per thread: m64nTN)
//   scf.for kt iter_args(acc) {
//     cp.async.wait_group 1; fence.proxy.async; bar.sync   (tile kt landed)
//     tile kt+2 -> stage (kt+2) % S; commit      (its last reader, tile
//                        kt-2, finished before anyone passed the bar.sync)
//     wgmma.fence; wgmma x BK/k (warpgroup w: rows 64w..64w+63);
//     wgmma.commit_group; wgmma.wait_group 1   (tile kt-1's products done)
//   }
//   wgmma.wait_group 0; acc -> C (+ C's old value); then the epilogue
// }
// Operands are read by the tensor cores straight from shared memory,
// through 64-bit matrix descriptors, in the 128-byte swizzled layouts TMA
// would write (16-byte chunk c of 128-byte row r stored at c ^ (r % 8),
// stage bases 1024-byte aligned). A is K-major (a row of k per m). 16-bit
// B is N-major (two 64-wide halves of BK rows; wgmma's trans-b) and comes
// by cp.async. tf32 wgmma takes only K-major B, so f32 B is transposed on
// the way: each thread loads 4x4 blocks into registers one tile ahead and
// stores them as k chunks (m64nTNk8.tf32). Generic-proxy writes
// (cp.async, st.shared) reach the wgmma (async proxy) through
// fence.proxy.async.
//
// That is the shared ring, used for f32 (and with loads=ring). 16-bit
// matmuls take the warp-specialized loop instead (WarpgroupSpecialized.cpp):
// the same stages and wgmmas, a third warpgroup loading.
//
//===----------------------------------------------------------------------===//

#include "KernelFactory.h"
#include "WarpgroupKernel.h"
#include "kiln/ArtifactFormat.h"
#include "kiln/Lowering/Host/KernelCaptures.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace kiln {

namespace {
/// True when `e` only narrows `op`'s C (f32) into a 16-bit tensor of its
/// shape, and nothing else reads C: the kernel then narrows the
/// accumulators in registers and never writes C.
bool onlyNarrows(linalg::LinalgOp op, linalg::GenericOp e) {
  Value c = op.getDpsInitOperand(0)->get();
  if (e.getNumDpsInputs() != 1 || e.getNumDpsInits() != 1 || e.getDpsInputs()[0] != c ||
      !llvm::all_of(e.getIndexingMapsArray(), [](AffineMap m) { return m.isIdentity(); }) ||
      !llvm::all_of(c.getUsers(), [&](Operation *u) { return u == op || u == e; }))
    return false;
  Block *body = e.getBlock();
  auto trunc = dyn_cast<arith::TruncFOp>(&body->front());
  return body->getOperations().size() == 2 && trunc && trunc.getIn() == body->getArgument(0) &&
         body->getTerminator()->getOperand(0) == trunc.getResult();
}

/// Every thread loads and multiplies: a barrier per k step hands the
/// stages round (see the file comment). The accumulators after the last.
Value emitRingLoop(WarpgroupKernel &k, Value tid) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  MLIRContext *ctx = b.getContext();
  AffineExpr d0, d1;
  bindDims(ctx, d0, d1);
  const int64_t S = k.S, KT = k.KT;
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(ctx);
  auto group = [&](ValueRange tokens) {
    return nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, tokenType, tokens).getResult();
  };
  // Tiles 0 .. S-3 in flight first; always S-2 groups (empty ones past the
  // last tile), so the waits below count the same for every K.
  Value firstGroup;
  for (int64_t s = 0; s + 2 < S; ++s) {
    Value g = group(s < KT ? ValueRange(k.copyTiles(k.cst(s), k.cst(s), tid, 256)) : ValueRange{});
    if (!firstGroup)
      firstGroup = g;
    if (k.tf32 && s < KT)
      k.storeB(k.loadB(k.cst(s), tid), k.cst(s), tid);
  }
  SmallVector<Value> init{LLVM::ZeroOp::create(b, loc, k.accType)};
  auto bType = VectorType::get({4}, b.getF32Type());
  // f32: tile S-2's B, in registers until its stage is free.
  if (k.tf32) {
    SmallVector<Value> rows =
        S - 2 < KT ? k.loadB(k.cst(S - 2), tid)
                   : SmallVector<Value>(4 * (k.p.tileN / 128),
                                        arith::ConstantOp::create(
                                            b, loc, bType, DenseElementsAttr::get(bType, 0.0f)));
    init.append(rows);
  }
  Value warpgroup = k.apply(d0.floorDiv(128), {tid});
  auto loop = scf::ForOp::create(b, loc, k.cst(0), k.cst(KT), k.cst(1), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kt = loop.getInductionVar();
    Value acc = loop.getRegionIterArgs()[0];
    SmallVector<Value> rows(loop.getRegionIterArgs().drop_front());
    // This thread's copies of tile kt landed (all but the newest S-3 groups),
    // are visible to the async proxy, and so are everyone else's.
    nvgpu::DeviceAsyncWaitOp::create(b, loc, firstGroup, b.getI32IntegerAttr(S - 3));
    NVVM::FenceProxyOp::create(b, loc, NVVM::ProxyKindAttr::get(ctx, NVVM::ProxyKind::async_shared),
                               NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
    gpu::BarrierOp::create(b, loc);
    // Tile kt+S-2 into the stage tile kt-2 used: every warpgroup waited for
    // that tile's products before the barrier.
    Value next = k.apply(d0 + (S - 2), {kt});
    Value inRange =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, next, k.cst(KT)).getResult();
    Value nextSlot = k.apply(d0 % S, {next});
    auto prefetch = scf::IfOp::create(b, loc, inRange, /*withElse=*/true);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPoint(prefetch.thenYield());
      group(k.copyTiles(next, nextSlot, tid, 256));
      if (k.tf32)
        k.storeB(rows, nextSlot, tid);
      b.setInsertionPoint(prefetch.elseYield());
      group({});
    }
    acc = k.multiply(acc, k.apply(d0 % S, {kt}), warpgroup);
    SmallVector<Value> yields{acc};
    if (k.tf32) {
      // Tile kt+S-1's B into registers while the tensor cores work.
      Value after = k.apply(d0 + (S - 1), {kt});
      Value wanted =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, after, k.cst(KT)).getResult();
      auto fetch = scf::IfOp::create(b, loc, TypeRange(ValueRange(rows)), wanted,
                                     /*withElse=*/true);
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToEnd(fetch.thenBlock());
      scf::YieldOp::create(b, loc, k.loadB(after, tid));
      b.setInsertionPointToEnd(fetch.elseBlock());
      scf::YieldOp::create(b, loc, rows);
      llvm::append_range(yields, fetch.getResults());
    }
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 1);
    scf::YieldOp::create(b, loc, yields);
  }
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  return loop.getResult(0);
}
/// The accumulators `acc` (m64 x tileN of the thread's warpgroup) into D,
/// pairs of elements, plus C's old value unless `zeroInit` (D is C, or the
/// 16-bit result a lone narrowing epilogue writes).
void storeAccumulators(WarpgroupKernel &k, Value acc, Value thread, Value C, Value D,
                       bool zeroInit) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  const Plan &p = k.p;
  AffineExpr d0, d1;
  bindDims(b.getContext(), d0, d1);
  Type f32 = b.getF32Type(), cElt = p.cElt;
  Type dElt = cast<MemRefType>(D.getType()).getElementType();
  auto global = [&](Value row, Value col) {
    SmallVector<Value> idx;
    if (k.batched)
      idx.push_back(k.bb);
    idx.push_back(row);
    idx.push_back(col);
    return idx;
  };
  // The accumulator fragment (PTX "wgmma D, m64nN"): in warpgroup w, warp
  // v's lane l holds, for each 8 columns j, rows 16v + l/4 (+ 8) at
  // columns 8j + 2(l % 4) (+ 1): acc[4j + 2h + {0, 1}] for row half h.
  Value fragRow =
      k.apply(d0 * p.tileM + d1.floorDiv(128) * 64 + (d1 % 128).floorDiv(32) * 16 +
                  (d1 % 32).floorDiv(4),
              {k.bm, thread});
  Value fragCol = k.apply(d0 * p.tileN + (d1 % 4) * 2, {k.bn, thread});
  auto pairType = VectorType::get({2}, cElt);
  int64_t cBytes = cElt.getIntOrFloatBitWidth() / 8;
  int64_t dBytes = dElt.getIntOrFloatBitWidth() / 8;
  for (int64_t j = 0; j < p.tileN / 8; ++j)
    for (int64_t h = 0; h < 2; ++h) {
      Value row = k.apply(d0 + 8 * h, {fragRow}), col = k.apply(d0 + 8 * j, {fragCol});
      // An overhanging tile stores only what lies inside C (N even: a
      // pair is in or out).
      OpBuilder::InsertionGuard guard(b);
      if (Value in = k.insideC(row, col)) {
        auto check = scf::IfOp::create(b, loc, in, /*withElseRegion=*/false);
        b.setInsertionPointToStart(&check.getThenRegion().front());
      }
      SmallVector<Value> pair;
      for (int64_t e = 0; e < 2; ++e)
        pair.push_back(LLVM::ExtractValueOp::create(b, loc, acc, 4 * j + 2 * h + e));
      Value v = vector::FromElementsOp::create(b, loc, VectorType::get({2}, f32), pair);
      SmallVector<Value> at = global(row, col);
      if (!zeroInit) {
        Value old = vector::LoadOp::create(b, loc, pairType, C, at, /*nontemporal=*/false,
                                           llvm::MaybeAlign(2 * cBytes));
        if (cElt != f32)
          old = arith::ExtFOp::create(b, loc, VectorType::get({2}, f32), old);
        v = arith::AddFOp::create(b, loc, v, old);
      }
      if (dElt != f32)
        v = arith::TruncFOp::create(b, loc, VectorType::get({2}, dElt), v);
      vector::StoreOp::create(b, loc, v, D, at, /*nontemporal=*/false,
                              llvm::MaybeAlign(2 * dBytes));
    }
}
} // namespace

Value WarpgroupKernel::apply(AffineExpr e, ValueRange operands) {
  return affine::AffineApplyOp::create(
      b, loc, AffineMap::get(operands.size(), 0, e, b.getContext()), operands);
}

Value WarpgroupKernel::insideC(Value row, Value col) {
  Value in;
  auto below = [&](Value i, int64_t n) {
    Value c = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, i, cst(n));
    in = in ? arith::AndIOp::create(b, loc, in, c).getResult() : c;
  };
  if (p.raggedM())
    below(row, p.M);
  if (p.raggedN())
    below(col, p.N);
  return in;
}

Value WarpgroupKernel::descriptor(uint64_t fields, Value addr) {
  auto i64 = b.getI64Type();
  Value a = arith::IndexCastUIOp::create(b, loc, i64, addr);
  a = arith::ShRUIOp::create(b, loc, a, arith::ConstantIntOp::create(b, loc, i64, 4));
  return arith::OrIOp::create(b, loc, a,
                              arith::ConstantIntOp::create(b, loc, i64, (int64_t)fields));
}

Value WarpgroupKernel::cst(int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v).getResult();
}

SmallVector<Value> WarpgroupKernel::copyTiles(Value t, Value slot, Value thread, int64_t T) {
  MLIRContext *ctx = b.getContext();
  AffineExpr d0, d1;
  bindDims(ctx, d0, d1);
  auto xorIdx = [&](Value x, Value y) { return arith::XOrIOp::create(b, loc, x, y).getResult(); };
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(ctx);
  Value k0 = apply(d0 * BK, {t});
  SmallVector<Value> tokens;
  // `valid`: false for a piece past M or N (an overhanging tile), copied
  // from a clamped address with no source bytes (zeros).
  auto copy = [&](Value dst, ValueRange dstIdx, Value src, ValueRange srcIdx, Value valid) {
    Value srcElements;
    if (valid)
      srcElements = arith::SelectOp::create(b, loc, valid, cst(vec), cst(0));
    tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(b, loc, tokenType, dst, dstIdx, src, srcIdx,
                                                      b.getIndexAttr(vec), srcElements,
                                                      b.getUnitAttr()));
  };
  // Index `i` of a dimension of `n`, clamped, and whether it was inside.
  auto clamp = [&](Value i, int64_t n, Value &valid) -> Value {
    valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, i, cst(n));
    return arith::MinUIOp::create(b, loc, i, cst(n - 1));
  };
  // A: 128 rows of 8 chunks, each chunk at its swizzled place.
  for (int64_t s = 0; s < p.tileM * 8 / T; ++s) {
    AffineExpr q = d0 + s * T;
    Value row = apply(q.floorDiv(8), {thread}), column = apply(q % 8, {thread});
    Value chunk = xorIdx(column, apply(q.floorDiv(8) % 8, {thread}));
    Value globalRow = apply(d0 * p.tileM + d1, {bm, row}), validRow;
    if (p.raggedM())
      globalRow = clamp(globalRow, p.M, validRow);
    // K may end inside the last k tile (in whole 16-byte pieces).
    Value globalK = apply(d0 + d1 * vec, {k0, column}), validK;
    if (p.K % BK) {
      globalK = arith::MulIOp::create(
          b, loc, clamp(arith::DivUIOp::create(b, loc, globalK, cst(vec)), p.K / vec, validK),
          cst(vec));
      validRow = validRow ? arith::AndIOp::create(b, loc, validRow, validK).getResult() : validK;
    }
    SmallVector<Value> src{globalRow, globalK};
    if (batchedA)
      src.insert(src.begin(), bb);
    copy(smA, {slot, row, apply(d0 * vec, {chunk})}, A, src, validRow);
  }
  // N-major B: BK rows of tileN/vec chunks, in blocks of 128 bytes (8
  // chunks) each swizzled within its k row: by k % 8 as wgmma reads it
  // (16-bit), or (f32, read by ld.shared into registers) by 2k % 8, so
  // that a warp's B^T fragment loads (4 k rows x 8 n) hit 32 banks.
  const int64_t rowChunks = p.tileN / vec, swizzleStep = tf32 ? 2 : 1;
  for (int64_t s = 0; nMajorB && s < BK * rowChunks / T; ++s) {
    AffineExpr q = d0 + s * T;
    Value kk = apply(q.floorDiv(rowChunks), {thread});
    Value block = apply((q % rowChunks).floorDiv(8), {thread});
    Value chunk = xorIdx(apply(q % 8, {thread}),
                         apply((q.floorDiv(rowChunks) * swizzleStep) % 8, {thread}));
    Value col = apply(d0 * p.tileN + d1 * vec, {bn, apply(q % rowChunks, {thread})}), validCol;
    if (p.raggedN()) // N is whole 16-byte pieces: a piece is in or out
      col = arith::MulIOp::create(
          b, loc, clamp(arith::DivUIOp::create(b, loc, col, cst(vec)), p.N / vec, validCol),
          cst(vec));
    Value globalK = apply(d0 + d1, {k0, kk}), validK;
    if (p.K % BK) {
      globalK = clamp(globalK, p.K, validK);
      validCol = validCol ? arith::AndIOp::create(b, loc, validCol, validK).getResult() : validK;
    }
    SmallVector<Value> src{globalK, col};
    if (batched)
      src.insert(src.begin(), bb);
    copy(smB, {slot, block, kk, apply(d0 * vec, {chunk})}, B, src, validCol);
  }
  return tokens;
}

// Each thread loads 4x4 blocks (4 k rows of 4 n, 16-byte loads) and stores
// their 4 columns as 16-byte k chunks. Thread t takes k block t % 8 and n
// blocks t / 8 + 32 r, so a warp's stores fill all banks.
SmallVector<Value> WarpgroupKernel::loadB(Value t, Value thread) {
  AffineExpr d0, d1;
  bindDims(b.getContext(), d0, d1);
  auto bType = VectorType::get({4}, b.getF32Type());
  SmallVector<Value> rows;
  for (int64_t r = 0; r < p.tileN / 128; ++r)
    for (int64_t i = 0; i < 4; ++i) {
      SmallVector<Value> at{apply(d0 * BK + (d1 % 8) * 4 + i, {t, thread}),
                            apply(d0 * p.tileN + d1.floorDiv(8) * 4 + r * 128, {bn, thread})};
      if (batched)
        at.insert(at.begin(), bb);
      rows.push_back(vector::LoadOp::create(b, loc, bType, B, at, /*nontemporal=*/false,
                                            llvm::MaybeAlign(16)));
    }
  return rows;
}

void WarpgroupKernel::storeB(ArrayRef<Value> rows, Value slot, Value thread) {
  AffineExpr d0;
  bindDims(b.getContext(), d0);
  auto bType = VectorType::get({4}, b.getF32Type());
  for (int64_t r = 0; r < p.tileN / 128; ++r)
    for (int64_t j = 0; j < 4; ++j) {
      SmallVector<Value> column;
      for (Value v : rows.slice(4 * r, 4))
        column.push_back(vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{j}));
      Value v = vector::FromElementsOp::create(b, loc, bType, column);
      AffineExpr n = d0.floorDiv(8) * 4 + j + r * 128;
      Value chunk = arith::XOrIOp::create(b, loc, apply(d0 % 8, {thread}), apply(n % 8, {thread}));
      vector::StoreOp::create(b, loc, v, smB,
                              ValueRange{slot, apply(n, {thread}), apply(d0 * 4, {chunk})},
                              /*nontemporal=*/false, llvm::MaybeAlign(16));
    }
}

Value WarpgroupKernel::multiply(Value acc, Value slot, Value warpgroup) {
  MLIRContext *ctx = b.getContext();
  AffineExpr d0, d1, d2;
  bindDims(ctx, d0, d1, d2);
  auto wgmmaType = tf32           ? NVVM::WGMMATypes::tf32
                   : p.elt.isBF16() ? NVVM::WGMMATypes::bf16
                                    : NVVM::WGMMATypes::f16;
  Value stageA = apply(d0 + d1 * kTileBytes + d2 * 64 * 128, {base, slot, warpgroup});
  Value stageB = apply(d0 + S * kTileBytes + d1 * bBytes, {base, slot});
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  int64_t mmaK = tf32 ? 8 : 16;
  for (int64_t j = 0; j < BK / mmaK; ++j) {
    // Each k step is 32 bytes into A's rows (and f32 B's); 16 rows of
    // 16-bit B.
    Value descA = descriptor(kDescKMajor, apply(d0 + j * 32, {stageA}));
    Value descB = tf32 ? descriptor(kDescKMajor, apply(d0 + j * 32, {stageB}))
                       : descriptor(kDescNMajor, apply(d0 + j * 16 * 128, {stageB}));
    acc = NVVM::WgmmaMmaAsyncOp::create(
        b, loc, accType, acc, descA, descB, NVVM::MMAShapeAttr::get(ctx, 64, p.tileN, mmaK),
        NVVM::WGMMATypesAttr::get(ctx, wgmmaType), NVVM::WGMMATypesAttr::get(ctx, wgmmaType),
        NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32),
        NVVM::WGMMAScaleOutAttr::get(ctx, NVVM::WGMMAScaleOut::one),
        NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
        NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
        NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row),
        // "col" is K-major B (PTX's trans-b = 0), "row" N-major (trans-b = 1).
        NVVM::MMALayoutAttr::get(ctx, tf32 ? NVVM::MMALayout::col : NVVM::MMALayout::row),
        NVVM::MMAIntOverflowAttr());
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  return acc;
}

/// TMA: maps of A and B as the kernel folds them (k.A, k.B), over the
/// buffers the launch passes (identity layouts: the pointer is the data);
/// none unless both have one.
static void addTensorMaps(KernelFactory &kernels, gpu::GPUFuncOp kernel, WarpgroupKernel &k,
                          const Plan &p, const SetVector<Value> &args, Value hostA,
                          Value hostB) {
  Value A = k.A, B = k.B;
  OpBuilder &b = k.b;
  int64_t dtype = p.elt.isF16()    ? kTensorMapF16
                  : p.elt.isBF16() ? kTensorMapBF16
                                   : kTensorMapF32;
  auto describe = [&](Value host, Value folded, int64_t boxInner,
                      int64_t boxOuter) -> std::optional<SmallVector<int64_t>> {
    auto type = dyn_cast<MemRefType>(host.getType());
    if (!type || !type.getLayout().isIdentity() || !args.contains(host))
      return std::nullopt;
    SmallVector<int64_t> desc(1 + KILN_TENSOR_MAP_WORDS, 0);
    desc[0] = llvm::find(args.getArrayRef(), host) - args.getArrayRef().begin();
    int64_t *w = desc.data() + 1;
    ArrayRef<int64_t> shape = cast<MemRefType>(folded.getType()).getShape();
    int64_t rank = shape.size(), stride = p.elt.getIntOrFloatBitWidth() / 8;
    w[0] = dtype;
    w[1] = rank;
    for (int64_t d = 0; d < rank; ++d) {
      w[2 + d] = shape[rank - 1 - d];
      if (d)
        w[7 + d - 1] = stride;
      stride *= shape[rank - 1 - d];
    }
    w[11] = boxInner;
    w[12] = boxOuter;
    if (rank == 3)
      w[13] = 1;
    w[16] = kTensorMapSwizzle128B;
    return desc;
  };
  // A: 128 rows of 128 bytes of k; B: BK rows of 128 bytes of n.
  auto descA = describe(hostA, A, k.BK, p.tileM);
  auto descB = describe(hostB, B, 8 * k.vec, k.BK);
  if (descA && descB) {
    k.mapA = kernels.addTensorMap(kernel, (*descA)[0], ArrayRef<int64_t>(*descA).drop_front());
    k.mapB = kernels.addTensorMap(kernel, (*descB)[0], ArrayRef<int64_t>(*descB).drop_front());
    // The pair along M (grid y) is fixed in the PTX (.reqnctapercluster),
    // so the launch stays a plain one.
    if (p.cluster > 1) {
      k.cluster = p.cluster;
      kernel->setAttr(NVVM::NVVMDialect::getClusterDimAttrName(),
                      b.getDenseI32ArrayAttr({1, static_cast<int32_t>(p.cluster), 1}));
    }
  }
}

FailureOr<bool> outlineWarpgroupMatmul(KernelFactory &kernels, func::FuncOp fn,
                                       linalg::LinalgOp op, const Plan &p, bool zeroInit,
                                       ArrayRef<linalg::GenericOp> epilogue) {
  SmallVector<int64_t> cShape(cast<MemRefType>(op.getDpsInitOperand(0)->get().getType()).getShape());
  SetVector<Value> args;
  SetVector<Operation *> clones;
  SmallVector<Operation *> fused;
  if (!captureFused(op, epilogue, {}, fused, args, clones))
    return failure();
  // (Asked before the launch exists: it passes C too.)
  bool narrowOnly = epilogue.size() == 1 && onlyNarrows(op, epilogue[0]);
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  IRMapping map;
  OpBuilder b(ctx);
  SmallVector<int64_t> grid{(p.N + p.tileN - 1) / p.tileN, (p.M + p.tileM - 1) / p.tileM,
                            p.batch};
  auto kernel = kernels.create(fn, fused.back(), args, clones, grid, p.threads(), map, b);
  // One block per SM, said to ptxas (.minnctapersm 1): with the thread
  // count that caps registers at entry, which setmaxnreg needs to act.
  if (p.specialized)
    kernel->setAttr("nvvm.minctasm", b.getI32IntegerAttr(1));
  WarpgroupKernel k(b, loc, p);
  k.S = p.stages;
  k.BK = p.tileK();
  k.vec = p.vec();
  k.KT = (p.K + k.BK - 1) / k.BK; // the last k tile may end past K (zeros)
  k.bBytes = p.tileN * 128; // one stage of B: BK x tileN
  k.tf32 = !p.halves();
  k.nMajorB = p.halves() || p.specialized;
  k.batched = p.form == Plan::Batched || p.form == Plan::Conv;
  k.batchedA = p.form == Plan::Batched;
  // The stages, 1024 bytes to align them (the swizzle repeats every 1024
  // bytes of address, so tiles must start on such a boundary), and the
  // specialized loop's mbarriers (a full and an empty one per stage).
  kernels.setSharedBytes(kernel, k.stageBytes() + 1024 + (p.specialized ? 16 * k.S : 0));
  Type elt = p.elt;
  auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  AffineExpr d0, d1;
  bindDims(ctx, d0, d1);

  Value dyn = gpu::DynamicSharedMemoryOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), MemRefLayoutAttrInterface(),
                              workgroup));
  Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, dyn);
  Value pad = k.apply((1024 - d0 % 1024) % 1024, {address});
  k.base = k.apply(d0 + d1, {address, pad});
  auto view = [&](int64_t offset, ArrayRef<int64_t> shape) -> Value {
    return memref::ViewOp::create(
        b, loc, MemRefType::get(shape, elt, MemRefLayoutAttrInterface(), workgroup), dyn,
        k.apply(d0 + offset, {pad}), ValueRange{});
  };
  const int64_t S = k.S;
  k.smA = view(0, {S, p.tileM, k.BK});
  const int64_t rowElts = 8 * k.vec; // elements per 128 bytes
  k.smB = k.nMajorB ? view(S * k.kTileBytes, {S, p.tileN / rowElts, k.BK, rowElts})
                    : view(S * k.kTileBytes, {S, p.tileN, k.BK}); // K-major rows

  // ins(X, W) for a convolution: the weights are the GEMM's A.
  Value hostA = op->getOperand(0), hostB = op->getOperand(1);
  if (p.form == Plan::Conv)
    std::swap(hostA, hostB);
  Value A = map.lookup(hostA), B = map.lookup(hostB), C = map.lookup(op->getOperand(2));
  auto fold = [&](Value v, unsigned keep) { return foldLeading(b, loc, v, keep); };
  auto pixels = [&](Value v) -> Value { // [n, c, h, w] as [n, c, h*w]
    return memref::CollapseShapeOp::create(b, loc, v,
                                           SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  };
  if (p.form == Plan::SharedB) { // [lead..., m, x] as [M, x]
    A = fold(A, 2);
    C = fold(C, 2);
  } else if (p.form == Plan::Batched) { // [lead..., m, x] as [batch, m, x]
    A = fold(A, 3);
    B = fold(B, 3);
    C = fold(C, 3);
  } else if (p.form == Plan::Conv) { // 1x1: W as [F, C]; X, Y as [n, C|F, H*W]
    A = memref::CollapseShapeOp::create(b, loc, A, SmallVector<ReassociationIndices>{{0}, {1, 2, 3}});
    B = pixels(B);
    C = pixels(C);
  }
  k.A = A;
  k.B = B;
  if (p.tma)
    addTensorMaps(kernels, kernel, k, p, args, hostA, hostB);
  // Where the accumulators go: C, or straight into the narrowed output.
  Value D = C;
  if (narrowOnly) {
    Value narrowed = map.lookup(linalg::GenericOp(epilogue[0]).getDpsInitOperand(0)->get());
    D = p.form == Plan::Conv ? pixels(narrowed) : fold(narrowed, k.batched ? 3 : 2);
  }

  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  k.bn = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  k.bm = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  k.bb = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  // m64 x tileN per warpgroup: tileN / 2 f32 per thread.
  k.accType = LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(p.tileN / 2, b.getF32Type()));
  // `thread`: the index among the 256 multiplying threads.
  Value thread = tid;
  SmallVector<Value> accs =
      p.specialized ? emitSpecializedLoop(k, tid, thread) : SmallVector<Value>{emitRingLoop(k, tid)};
  SmallVector<Value> ids{thread, k.bn, k.bm, k.bb};
  if (p.specialized && k.tf32)
    storeTransposed(k, accs, thread, C, zeroInit);
  else
    storeAccumulators(k, accs[0], thread, C, D, zeroInit);
  if (!epilogue.empty() && !narrowOnly) {
    // The block's tile of C is complete once every multiplying thread
    // stored its part (the loading warpgroup, if any, has left).
    if (p.specialized)
      NVVM::BarrierOp::create(b, loc, Type(), arith::ConstantIntOp::create(b, loc, 1, 32),
                              arith::ConstantIntOp::create(b, loc, 256, 32),
                              NVVM::BarrierReductionAttr(), Value());
    else
      gpu::BarrierOp::create(b, loc);
    emitTileFunction(kernels, b, loc, (kernel.getName() + "_epilogue").str(), p, cShape, ids, {},
                     ArrayRef<Operation *>(fused).drop_front(), map,
                     [&](OpBuilder &fb, ArrayRef<Value> ivs, Value, Value, ValueRange,
                         IRMapping &emap) {
                       emitEpilogueAt(fb, loc, epilogue, cShape, ivs, emap);
                     });
  }
  return eraseFused(op, epilogue, nullptr);
}

} // namespace kiln

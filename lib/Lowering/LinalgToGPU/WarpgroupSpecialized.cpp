//===- WarpgroupSpecialized.cpp - a loading warpgroup feeding wgmma -------===//
//
// Hopper's fast GEMMs split the block's warps by job: one warpgroup only
// moves tiles into shared memory, two only multiply, and they hand the
// stages round through mbarriers instead of a block barrier per k step, so
// the tensor cores' warps issue nothing but wgmma and waits, and neither
// side waits for the slowest warp of the other.
//
// f32 (tf32 wgmma) takes only K-major B from shared memory, and B is
// N-major. Rather than transpose it on the way (through registers the
// loading warpgroup, left with 40, does not have), the products are
// transposed: C^T = B^T A^T. B's tile stays N-major as copied, and each
// warp loads its fragment of B^T (16 n x 8 k, mma.sync's tf32 A layout)
// from it into registers; A's K-major tile is wgmma's B as it is. A
// warpgroup covers tileN/2 of the block's n as m64n128k8 wgmmas (n x the
// block's 128 m), and its accumulators are C^T's, stored element by
// element. A wgmma reads its register fragments until its group
// completes, so the loop takes two k tiles an iteration, each loading
// fragments of its own: tile kt's loads (while tile kt-1's wgmmas run)
// overwrite the registers of tile kt-2, whose group the wait_group 1
// after tile kt-1 retired; one group stays in flight, as with 16-bit
// data. (A fragment carried through the loop would be one register set,
// written while its group still reads it.) An odd last tile follows the
// loop.
//
// gpu.func (grid as the ring kernel's; 384 threads = 3 warpgroups) {
//   thread 0: mbarrier.init full[s] (128 arrivals), empty[s] (8); bar.sync
//   warpgroup 0 (loads; setmaxnreg.dec 40):
//     for kt: wait empty[kt % S] (phase parity (kt / S + 1) % 2: the first
//             round finds every stage free); cp.async A, B of tile kt into
//             stage kt % S; cp.async.mbarrier.arrive.noinc full[kt % S]
//             (the arrival comes when this thread's copies have landed)
//   warpgroups 1, 2 (multiply, rows 64(w-1)..; f32: columns; setmaxnreg.inc 232):
//     for kt (f32: unrolled by 2): wait full[kt % S] (parity kt / S % 2); fence.proxy.async
//             (the cp.async writes, generic proxy, reach the tensor cores'
//             async proxy); wgmma.fence; wgmmas; commit; wait_group 1
//             (tile kt-1's products done: lane 0 of each warp arrives on
//             empty[(kt-1) % S], 8 arrivals free the stage)
//     wait_group 0; the accumulators to C; bar.sync 1, 256; the epilogue
// }
// The loading warpgroup leaves after its last tile; it never joins a
// barrier the others wait at after that (only named barrier 1, for 256).
//
// TMA (loads=tma): one loading thread, `full` expecting its arrival
// and the tile's bytes. In clusters of two along M (cluster=2),
// each block's loading thread multicasts its half of B's column blocks
// into both blocks; `empty` counts 16 warps (each arrives in its block and
// its pair's, through mapa), and the pair meets at cluster barriers after
// the mbarriers' init and before leaving.
//
//===----------------------------------------------------------------------===//

#include "WarpgroupKernel.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace kiln {

namespace {
// Registers per thread after the split: 40 x 128 + 232 x 256 = 64512 of
// the SM's 65536 (one block per SM: its shared memory is most of 227 KiB).
constexpr uint32_t kLoaderRegisters = 40, kMultiplierRegisters = 232;
// The suspend-time hint of each try_wait, in nanoseconds.
constexpr int32_t kWaitHint = 10000000;

/// wgmma m64nNk8 tf32 with A's fragment in registers `a` (4 x i32), B
/// through `descB`, accumulating into `acc` (N/2 f32): inline PTX, as the
/// NVVM dialect's wgmma op takes A only from shared memory.
Value wgmmaRegisterA(OpBuilder &b, Location loc, Value acc, ArrayRef<Value> a, Value descB) {
  auto accType = cast<LLVM::LLVMStructType>(acc.getType());
  const unsigned n = accType.getBody().size();
  SmallVector<Value> operands;
  std::string constraints, list;
  for (unsigned i = 0; i < n; ++i) {
    constraints += "=f,";
    list += (i ? ", $" : "$") + std::to_string(i);
  }
  for (unsigned i = 0; i < n; ++i) {
    operands.push_back(LLVM::ExtractValueOp::create(b, loc, acc, i));
    constraints += std::to_string(i) + ",";
  }
  llvm::append_range(operands, a);
  operands.push_back(descB);
  constraints += "r,r,r,r,l";
  auto at = [&](unsigned i) { return "$" + std::to_string(2 * n + i); };
  std::string asmText = "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                        "wgmma.mma_async.sync.aligned.m64n" +
                        std::to_string(2 * n) + "k8.f32.tf32.tf32 {" + list + "}, {" + at(0) +
                        ", " + at(1) + ", " + at(2) + ", " + at(3) + "}, " + at(4) +
                        ", p, 1, 1;\n}";
  return LLVM::InlineAsmOp::create(
             b, loc, accType, operands, asmText, constraints, /*has_side_effects=*/true,
             /*is_align_stack=*/false, LLVM::tailcallkind::TailCallKind::None,
             LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT), ArrayAttr())
      .getResult(0);
}

/// f32: which of the warpgroup's 64 columns of n its accumulators' row
/// `row` (warp * 16 + lane / 4 (+ 8)) holds, for the products transposed.
/// Any order does, if the fragments and the stores agree. In order, a
/// warp's fragment load (rows l/4, k l%4) reads 8 consecutive n, two
/// 16-byte chunks, in 4 rows of k; TMA's swizzle (chunk ^ k % 8) sends
/// rows k and k^1 to the same two chunks: 2-way bank conflicts. So under
/// TMA the 8 rows take n 0-3 and 16-19 of their 32 (then 4-7 and 20-23;
/// the next warp 8-15 and 24-31): chunks c and c + 4, and k's XOR keeps
/// all eight apart. (cp.async's swizzle, 2k % 8, wants them in order.)
AffineExpr transposedColumn(const WarpgroupKernel &k, AffineExpr row) {
  if (!k.tma())
    return row;
  return row.floorDiv(32) * 32 + (row % 32).floorDiv(16) * 8 + (row % 16).floorDiv(8) * 4 +
         (row % 4) + (row % 8).floorDiv(4) * 16;
}

/// The loading thread's loop with TMA: for each k tile, wait until its
/// stage is free, tell the stage's full mbarrier how many bytes to expect
/// (its arrival), and copy A's 128 x BK tile and B's 128-byte-wide column
/// blocks with cp.async.bulk.tensor, each completing its bytes on that
/// mbarrier. The maps' 128-byte swizzle writes the layouts copyTiles does
/// (f32 B: by k % 8, not 2k % 8).
void emitTmaLoads(WarpgroupKernel &k, llvm::function_ref<Value(Value, int64_t)> barrier,
                  llvm::function_ref<void(Value, int64_t, Value)> wait, Value rankInCluster) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  MLIRContext *ctx = b.getContext();
  AffineExpr d0, d1;
  bindDims(ctx, d0, d1);
  auto i32 = b.getI32Type();
  auto generic = LLVM::LLVMPointerType::get(ctx);
  auto shared = LLVM::LLVMPointerType::get(ctx, /*addressSpace=*/3);
  auto cluster = LLVM::LLVMPointerType::get(ctx, /*addressSpace=*/7);
  auto i32Of = [&](Value index) -> Value {
    return arith::IndexCastUIOp::create(b, loc, i32, index);
  };
  auto sharedPtr = [&](Value index) -> Value {
    Value wide = arith::IndexCastUIOp::create(b, loc, b.getI64Type(), index);
    return LLVM::IntToPtrOp::create(b, loc, shared, wide);
  };
  Value mapA = LLVM::IntToPtrOp::create(b, loc, generic, k.mapA);
  Value mapB = LLVM::IntToPtrOp::create(b, loc, generic, k.mapB);
  // The maps came from the host by a copy (the generic proxy, system
  // scope); the TMA unit reads them through the tensormap proxy.
  for (Value map : {mapA, mapB})
    NVVM::FenceProxyAcquireOp::create(b, loc, NVVM::MemScopeKind::SYS, map,
                                      arith::ConstantIntOp::create(b, loc, 128, 32),
                                      NVVM::ProxyKind::GENERIC, NVVM::ProxyKind::TENSORMAP);
  const int64_t S = k.S, rowElts = 8 * k.vec, blocks = k.p.tileN / rowElts;
  const int64_t blockBytes = k.BK * 128;
  const int64_t bytes = WarpgroupKernel::kTileBytes + k.bBytes;
  auto loop = scf::ForOp::create(b, loc, k.cst(0), k.cst(k.KT), k.cst(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  Value kt = loop.getInductionVar();
  Value slot = k.apply(d0 % S, {kt});
  wait(slot, 1, k.apply((d0.floorDiv(S) + 1) % 2, {kt}));
  Value full = barrier(slot, 0);
  NVVM::MBarrierArriveExpectTxOp::create(b, loc, Type(), full,
                                         arith::ConstantIntOp::create(b, loc, bytes, 32),
                                         NVVM::MemScopeKind::CTA, /*relaxed=*/false, Value());
  Value k0 = i32Of(k.apply(d0 * k.BK, {kt}));
  auto copy = [&](Value map, Value dst, SmallVector<Value> coords, Value multicast, bool batched) {
    if (batched)
      coords.push_back(i32Of(k.bb));
    // A block outside a cluster is a cluster of one: its shared window is
    // its shared::cluster one.
    Value dstCluster = LLVM::AddrSpaceCastOp::create(b, loc, cluster, sharedPtr(dst));
    NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
        b, loc, dstCluster, map, coords, full, ValueRange{}, multicast, Value(),
        NVVM::TMALoadMode::TILE, /*isCTAOnly=*/false, NVVM::CTAGroupKindAttr(), Value());
  };
  // A: coordinates (k, m[, batch]), innermost first.
  copy(mapA, k.apply(d0 + d1 * WarpgroupKernel::kTileBytes, {k.base, slot}),
       {k0, i32Of(k.apply(d0 * k.p.tileM, {k.bm}))}, Value(), k.batchedA);
  // B: (n, k[, batch]) for each block of 128 bytes of n. In a cluster,
  // this block copies its half of them into both blocks' stages (the
  // same offsets, each one's `full` counting the bytes); the other half
  // comes from its pair.
  Value stageB = k.apply(d0 + S * WarpgroupKernel::kTileBytes + d1 * k.bBytes, {k.base, slot});
  if (k.cluster == 1) {
    for (int64_t j = 0; j < blocks; ++j)
      copy(mapB, k.apply(d0 + j * blockBytes, {stageB}),
           {i32Of(k.apply(d0 * k.p.tileN + j * rowElts, {k.bn})), k0}, Value(), k.batched);
    return;
  }
  const int64_t half = blocks / k.cluster;
  Value mask = arith::ConstantIntOp::create(b, loc, b.getI16Type(), (1 << k.cluster) - 1);
  Value rank = arith::IndexCastUIOp::create(b, loc, b.getIndexType(), rankInCluster);
  for (int64_t j = 0; j < half; ++j)
    copy(mapB, k.apply(d0 + (d1 * half + j) * blockBytes, {stageB, rank}),
         {i32Of(k.apply(d0 * k.p.tileN + (d1 * half + j) * rowElts, {k.bn, rank})), k0}, mask,
         k.batched);
}
} // namespace

namespace {

/// The specialized kernel's pieces: the stages' mbarriers, the loading
/// warpgroup, and the multiplying warpgroups' loop over k tiles.
class SpecializedLoop {
public:
  SpecializedLoop(WarpgroupKernel &k)
      : k(k), b(k.b), loc(k.loc), ctx(b.getContext()), S(k.S), i32(b.getI32Type()), swapped(k.tf32),
        drain(swapped && k.p.tf32Drain), chunks(swapped ? k.p.tileN / 128 : 1) {
    bindDims(ctx, d0, d1);
  }

  SmallVector<Value> emit(Value tid, Value &thread);

private:
  /// Stage s's mbarriers: full (its tile landed) at 16s after the stages,
  /// empty (its products are done) 8 bytes on.
  Value barrier(Value slot, int64_t which) {
    auto ptr = LLVM::LLVMPointerType::get(ctx, /*addressSpace=*/3);
    Value at = k.apply(d0 + k.stageBytes() + d1 * 16 + which * 8, {k.base, slot});
    Value wide = arith::IndexCastUIOp::create(b, loc, b.getI64Type(), at);
    return LLVM::IntToPtrOp::create(b, loc, ptr, wide);
  }
  Value i32Of(Value index) { return arith::IndexCastUIOp::create(b, loc, i32, index); }
  void wait(Value slot, int64_t which, Value parity) {
    NVVM::MBarrierTryWaitParityOp::create(b, loc, barrier(slot, which), i32Of(parity),
                                          arith::ConstantIntOp::create(b, loc, kWaitHint, 32));
  }
  Value cmp(arith::CmpIPredicate pred, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, pred, x, y);
  }
  void initBarriers(Value tid);
  void emitLoader(scf::IfOp roles, Value tid);
  SmallVector<Value> transposedFragments(Value slot);
  void tile(SmallVector<Value> &accs, Value kt);
  void releaseStage(Value slot, Value kt);

  WarpgroupKernel &k;
  OpBuilder &b;
  Location loc;
  MLIRContext *ctx;
  const int64_t S;
  Type i32;
  AffineExpr d0, d1;
  Value rank; // the block's rank in its cluster
  Value thread, warpgroup, lane0;
  const bool swapped;
  // tf32-drain (f32): each tile's group completes before the next tile's
  // fragments load, for gpu-check to time against.
  const bool drain;
  // f32: m64n128 (n x m) accumulators per 64 n of the warpgroup's tileN/2.
  const int64_t chunks;
};

void SpecializedLoop::initBarriers(Value tid) {
  auto first = scf::IfOp::create(b, loc, cmp(arith::CmpIPredicate::eq, tid, k.cst(0)));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(first.thenYield());
    for (int64_t s = 0; s < S; ++s) {
      // TMA: one thread arrives (with the stage's bytes to expect);
      // cp.async: each loading thread, when its copies land.
      NVVM::MBarrierInitOp::create(b, loc, barrier(k.cst(s), 0),
                                   arith::ConstantIntOp::create(b, loc, k.tma() ? 1 : 128, 32),
                                   Value());
      // Each multiplying warp of each block of the cluster frees it.
      NVVM::MBarrierInitOp::create(b, loc, barrier(k.cst(s), 1),
                                   arith::ConstantIntOp::create(b, loc, 8 * k.cluster, 32),
                                   Value());
    }
    // Initialized before the pair's copies and arrivals can reach them.
    if (k.cluster > 1)
      NVVM::FenceMbarrierInitOp::create(b, loc);
  }
  if (k.cluster > 1) {
    NVVM::ClusterArriveOp::create(b, loc, UnitAttr());
    NVVM::ClusterWaitOp::create(b, loc, UnitAttr());
    rank = NVVM::ClusterId::create(b, loc, i32);
  } else {
    gpu::BarrierOp::create(b, loc);
  }
}

/// The loading warpgroup: one thread issuing TMA copies, or all 128
/// copying by cp.async, each arriving on the stage's `full` mbarrier.
void SpecializedLoop::emitLoader(scf::IfOp roles, Value tid) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(roles.thenYield());
  NVVM::SetMaxRegisterOp::create(b, loc, kLoaderRegisters, NVVM::SetMaxRegisterAction::decrease);
  if (k.tma()) {
    auto one = scf::IfOp::create(b, loc, cmp(arith::CmpIPredicate::eq, tid, k.cst(0)));
    b.setInsertionPoint(one.thenYield());
    emitTmaLoads(
        k, [&](Value slot, int64_t which) { return barrier(slot, which); },
        [&](Value slot, int64_t which, Value parity) { wait(slot, which, parity); }, rank);
    return;
  }
  auto loop = scf::ForOp::create(b, loc, k.cst(0), k.cst(k.KT), k.cst(1));
  b.setInsertionPoint(loop.getBody()->getTerminator());
  Value kt = loop.getInductionVar();
  Value slot = k.apply(d0 % S, {kt});
  wait(slot, 1, k.apply((d0.floorDiv(S) + 1) % 2, {kt}));
  (void)k.copyTiles(kt, slot, tid, 128);
  NVVM::CpAsyncMBarrierArriveOp::create(b, loc, barrier(slot, 0), /*noinc=*/true);
}

/// B^T's fragments for every k step of the tile (rows: n, cols: k): lane l
/// holds rows l/4 (+8) at columns l%4 (+4) of its warp's 16 (chunks
/// swizzled by 2k % 8: see copyTiles; TMA's by k % 8). [chunk][step][4].
SmallVector<Value> SpecializedLoop::transposedFragments(Value slot) {
  const int64_t steps = k.BK / 8, swizzleStep = k.tma() ? 1 : 2;
  SmallVector<Value> frags;
  for (int64_t c = 0; c < chunks; ++c)
    for (int64_t j = 0; j < steps; ++j)
      for (int64_t i = 0; i < 4; ++i) {
        AffineExpr n =
            d0.floorDiv(128) * (k.p.tileN / 2) + 64 * c +
            transposedColumn(k, (d0 % 128).floorDiv(32) * 16 + (d0 % 32).floorDiv(4) + 8 * (i % 2));
        AffineExpr kk = (d0 % 4) + 8 * j + 4 * (i / 2);
        Value col = arith::XOrIOp::create(b, loc, k.apply((n % 32).floorDiv(4), {thread}),
                                          k.apply((kk * swizzleStep) % 8, {thread}));
        Value v = memref::LoadOp::create(
            b, loc, k.smB,
            ValueRange{slot, k.apply(n.floorDiv(32), {thread}), k.apply(kk, {thread}),
                       k.apply(d0 * 4 + d1 % 4, {col, k.apply(n, {thread})})});
        // Rounded to nearest tf32 (the tensor core would truncate; A's
        // tile, read from shared memory by the wgmma, still is).
        frags.push_back(NVVM::ConvertFloatToTF32Op::create(b, loc, b.getI32Type(), v,
                                                           NVVM::FPRoundingMode::RNA,
                                                           NVVM::SaturationMode::NONE, false));
      }
  return frags;
}

/// One k tile's products, on the accumulators `accs`: wait for the tile,
/// the wgmmas, commit, then free the stage whose products are done.
void SpecializedLoop::tile(SmallVector<Value> &accs, Value kt) {
  Value slot = k.apply(d0 % S, {kt});
  wait(slot, 0, k.apply(d0.floorDiv(S) % 2, {kt}));
  // TMA writes through the async proxy the wgmmas read by; cp.async's
  // generic-proxy writes need the fence.
  if (!k.tma())
    NVVM::FenceProxyOp::create(b, loc, NVVM::ProxyKindAttr::get(ctx, NVVM::ProxyKind::async_shared),
                               NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
  if (!swapped) {
    accs[0] = k.multiply(accs[0], slot, warpgroup);
  } else {
    const int64_t steps = k.BK / 8;
    SmallVector<Value> frags = transposedFragments(slot);
    NVVM::WgmmaFenceAlignedOp::create(b, loc);
    Value stageA = k.apply(d0 + d1 * WarpgroupKernel::kTileBytes, {k.base, slot});
    for (int64_t j = 0; j < steps; ++j) {
      // A's rows are wgmma's B: 32 bytes of k a step.
      Value desc = k.descriptor(WarpgroupKernel::kDescKMajor, k.apply(d0 + j * 32, {stageA}));
      for (int64_t c = 0; c < chunks; ++c)
        accs[c] = wgmmaRegisterA(b, loc, accs[c],
                                 ArrayRef<Value>(frags).slice((c * steps + j) * 4, 4), desc);
    }
    NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  }
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, drain ? 0 : 1);
  releaseStage(slot, kt);
}

/// The stage whose products are done is free: the tile before (one group
/// stays in flight), or (drained) this one.
void SpecializedLoop::releaseStage(Value slot, Value kt) {
  Value release =
      drain ? lane0
            : arith::AndIOp::create(b, loc, lane0, cmp(arith::CmpIPredicate::ugt, kt, k.cst(0)))
                  .getResult();
  auto free = scf::IfOp::create(b, loc, release);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(free.thenYield());
  Value freed = drain ? slot : k.apply((d0 + S - 1) % S, {kt});
  NVVM::MBarrierArriveOp::create(b, loc, Type(), barrier(freed, 1), Value());
  if (k.cluster > 1) { // the pair's loader copies into this stage too
    Value peer = arith::XOrIOp::create(b, loc, rank, arith::ConstantIntOp::create(b, loc, 1, 32));
    Value there =
        NVVM::MapaOp::create(b, loc, LLVM::LLVMPointerType::get(ctx, 7), barrier(freed, 1), peer);
    NVVM::MBarrierArriveOp::create(b, loc, Type(), there, Value());
  }
}

SmallVector<Value> SpecializedLoop::emit(Value tid, Value &threadOut) {
  initBarriers(tid);
  auto roles = scf::IfOp::create(b, loc, cmp(arith::CmpIPredicate::ult, tid, k.cst(128)),
                                 /*withElseRegion=*/true);
  if (k.cluster > 1) {
    // No block leaves while its pair may still copy into its stages or
    // arrive on its mbarriers: every thread of both meets here last.
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfter(roles);
    NVVM::ClusterArriveOp::create(b, loc, UnitAttr());
    NVVM::ClusterWaitOp::create(b, loc, UnitAttr());
  }
  emitLoader(roles, tid);
  // The multiplying warpgroups; the caller goes on in this branch.
  b.setInsertionPoint(roles.elseYield());
  NVVM::SetMaxRegisterOp::create(b, loc, kMultiplierRegisters,
                                 NVVM::SetMaxRegisterAction::increase);
  thread = threadOut = k.apply(d0 - 128, {tid});
  warpgroup = k.apply(d0.floorDiv(128), {thread});
  lane0 = cmp(arith::CmpIPredicate::eq, k.apply(d0 % 32, {thread}), k.cst(0));
  Type accType = swapped
                     ? LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(64, b.getF32Type()))
                     : k.accType;
  // f32 unrolls two tiles an iteration, each with fragments of its own:
  // a tile's loads then write the registers of the tile two back, whose
  // group the wait after the tile before retired, while that tile's
  // wgmmas run. (Carried through the loop, one set would be written
  // while its group is still in flight.)
  const int64_t unroll = swapped ? 2 : 1;
  SmallVector<Value> init(chunks, LLVM::ZeroOp::create(b, loc, accType));
  auto loop = scf::ForOp::create(b, loc, k.cst(0), k.cst(k.KT / unroll), k.cst(1), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> accs(loop.getRegionIterArgs());
    for (int64_t u = 0; u < unroll; ++u)
      tile(accs, k.apply(d0 * unroll + u, {loop.getInductionVar()}));
    scf::YieldOp::create(b, loc, accs);
  }
  SmallVector<Value> accs(loop.getResults());
  for (int64_t kt = k.KT / unroll * unroll; kt < k.KT; ++kt)
    tile(accs, k.cst(kt));
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  return accs;
}

} // namespace

SmallVector<Value> emitSpecializedLoop(WarpgroupKernel &k, Value tid, Value &thread) {
  return SpecializedLoop(k).emit(tid, thread);
}

void storeTransposed(WarpgroupKernel &k, ArrayRef<Value> accs, Value thread, Value C,
                     bool zeroInit) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  AffineExpr d0, d1;
  bindDims(b.getContext(), d0, d1);
  // The m64n128 fragment (rows n, columns m): warp v's lane l holds rows
  // 16v + l/4 (+8) at columns 8j + 2(l%4) (+1).
  for (size_t c = 0; c < accs.size(); ++c)
    for (int64_t j = 0; j < 16; ++j)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t e = 0; e < 2; ++e) {
          AffineExpr n =
              d1.floorDiv(128) * (k.p.tileN / 2) + 64 * c +
              transposedColumn(k, (d1 % 128).floorDiv(32) * 16 + (d1 % 32).floorDiv(4) + 8 * h);
          SmallVector<Value> at;
          if (k.batched)
            at.push_back(k.bb);
          at.push_back(k.apply(d0 * k.p.tileM + 8 * j + 2 * (d1 % 4) + e, {k.bm, thread}));
          at.push_back(k.apply(d0 * k.p.tileN + n, {k.bn, thread}));
          Value v = LLVM::ExtractValueOp::create(b, loc, accs[c], 4 * j + 2 * h + e);
          OpBuilder::InsertionGuard guard(b);
          if (Value in = k.insideC(at[at.size() - 2], at.back())) { // only what lies in C
            auto check = scf::IfOp::create(b, loc, in, /*withElseRegion=*/false);
            b.setInsertionPointToStart(&check.getThenRegion().front());
          }
          if (!zeroInit)
            v = arith::AddFOp::create(b, loc, v, memref::LoadOp::create(b, loc, C, at));
          memref::StoreOp::create(b, loc, v, C, at);
        }
}

} // namespace kiln

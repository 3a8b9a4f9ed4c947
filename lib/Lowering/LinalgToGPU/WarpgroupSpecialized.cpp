//===- WarpgroupSpecialized.cpp - a loading warpgroup feeding wgmma -------===//
//
// Hopper's fast GEMMs split the block's warps by job: one warpgroup only
// moves tiles into shared memory, two only multiply, and they hand the
// stages round through mbarriers instead of a block barrier per k step, so
// the tensor cores' warps issue nothing but wgmma and waits, and neither
// side waits for the slowest warp of the other. (16-bit data; f32's B must
// be transposed through registers, which the loading warpgroup, left with
// 40 of them, does not have.)
//
// gpu.func (grid as the ring kernel's; 384 threads = 3 warpgroups) {
//   thread 0: mbarrier.init full[s] (128 arrivals), empty[s] (8); bar.sync
//   warpgroup 0 (loads; setmaxnreg.dec 40):
//     for kt: wait empty[kt % S] (phase parity (kt / S + 1) % 2: the first
//             round finds every stage free); cp.async A, B of tile kt into
//             stage kt % S; cp.async.mbarrier.arrive.noinc full[kt % S]
//             (the arrival comes when this thread's copies have landed)
//   warpgroups 1, 2 (multiply, rows 64(w-1)..; setmaxnreg.inc 232):
//     for kt: wait full[kt % S] (parity kt / S % 2); fence.proxy.async
//             (the cp.async writes, generic proxy, reach the tensor cores'
//             async proxy); wgmma.fence; wgmmas; commit; wait_group 1
//             (tile kt-1's products done: lane 0 of each warp arrives on
//             empty[(kt-1) % S], 8 arrivals free the stage)
//     wait_group 0; the accumulators to C; bar.sync 1, 256; the epilogue
// }
// The loading warpgroup leaves after its last tile; it never joins a
// barrier the others wait at after that (only named barrier 1, for 256).
//
//===----------------------------------------------------------------------===//

#include "WarpgroupKernel.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace kiln {

namespace {
// Registers per thread after the split: 40 x 128 + 232 x 256 = 64512 of
// the SM's 65536 (one block per SM: its shared memory is most of 227 KiB).
constexpr uint32_t kLoaderRegisters = 40, kMultiplierRegisters = 232;
// The suspend-time hint of each try_wait, in nanoseconds.
constexpr int32_t kWaitHint = 10000000;
} // namespace

Value emitSpecializedLoop(WarpgroupKernel &k, Value tid, Value &thread) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  MLIRContext *ctx = b.getContext();
  AffineExpr d0, d1;
  bindDims(ctx, d0, d1);
  const int64_t S = k.S;
  auto i32 = b.getI32Type();
  auto ptr = LLVM::LLVMPointerType::get(ctx, /*addressSpace=*/3);
  // Stage s's mbarriers: full (its tile landed) at 16s after the stages,
  // empty (its products are done) 8 bytes on.
  auto barrier = [&](Value slot, int64_t which) -> Value {
    Value at = k.apply(d0 + k.stageBytes() + d1 * 16 + which * 8, {k.base, slot});
    Value wide = arith::IndexCastUIOp::create(b, loc, b.getI64Type(), at);
    return LLVM::IntToPtrOp::create(b, loc, ptr, wide);
  };
  auto i32Of = [&](Value index) -> Value {
    return arith::IndexCastUIOp::create(b, loc, i32, index);
  };
  auto wait = [&](Value slot, int64_t which, Value parity) {
    NVVM::MBarrierTryWaitParityOp::create(b, loc, barrier(slot, which), i32Of(parity),
                                          arith::ConstantIntOp::create(b, loc, kWaitHint, 32));
  };
  auto cmp = [&](arith::CmpIPredicate pred, Value x, Value y) -> Value {
    return arith::CmpIOp::create(b, loc, pred, x, y);
  };

  auto first = scf::IfOp::create(b, loc, cmp(arith::CmpIPredicate::eq, tid, k.cst(0)));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(first.thenYield());
    for (int64_t s = 0; s < S; ++s) {
      NVVM::MBarrierInitOp::create(b, loc, barrier(k.cst(s), 0),
                                   arith::ConstantIntOp::create(b, loc, 128, 32), Value());
      NVVM::MBarrierInitOp::create(b, loc, barrier(k.cst(s), 1),
                                   arith::ConstantIntOp::create(b, loc, 8, 32), Value());
    }
  }
  gpu::BarrierOp::create(b, loc);

  auto roles = scf::IfOp::create(b, loc, cmp(arith::CmpIPredicate::ult, tid, k.cst(128)),
                                 /*withElseRegion=*/true);
  {
    // The loading warpgroup.
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(roles.thenYield());
    NVVM::SetMaxRegisterOp::create(b, loc, kLoaderRegisters, NVVM::SetMaxRegisterAction::decrease);
    auto loop = scf::ForOp::create(b, loc, k.cst(0), k.cst(k.KT), k.cst(1));
    b.setInsertionPoint(loop.getBody()->getTerminator());
    Value kt = loop.getInductionVar();
    Value slot = k.apply(d0 % S, {kt});
    wait(slot, 1, k.apply((d0.floorDiv(S) + 1) % 2, {kt}));
    (void)k.copyTiles(kt, slot, tid, 128);
    NVVM::CpAsyncMBarrierArriveOp::create(b, loc, barrier(slot, 0), /*noinc=*/true);
  }
  // The multiplying warpgroups; the caller goes on in this branch.
  b.setInsertionPoint(roles.elseYield());
  NVVM::SetMaxRegisterOp::create(b, loc, kMultiplierRegisters,
                                 NVVM::SetMaxRegisterAction::increase);
  thread = k.apply(d0 - 128, {tid});
  Value warpgroup = k.apply(d0.floorDiv(128), {thread});
  Value lane0 = cmp(arith::CmpIPredicate::eq, k.apply(d0 % 32, {thread}), k.cst(0));
  auto loop = scf::ForOp::create(b, loc, k.cst(0), k.cst(k.KT), k.cst(1),
                                 ValueRange{LLVM::ZeroOp::create(b, loc, k.accType)});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kt = loop.getInductionVar();
    Value slot = k.apply(d0 % S, {kt});
    wait(slot, 0, k.apply(d0.floorDiv(S) % 2, {kt}));
    NVVM::FenceProxyOp::create(b, loc, NVVM::ProxyKindAttr::get(ctx, NVVM::ProxyKind::async_shared),
                               NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
    Value acc = k.multiply(loop.getRegionIterArgs()[0], slot, warpgroup);
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 1);
    // Tile kt-1's products are done: its stage is free.
    Value release = arith::AndIOp::create(
        b, loc, lane0, cmp(arith::CmpIPredicate::ugt, kt, k.cst(0)));
    auto free = scf::IfOp::create(b, loc, release);
    b.setInsertionPoint(free.thenYield());
    NVVM::MBarrierArriveOp::create(b, loc, Type(), barrier(k.apply((d0 + S - 1) % S, {kt}), 1),
                                   Value());
    b.setInsertionPointAfter(free);
    scf::YieldOp::create(b, loc, acc);
  }
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  return loop.getResult(0);
}

} // namespace kiln

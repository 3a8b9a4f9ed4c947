//===- MmaSyncKernel.h - one mma.sync matmul kernel ------------*- C++ -*-===//
//
// The state TensorCoreMatmul.cpp (the kernel's set-up, main loop and
// epilogue) and MmaSyncCopies.cpp (its tiles' copies into shared memory)
// share.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_LINALGTOGPU_MMASYNCKERNEL_H
#define KILN_LIB_LOWERING_LINALGTOGPU_MMASYNCKERNEL_H

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

namespace kiln {

/// One mma.sync kernel for a planned matmul; its pieces share the tiles'
/// views, the operands and the thread's coordinates.
class MmaSyncKernel {
public:
  MmaSyncKernel(KernelFactory &kernels, mlir::linalg::LinalgOp op, const Plan &p, bool zeroInit,
                mlir::ArrayRef<mlir::linalg::GenericOp> epilogue, const ImplicitPad *pad)
      : kernels(kernels), op(op), p(p), zeroInit(zeroInit), epilogue(epilogue), pad(pad),
        ctx(op.getContext()), loc(op.getLoc()), b(ctx), elt(p.elt), tileK(p.tileK()),
        mmaK(p.mmaK()), vec(p.vec()), S(p.stages), eltBytes(elt.getIntOrFloatBitWidth() / 8) {
    mlir::bindDims(ctx, d0, d1, d2);
  }

  mlir::FailureOr<bool> emit(mlir::func::FuncOp fn);

private:
  mlir::Value apply(mlir::AffineExpr e, mlir::ValueRange operands) {
    return mlir::affine::AffineApplyOp::create(
        b, loc, mlir::AffineMap::get(operands.size(), 0, e, ctx), operands);
  }
  mlir::Value cst(int64_t v) { return mlir::arith::ConstantIndexOp::create(b, loc, v).getResult(); }
  mlir::Value minOf(mlir::ArrayRef<mlir::AffineExpr> es, mlir::ValueRange xs) {
    return mlir::affine::AffineMinOp::create(b, loc, mlir::AffineMap::get(xs.size(), 0, es, ctx),
                                             xs);
  }
  mlir::Value maxOf(mlir::ArrayRef<mlir::AffineExpr> es, mlir::ValueRange xs) {
    return mlir::affine::AffineMaxOp::create(b, loc, mlir::AffineMap::get(xs.size(), 0, es, ctx),
                                             xs);
  }
  mlir::AffineMap minorIdentity(mlir::Value mem) {
    unsigned rank = mlir::cast<mlir::MemRefType>(mem.getType()).getRank();
    return mlir::AffineMap::getMinorIdentityMap(rank, 2, ctx);
  }
  void setUpSharedTiles();
  void setUpOperands();
  void setUpCoordinates();
  /// Global coordinates of the warp tile (i, j)'s corner.
  mlir::Value rowOf(int64_t i) { return apply(d0 * p.tileM + d1 + i * kMmaM, {bm, warpM}); }
  mlir::Value colOf(int64_t j) { return apply(d0 * p.tileN + d1 + j * kMmaN, {bn, warpN}); }
  mlir::SmallVector<mlir::Value> global(mlir::Value row, mlir::Value col) {
    mlir::SmallVector<mlir::Value> idx;
    if (batched)
      idx.push_back(bb);
    idx.push_back(row);
    idx.push_back(col);
    return idx;
  }
  /// The accumulators' home, where they start and end: C itself, or for
  /// 16-bit data the f32 tile in shared memory (at the warp tile's corner).
  mlir::SmallVector<mlir::Value> accAt(int64_t i, int64_t j) {
    if (!p.staged())
      return global(rowOf(i), colOf(j));
    return {apply(d0 + i * kMmaM, {warpM}), apply(d0 + j * kMmaN, {warpN})};
  }
  mlir::SmallVector<mlir::Value> loadAccumulators();
  std::pair<mlir::Value, mlir::Value> pieceOf(mlir::Value q, int64_t pieces, int64_t stride);
  mlir::Value clampTo(mlir::Value i, int64_t n, mlir::Value run, bool overhangs,
                      mlir::Value &present);
  /// min(k + ahead, the last k step): a prefetch's k (copied again, not
  /// past the end, when there is none).
  mlir::Value lastStepAt(mlir::Value k, int64_t ahead);
  void copyGatheredB(mlir::Value k0, mlir::Value stage);
  void emitRunCopy(bool load);
  mlir::LogicalResult setRunGrid(mlir::func::CallOp call);
  void copy(mlir::Value dst, mlir::ValueRange dstIdx, mlir::Value src, mlir::ValueRange srcIdx,
            mlir::Value present);
  void gather(mlir::Value dst, mlir::ValueRange dstIdx, mlir::Value src, mlir::ValueRange srcIdx,
              mlir::Value present);
  void storePending();
  void copyA(mlir::Value k0, mlir::Value stage);
  void copyConvB(mlir::Value k0, mlir::Value stage);
  void copyB(mlir::Value k0, mlir::Value stage);
  mlir::Value copyTiles(mlir::Value k0, mlir::Value stage);
  void emitStep(mlir::scf::ForOp loop);
  void emitEpilogue(mlir::scf::ForOp loop, mlir::Value firstGroup);

  KernelFactory &kernels;
  mlir::linalg::LinalgOp op;
  const Plan &p;
  bool zeroInit;
  mlir::ArrayRef<mlir::linalg::GenericOp> epilogue;
  const ImplicitPad *pad;
  mlir::MLIRContext *ctx;
  mlir::Location loc;
  mlir::OpBuilder b;
  mlir::IRMapping map;
  mlir::gpu::GPUFuncOp kernel;
  mlir::SmallVector<int64_t> cShape;
  mlir::SmallVector<mlir::Operation *> fused;
  mlir::Type elt, fragElt;
  const int64_t tileK, mmaK, vec, S, eltBytes;
  mlir::SmallVector<int64_t> shapeA, shapeB;
  mlir::Value smemA, fragA, smemB, fragB, smemC;
  mlir::Value A, B, C, cOriginal, accHome;
  /// The run's M, N, K and K rounded up to whole k steps, in the kernel
  /// (null where the plan's are static).
  mlir::Value runM, runN, runK, runLoopK;
  bool batched = false, batchedA = false;
  mlir::AffineExpr d0, d1, d2;
  mlir::Value tid, bn, bm, bb, warpM, warpN, zero, zeroElt;
  mlir::SmallVector<mlir::Value> ids;
  int64_t TI = 0, TJ = 0;
  const bool inBounds2[2] = {true, true};
  mlir::ArrayRef<bool> inBounds = llvm::ArrayRef(inBounds2);
  /// 16-bit elements gathered through registers, waiting to be stored into
  /// their stage: in the loop, after this step's products (the stage is
  /// the one the last step read, which nobody reads again before step
  /// k+S-1), so the loads' latency hides behind the tensor cores' work.
  struct Pending {
    mlir::Value value, dst;
    mlir::SmallVector<mlir::Value> idx;
  };
  mlir::SmallVector<Pending> pending;
  mlir::SmallVector<mlir::Value> tokens; // the cp.async copies of the group being issued
};

} // namespace kiln

#endif // KILN_LIB_LOWERING_LINALGTOGPU_MMASYNCKERNEL_H

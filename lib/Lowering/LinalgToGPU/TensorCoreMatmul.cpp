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

#include "MmaSyncKernel.h"


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
  // The run's sizes, read from the buffers' descriptors.
  unsigned rank = cast<MemRefType>(C.getType()).getRank();
  auto dim = [&](bool dynamic, Value v, unsigned d) {
    return dynamic ? memref::DimOp::create(b, loc, v, d).getResult() : Value();
  };
  runM = dim(p.dynM, C, rank - 2);
  runN = dim(p.dynN, C, rank - 1);
  runK = dim(p.dynK, A, rank - 1);
  if (runK)
    runLoopK = apply((d0 + tileK - 1).floorDiv(tileK) * tileK, {runK});
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
  if (p.dynamic() && !zeroInit) {
    emitRunCopy(/*load=*/true);
    gpu::BarrierOp::create(b, loc);
  } else if (p.staged() && !zeroInit) {
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
  Value next = lastStepAt(k0, (S - 1) * tileK);
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
  if (p.dynamic()) { // (no epilogue: emit() checks)
    gpu::BarrierOp::create(b, loc);
    emitRunCopy(/*load=*/false);
    return;
  }
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

void MmaSyncKernel::emitRunCopy(bool load) {
  auto sizeOf = [&](Value run, int64_t n) { return run ? run : cst(n); };
  emitRunTileCopy(kernels, b, loc, (kernel.getName() + (load ? "_load_c" : "_store")).str(), p,
                  ids, smemC, C, sizeOf(runM, p.M), sizeOf(runN, p.N), load);
}

/// The launch's grid from the run's sizes where they are dynamic: N's
/// tiles (x), M's (y), the batch (z), each at least one.
LogicalResult MmaSyncKernel::setRunGrid(func::CallOp call) {
  OpBuilder hb(call);
  auto cst = [&](int64_t v) { return arith::ConstantIndexOp::create(hb, loc, v).getResult(); };
  Value c = op->getOperand(2);
  unsigned rank = cast<MemRefType>(c.getType()).getRank();
  auto blocks = [&](Value n, int64_t tile) -> Value {
    Value t = tile == 1 ? n : arith::CeilDivUIOp::create(hb, loc, n, cst(tile)).getResult();
    return arith::MaxUIOp::create(hb, loc, t, cst(1));
  };
  SmallVector<Value> sizes(3);
  if (p.dynN)
    sizes[0] = blocks(memref::DimOp::create(hb, loc, c, rank - 1), p.tileN);
  if (p.dynM)
    sizes[1] = blocks(memref::DimOp::create(hb, loc, c, rank - 2), p.tileM);
  if (p.dynBatch) {
    SmallVector<Value> lead;
    for (unsigned d = 0; d + 2 < rank; ++d)
      lead.push_back(memref::DimOp::create(hb, loc, c, d));
    sizes[2] = blocks(productOf(hb, loc, lead), 1);
  }
  return kernels.setRunGrid(call, sizes);
}

FailureOr<bool> MmaSyncKernel::emit(func::FuncOp fn) {
  // Run-time sizes: C is loaded and stored as the tile is, no epilogue.
  if (p.dynamic() && (!epilogue.empty() || pad || p.form == Plan::Conv))
    return failure();
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
  if (p.dynamic() && failed(setRunGrid(cast<func::CallOp>(fused.back()->getPrevNode()))))
    return failure();
  kernel->setAttr(KilnDialect::getMmaAttrName(), b.getUnitAttr()); // for kiln-gpu-lower-mma
  setUpSharedTiles();
  setUpOperands();
  setUpCoordinates();
  SmallVector<Value> init = loadAccumulators();
  // Steps 0 .. S-2 in flight before the loop (a K of fewer steps copies its
  // last tiles again, into stages no step reads).
  Value firstGroup;
  for (int64_t s = 0; s + 1 < S; ++s) {
    Value k0 = runLoopK ? lastStepAt(cst(0), s * tileK)
                        : cst(std::min(s * tileK, p.loopK() - tileK));
    Value g = copyTiles(k0, cst(s));
    storePending();
    if (!firstGroup)
      firstGroup = g;
  }
  auto loop = scf::ForOp::create(b, loc, cst(0), runLoopK ? runLoopK : cst(p.loopK()), cst(tileK),
                                 init);
  emitStep(loop);
  emitEpilogue(loop, firstGroup);
  return eraseFused(op, epilogue, pad);
}


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

FailureOr<bool> outlineDynamicTensorCoreMatmul(KernelFactory &kernels, func::FuncOp fn,
                                               linalg::LinalgOp op, const Plan &plan,
                                               bool zeroInit) {
  return MmaSyncKernel(kernels, op, plan, zeroInit, {}, nullptr).emit(fn);
}

} // namespace kiln
//===- VecmatAsRowMatmul.cpp - vector-matrix products as row matmuls ------===//

#include "VecmatAsRowMatmul.h"
#include "kiln/Lowering/MatmulTiles.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace kiln {

namespace {

/// out(n) += x(k) * B(k, n) with unit dimensions folded away (a classifier
/// at batch 1) as the row matmul of one row it was: x as [1, K], out as
/// [1, N], so the register tile takes it (as loops it ran at 8 GFLOP/s
/// on ResNet-50's 2048 x 1000 layer, one thread, scalar).
struct VecmatAsRowMatmul : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op, PatternRewriter &rewriter) const override {
    // B as it is, or packed by kiln-pack-matmul-weights.
    std::optional<Vecmat> vm = matchVecmat(op);
    if (!vm || !op.hasPureBufferSemantics())
      return rewriter.notifyMatchFailure(op, "not x(k) * B(k, n) on buffers");
    for (Value v : op->getOperands())
      if (!cast<MemRefType>(v.getType()).isLastDimUnitStride())
        return rewriter.notifyMatchFailure(op, "rows not contiguous");
    MLIRContext *ctx = op.getContext();
    Location loc = op.getLoc();
    auto row = [&](Value v) -> Value {
      int64_t len = cast<MemRefType>(v.getType()).getDimSize(0);
      return memref::ExpandShapeOp::create(rewriter, loc, ArrayRef<int64_t>{1, len}, v,
                                           ArrayRef<ReassociationIndices>{{0, 1}});
    };
    AffineExpr m, dn3, dk3;
    bindDims(ctx, m, dn3, dk3);
    int64_t P = vm->packed;
    AffineMap bMap =
        vm->int8 ? AffineMap::get(3, 0,
                                  {dn3.floorDiv(P), dk3.floorDiv(vm->group), dn3 % P,
                                   dk3 % vm->group},
                                  ctx)
        : P      ? AffineMap::get(3, 0, {dn3.floorDiv(P), dk3, dn3 % P}, ctx)
                 : AffineMap::get(3, 0, {dk3, dn3}, ctx);
    SmallVector<AffineMap> rowMaps{AffineMap::get(3, 0, {m, dk3}, ctx), bMap,
                                   AffineMap::get(3, 0, {m, dn3}, ctx)};
    auto product = linalg::GenericOp::create(
        rewriter, loc, TypeRange{}, ValueRange{row(op.getDpsInputs()[0]), op.getDpsInputs()[1]},
        ValueRange{row(op.getDpsInits()[0])}, rowMaps,
        SmallVector<utils::IteratorType>{utils::IteratorType::parallel,
                                         utils::IteratorType::parallel,
                                         utils::IteratorType::reduction});
    rewriter.inlineRegionBefore(op.getRegion(), product.getRegion(), product.getRegion().end());
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void populateVecmatAsRowMatmulPatterns(RewritePatternSet &patterns) {
  patterns.add<VecmatAsRowMatmul>(patterns.getContext());
}

} // namespace kiln

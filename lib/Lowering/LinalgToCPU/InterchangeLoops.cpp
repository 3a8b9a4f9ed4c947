//===- InterchangeLoops.cpp - kiln-interchange-loops ----------------------===//
//
//   C[m,n] += A[m,k] * B[k,n]   loops (m, n, k)  =>  loops (m, k, n)
//
// Lowered to loops in iterator order, a contraction walks B down a column
// in its innermost loop. Moving the reductions out, just above the
// innermost parallel loop, makes that loop run along contiguous rows of B
// and C (an axpy LLVM vectorizes), with A's element loop-invariant. Only
// when every operand that the innermost parallel loop indexes has it in its
// last dimension, the result contiguously and inputs with a step of at most
// 4 (strided convolutions): a row reduction (x[r,k] reduced over k) keeps
// its order, since moving r inside would stride through x. Maxima and
// minima (pools) keep theirs too: see selectsAcrossReduction.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/ConvTiles.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln {
#define GEN_PASS_DEF_KILNINTERCHANGELOOPS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The constant number of elements `e` moves per step of loop `d` (d, or
/// d plus terms that don't involve d -- a convolution's ow + kw -- or
/// stride * d -- a strided convolution's input); 0 when it is not one.
int64_t stepOf(AffineExpr e, unsigned d) {
  if (auto dim = dyn_cast<AffineDimExpr>(e))
    return dim.getPosition() == d ? 1 : 0;
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return 0;
  AffineExpr l = bin.getLHS(), r = bin.getRHS();
  if (bin.getKind() == AffineExprKind::Add) {
    if (!r.isFunctionOfDim(d))
      return stepOf(l, d);
    return l.isFunctionOfDim(d) ? 0 : stepOf(r, d);
  }
  if (bin.getKind() == AffineExprKind::Mul)
    if (auto c = dyn_cast<AffineConstantExpr>(r))
      return c.getValue() > 0 ? c.getValue() * stepOf(l, d) : 0;
  return 0;
}

/// Whether `op` reduces by a maximum or minimum (a max pool). Interchanged,
/// each reduction step stores select(x > out, x, out) back over `out`,
/// which LLVM 22's x86 backend makes a masked store (vmaskmovps): on a Zen
/// 3 core a max pool went 1.9 ms that way against 0.53 ms with the window
/// innermost and the maximum kept in a register.
/// Only over windows (an input indexed by an output loop plus a reduced
/// one): a column maximum, interchanged, still reads x along its rows.
bool selectsAcrossReduction(linalg::LinalgOp op) {
  Block *body = op.getBlock();
  if (!body || op.getNumDpsInits() != 1)
    return false;
  Value yielded = body->getTerminator()->getOperand(0);
  Operation *combiner = yielded.getDefiningOp();
  if (!combiner || !isa<arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp, arith::MinNumFOp,
                        arith::MaxSIOp, arith::MinSIOp, arith::MaxUIOp, arith::MinUIOp,
                        arith::SelectOp>(combiner))
    return false;
  SmallVector<unsigned> reduction;
  op.getReductionDims(reduction);
  for (OpOperand *in : op.getDpsInputOperands())
    for (AffineExpr e : op.getMatchingIndexingMap(in).getResults())
      if (e.getKind() == AffineExprKind::Add &&
          llvm::any_of(reduction, [&](unsigned d) { return e.isFunctionOfDim(d); }))
        return true;
  return false;
}

/// The loop order putting reductions just above the innermost parallel
/// loop, or empty when that would not make the innermost loop contiguous.
SmallVector<unsigned> contiguousOrder(linalg::LinalgOp op) {
  SmallVector<unsigned> parallel, reduction;
  op.getParallelDims(parallel);
  op.getReductionDims(reduction);
  if (parallel.empty() || reduction.empty() || parallel.size() + reduction.size() != op.getNumLoops())
    return {};
  unsigned inner = parallel.back();
  if (inner == op.getNumLoops() - 1)
    return {}; // already innermost
  // The result is written along `inner` contiguously; inputs may be read
  // with a small constant stride (a strided convolution: LLVM vectorizes
  // those as interleaved loads, and the weights stay loop-invariant).
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    int64_t maxStep = op.isDpsInit(&operand) ? 1 : 4;
    for (unsigned j = 0; j < map.getNumResults(); ++j) {
      bool last = j + 1 == map.getNumResults();
      int64_t step = stepOf(map.getResult(j), inner);
      if (map.getResult(j).isFunctionOfDim(inner) && (!last || step < 1 || step > maxStep))
        return {};
    }
  }
  SmallVector<unsigned> order(parallel.begin(), parallel.end() - 1);
  order.append(reduction.begin(), reduction.end());
  order.push_back(inner);
  return order;
}

struct KilnInterchangeLoopsPass final
    : impl::KilnInterchangeLoopsBase<KilnInterchangeLoopsPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> ops;
    getOperation().walk([&](linalg::LinalgOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops) {
      // kiln-vectorize-conv orders its own loops
      if (isRegisterTiledConv(op) || isChannelsLastDepthwise(op))
        continue;
      if (selectsAcrossReduction(op))
        continue;
      SmallVector<unsigned> order = contiguousOrder(op);
      if (order.empty())
        continue;
      rewriter.setInsertionPoint(op);
      auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
      if (!generic) {
        FailureOr<linalg::GenericOp> g = linalg::generalizeNamedOp(rewriter, op);
        if (failed(g))
          continue;
        generic = *g;
      }
      if (failed(linalg::interchangeGenericOp(rewriter, generic, order)))
        return signalPassFailure();
    }
  }
};

} // namespace
} // namespace kiln

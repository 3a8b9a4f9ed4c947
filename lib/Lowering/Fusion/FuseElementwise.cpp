//===- FuseElementwise.cpp - kiln-fuse-elementwise pass -------------------===//
//
// %a = generic {id} (x) { gelu }            %r = generic {(m,n,k)}(x, w) {
// %r = generic {(m,k),(k,n)} (%a, w) {  =>    mul(gelu(x), w) ... }      REFUSED
//
// %a = generic {id} (x) { x + b }
// %r = generic {id} (%a) { relu }       =>  %r = generic (x) { relu(x + b) }  FUSED
//
// The first would evaluate gelu N times per element; only producers read
// through a permutation of the consumer's loops are fused, and only into
// their one consumer -- except casts (a 16-bit model's extf into f32),
// which go into every consumer, however it reads them.
//
//===----------------------------------------------------------------------===//

#include "FoldIntegerRoundTrips.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNFUSEELEMENTWISE
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// True when `op` only widens or narrows its one input (a 16-bit model's
/// extf into f32 arithmetic): recomputing it is one conversion per read,
/// cheaper than the f32 copy it would otherwise write and read back.
bool isCast(Operation *op) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      !generic.hasPureTensorSemantics() ||
      !llvm::all_of(generic.getIndexingMapsArray(), [](AffineMap m) { return m.isIdentity(); }))
    return false;
  Block *body = generic.getBlock();
  if (body->getOperations().size() != 2)
    return false;
  Operation &cast = body->front();
  return isa<arith::ExtFOp, arith::TruncFOp>(cast) && cast.getOperand(0) == body->getArgument(0) &&
         body->getTerminator()->getOperand(0) == cast.getResult(0);
}

/// True when `op` computes each element from its indices and constants
/// with a few integer and select steps (Trilu's mask of a constant): its
/// consumer may recompute it wherever it reads it, through any map, for
/// less than a kernel launch and a tensor in memory cost.
bool isIndexPattern(Operation *op) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInits() != 1 || !generic.hasPureTensorSemantics() ||
      generic.getNumLoops() != generic.getNumParallelLoops())
    return false;
  for (Value in : generic.getDpsInputs())
    if (!matchPattern(in, m_Constant()))
      return false;
  Block *body = generic.getBlock();
  if (body->getOperations().size() > 8)
    return false;
  return llvm::all_of(body->without_terminator(), [](Operation &o) {
    return isa<linalg::IndexOp, arith::ConstantOp, arith::AddIOp, arith::SubIOp, arith::CmpIOp,
               arith::SelectOp, arith::AndIOp, arith::OrIOp, arith::XOrIOp>(o);
  });
}

/// True when fusing the producer of `operand` into its consumer computes
/// every producer value exactly once (or the producer is an index pattern).
bool fusesWithoutRecompute(OpOperand *operand) {
  Operation *producer = operand->get().getDefiningOp();
  if (!producer || !producer->hasOneUse())
    return false;
  if (isa<linalg::LinalgOp>(operand->getOwner()) && isIndexPattern(producer))
    return true;
  auto consumer = dyn_cast<linalg::LinalgOp>(operand->getOwner());
  if (!consumer)
    return true; // reshapes: folded by expansion, no arithmetic moves
  return consumer.getMatchingIndexingMap(operand).isPermutation();
}

/// True when splitting `loops` of `op` would split a contraction's
/// reduction or column loop (C's last dimension): `op`'s own, or, through
/// an elementwise epilogue (bias, activation) fed by the product, the
/// product's, which the expansion would split next to keep them fused.
bool splitsProductLoops(linalg::GenericOp op, ArrayRef<unsigned> loops, int depth = 0) {
  if (loops.empty() || depth > 4)
    return false;
  if (linalg::isaContractionOpInterface(op) && op.getNumDpsInits() == 1) {
    AffineMap c = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    auto columns = c.getNumResults() ? dyn_cast<AffineDimExpr>(c.getResults().back()) : nullptr;
    auto iterators = op.getIteratorTypesArray();
    return llvm::any_of(loops, [&](unsigned l) {
      return iterators[l] == utils::IteratorType::reduction ||
             (columns && l == columns.getPosition());
    });
  }
  if (op.getNumReductionLoops() != 0)
    return false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto producer = input->get().getDefiningOp<linalg::GenericOp>();
    AffineMap read = op.getMatchingIndexingMap(input);
    if (!producer || !read.isProjectedPermutation())
      continue;
    AffineMap written =
        producer.getIndexingMapMatchingResult(cast<OpResult>(input->get()));
    if (!written.isProjectedPermutation())
      continue;
    SmallVector<unsigned> theirs;
    for (auto [i, e] : llvm::enumerate(read.getResults()))
      if (llvm::is_contained(loops, cast<AffineDimExpr>(e).getPosition()))
        theirs.push_back(cast<AffineDimExpr>(written.getResult(i)).getPosition());
    if (splitsProductLoops(producer, theirs, depth + 1))
      return true;
  }
  return false;
}

/// True when folding the reshape at `operand` into a generic op (by
/// expansion) would split a matmul's reduction or column loop (see
/// splitsProductLoops). A packed QKV projection's [T, 3E] unflattened to
/// [T, 3, E] would become a product with two column loops, which neither
/// the CPU register tile nor the tensor-core planner takes, its rows one
/// at a time; the reshape stays a view of the product's result instead.
/// Splitting rows ([B*T, E] as [B, T, E]) is harmless and stays allowed.
bool splitsContractionLoops(OpOperand *operand) {
  linalg::GenericOp op;
  AffineMap map;
  SmallVector<ReassociationIndices> groups;
  ArrayRef<int64_t> expanded;
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(operand->getOwner())) {
    op = expand.getSrc().getDefiningOp<linalg::GenericOp>();
    if (!op)
      return false;
    map = op.getIndexingMapMatchingResult(cast<OpResult>(expand.getSrc()));
    groups = expand.getReassociationIndices();
    expanded = expand.getResultType().getShape();
  } else if (auto generic = dyn_cast<linalg::GenericOp>(operand->getOwner())) {
    auto collapse = operand->get().getDefiningOp<tensor::CollapseShapeOp>();
    if (!collapse)
      return false;
    op = generic;
    map = generic.getMatchingIndexingMap(operand);
    groups = collapse.getReassociationIndices();
    expanded = collapse.getSrcType().getShape();
  } else {
    return false;
  }
  SmallVector<unsigned> split;
  for (auto [i, group] : llvm::enumerate(groups)) {
    if (llvm::count_if(group, [&](int64_t d) { return expanded[d] != 1; }) < 2)
      continue; // unit dimensions added: nothing split
    auto dim = dyn_cast<AffineDimExpr>(map.getResult(i));
    if (!dim)
      return true;
    split.push_back(dim.getPosition());
  }
  return splitsProductLoops(op, split);
}

/// A cast's result read by a generic op: the op reads the cast's input and
/// converts it itself, first thing in its body (each consumer of the cast
/// in turn, whatever its indexing map; the cast goes once none is left).
struct InlineCastProducer : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp consumer,
                                PatternRewriter &rewriter) const override {
    if (!consumer.hasPureTensorSemantics())
      return failure();
    for (OpOperand *operand : consumer.getDpsInputOperands()) {
      auto cast = operand->get().getDefiningOp<linalg::GenericOp>();
      if (!cast || !isCast(cast))
        continue;
      Operation &convert = cast.getBlock()->front();
      BlockArgument arg = consumer.getMatchingBlockArgument(operand);
      rewriter.modifyOpInPlace(consumer, [&] {
        operand->set(cast.getDpsInputs()[0]);
        arg.setType(convert.getOperand(0).getType());
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.setInsertionPointToStart(consumer.getBlock());
        Operation *copy = rewriter.clone(convert);
        copy->setOperand(0, arg);
        arg.replaceAllUsesExcept(copy->getResult(0), copy);
      });
      consumer->setLoc(rewriter.getFusedLoc({consumer.getLoc(), cast.getLoc()}));
      return success();
    }
    return failure();
  }
};

/// Upstream's elementwise fusion, keeping where the code came from: the
/// fused op's location joins the consumer's and the producer's, so each
/// kernel can later name the ONNX nodes it computes (`kiln inspect`).
struct FuseElementwiseKeepingLocations : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp consumer,
                                PatternRewriter &rewriter) const override {
    for (OpOperand &operand : consumer->getOpOperands()) {
      if (!linalg::areElementwiseOpsFusable(&operand) || !fusesWithoutRecompute(&operand))
        continue;
      Operation *producer = operand.get().getDefiningOp();
      Location loc = rewriter.getFusedLoc({consumer.getLoc(), producer->getLoc()});
      FailureOr<linalg::ElementwiseOpFusionResult> fused =
          linalg::fuseElementwiseOps(rewriter, &operand);
      if (failed(fused))
        return rewriter.notifyMatchFailure(consumer, "fusion failed");
      fused->fusedOp->setLoc(loc);
      for (auto [original, replacement] : fused->replacements)
        rewriter.replaceUsesWithIf(original, replacement, [&](OpOperand &use) {
          return use.get().getDefiningOp() != producer; // consumer uses only
        });
      rewriter.eraseOp(consumer);
      return success();
    }
    return failure();
  }
};

struct KilnFuseElementwisePass final
    : impl::KilnFuseElementwiseBase<KilnFuseElementwisePass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    // An index pattern read by several ops (GPT's one causal mask, read by
    // every block) gets a copy per reader, so each fuses into its reader.
    SmallVector<linalg::GenericOp> shared;
    getOperation()->walk([&](linalg::GenericOp op) {
      // (Generic readers only: a copy for another reader would be a kernel.)
      if (isIndexPattern(op) && !op->hasOneUse() &&
          llvm::all_of(op->getUsers(), [](Operation *u) { return isa<linalg::GenericOp>(u); }))
        shared.push_back(op);
    });
    for (linalg::GenericOp op : shared)
      for (OpOperand &use : llvm::make_early_inc_range(llvm::drop_begin(op->getUses()))) {
        OpBuilder b(use.getOwner());
        use.set(b.clone(*op)->getResult(0));
      }
    RewritePatternSet patterns(ctx);
    patterns.add<FuseElementwiseKeepingLocations, InlineCastProducer>(ctx);
    // A quantize's byte read back as f32 in the same body is the float.
    populateFoldIntegerRoundTripsPatterns(patterns);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, [](OpOperand *operand) {
      return fusesWithoutRecompute(operand) && !splitsContractionLoops(operand);
    });
    tensor::populateBubbleUpExpandShapePatterns(patterns);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, ctx);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
    // A value a fused op reads twice (GPT-2's tanh GELU reads the product
    // x three times) becomes one operand: kernel formation fuses a
    // producer once per operand, and computed the linear layer three
    // times (its kernel 4.8 -> 2.8 ms at 128 tokens).
    linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
    // Scalar constants read as 0-d operands (its 0.5, 0.044715 and the
    // exponent 3) become constants in the body, where later passes see
    // them: pow(x, 3) is x * x * x (kiln-approximate-math), not exp(3 log x).
    linalg::populateInlineConstantOperandsPatterns(patterns);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
    ctx->getLoadedDialect<linalg::LinalgDialect>()->getCanonicalizationPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     GreedyRewriteConfig().setUseTopDownTraversal())))
      signalPassFailure();
  }
};

} // namespace
} // namespace kiln

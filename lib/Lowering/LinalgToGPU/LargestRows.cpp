//===- LargestRows.cpp - a dynamic op's kernel compiled at its largest rows ===//
//
// In a model with dynamic dimensions every buffer has its largest shape's
// bytes (the arena and the session's copies are sized so) and a row-major
// layout. An op whose only dynamic loop is the outermost dimension of each
// operand it varies (a matmul's rows, a convolution's images, an
// elementwise op's rows) can then run as the kernel for its largest rows
// (tensor cores; 16-byte elementwise threads): its operands cast to that static
// type, the launch's grid along the rows shrunk at run time to
// ceil(rows * blocks / largest). The last block's rows past the run's read
// and write bytes within the buffers that no later op reads.
//
// An op whose dynamic loops are its dynamic operands' leading dimensions,
// in order (a transformer's [batch, seq, d] linear layers, their bias and
// activation, the fills before them), runs so too: row-major, those
// dimensions are one run of rows, collapsed into one loop first.
//
//   %a : memref<?x64xf32>                %s = memref.cast %a : ... to memref<256x64xf32>
//   linalg.matmul ins(%a, %w) ...   =>   %g = max(1, ceildiv(dim(%a, 0) * 4, 256))
//                                        call @__kiln_launch_0(%g, %s, ...)  {kiln.grid = [2, -1, 1]}
//
//===----------------------------------------------------------------------===//

#include "KernelFactory.h"
#include "TensorCorePlan.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Lowering/Host/DimBounds.h"
#include "kiln/Lowering/Host/KernelCaptures.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

using namespace mlir;

namespace kiln {
namespace {

/// The one dynamic loop of `op`, when every dynamic operand dimension is
/// that loop and its operand's outermost; -1 otherwise.
int64_t rowsLoop(linalg::LinalgOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t loop = -1;
  for (auto [i, r] : llvm::enumerate(ranges))
    if (ShapedType::isDynamic(r)) {
      if (loop >= 0)
        return -1;
      loop = i;
    }
  if (loop < 0)
    return -1;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type)
      continue;
    if (!type.getLayout().isIdentity())
      return -1;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    for (int64_t d = 0; d < type.getRank(); ++d) {
      auto dim = dyn_cast<AffineDimExpr>(map.getResult(d));
      bool isRows = dim && dim.getPosition() == (unsigned)loop;
      if (type.isDynamicDim(d) != isRows || (isRows && d != 0))
        return -1;
    }
  }
  return loop;
}

/// `op` with its dynamic loops collapsed into one where they are two or
/// more, consecutive, and each dynamic operand's leading dimensions in
/// order (an operand without dynamic dimensions does not use them);
/// null otherwise. Replaces `op`.
linalg::LinalgOp collapseLeadingRows(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || !isa<linalg::GenericOp, linalg::FillOp>(op))
    return {};
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  ReassociationIndices rows;
  for (auto [i, r] : llvm::enumerate(ranges))
    if (ShapedType::isDynamic(r)) {
      if (!rows.empty() && rows.back() != (int64_t)i - 1)
        return {};
      rows.push_back(i);
    }
  if (rows.size() < 2)
    return {};
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type)
      continue;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    bool usesRows = llvm::any_of(rows, [&](int64_t l) { return map.isFunctionOfDim(l); });
    if (!usesRows) {
      if (!type.hasStaticShape())
        return {};
      continue;
    }
    if (!type.getLayout().isIdentity() || type.getRank() < (int64_t)rows.size())
      return {};
    for (int64_t d = 0; d < type.getRank(); ++d) {
      bool leading = d < (int64_t)rows.size();
      if (type.isDynamicDim(d) != leading ||
          (leading && map.getResult(d) != getAffineDimExpr(rows[d], op.getContext())))
        return {};
    }
  }
  IRRewriter rewriter(op.getContext());
  rewriter.setInsertionPoint(op);
  if (auto fill = dyn_cast<linalg::FillOp>(op.getOperation())) {
    // One output, the rows its leading dimensions: a fill of its collapse.
    auto type = cast<MemRefType>(fill.getOutputs()[0].getType());
    SmallVector<ReassociationIndices> groups{rows};
    for (int64_t d = rows.size(); d < type.getRank(); ++d)
      groups.push_back({d});
    auto flat = memref::CollapseShapeOp::create(rewriter, op.getLoc(), fill.getOutputs()[0], groups);
    flat->setAttr(kArgumentAttr, rewriter.getUnitAttr());
    auto flatFill = linalg::FillOp::create(rewriter, op.getLoc(), fill.getInputs(), ValueRange{flat});
    rewriter.eraseOp(op);
    return cast<linalg::LinalgOp>(flatFill.getOperation());
  }
  if (!linalg::areDimSequencesPreserved(op.getIndexingMapsArray(), {rows}))
    return {};
  FailureOr<linalg::CollapseResult> collapsed = linalg::collapseOpIterationDims(op, {rows}, rewriter);
  if (failed(collapsed))
    return {};
  rewriter.eraseOp(op);
  for (Value v : collapsed->collapsedOp->getOperands())
    if (auto flat = v.getDefiningOp<memref::CollapseShapeOp>())
      flat->setAttr(kArgumentAttr, rewriter.getUnitAttr());
  return collapsed->collapsedOp;
}

/// Of the elementwise ops after a product (`ops`, only host work between),
/// the first that can be its epilogue at the largest rows, as `at` (the
/// product's static clone) runs: each over the same rows, collapsed alike
/// (the vector holds the replacement), its operands cast (`castOperands`,
/// the casts into `casts`) and a static clone where it was.
SmallVector<linalg::GenericOp> epilogueAtLargest(
    linalg::LinalgOp at, MutableArrayRef<linalg::GenericOp> ops, int64_t largest,
    ArrayAttr inputMax,
    function_ref<void(Operation *, IRMapping &, SmallVectorImpl<Operation *> &)> castOperands,
    SmallVectorImpl<Operation *> &casts) {
  SmallVector<linalg::GenericOp> clones;
  EpilogueChain chain(at);
  for (linalg::GenericOp &e : ops) {
    if (e.getNumParallelLoops() != e.getNumLoops())
      break;
    if (rowsLoop(e) < 0)
      if (linalg::LinalgOp flat = collapseLeadingRows(e))
        e = cast<linalg::GenericOp>(flat.getOperation());
    // Rows outermost, each buffer holding the largest rows' bytes.
    if (rowsLoop(e) != 0 || llvm::any_of(e->getOperands(), [&](Value v) {
          auto t = dyn_cast<MemRefType>(v.getType());
          auto range = t && !t.hasStaticShape() ? dimRange(v, 0, inputMax) : std::nullopt;
          return range && range->second < largest;
        }))
      break;
    IRMapping m;
    SmallVector<Operation *> eCasts;
    castOperands(e, m, eCasts);
    auto clone = cast<linalg::GenericOp>(OpBuilder(e).clone(*e, m));
    if (!chain.add(clone)) {
      clone->erase();
      for (Operation *c : llvm::reverse(eCasts))
        c->erase();
      break;
    }
    clones.push_back(clone);
    llvm::append_range(casts, eCasts);
  }
  return clones;
}

} // namespace

LogicalResult outlineAtLargestRows(KernelFactory &kernels, func::FuncOp fn, linalg::LinalgOp &op,
                                   bool &outlined, bool zeroInit,
                                   SmallVectorImpl<linalg::GenericOp> *epilogue, unsigned *fused) {
  outlined = false;
  if (fused)
    *fused = 0;
  // mma.sync kernels (sm_80): the grid dimension along the rows is known
  // for them (wgmma's clusters pair blocks along M).
  if (kernels.chip() == "sm_90a")
    return success();
  if (rowsLoop(op) < 0) {
    linalg::LinalgOp flat = collapseLeadingRows(op);
    if (!flat)
      return success();
    op = flat;
  }
  auto inputMax = fn->getParentOfType<ModuleOp>()->getAttrOfType<ArrayAttr>(
      KilnDialect::getInputDimMaxAttrName());
  // The rows of the operands whose largest size is known (an output
  // argument has none: its rows equal an input's). They are equal at run
  // time; the smallest bound is what every such buffer surely holds.
  Value rowsOf;
  int64_t largest = std::numeric_limits<int64_t>::max();
  for (Value v : op->getOperands())
    if (auto t = dyn_cast<MemRefType>(v.getType()); t && !t.hasStaticShape())
      if (auto range = dimRange(v, 0, inputMax); range && range->second < largest) {
        largest = range->second;
        rowsOf = v;
      }
  if (!rowsOf || largest < 1)
    return success();
  OpBuilder b(op);
  Location loc = op.getLoc();
  // `o`'s dynamic operands cast to their largest rows (before `o`).
  auto castOperands = [&](Operation *o, IRMapping &statics, SmallVectorImpl<Operation *> &casts) {
    OpBuilder cb(o);
    for (Value v : o->getOperands()) {
      auto t = dyn_cast<MemRefType>(v.getType());
      if (!t || t.hasStaticShape() || statics.contains(v))
        continue;
      SmallVector<int64_t> shape(t.getShape());
      shape[0] = largest;
      auto cast = memref::CastOp::create(cb, loc, MemRefType::get(shape, t.getElementType()), v);
      statics.map(v, cast.getResult());
      casts.push_back(cast);
    }
  };
  IRMapping statics;
  SmallVector<Operation *> casts;
  castOperands(op, statics, casts);
  auto at = cast<linalg::LinalgOp>(b.clone(*op, statics));
  // The tensor cores' grid runs over (n, m, batch) tiles, a convolution's
  // images along z; an elementwise op's 16-byte threads linearly along x,
  // the rows outermost.
  std::optional<Plan> plan = planMatmul(at, kernels.tuning());
  unsigned rowsDim = plan && (plan->form == Plan::Batched || plan->form == Plan::Conv) ? 2 : 1;
  Operation *before = casts.back();
  FailureOr<bool> done = failure();
  if (plan) {
    SmallVector<linalg::GenericOp> after;
    SmallVector<Operation *> afterCasts;
    if (epilogue)
      after = epilogueAtLargest(at, *epilogue, largest, inputMax, castOperands, afterCasts);
    auto dropAfter = [&] {
      for (linalg::GenericOp e : llvm::reverse(after))
        e->erase();
      for (Operation *c : llvm::reverse(afterCasts))
        c->erase();
      after.clear();
    };
    done = outlineTensorCoreMatmul(kernels, fn, at, zeroInit, after);
    if (failed(done) && !after.empty()) { // the chain's captures cannot be passed
      dropAfter();
      done = outlineTensorCoreMatmul(kernels, fn, at, zeroInit);
    } else if (succeeded(done) && !*done) {
      dropAfter();
    } else if (succeeded(done)) { // the clones went with it; the ops go too
      for (size_t k = 0; k < after.size(); ++k)
        (*epilogue)[k]->erase();
      if (fused)
        *fused = after.size();
    }
  } else if (zeroInit) {
    // (only the tensor cores start from zeros instead of the fill)
  } else if (auto generic = dyn_cast<linalg::GenericOp>(at.getOperation());
             generic && at.getNumReductionLoops() == 0 &&
             succeeded(outlineVectorizedElementwise(kernels, fn, generic))) {
    done = false;
    rowsDim = 0;
  } else if (generic && rowsLoop(op) == 0 &&
             succeeded(outlineCooperativeReduction(kernels, fn, generic))) {
    // A block per output, the rows outermost (a LayerNorm's mean over a
    // [batch, seq, d] row): the run's rows take the first blocks.
    done = false;
    rowsDim = 0;
  }
  if (failed(done)) { // not a kernel of these kinds: the generic loops
    at->erase();
    for (Operation *c : llvm::reverse(casts))
      c->erase();
    return success();
  }
  // The launch the kernel got, just after the casts.
  func::CallOp call;
  for (Operation *o = before->getNextNode(); o && !call; o = o->getNextNode())
    if (auto c = dyn_cast<func::CallOp>(o); c && c.getCallee().starts_with("__kiln_launch_"))
      call = c;
  auto launch = call ? fn->getParentOfType<ModuleOp>().lookupSymbol<func::FuncOp>(call.getCallee())
                     : func::FuncOp();
  auto grid = launch ? launch->getAttrOfType<DenseI32ArrayAttr>(KilnDialect::getGridAttrName())
                     : DenseI32ArrayAttr();
  if (!grid || grid.size() != 3 || llvm::is_contained(grid.asArrayRef(), -1))
    return op->emitError("kiln internal error: no launch for the kernel at the largest rows");
  // Blocks along the rows for this run: the largest's share, at least one.
  OpBuilder hb(call);
  auto cst = [&](int64_t v) { return arith::ConstantIndexOp::create(hb, loc, v).getResult(); };
  Value rows = memref::DimOp::create(hb, loc, rowsOf, 0);
  Value blocks = arith::CeilDivUIOp::create(
      hb, loc, arith::MulIOp::create(hb, loc, rows, cst(grid[rowsDim])), cst(largest));
  blocks = arith::MaxUIOp::create(hb, loc, blocks, cst(1));
  SmallVector<Value> sizes(3);
  sizes[rowsDim] = blocks;
  if (failed(kernels.setRunGrid(call, sizes)))
    return failure();
  op->erase();
  outlined = true;
  return success();
}

/// outlineAtLargestRows on ops[i] (`op`), the elementwise ops after it its
/// epilogue's candidates; ops replaced (rows collapsed) or gone recorded.
static LogicalResult atLargestRows(KernelFactory &kernels, func::FuncOp fn, DynamicRun &run,
                                   size_t i, linalg::LinalgOp &op, bool zeroInit, bool &outlined) {
  SmallVector<size_t> at;
  SmallVector<linalg::GenericOp> after;
  for (size_t j = run.next(i); j < run.ops.size() && after.size() < 8; j = run.next(j)) {
    auto g = dyn_cast<linalg::GenericOp>(run.ops[j]);
    if (!g)
      break;
    at.push_back(j);
    after.push_back(g);
  }
  unsigned fused = 0;
  if (failed(outlineAtLargestRows(kernels, fn, op, outlined, zeroInit, &after, &fused)))
    return failure();
  auto record = [&](size_t k, Operation *now, bool gone) {
    if (gone)
      run.done.insert(run.ops[k]);
    else if (now != run.ops[k])
      replaceOutlinedOp(run.ops, run.done, k, now);
  };
  record(i, op, outlined && zeroInit);
  for (auto [k, j] : llvm::enumerate(at))
    record(j, after[k], k < fused);
  return success();
}

/// ops[i] (`op`), a product over run-time sizes other than rows alone
/// (attention's Q K^T and P V over a dynamic sequence), as mma.sync tiles
/// masking what lies past the run's M, N and K; whether it was.
static bool atRunSizes(KernelFactory &kernels, func::FuncOp fn, DynamicRun &run, size_t i,
                       linalg::LinalgOp op, bool zeroInit) {
  auto inputMax = fn->getParentOfType<ModuleOp>()->getAttrOfType<ArrayAttr>(
      KilnDialect::getInputDimMaxAttrName());
  std::optional<Plan> plan = planDynamicMatmul(op, inputMax, kernels.tuning());
  Operation *product = run.ops[i];
  if (!plan || failed(outlineDynamicTensorCoreMatmul(kernels, fn, op, *plan, zeroInit)))
    return false;
  run.done.insert(product);
  return true;
}

LogicalResult outlineDynamicOp(KernelFactory &kernels, func::FuncOp fn, DynamicRun &run, size_t i,
                               linalg::LinalgOp &op, bool &outlined) {
  // A zero fill of the next product's C: the tensor cores' accumulators
  // start at zero instead (a launch and a pass over C fewer).
  FloatAttr value;
  if (auto fill = dyn_cast<linalg::FillOp>(op.getOperation());
      fill && matchPattern(fill.getInputs()[0], m_Constant(&value)) && value.getValue().isZero()) {
    size_t j = run.next(i);
    auto next = j < run.ops.size() ? cast<linalg::LinalgOp>(run.ops[j]) : linalg::LinalgOp();
    if (next && next.getNumDpsInits() == 1 &&
        next.getDpsInitOperand(0)->get() == fill.getOutputs()[0]) {
      if (failed(atLargestRows(kernels, fn, run, j, next, /*zeroInit=*/true, outlined)))
        return failure();
      if (!outlined)
        outlined = atRunSizes(kernels, fn, run, j, next, /*zeroInit=*/true);
      if (outlined) {
        op->erase();
        return success();
      }
    }
  }
  if (failed(atLargestRows(kernels, fn, run, i, op, /*zeroInit=*/false, outlined)))
    return failure();
  if (!outlined)
    outlined = atRunSizes(kernels, fn, run, i, op, /*zeroInit=*/false);
  if (outlined)
    return success();
  // A transpose of the inner dimensions (attention's K^T over a dynamic
  // sequence) by 32x32 tiles, as the generic it is.
  if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation())) {
    outlined = succeeded(outlineTiledTranspose(kernels, fn, generic));
  } else if (auto transpose = dyn_cast<linalg::TransposeOp>(op.getOperation())) {
    IRRewriter rewriter(transpose);
    rewriter.setInsertionPoint(transpose);
    auto clone = cast<linalg::LinalgOp>(rewriter.clone(*transpose));
    FailureOr<linalg::GenericOp> generic = linalg::generalizeNamedOp(rewriter, clone);
    outlined = succeeded(generic) && succeeded(outlineTiledTranspose(kernels, fn, *generic));
    if (outlined)
      transpose->erase();
    else if (succeeded(generic))
      (*generic)->erase();
  }
  return success();
}

} // namespace kiln

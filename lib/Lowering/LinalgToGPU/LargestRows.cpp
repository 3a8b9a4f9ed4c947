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

} // namespace

LogicalResult outlineAtLargestRows(KernelFactory &kernels, func::FuncOp fn, linalg::LinalgOp &op,
                                   bool &outlined, bool zeroInit) {
  outlined = false;
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
  IRMapping statics;
  SmallVector<Operation *> casts;
  for (Value v : op->getOperands()) {
    auto t = dyn_cast<MemRefType>(v.getType());
    if (!t || t.hasStaticShape() || statics.contains(v))
      continue;
    SmallVector<int64_t> shape(t.getShape());
    shape[0] = largest;
    auto cast = memref::CastOp::create(b, loc, MemRefType::get(shape, t.getElementType()), v);
    statics.map(v, cast.getResult());
    casts.push_back(cast);
  }
  auto at = cast<linalg::LinalgOp>(b.clone(*op, statics));
  // The tensor cores' grid runs over (n, m, batch) tiles, a convolution's
  // images along z; an elementwise op's 16-byte threads linearly along x,
  // the rows outermost.
  std::optional<Plan> plan = planMatmul(at, kernels.tuning());
  unsigned rowsDim = plan && (plan->form == Plan::Batched || plan->form == Plan::Conv) ? 2 : 1;
  Operation *before = casts.back();
  FailureOr<bool> done = failure();
  if (plan) {
    done = outlineTensorCoreMatmul(kernels, fn, at, zeroInit);
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
  SmallVector<int32_t> dynamicGrid(grid.asArrayRef());
  dynamicGrid[rowsDim] = -1;
  launch->setAttr(KilnDialect::getGridAttrName(), hb.getDenseI32ArrayAttr(dynamicGrid));
  SmallVector<Type> params{hb.getIndexType()};
  llvm::append_range(params, launch.getFunctionType().getInputs());
  launch.setFunctionType(FunctionType::get(fn.getContext(), params, {}));
  SmallVector<Value> operands{blocks};
  llvm::append_range(operands, call.getOperands());
  call->setOperands(operands);
  // The kernel's grid is the run's now.
  if (auto name = launch->getAttrOfType<StringAttr>(KilnDialect::getKernelNameAttrName()))
    if (auto kernel = kernels.gpuModule().lookupSymbol<gpu::GPUFuncOp>(name))
      kernel->removeAttr(kernel.getKnownGridSizeAttrName());
  op->erase();
  outlined = true;
  return success();
}

} // namespace kiln

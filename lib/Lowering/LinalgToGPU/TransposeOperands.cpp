//===- TransposeOperands.cpp - kiln-gpu-transpose-operands -----------------===//
//
// linalg.generic {(m, n, k) -> (k, m), (m, n, k) -> (n, k), -> (m, n)}
//     ins(%a : memref<KxM>, %b : memref<NxK>) outs(%c)       (a mul-add)
//   =>
// %at = memref.alloc() : memref<MxK>
// linalg.transpose ins(%a) outs(%at) permutation = [1, 0]
// %bt = memref.alloc() : memref<KxN>
// linalg.transpose ins(%b) outs(%bt) permutation = [1, 0]
// linalg.generic {(m, k), (k, n), (m, n)} ins(%at, %bt) outs(%c)
// memref.dealloc %at, %bt
//
// The tensor-core kernels read A as [M, K] and B as [K, N] rows. A Gemm
// with transA or transB on operands known only at run time (a training
// step's weight gradients X^T dY, its forward pass through weights that are
// parameters now, not constants to transpose at compile time) would
// otherwise run as a thread-per-output loop. A tiled transpose reads and
// writes the operand once, at close to copy bandwidth; the product then
// takes mma.sync or wgmma. Only when it does: a product the tensor-core
// planner turns down keeps its layout, and no copy is made.
//
//===----------------------------------------------------------------------===//

#include "TensorCorePlan.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace kiln {
#define GEN_PASS_DEF_KILNGPUTRANSPOSEOPERANDS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The canonical maps for `op` and which of A and B are read transposed;
/// nullopt when `op` is no product whose operands only need their last two
/// dimensions swapped to become one the tensor-core planner reads.
struct Layout {
  AffineMap a, b;
  bool transA = false, transB = false;
};

std::optional<Layout> transposedLayout(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 1 || op.getNumLoops() < 3 || !isMulAdd(op))
    return std::nullopt;
  unsigned loops = op.getNumLoops();
  if (op.getIteratorTypesArray().back() != utils::IteratorType::reduction)
    return std::nullopt;
  for (Value v : op->getOperands()) {
    auto t = dyn_cast<MemRefType>(v.getType());
    if (!t || !t.hasStaticShape() || !t.getLayout().isIdentity())
      return std::nullopt;
  }
  MatmulLoops names(op.getContext(), loops);
  ArrayRef<AffineExpr> lead = names.lead;
  AffineExpr m = names.m, n = names.n, k = names.k;
  auto with = [&](ArrayRef<AffineExpr> front, AffineExpr x, AffineExpr y) {
    return names.with(front, x, y);
  };
  auto maps = op.getIndexingMapsArray();
  if (maps[2] != with(lead, m, n))
    return std::nullopt;
  Layout l;
  if (maps[0] == with(lead, m, k)) {
    l.a = maps[0];
  } else if (maps[0] == with(lead, k, m)) {
    l.a = with(lead, m, k);
    l.transA = true;
  } else {
    return std::nullopt;
  }
  // B batched like A, or one B shared by every batch.
  for (ArrayRef<AffineExpr> front : {ArrayRef<AffineExpr>(lead), ArrayRef<AffineExpr>()}) {
    if (maps[1] == with(front, k, n)) {
      l.b = maps[1];
    } else if (maps[1] == with(front, n, k)) {
      l.b = with(front, k, n);
      l.transB = true;
    }
  }
  if (!l.b || !(l.transA || l.transB))
    return std::nullopt;
  return l;
}

/// A new buffer of `x`'s shape with its last two dimensions swapped.
Value swappedBuffer(OpBuilder &b, Location loc, Value x) {
  auto t = cast<MemRefType>(x.getType());
  SmallVector<int64_t> shape(t.getShape());
  std::swap(shape[shape.size() - 2], shape.back());
  return memref::AllocOp::create(b, loc, MemRefType::get(shape, t.getElementType()));
}

/// `x` with its last two dimensions swapped, into a new buffer.
Value transposedCopy(OpBuilder &b, Location loc, Value x) {
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < cast<MemRefType>(x.getType()).getRank(); ++d)
    perm.push_back(d);
  std::swap(perm[perm.size() - 2], perm.back());
  Value buffer = swappedBuffer(b, loc, x);
  linalg::TransposeOp::create(b, loc, x, buffer, perm);
  return buffer;
}

/// Rewrites `op` when the tensor cores then take it; true when it did.
bool transposeOperands(linalg::GenericOp op, const GpuTuning &tuning) {
  std::optional<Layout> l = transposedLayout(op);
  if (!l)
    return false;
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value a = op.getDpsInputs()[0], bv = op.getDpsInputs()[1];
  // The product in the layout wanted, on the operands as they are, only to
  // ask the planner (whose checks are on shapes, element types and maps).
  auto rewritten = [&](Value newA, Value newB) {
    auto g = linalg::GenericOp::create(
        b, loc, TypeRange{}, ValueRange{newA, newB}, op.getDpsInits(),
        ArrayRef<AffineMap>{l->a, l->b, op.getIndexingMapsArray()[2]},
        op.getIteratorTypesArray());
    IRMapping map;
    op.getRegion().cloneInto(&g.getRegion(), map);
    g->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    return g;
  };
  // Placeholders of the transposed shapes: the planner reads only types.
  Value probeA = l->transA ? swappedBuffer(b, loc, a) : a;
  Value probeB = l->transB ? swappedBuffer(b, loc, bv) : bv;
  linalg::GenericOp probe = rewritten(probeA, probeB);
  bool tensorCores =
      planMatmul(probe, tuning).has_value() || planWarpgroupMatmul(probe, tuning).has_value();
  probe.erase();
  for (Value v : {probeA, probeB})
    if (v != a && v != bv)
      v.getDefiningOp()->erase();
  if (!tensorCores)
    return false;
  // The copies go before a zero fill of C just before the product, which
  // the outliner then folds into the kernel's accumulators.
  Value c = op.getDpsInits()[0];
  auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
  auto before = [&](Value v, Operation *at) {
    Operation *def = v.getDefiningOp();
    return !def || (def->getBlock() == at->getBlock() && def->isBeforeInBlock(at));
  };
  if (fill && fill.getOutputs()[0] == c && before(a, fill) && before(bv, fill))
    b.setInsertionPoint(fill);
  SmallVector<Value> copies;
  Value newA = a, newB = bv;
  if (l->transA)
    copies.push_back(newA = transposedCopy(b, loc, a));
  if (l->transB)
    copies.push_back(newB = transposedCopy(b, loc, bv));
  b.setInsertionPoint(op);
  rewritten(newA, newB);
  b.setInsertionPointAfter(op);
  for (Value c : copies)
    memref::DeallocOp::create(b, loc, c);
  op.erase();
  return true;
}

struct KilnGpuTransposeOperandsPass final
    : impl::KilnGpuTransposeOperandsBase<KilnGpuTransposeOperandsPass> {
  using Base::Base;

  void runOnOperation() override {
    // Top-level products only: the copies' buffers must be ones the
    // memory plan places in the arena (it places those of @main's body).
    SmallVector<linalg::GenericOp> ops;
    for (Operation &op : getOperation().getBody().getOps())
      if (auto g = dyn_cast<linalg::GenericOp>(&op))
        ops.push_back(g);
    // GpuPasses.td's GpuTuningOptions, in GpuTuning's order.
    GpuTuning tuning{mma, tileN, loads, tf32Drain, cluster};
    for (linalg::GenericOp op : ops)
      (void)transposeOperands(op, tuning);
  }
};

} // namespace
} // namespace kiln

//===- RowMatmulMatch.cpp - which linalg ops the matmul register tile takes ===//
//
// matchRowMatmul (MatmulTiles.h): a contraction C(..m.., n) += A(..m.., k)
// * B(.., k, n) of f32 operands, or the same with B prepacked by
// kiln-pack-matmul-weights (panels one vector wide, or VNNI's 4-byte
// groups for 8-bit products). Kernel formation and the packing pass ask
// it too, so that what they shape is what the tile takes. matchVecmat:
// the one-row product whose unit row was folded away, for the packing pass
// and the tile alike.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/MatmulTiles.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

using namespace mlir;

namespace kiln {

std::optional<Vecmat> matchVecmat(Operation *o) {
  auto op = dyn_cast_or_null<linalg::GenericOp>(o);
  if (!op || op.getNumLoops() != 2 || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 1)
    return std::nullopt;
  Vecmat v;
  v.int8 = isU8S8ProductBody(*op.getBlock());
  if (!v.int8 && !linalg::detail::isContractionBody(*op.getBlock(), [](Operation *mul, Operation *add) {
        return isa<arith::MulFOp>(mul) && isa<arith::AddFOp>(add);
      }))
    return std::nullopt;
  for (Value val : op->getOperands()) {
    auto t = dyn_cast<ShapedType>(val.getType());
    if (!t || !t.hasStaticShape() || (!v.int8 && !t.getElementType().isF32()))
      return std::nullopt;
  }
  MLIRContext *ctx = op.getContext();
  v.k = op.getIteratorTypesArray()[0] == utils::IteratorType::reduction ? 0 : 1;
  v.n = 1 - v.k;
  AffineExpr k = getAffineDimExpr(v.k, ctx), n = getAffineDimExpr(v.n, ctx);
  auto maps = op.getIndexingMapsArray();
  auto bType = cast<ShapedType>(op.getDpsInputs()[1].getType());
  if (v.int8) {
    // Only packed (for vpdpbusd or vpmaddwd): the tile has no other 8-bit
    // form.
    if (bType.getRank() != 4 || !isInt8Group(bType.getDimSize(3)))
      return std::nullopt;
    v.packed = bType.getDimSize(2);
    v.group = bType.getDimSize(3);
    if (maps[1] != AffineMap::get(2, 0,
                                  {n.floorDiv(v.packed), k.floorDiv(v.group), n % v.packed,
                                   k % v.group},
                                  ctx))
      return std::nullopt;
  } else if (bType.getRank() == 3) {
    v.packed = bType.getDimSize(2);
    if (maps[1] != AffineMap::get(2, 0, {n.floorDiv(v.packed), k, n % v.packed}, ctx))
      return std::nullopt;
  } else if (maps[1] != AffineMap::get(2, 0, {k, n}, ctx)) {
    return std::nullopt;
  }
  if (maps[0] != AffineMap::get(2, 0, {k}, ctx) || maps[2] != AffineMap::get(2, 0, {n}, ctx))
    return std::nullopt;
  return v;
}

bool isU8S8ProductBody(Block &body) {
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  if (!yield || yield.getNumOperands() != 1 || body.getNumArguments() != 3 ||
      !body.getArgument(2).getType().isInteger(32))
    return false;
  auto add = yield.getOperand(0).getDefiningOp<arith::AddIOp>();
  if (!add)
    return false;
  Value acc = add.getLhs(), product = add.getRhs();
  if (acc != body.getArgument(2))
    std::swap(acc, product);
  auto mul = product.getDefiningOp<arith::MulIOp>();
  if (acc != body.getArgument(2) || !mul)
    return false;
  auto a = mul.getLhs().getDefiningOp<arith::ExtUIOp>();
  auto b = mul.getRhs().getDefiningOp<arith::ExtSIOp>();
  return a && b && a.getIn() == body.getArgument(0) && b.getIn() == body.getArgument(1) &&
         body.getOperations().size() == 5;
}
namespace {
/// A's indices as loops: its map's results, or (.., m, k) for A packed by
/// rows [.., M/R, K, R] at (.., m floordiv R, k, m mod R), R in
/// `packedRows`.
std::optional<SmallVector<AffineExpr>> loopsOfA(AffineMap a, int64_t &packedRows) {
  packedRows = 0;
  if (a.isProjectedPermutation())
    return SmallVector<AffineExpr>(a.getResults());
  unsigned n = a.getNumResults();
  if (n < 3)
    return std::nullopt;
  auto div = dyn_cast<AffineBinaryOpExpr>(a.getResult(n - 3));
  auto mod = dyn_cast<AffineBinaryOpExpr>(a.getResult(n - 1));
  if (!div || !mod || div.getKind() != AffineExprKind::FloorDiv ||
      mod.getKind() != AffineExprKind::Mod || div.getLHS() != mod.getLHS() ||
      div.getRHS() != mod.getRHS())
    return std::nullopt;
  auto r = dyn_cast<AffineConstantExpr>(div.getRHS());
  if (!r || r.getValue() < 2)
    return std::nullopt;
  SmallVector<AffineExpr> loops(a.getResults().drop_back(3));
  loops.append({div.getLHS(), a.getResult(n - 2)});
  // Distinct loops, as a projected permutation's.
  llvm::SmallDenseSet<unsigned> seen;
  for (AffineExpr e : loops) {
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d || !seen.insert(d.getPosition()).second)
      return std::nullopt;
  }
  packedRows = r.getValue();
  return loops;
}

/// `op` reads B packed, [.., N/P, K, P] at (.., n floordiv P, k, n mod P),
/// A and C as a row matmul would (B's leading loops, a 1x1 convolution's
/// images, among C's outer ones): the form kiln-pack-matmul-weights makes,
/// which is no projected permutation, so linalg's contraction matching
/// does not take it. 8-bit products (`int8`) read B as [N/P, K/G, P, G]
/// at (n floordiv P, k floordiv G, n mod P, k mod G), G being 4 for
/// vpdpbusd or 2 for vpmaddwd. An f32 A may be packed by rows too
/// (loopsOfA).
std::optional<RowMatmul> matchPackedRowMatmul(linalg::LinalgOp op, bool int8) {
  AffineMap b = op.getMatchingIndexingMap(op.getDpsInputOperand(1));
  AffineMap c = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  unsigned packedDims = int8 ? 4 : 3;
  int64_t packedRows = 0;
  std::optional<SmallVector<AffineExpr>> a =
      loopsOfA(op.getMatchingIndexingMap(op.getDpsInputOperand(0)), packedRows);
  if (b.getNumResults() < packedDims || !a || (int8 && packedRows) ||
      !c.isProjectedPermutation() || c.getNumResults() < 2 || op.getNumReductionLoops() != 1)
    return std::nullopt;
  unsigned nb = b.getNumResults() - packedDims;
  for (AffineExpr e : b.getResults().take_front(nb))
    if (!isa<AffineDimExpr>(e) || !llvm::is_contained(c.getResults().drop_back(2), e))
      return std::nullopt;
  auto div = dyn_cast<AffineBinaryOpExpr>(b.getResult(nb));
  auto mod = dyn_cast<AffineBinaryOpExpr>(b.getResult(nb + 2));
  auto n = dyn_cast<AffineDimExpr>(c.getResults().back());
  AffineDimExpr k(nullptr);
  int64_t group = 0;
  if (int8) {
    auto kDiv = dyn_cast<AffineBinaryOpExpr>(b.getResult(nb + 1));
    auto kMod = dyn_cast<AffineBinaryOpExpr>(b.getResult(nb + 3));
    if (!kDiv || !kMod || kDiv.getKind() != AffineExprKind::FloorDiv ||
        kMod.getKind() != AffineExprKind::Mod || kDiv.getRHS() != kMod.getRHS() ||
        kDiv.getLHS() != kMod.getLHS())
      return std::nullopt;
    auto g = dyn_cast<AffineConstantExpr>(kDiv.getRHS());
    if (!g || !isInt8Group(g.getValue()))
      return std::nullopt;
    group = g.getValue();
    k = dyn_cast<AffineDimExpr>(kDiv.getLHS());
  } else {
    k = dyn_cast<AffineDimExpr>(b.getResult(nb + 1));
  }
  if (!div || !mod || !k || !n || div.getKind() != AffineExprKind::FloorDiv ||
      mod.getKind() != AffineExprKind::Mod || div.getLHS() != n || mod.getLHS() != n)
    return std::nullopt;
  auto p = dyn_cast<AffineConstantExpr>(div.getRHS());
  if (!p || mod.getRHS() != div.getRHS() || p.getValue() < 1)
    return std::nullopt;
  auto iterators = op.getIteratorTypesArray();
  if (iterators[k.getPosition()] != utils::IteratorType::reduction ||
      !(int8 ? isU8S8ProductBody(*op.getBlock())
             : linalg::detail::isContractionBody(*op.getBlock(), [](Operation *mul, Operation *add) {
                 return isa<arith::MulFOp>(mul) && isa<arith::AddFOp>(add);
               })))
    return std::nullopt;
  // A reads C's m loops and k, in any order (X^T of dW = X^T dY too), but
  // B's batch loops (a 1x1 convolution's weights are the same for every
  // image), which the rows are not.
  ArrayRef<AffineExpr> batch = b.getResults().take_front(nb);
  unsigned aReads = 1;
  for (AffineExpr e : c.getResults().drop_back()) {
    if (llvm::is_contained(*a, e))
      ++aReads;
    else if (!llvm::is_contained(batch, e))
      return std::nullopt;
  }
  AffineExpr rows = c.getResult(c.getNumResults() - 2);
  if (a->size() != aReads || !llvm::is_contained(*a, k) || llvm::is_contained(batch, rows) ||
      (packedRows && (*a)[a->size() - 2] != rows))
    return std::nullopt;
  // The 8-bit tiles read A's 4 bytes at k..k+3 as one word: k is A's last
  // (contiguous) index, and K a static multiple of 4.
  if (int8) {
    int64_t K = op.getStaticLoopRanges()[k.getPosition()];
    if (a->back() != k || ShapedType::isDynamic(K) || K % 4)
      return std::nullopt;
  }
  RowMatmul r;
  r.n = n.getPosition();
  r.k = k.getPosition();
  r.packed = p.getValue();
  r.packedRows = packedRows;
  r.int8 = int8;
  r.group = group;
  r.rows = cast<AffineDimExpr>(c.getResult(c.getNumResults() - 2)).getPosition();
  for (AffineExpr e : c.getResults().drop_back(2))
    r.outer.push_back(cast<AffineDimExpr>(e).getPosition());
  return r;
}
} // namespace

namespace {
/// Dynamic sizes only on the emitter's loops: the rows, C's outer loops
/// (a dynamic batch or sequence), k and n (attention's keys), never a
/// packed B.
bool staticButRows(linalg::LinalgOp op, const RowMatmul &r) {
  for (OpOperand &operand : op->getOpOperands()) {
    auto t = cast<ShapedType>(operand.get().getType());
    AffineMap map = op.getMatchingIndexingMap(&operand);
    for (int64_t d = 0; d < t.getRank(); ++d) {
      if (!t.isDynamicDim(d))
        continue;
      auto loop = dyn_cast<AffineDimExpr>(map.getResult(d));
      if (!loop)
        return false;
      unsigned l = loop.getPosition();
      // A packed B's N is static (its panels); K may be known only at run
      // time (dW = X^T dY over a dynamic batch), as the rows may.
      bool kn = l == r.k || l == r.n;
      if ((l == r.n && r.packed) || (!kn && l != r.rows && !llvm::is_contained(r.outer, l)))
        return false;
    }
  }
  return true;
}

std::optional<RowMatmul> matchContraction(linalg::LinalgOp op);
} // namespace

int64_t registerTileDepth(Operation *op, const RowMatmul &mm) {
  int64_t K = cast<linalg::LinalgOp>(op).getStaticLoopRanges()[mm.k];
  return mm.int8 || ShapedType::isDynamic(K) ? 0 : K;
}

std::optional<RowMatmul> matchRowMatmul(Operation *operation) {
  auto op = dyn_cast_if_present<linalg::LinalgOp>(operation);
  if (!op || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return std::nullopt;
  // f32 throughout, or 8-bit operands summed in i32 (taken only packed;
  // A may be held widened to i16, kiln-widen-int8-rows).
  bool int8 = false;
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    auto t = dyn_cast<ShapedType>(v.getType());
    if (!t || !t.hasRank())
      return std::nullopt;
    Type e = t.getElementType();
    if (i == 0)
      int8 = e.isInteger(8) || e.isInteger(16);
    if (int8 ? !e.isInteger(i == 0 ? e.getIntOrFloatBitWidth() : i == 1 ? 8 : 32) : !e.isF32())
      return std::nullopt;
    if (auto m = dyn_cast<MemRefType>(t); m && !m.isLastDimUnitStride())
      return std::nullopt;
  }
  std::optional<RowMatmul> r = int8 ? matchPackedRowMatmul(op, /*int8=*/true)
                               : linalg::isaContractionOpInterface(op)
                                   ? matchContraction(op)
                                   : matchPackedRowMatmul(op, /*int8=*/false);
  if (!r || !staticButRows(op, *r))
    return std::nullopt;
  // A widened to i16 only for vpmaddwd's pairs.
  if (int8 && cast<ShapedType>(op->getOperand(0).getType()).getElementType().isInteger(16) &&
      r->group != 2)
    return std::nullopt;
  return r;
}

namespace {
std::optional<RowMatmul> matchContraction(linalg::LinalgOp op) {
  FailureOr<linalg::ContractionDimensions> dims = linalg::inferContractionDims(op);
  if (failed(dims) || dims->m.empty() || dims->n.empty() || dims->k.size() != 1)
    return std::nullopt;
  AffineMap b = op.getMatchingIndexingMap(op.getDpsInputOperand(1));
  AffineMap c = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  AffineMap a = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
  if (!a.isProjectedPermutation() || !b.isProjectedPermutation() || !c.isProjectedPermutation() ||
      b.getNumResults() < 2)
    return std::nullopt;
  RowMatmul r;
  r.n = cast<AffineDimExpr>(c.getResults().back()).getPosition();
  r.k = dims->k[0];
  auto isDim = [](AffineExpr e, unsigned d) {
    auto dim = dyn_cast<AffineDimExpr>(e);
    return dim && dim.getPosition() == d;
  };
  // B is (.., k, n): before them its batch loops, and the loops only B and
  // C have besides n (a 1x1 convolution's images, out[i, f, p] += w[f, c]
  // * x[i, c, p]), which the emitter walks as C's outer loops.
  unsigned nb = b.getNumResults() - 2;
  if (!llvm::is_contained(dims->n, r.n) || !isDim(b.getResult(nb), r.k) ||
      !isDim(b.getResult(nb + 1), r.n) || nb != dims->batch.size() + dims->n.size() - 1)
    return std::nullopt;
  // C's loops in its order: batch and m loops, the innermost m the rows.
  std::optional<unsigned> rows;
  for (AffineExpr e : c.getResults().drop_back()) {
    unsigned d = cast<AffineDimExpr>(e).getPosition();
    if (llvm::is_contained(dims->m, d))
      rows = d;
  }
  if (!rows || c.getNumResults() != nb + dims->m.size() + 1)
    return std::nullopt;
  r.rows = *rows;
  for (AffineExpr e : c.getResults().drop_back())
    if (unsigned d = cast<AffineDimExpr>(e).getPosition(); d != r.rows)
      r.outer.push_back(d);
  return r;
}
} // namespace

} // namespace kiln

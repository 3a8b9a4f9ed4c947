//===- WidenInt8Rows.cpp - kiln-widen-int8-rows ----------------------------===//
//
//   %q = linalg.generic (elementwise) ... -> tensor<M x K x i8>
//   %c = linalg.generic ins(%q, %Wp : tensor<MxKxi8>, tensor<N/P x K/2 x P x 2 x i8>)
//          { out + zext(a) * sext(w) }
// =>
//   %q = linalg.generic (elementwise) ... { zext(...) : i16 } -> tensor<M x K x i16>
//   %c = linalg.generic ins(%q, %Wp : tensor<MxKxi16>, ...) { out + zext(a) * sext(w) }
//
// AVX2's 8-bit tile (vpmaddwd on B packed in pairs of k) needs each row's
// pair a[k], a[k+1] as two zero-extended i16 in every 32-bit lane. From
// bytes that took a vpshufb per pair and row in the innermost loop: 8
// shuffles beside 16 vpmaddwd a step of a 4 x 16 block, all on the same
// vector pipes. Stored as i16 once, a pair is one 32-bit broadcast load.
// On a Zen 3 core in registers: 60 -> 75 G multiply-adds a second. A is
// widened where it is made, when that is an elementwise op (a quantize,
// a requantizing epilogue) all of whose users are such products; else by
// an elementwise op of its own (one pass over A, which every column tile
// of the product then reads).
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/MatmulTiles.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

namespace kiln {
#define GEN_PASS_DEF_KILNWIDENINT8ROWS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// An 8-bit product on B packed in pairs (vpmaddwd's) whose A is bytes.
bool readsBytePairs(Operation *op) {
  auto g = dyn_cast<linalg::GenericOp>(op);
  if (!g || !g.hasPureTensorSemantics())
    return false;
  std::optional<RowMatmul> mm = matchRowMatmul(g);
  if (!mm || !mm->int8 || mm->group != 2)
    return false;
  auto a = dyn_cast<RankedTensorType>(g.getDpsInputs()[0].getType());
  return a && a.getElementType().isInteger(8);
}

/// `type`'s empty tensor of element type `element`, its dynamic sizes
/// those of `like`.
Value emptyLike(OpBuilder &b, Location loc, Value like, Type element) {
  auto type = cast<RankedTensorType>(like.getType());
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      sizes.push_back(tensor::DimOp::create(b, loc, like, d));
  return tensor::EmptyOp::create(b, loc, type.getShape(), element, sizes);
}

/// The elementwise op making `a` (one result, all loops parallel, its
/// output written whole and not read), rebuilt to yield the value
/// zero-extended to i16; null where `a` comes from anything else.
Value widenAtProducer(OpBuilder &b, Value a) {
  auto g = a.getDefiningOp<linalg::GenericOp>();
  if (!g || g.getNumResults() != 1 || g.getNumParallelLoops() != g.getNumLoops() ||
      !g.getMatchingIndexingMap(g.getDpsInitOperand(0)).isIdentity() ||
      !g.getMatchingBlockArgument(g.getDpsInitOperand(0)).use_empty())
    return {};
  b.setInsertionPoint(g);
  Location loc = g.getLoc();
  // Sized by its init, not its result: the old op goes once unused.
  Value init = emptyLike(b, loc, g.getDpsInits()[0], b.getI16Type());
  auto wide = linalg::GenericOp::create(
      b, loc, init.getType(), g.getDpsInputs(), ValueRange{init}, g.getIndexingMapsArray(),
      g.getIteratorTypesArray(), [&](OpBuilder &nb, Location l, ValueRange args) {
        IRMapping map;
        Block &body = *g.getBlock();
        for (auto [from, to] : llvm::zip(body.getArguments(), args))
          map.map(from, to);
        for (Operation &op : body.without_terminator())
          nb.clone(op, map);
        Value v = map.lookupOrDefault(body.getTerminator()->getOperand(0));
        linalg::YieldOp::create(nb, l, ValueRange{arith::ExtUIOp::create(nb, l, nb.getI16Type(), v)});
      });
  wide->setDiscardableAttrs(g->getDiscardableAttrDictionary());
  return wide.getResult(0);
}

/// `a` zero-extended to i16 by an elementwise op of its own.
Value widenAlone(OpBuilder &b, Value a) {
  b.setInsertionPointAfterValue(a);
  Location loc = a.getLoc();
  auto type = cast<RankedTensorType>(a.getType());
  Value init = emptyLike(b, loc, a, b.getI16Type());
  auto id = AffineMap::getMultiDimIdentityMap(type.getRank(), b.getContext());
  return linalg::GenericOp::create(
             b, loc, init.getType(), ValueRange{a}, ValueRange{init}, ArrayRef<AffineMap>{id, id},
             SmallVector<utils::IteratorType>(type.getRank(), utils::IteratorType::parallel),
             [](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(
                   nb, l, ValueRange{arith::ExtUIOp::create(nb, l, nb.getI16Type(), args[0])});
             })
      .getResult(0);
}

struct KilnWidenInt8RowsPass final : impl::KilnWidenInt8RowsBase<KilnWidenInt8RowsPass> {
  void runOnOperation() override {
    // Each A once, with all the products reading it.
    llvm::MapVector<Value, SmallVector<linalg::GenericOp>> readers;
    getOperation().walk([&](linalg::GenericOp op) {
      if (readsBytePairs(op))
        readers[op.getDpsInputs()[0]].push_back(op);
    });
    OpBuilder b(&getContext());
    for (auto &[a, products] : readers) {
      size_t uses = std::distance(a.use_begin(), a.use_end());
      Value wide = uses == products.size() ? widenAtProducer(b, a) : Value();
      if (!wide)
        wide = widenAlone(b, a);
      for (linalg::GenericOp p : products) {
        p.getDpsInputOperand(0)->set(wide);
        p.getBlock()->getArgument(0).setType(b.getI16Type());
      }
      if (Operation *old = a.getDefiningOp(); old && old->use_empty())
        old->erase();
    }
  }
};

} // namespace
} // namespace kiln

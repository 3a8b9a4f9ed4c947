//===- NextPanel.cpp - prefetching a matmul's next weight panels ----------===//
//
// See NextPanel.h.
//
//===----------------------------------------------------------------------===//

#include "NextPanel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;

namespace kiln {

static Value index(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

std::optional<NextPanel> findNextPanel(OpBuilder &b, Location loc, linalg::LinalgOp op,
                                       int64_t blocks, int64_t chunk, int64_t columns) {
  auto slice = op.getDpsInputs()[1].getDefiningOp<memref::SubViewOp>();
  if (!slice || slice.getSourceType().getRank() != 3 || !slice.getSourceType().hasStaticShape() ||
      !slice.hasUnitStride())
    return std::nullopt;
  ArrayRef<int64_t> whole = slice.getSourceType().getShape();
  ArrayRef<int64_t> part = slice.getType().getShape();
  if (ShapedType::isDynamic(part[0]) || part[0] >= whole[0] || part[1] != whole[1])
    return std::nullopt;
  if (!slice.getSource().getDefiningOp<memref::ViewOp>() &&
      !slice.getSource().getDefiningOp<memref::GetGlobalOp>())
    return std::nullopt;
  SmallVector<OpFoldResult> offsets = slice.getMixedOffsets();
  NextPanel n;
  n.source = slice.getSource();
  n.after = arith::AddIOp::create(b, loc, getValueOrCreateConstantIndexOp(b, loc, offsets[0]),
                                  index(b, loc, part[0]));
  n.inner.push_back(getValueOrCreateConstantIndexOp(b, loc, offsets[2]));
  n.panels = part[0];
  n.last = whole[0] - 1;
  n.chunk = chunk;
  n.chunks = (columns + chunk - 1) / chunk;
  while (n.spread * 2 * n.panels <= blocks)
    n.spread *= 2;
  return n;
}

NextPanel::Share NextPanel::shareOf(OpBuilder &b, Location loc, Value r0, int64_t blockRows,
                                    Value n0, Value kSize) const {
  Value rowBlock = arith::DivUIOp::create(b, loc, r0, index(b, loc, blockRows));
  Value q = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, rowBlock, index(b, loc, chunks)),
      arith::DivUIOp::create(b, loc, n0, index(b, loc, chunk)));
  Value s = index(b, loc, spread);
  Value panel = arith::DivUIOp::create(b, loc, q, s);
  Share share;
  share.panel = arith::MinUIOp::create(b, loc, arith::AddIOp::create(b, loc, after, panel),
                                       index(b, loc, last));
  share.firstLine = arith::MulIOp::create(b, loc, arith::RemUIOp::create(b, loc, q, s),
                                          arith::DivUIOp::create(b, loc, kSize, s));
  share.mine = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, panel,
                                     index(b, loc, panels));
  return share;
}

void NextPanel::prefetch(OpBuilder &b, Location loc, const Share &share, Value k) const {
  Value line = arith::AddIOp::create(b, loc, share.firstLine,
                                     arith::DivUIOp::create(b, loc, k, index(b, loc, spread)));
  SmallVector<Value> idx{share.panel, line};
  idx.append(inner.begin(), inner.end());
  memref::PrefetchOp::create(b, loc, source, idx, /*isWrite=*/false, /*localityHint=*/2,
                             /*isDataCache=*/true);
}

} // namespace kiln

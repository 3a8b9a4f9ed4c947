//===- NonMaxSuppression.cpp - greedy box selection as loops --------------===//
//
// Per batch and class, as ONNX's reference does: the boxes ordered by score
// (highest first, then lowest index), those not above score_threshold
// dropped, then each kept unless its IoU with one already kept passes
// iou_threshold, up to max_output_boxes_per_class. The selected
// [batch, class, box] triples' count is a value symbol: one pass counts,
// a second writes them. The order is a counting sort (quadratic in the
// boxes); the selection compares each box with the kept ones.
//
//===----------------------------------------------------------------------===//

#include "RuntimeShapes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace kiln {
namespace {

struct Nms {
  Value boxes, scores;           // [B, N, 4], [B, C, N]
  Value maxOut, iou, threshold;  // index, f32, f32 (null: no score filter)
  bool centers;                  // center_point_box = 1
  Value numBatches, numClasses, numBoxes;

  Value f(OpBuilder &b, Location l, double v) const {
    return arith::ConstantOp::create(b, l, b.getF32FloatAttr(v));
  }
  Value score(OpBuilder &b, Location l, Value batch, Value cls, Value i) const {
    return tensor::ExtractOp::create(b, l, scores, ValueRange{batch, cls, i});
  }
  /// Box i's [min, max] along x (c = 1) or y (c = 0).
  std::pair<Value, Value> extent(OpBuilder &b, Location l, Value batch, Value i, int c) const {
    auto at = [&](int64_t k) {
      return tensor::ExtractOp::create(b, l, boxes,
                                       ValueRange{batch, i, arith::ConstantIndexOp::create(b, l, k)})
          .getResult();
    };
    if (centers) { // [x_center, y_center, width, height]
      Value mid = at(c == 1 ? 0 : 1), half = arith::MulFOp::create(b, l, at(c == 1 ? 2 : 3),
                                                                   f(b, l, 0.5));
      return {arith::SubFOp::create(b, l, mid, half), arith::AddFOp::create(b, l, mid, half)};
    }
    Value a = at(c == 1 ? 1 : 0), z = at(c == 1 ? 3 : 2); // [y1, x1, y2, x2]
    return {arith::MinimumFOp::create(b, l, a, z), arith::MaximumFOp::create(b, l, a, z)};
  }
  /// Does box j suppress box i (IoU above the threshold)?
  Value suppresses(OpBuilder &b, Location l, Value batch, Value i, Value j) const {
    using P = arith::CmpFPredicate;
    Value inter = f(b, l, 1), areaI = f(b, l, 1), areaJ = f(b, l, 1);
    Value overlap = arith::ConstantIntOp::create(b, l, 1, 1);
    for (int c = 0; c < 2; ++c) {
      auto [iLo, iHi] = extent(b, l, batch, i, c);
      auto [jLo, jHi] = extent(b, l, batch, j, c);
      Value lo = arith::MaximumFOp::create(b, l, iLo, jLo);
      Value hi = arith::MinimumFOp::create(b, l, iHi, jHi);
      overlap = arith::AndIOp::create(b, l, overlap, arith::CmpFOp::create(b, l, P::OGT, hi, lo));
      inter = arith::MulFOp::create(b, l, inter, arith::SubFOp::create(b, l, hi, lo));
      areaI = arith::MulFOp::create(b, l, areaI, arith::SubFOp::create(b, l, iHi, iLo));
      areaJ = arith::MulFOp::create(b, l, areaJ, arith::SubFOp::create(b, l, jHi, jLo));
    }
    Value uni = arith::SubFOp::create(b, l, arith::AddFOp::create(b, l, areaI, areaJ), inter);
    Value zero = f(b, l, 0);
    Value valid = overlap;
    for (Value v : {inter, areaI, areaJ, uni})
      valid = arith::AndIOp::create(b, l, valid, arith::CmpFOp::create(b, l, P::OGT, v, zero));
    Value ratio = arith::DivFOp::create(b, l, inter, uni);
    return arith::AndIOp::create(b, l, valid, arith::CmpFOp::create(b, l, P::OGT, ratio, iou));
  }
  /// Box a comes before box c: a higher score, or the same and a lower index.
  Value before(OpBuilder &b, Location l, Value batch, Value cls, Value a, Value c) const {
    Value sa = score(b, l, batch, cls, a), sc = score(b, l, batch, cls, c);
    Value higher = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT, sa, sc);
    Value same = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, sa, sc);
    Value lower = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, a, c);
    return arith::OrIOp::create(b, l, higher, arith::AndIOp::create(b, l, same, lower));
  }

  /// Runs the selection of (batch, cls); `emit(b, l, box, rank)` is called for
  /// each box kept, with its rank among the kept, threading `state` (extra
  /// values carried through). Returns the kept count and the final state.
  std::pair<Value, SmallVector<Value>>
  select(OpBuilder &b, Location l, Value batch, Value cls, ValueRange state,
         function_ref<SmallVector<Value>(OpBuilder &, Location, Value, Value, ValueRange)> emit)
      const {
    IndexMath m{b, l};
    Type indexType = b.getIndexType();
    auto vecType = RankedTensorType::get({ShapedType::kDynamic}, indexType);
    // The order: order[rank(i)] = i, rank(i) the boxes before it.
    auto order = scf::ForOp::create(
        b, l, m.c(0), numBoxes, m.c(1),
        ValueRange{tensor::EmptyOp::create(b, l, vecType, ValueRange{numBoxes})},
        [&](OpBuilder &ob, Location ol, Value i, ValueRange acc) {
          IndexMath h{ob, ol};
          auto rank = scf::ForOp::create(
              ob, ol, h.c(0), numBoxes, h.c(1), ValueRange{h.c(0)},
              [&](OpBuilder &rb, Location rl, Value j, ValueRange r) {
                IndexMath q{rb, rl};
                scf::YieldOp::create(rb, rl, q.add(r[0], q.count(before(rb, rl, batch, cls, j, i))));
              });
          scf::YieldOp::create(ob, ol, tensor::InsertOp::create(ob, ol, i, acc[0],
                                                                ValueRange{rank.getResult(0)})
                                            .getResult());
        });
    SmallVector<Value> init{tensor::EmptyOp::create(b, l, vecType, ValueRange{numBoxes}), m.c(0)};
    init.append(state.begin(), state.end());
    auto greedy = scf::ForOp::create(
        b, l, m.c(0), numBoxes, m.c(1), init,
        [&](OpBuilder &gb, Location gl, Value r, ValueRange acc) {
          IndexMath h{gb, gl};
          Value kept = acc[0], count = acc[1];
          Value i = tensor::ExtractOp::create(gb, gl, order.getResult(0), ValueRange{r});
          Value ok = h.cmp(arith::CmpIPredicate::slt, count, maxOut);
          if (threshold)
            ok = h.both(ok, arith::CmpFOp::create(gb, gl, arith::CmpFPredicate::OGT,
                                                  score(gb, gl, batch, cls, i), threshold));
          auto hit = scf::ForOp::create(
              gb, gl, h.c(0), count, h.c(1), ValueRange{arith::ConstantIntOp::create(gb, gl, 0, 1)},
              [&](OpBuilder &sb, Location sl, Value k, ValueRange any) {
                Value j = tensor::ExtractOp::create(sb, sl, kept, ValueRange{k});
                scf::YieldOp::create(sb, sl, arith::OrIOp::create(sb, sl, any[0],
                                                                  suppresses(sb, sl, batch, i, j))
                                                 .getResult());
              });
          ok = h.both(ok, h.eq(hit.getResult(0), h.falseValue()));
          auto branch = scf::IfOp::create(gb, gl, TypeRange(ValueRange(acc).getTypes()), ok,
                                          /*withElseRegion=*/true);
          OpBuilder tb = branch.getThenBodyBuilder();
          IndexMath t{tb, gl};
          SmallVector<Value> next{tensor::InsertOp::create(tb, gl, i, kept, ValueRange{count}),
                                  t.add(count, t.c(1))};
          SmallVector<Value> rest = emit(tb, gl, i, count, acc.drop_front(2));
          next.append(rest.begin(), rest.end());
          scf::YieldOp::create(tb, gl, next);
          OpBuilder eb = branch.getElseBodyBuilder();
          scf::YieldOp::create(eb, gl, acc);
          scf::YieldOp::create(gb, gl, branch.getResults());
        });
    return {greedy.getResult(1), SmallVector<Value>(greedy.getResults().drop_front(2))};
  }

  /// Runs `body` for every (batch, class) pair, threading `state`.
  SmallVector<Value>
  forEachClass(OpBuilder &b, Location l, ValueRange state,
               function_ref<SmallVector<Value>(OpBuilder &, Location, Value, Value, ValueRange)> body)
      const {
    IndexMath m{b, l};
    auto outer = scf::ForOp::create(
        b, l, m.c(0), numBatches, m.c(1), state,
        [&](OpBuilder &ob, Location ol, Value batch, ValueRange s) {
          IndexMath h{ob, ol};
          auto inner = scf::ForOp::create(
              ob, ol, h.c(0), numClasses, h.c(1), s,
              [&](OpBuilder &ib, Location il, Value cls, ValueRange t) {
                scf::YieldOp::create(ib, il, body(ib, il, batch, cls, t));
              });
          scf::YieldOp::create(ob, ol, inner.getResults());
        });
    return SmallVector<Value>(outer.getResults());
  }
};

LogicalResult nonMaxSuppression(NodeContext &nc) {
  auto boxes = nc.input(0), scores = nc.input(1);
  if (failed(boxes) || failed(scores))
    return failure();
  auto bt = cast<RankedTensorType>(boxes->getType()), st = cast<RankedTensorType>(scores->getType());
  if (bt.getRank() != 3 || st.getRank() != 3 || !bt.getElementType().isF32() ||
      !st.getElementType().isF32())
    return nc.error("expects f32 boxes [batches, boxes, 4] and scores [batches, classes, boxes]");
  nc.ctx()->getOrLoadDialect<scf::SCFDialect>();
  OpBuilder &b = nc.b;
  Location loc = nc.loc;
  IndexMath m{b, loc};
  Nms nms{*boxes, *scores, m.c(0), Value(), Value(), nc.attrInt("center_point_box", 0) == 1,
          tensor::DimOp::create(b, loc, *boxes, 0), tensor::DimOp::create(b, loc, *scores, 1),
          tensor::DimOp::create(b, loc, *boxes, 1)};
  auto optional = [&](size_t i, StringRef what) -> FailureOr<Value> {
    // An empty tensor is as good as no input; an undefined one is an error
    // runtimeScalar reports.
    RankedTensorType t = nc.has(i) ? nc.inputType(i) : nullptr;
    if (!nc.has(i) || (t && t.hasStaticShape() && t.getNumElements() == 0))
      return Value();
    return runtimeScalar(nc, i, what);
  };
  auto maxOut = optional(2, "max_output_boxes_per_class");
  auto iou = optional(3, "iou_threshold"), threshold = optional(4, "score_threshold");
  if (failed(maxOut) || failed(iou) || failed(threshold))
    return failure();
  if (*maxOut)
    nms.maxOut = arith::MaxSIOp::create(b, loc,
                                        arith::IndexCastOp::create(b, loc, b.getIndexType(), *maxOut),
                                        m.c(0));
  nms.iou = *iou ? *iou : nms.f(b, loc, 0);
  nms.threshold = *threshold;
  // Pass 1 counts the selected boxes; pass 2 writes their triples.
  Value total = nms.forEachClass(b, loc, ValueRange{m.c(0)},
                                 [&](OpBuilder &cb, Location l, Value batch, Value cls,
                                     ValueRange acc) -> SmallVector<Value> {
                                   auto [n, rest] = nms.select(cb, l, batch, cls, {}, [](OpBuilder &,
                                       Location, Value, Value, ValueRange) {
                                     return SmallVector<Value>();
                                   });
                                   return {arith::AddIOp::create(cb, l, acc[0], n).getResult()};
                                 })[0];
  auto outType = RankedTensorType::get({ShapedType::kDynamic, 3}, b.getI64Type());
  Value init = tensor::EmptyOp::create(b, loc, outType, ValueRange{total});
  auto written = nms.forEachClass(
      b, loc, ValueRange{init, m.c(0)},
      [&](OpBuilder &cb, Location l, Value batch, Value cls, ValueRange acc) -> SmallVector<Value> {
        auto [n, rest] = nms.select(
            cb, l, batch, cls, acc,
            [&](OpBuilder &eb, Location el, Value box, Value rank, ValueRange s) {
              IndexMath h{eb, el};
              Value row = h.add(s[1], rank);
              Value t = s[0];
              Value triple[3] = {batch, cls, box};
              for (int k = 0; k < 3; ++k)
                t = tensor::InsertOp::create(
                    eb, el, arith::IndexCastOp::create(eb, el, eb.getI64Type(), triple[k]), t,
                    ValueRange{row, h.c(k)});
              return SmallVector<Value>{t, s[1]};
            });
        IndexMath h{cb, l};
        return {rest[0], h.add(rest[1], n)};
      });
  return nc.setOutput(0, written[0]);
}

} // namespace

void registerNonMaxSuppression(HandlerTable &t) { t["NonMaxSuppression"] = nonMaxSuppression; }

} // namespace kiln

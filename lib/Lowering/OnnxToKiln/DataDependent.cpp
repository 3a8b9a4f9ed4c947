//===- DataDependent.cpp - outputs whose sizes depend on the data ---------===//
//
// NonZero, Compress and Unique: their output's length is a count over the input's
// values, computed by a sequential loop, so it is a value symbol when it
// reaches an output (the runtime sizes the output by running that count
// first, @__kiln_output_dims). The outputs are then filled by loops over
// the input that insert each hit at the next position.
//
//===----------------------------------------------------------------------===//

#include "RuntimeShapes.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Dialects/Kiln/IR/ShapeUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace kiln {
namespace {

/// Is `v` nonzero (false for 0, 0.0 and -0.0)?
Value isNonZero(OpBuilder &b, Location loc, Value v) {
  Type t = v.getType();
  if (auto ft = dyn_cast<FloatType>(t))
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v,
                                 arith::ConstantOp::create(b, loc, b.getFloatAttr(ft, 0)));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v,
                               arith::ConstantOp::create(b, loc, b.getIntegerAttr(t, 0)));
}

/// The row-major coordinates of flat index `k` in a tensor of `dims`.
SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value k, ArrayRef<Value> dims) {
  SmallVector<Value> coords(dims.size());
  for (int64_t d = dims.size() - 1; d >= 0; --d) {
    coords[d] = arith::RemUIOp::create(b, loc, k, dims[d]);
    k = arith::DivUIOp::create(b, loc, k, dims[d]);
  }
  return coords;
}

/// How many of `n` positions `hit(b, loc, k)` holds for: a counting loop.
Value countHits(OpBuilder &b, Location loc, Value n,
                function_ref<Value(OpBuilder &, Location, Value)> hit) {
  IndexMath m{b, loc};
  auto loop = scf::ForOp::create(
      b, loc, m.c(0), n, m.c(1), ValueRange{m.c(0)},
      [&](OpBuilder &lb, Location l, Value k, ValueRange acc) {
        IndexMath h{lb, l};
        scf::YieldOp::create(lb, l, h.add(acc[0], h.count(hit(lb, l, k))));
      });
  return loop.getResult(0);
}

/// Writes, for each of `n` positions where `hit` holds, `write(b, loc, t,
/// k, pos)` into `init` at the next position `pos`: a filling loop.
Value fillHits(OpBuilder &b, Location loc, Value n, Value init,
               function_ref<Value(OpBuilder &, Location, Value)> hit,
               function_ref<Value(OpBuilder &, Location, Value, Value, Value)> write) {
  IndexMath m{b, loc};
  auto loop = scf::ForOp::create(
      b, loc, m.c(0), n, m.c(1), ValueRange{init, m.c(0)},
      [&](OpBuilder &lb, Location l, Value k, ValueRange acc) {
        auto branch = scf::IfOp::create(lb, l, TypeRange{init.getType(), lb.getIndexType()},
                                        hit(lb, l, k), /*withElseRegion=*/true);
        OpBuilder tb = branch.getThenBodyBuilder();
        IndexMath h{tb, l};
        scf::YieldOp::create(tb, l, ValueRange{write(tb, l, acc[0], k, acc[1]),
                                               h.add(acc[1], h.c(1))});
        OpBuilder eb = branch.getElseBodyBuilder();
        scf::YieldOp::create(eb, l, ValueRange{acc[0], acc[1]});
        scf::YieldOp::create(lb, l, branch.getResults());
      });
  return loop.getResult(0);
}

/// NonZero: the [rank, count] coordinates of x's nonzero elements, in
/// row-major order.
LogicalResult nonZero(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  int64_t r = xt.getRank();
  if (r == 0)
    return nc.error("expects an input of rank 1 or more");
  nc.ctx()->getOrLoadDialect<scf::SCFDialect>();
  OpBuilder &b = nc.b;
  Location loc = nc.loc;
  IndexMath m{b, loc};
  SmallVector<Value> dims;
  Value n = m.c(1);
  for (int64_t d = 0; d < r; ++d) {
    dims.push_back(tensor::DimOp::create(b, loc, *x, d));
    n = arith::MulIOp::create(b, loc, n, dims.back());
  }
  auto hit = [&](OpBuilder &hb, Location l, Value k) {
    return isNonZero(hb, l, tensor::ExtractOp::create(hb, l, *x, delinearize(hb, l, k, dims)));
  };
  Value count = countHits(b, loc, n, hit);
  auto type = RankedTensorType::get({r, ShapedType::kDynamic}, b.getI64Type());
  Value init = tensor::EmptyOp::create(b, loc, type, ValueRange{count});
  Value out = fillHits(b, loc, n, init, hit,
                       [&](OpBuilder &wb, Location l, Value t, Value k, Value pos) {
                         SmallVector<Value> coords = delinearize(wb, l, k, dims);
                         for (int64_t d = 0; d < r; ++d) {
                           Value c = arith::IndexCastOp::create(wb, l, wb.getI64Type(), coords[d]);
                           Value row = arith::ConstantIndexOp::create(wb, l, d);
                           t = tensor::InsertOp::create(wb, l, c, t, ValueRange{row, pos});
                         }
                         return t;
                       });
  return nc.setOutput(0, out);
}

/// Compress: the slices of x along `axis` (x flattened without one) whose
/// condition holds; a condition shorter than the axis selects none past
/// its end.
LogicalResult compress(NodeContext &nc) {
  auto input = nc.input(0), cond = nc.input(1);
  if (failed(input) || failed(cond))
    return failure();
  Value x = *input;
  auto ct = cast<RankedTensorType>(cond->getType());
  if (ct.getRank() != 1 || !ct.getElementType().isInteger(1))
    return nc.error("condition must be a 1-D bool tensor");
  nc.ctx()->getOrLoadDialect<scf::SCFDialect>();
  OpBuilder &b = nc.b;
  Location loc = nc.loc;
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t axis = 0;
  if (nc.hasAttr("axis")) {
    auto a = normalizeAxis(nc.attrInt("axis", 0), xt.getRank());
    if (!a)
      return nc.error("axis " + Twine(nc.attrInt("axis", 0)) + " out of range");
    axis = *a;
  } else {
    auto flat = nc.build<FlattenOp>({x}, {b.getNamedAttr("axis", b.getI64IntegerAttr(0))});
    if (failed(flat))
      return failure();
    auto ft = cast<RankedTensorType>((*flat)->getResult(0).getType());
    x = ReshapeOp::create(b, loc, RankedTensorType::get({ft.getDimSize(1)}, ft.getElementType()),
                          (*flat)->getResult(0));
    if (ft.isDynamicDim(1))
      return nc.error("compresses a flattened input of a size known only at run time; give "
                      "an axis");
    xt = cast<RankedTensorType>(x.getType());
  }
  Value length = arith::MinUIOp::create(b, loc, tensor::DimOp::create(b, loc, *cond, 0),
                                        tensor::DimOp::create(b, loc, x, axis));
  auto hit = [&](OpBuilder &hb, Location l, Value k) {
    return tensor::ExtractOp::create(hb, l, *cond, ValueRange{k}).getResult();
  };
  Value count = countHits(b, loc, length, hit);
  // The kept positions, then a gather of their slices.
  auto posType = RankedTensorType::get({ShapedType::kDynamic}, b.getIndexType());
  Value positions = fillHits(
      b, loc, length, tensor::EmptyOp::create(b, loc, posType, ValueRange{count}), hit,
      [&](OpBuilder &wb, Location l, Value t, Value k, Value pos) {
        return tensor::InsertOp::create(wb, l, k, t, ValueRange{pos}).getResult();
      });
  SmallVector<int64_t> shape(xt.getShape());
  shape[axis] = ShapedType::kDynamic;
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < xt.getRank(); ++d)
    if (d == axis)
      sizes.push_back(count);
    else if (xt.isDynamicDim(d))
      sizes.push_back(tensor::DimOp::create(b, loc, x, d));
  auto gen = tensor::GenerateOp::create(
      b, loc, RankedTensorType::get(shape, xt.getElementType()), sizes,
      [&](OpBuilder &gb, Location l, ValueRange idx) {
        SmallVector<Value> at(idx.begin(), idx.end());
        at[axis] = tensor::ExtractOp::create(gb, l, positions, ValueRange{idx[axis]});
        tensor::YieldOp::create(gb, l, tensor::ExtractOp::create(gb, l, x, at).getResult());
      });
  return nc.setOutput(0, gen);
}

/// Loops at a builder's point over [0, n) folding `acc` (index or i1).
Value foldLoop(OpBuilder &b, Location loc, Value n, Value init,
               function_ref<Value(OpBuilder &, Location, Value, Value)> step) {
  IndexMath m{b, loc};
  auto loop = scf::ForOp::create(b, loc, m.c(0), n, m.c(1), ValueRange{init},
                                 [&](OpBuilder &lb, Location l, Value k, ValueRange acc) {
                                   scf::YieldOp::create(lb, l, step(lb, l, k, acc[0]));
                                 });
  return loop.getResult(0);
}

/// Unique over the slices of x3 = [outer, A, inner] along its middle
/// dimension (an element each when there is no axis): Y, the first index of
/// each, each element's index in Y, and the counts. Slices compare
/// lexicographically in C order; every step is a loop over the elements
/// (quadratic in A).
struct UniqueSlices {
  Value x3, outer, count, inner, span; // span = outer * inner
  bool sorted;

  Value at(OpBuilder &b, Location l, Value i, Value s) const {
    Value o = arith::DivUIOp::create(b, l, s, inner);
    Value n = arith::RemUIOp::create(b, l, s, inner);
    return tensor::ExtractOp::create(b, l, x3, ValueRange{o, i, n});
  }
  Value cmp(OpBuilder &b, Location l, Value x, Value y, bool less) const {
    if (isa<FloatType>(x.getType()))
      return arith::CmpFOp::create(b, l, less ? arith::CmpFPredicate::OLT : arith::CmpFPredicate::OEQ,
                                   x, y);
    return arith::CmpIOp::create(b, l, less ? arith::CmpIPredicate::slt : arith::CmpIPredicate::eq,
                                 x, y);
  }
  /// Slices i and j are equal.
  Value equal(OpBuilder &b, Location l, Value i, Value j) const {
    Value yes = arith::ConstantIntOp::create(b, l, 1, 1);
    return foldLoop(b, l, span, yes, [&](OpBuilder &lb, Location ll, Value s, Value acc) {
      Value same = cmp(lb, ll, at(lb, ll, i, s), at(lb, ll, j, s), false);
      return arith::AndIOp::create(lb, ll, acc, same).getResult();
    });
  }
  /// Slice i comes before slice j (the first differing element decides).
  Value before(OpBuilder &b, Location l, Value i, Value j) const {
    // (decided, result) packed as an index: 0 undecided, 1 after, 2 before.
    IndexMath m{b, l};
    Value r = foldLoop(b, l, span, m.c(0), [&](OpBuilder &lb, Location ll, Value s, Value acc) {
      IndexMath h{lb, ll};
      Value a = at(lb, ll, i, s), c = at(lb, ll, j, s);
      Value now = h.sel(cmp(lb, ll, a, c, true), h.c(2),
                        h.sel(cmp(lb, ll, c, a, true), h.c(1), h.c(0)));
      return h.sel(h.eq(acc, h.c(0)), now, acc);
    });
    return m.eq(r, m.c(2));
  }
  /// No earlier slice equals slice i.
  Value first(OpBuilder &b, Location l, Value i) const {
    Value dup = foldLoop(b, l, i, arith::ConstantIntOp::create(b, l, 0, 1),
                         [&](OpBuilder &lb, Location ll, Value j, Value acc) {
                           return arith::OrIOp::create(lb, ll, acc, equal(lb, ll, j, i))
                               .getResult();
                         });
    return arith::XOrIOp::create(b, l, dup, arith::ConstantIntOp::create(b, l, 1, 1));
  }
  /// Where the unique slice whose first occurrence is i goes in Y.
  Value position(OpBuilder &b, Location l, Value i) const {
    IndexMath m{b, l};
    Value upTo = sorted ? count : i;
    return foldLoop(b, l, upTo, m.c(0), [&](OpBuilder &lb, Location ll, Value j, Value acc) {
      IndexMath h{lb, ll};
      Value counts = first(lb, ll, j);
      if (sorted)
        counts = h.both(counts, before(lb, ll, j, i));
      return h.add(acc, h.count(counts));
    });
  }
};

LogicalResult unique(NodeContext &nc) {
  auto input = nc.input(0);
  if (failed(input))
    return failure();
  Value x = *input;
  auto xt = cast<RankedTensorType>(x.getType());
  if (!xt.hasStaticShape())
    return nc.error("expects a static shape");
  nc.ctx()->getOrLoadDialect<scf::SCFDialect>();
  OpBuilder &b = nc.b;
  Location loc = nc.loc;
  IndexMath m{b, loc};
  bool hasAxis = nc.hasAttr("axis");
  int64_t axis = 0, outer = 1, inner = 1, count = xt.getNumElements();
  if (hasAxis) {
    auto a = normalizeAxis(nc.attrInt("axis", 0), xt.getRank());
    if (!a)
      return nc.error("axis " + Twine(nc.attrInt("axis", 0)) + " out of range");
    axis = *a;
    count = xt.getDimSize(axis);
    for (int64_t d = 0; d < xt.getRank(); ++d)
      (d < axis ? outer : d > axis ? inner : count) *= d == axis ? 1 : xt.getDimSize(d);
  }
  Type et = xt.getElementType(), i64 = b.getI64Type();
  Value x3 = ReshapeOp::create(b, loc, RankedTensorType::get({outer, count, inner}, et), x);
  UniqueSlices u{x3, m.c(outer), m.c(count), m.c(inner), m.c(outer * inner),
                 (bool)nc.attrInt("sorted", 1)};
  Value n = m.c(count);
  Value uniques = foldLoop(b, loc, n, m.c(0), [&](OpBuilder &lb, Location l, Value i, Value acc) {
    IndexMath h{lb, l};
    return h.add(acc, h.count(u.first(lb, l, i)));
  });
  // Y as [outer, U, inner], then the first indices and counts, filled at
  // each first occurrence's position.
  auto yType = RankedTensorType::get({outer, ShapedType::kDynamic, inner}, et);
  auto vecType = RankedTensorType::get({ShapedType::kDynamic}, i64);
  SmallVector<Value> init{tensor::EmptyOp::create(b, loc, yType, ValueRange{uniques}),
                          tensor::EmptyOp::create(b, loc, vecType, ValueRange{uniques}),
                          tensor::EmptyOp::create(b, loc, vecType, ValueRange{uniques})};
  auto fill = scf::ForOp::create(
      b, loc, m.c(0), n, m.c(1), init, [&](OpBuilder &lb, Location l, Value i, ValueRange acc) {
        auto branch = scf::IfOp::create(lb, l, TypeRange(ValueRange(acc).getTypes()),
                                        u.first(lb, l, i), /*withElseRegion=*/true);
        OpBuilder tb = branch.getThenBodyBuilder();
        IndexMath h{tb, l};
        Value p = u.position(tb, l, i);
        Value y = foldLoop(tb, l, u.span, acc[0], [&](OpBuilder &sb, Location sl, Value s, Value t) {
          Value o = arith::DivUIOp::create(sb, sl, s, u.inner);
          Value r = arith::RemUIOp::create(sb, sl, s, u.inner);
          return tensor::InsertOp::create(sb, sl, u.at(sb, sl, i, s), t, ValueRange{o, p, r})
              .getResult();
        });
        Value occurrences = foldLoop(tb, l, n, h.c(0), [&](OpBuilder &cb, Location cl, Value j,
                                                          Value c) {
          IndexMath q{cb, cl};
          return q.add(c, q.count(u.equal(cb, cl, j, i)));
        });
        auto asI64 = [&](Value v) { return arith::IndexCastOp::create(tb, l, i64, v).getResult(); };
        Value idx = tensor::InsertOp::create(tb, l, asI64(i), acc[1], ValueRange{p});
        Value cnt = tensor::InsertOp::create(tb, l, asI64(occurrences), acc[2], ValueRange{p});
        scf::YieldOp::create(tb, l, ValueRange{y, idx, cnt});
        OpBuilder eb = branch.getElseBodyBuilder();
        scf::YieldOp::create(eb, l, acc);
        scf::YieldOp::create(lb, l, branch.getResults());
      });
  // Each slice's index in Y: its first occurrence's position.
  auto inverse = tensor::GenerateOp::create(
      b, loc, RankedTensorType::get({count}, i64), ValueRange{},
      [&](OpBuilder &gb, Location l, ValueRange idx) {
        IndexMath h{gb, l};
        // The first j equal to it.
        Value firstAt = foldLoop(gb, l, n, h.c(-1), [&](OpBuilder &fb, Location fl, Value j,
                                                        Value f) {
          IndexMath q{fb, fl};
          Value hit = q.both(q.eq(f, q.c(-1)), u.equal(fb, fl, j, idx[0]));
          return q.sel(hit, j, f);
        });
        tensor::YieldOp::create(
            gb, l, arith::IndexCastOp::create(gb, l, i64, u.position(gb, l, firstAt)));
      });
  Value y = fill.getResult(0);
  if (!hasAxis) {
    y = ReshapeOp::create(b, loc, RankedTensorType::get({ShapedType::kDynamic}, et), y,
                          ValueRange{uniques});
  } else {
    SmallVector<int64_t> shape(xt.getShape());
    shape[axis] = ShapedType::kDynamic;
    y = ReshapeOp::create(b, loc, RankedTensorType::get(shape, et), y, ValueRange{uniques});
  }
  SmallVector<Value> outs{y, fill.getResult(1), inverse, fill.getResult(2)};
  for (auto [i, v] : llvm::enumerate(outs))
    if (nc.hasOutput(i) && failed(nc.setOutput(i, v)))
      return failure();
  return success();
}

} // namespace

void registerDataDependentHandlers(HandlerTable &t) {
  t["NonZero"] = nonZero;
  t["Compress"] = compress;
  t["Unique"] = unique;
  registerNonMaxSuppression(t);
}


} // namespace kiln

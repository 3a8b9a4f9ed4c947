//===- Determinant.cpp - Det as Gaussian elimination --------------------===//
//
// Det of [..., M, M]: each matrix, in f64, reduced to upper triangular form
// by Gaussian elimination with partial pivoting (LAPACK's getrf, which
// numpy.linalg.det and so ONNX's reference use): the determinant is the
// product of the pivots, negated once per row swap. Loops on tensors, one
// matrix after another; cubic in M, which is meant to be small.
//
//===----------------------------------------------------------------------===//

#include "RuntimeShapes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace kiln {
namespace {

/// One matrix `a` (M x M, f64) eliminated: its determinant.
Value eliminate(OpBuilder &b, Location l, Value a, int64_t m) {
  IndexMath ix{b, l};
  F64 f{b, l};
  auto at = [](OpBuilder &ob, Location ol, Value t, Value i, Value j) {
    return tensor::ExtractOp::create(ob, ol, t, ValueRange{i, j}).getResult();
  };
  auto put = [](OpBuilder &ob, Location ol, Value v, Value t, Value i, Value j) {
    return tensor::InsertOp::create(ob, ol, v, t, ValueRange{i, j}).getResult();
  };
  auto steps = [&](OpBuilder &ob, Location ol, Value from, ValueRange init,
                   function_ref<SmallVector<Value>(OpBuilder &, Location, Value, ValueRange)> body) {
    IndexMath im{ob, ol};
    auto loop = scf::ForOp::create(ob, ol, from, im.c(m), im.c(1), init,
                                   [&](OpBuilder &lb, Location ll, Value iv, ValueRange acc) {
                                     scf::YieldOp::create(lb, ll, body(lb, ll, iv, acc));
                                   });
    return SmallVector<Value>(loop.getResults());
  };
  auto columns = steps(b, l, ix.c(0), ValueRange{a, f.c(1)}, [&](OpBuilder &kb, Location kl,
                                                                  Value k, ValueRange acc) {
    IndexMath km{kb, kl};
    F64 kf{kb, kl};
    Value mat = acc[0], det = acc[1];
    // The pivot: the row at or below k with the largest |a[i, k]|.
    Value first = math::AbsFOp::create(kb, kl, at(kb, kl, mat, k, k));
    auto pivot = steps(kb, kl, km.add(k, km.c(1)), ValueRange{k, first},
                       [&](OpBuilder &pb, Location pl, Value i, ValueRange best) {
                         IndexMath pm{pb, pl};
                         Value v = math::AbsFOp::create(pb, pl, at(pb, pl, mat, i, k));
                         Value more = arith::CmpFOp::create(pb, pl, arith::CmpFPredicate::OGT, v,
                                                            best[1]);
                         return SmallVector<Value>{pm.sel(more, i, best[0]),
                                                   pm.sel(more, v, best[1])};
                       });
    Value p = pivot[0];
    // Rows k and p swapped (nothing moves when p == k).
    mat = steps(kb, kl, km.c(0), ValueRange{mat},
                [&](OpBuilder &sb, Location sl, Value j, ValueRange t) {
                  Value rowK = at(sb, sl, t[0], k, j), rowP = at(sb, sl, t[0], p, j);
                  Value swapped = put(sb, sl, rowP, t[0], k, j);
                  return SmallVector<Value>{put(sb, sl, rowK, swapped, p, j)};
                })[0];
    Value sign = km.sel(km.eq(p, k), kf.c(1), kf.c(-1));
    Value piv = at(kb, kl, mat, k, k);
    det = kf.mul(kf.mul(det, sign), piv);
    Value singular = kf.cmp(arith::CmpFPredicate::OEQ, piv, kf.c(0));
    // Each row below loses its multiple of row k.
    mat = steps(kb, kl, km.add(k, km.c(1)), ValueRange{mat},
                [&](OpBuilder &rb, Location rl, Value i, ValueRange t) {
                  F64 rf{rb, rl};
                  IndexMath rm{rb, rl};
                  Value factor = rm.sel(singular, rf.c(0), rf.div(at(rb, rl, t[0], i, k), piv));
                  return steps(rb, rl, k, ValueRange{t[0]},
                               [&](OpBuilder &jb, Location jl, Value j, ValueRange u) {
                                 F64 jf{jb, jl};
                                 Value v = jf.sub(at(jb, jl, u[0], i, j),
                                                  jf.mul(factor, at(jb, jl, u[0], k, j)));
                                 return SmallVector<Value>{put(jb, jl, v, u[0], i, j)};
                               });
                })[0];
    return SmallVector<Value>{mat, det};
  });
  return columns[1];
}

LogicalResult det(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  auto t = cast<RankedTensorType>(x->getType());
  auto elem = dyn_cast<FloatType>(t.getElementType());
  int64_t rank = t.getRank();
  if (!elem || rank < 2)
    return nc.error("expects a float tensor of square matrices [..., M, M]");
  int64_t m = t.getDimSize(rank - 1);
  if (ShapedType::isDynamic(m) || t.getDimSize(rank - 2) != m)
    return nc.error("expects square matrices of a size known at compile time, not " +
                    shapeText(t.getShape().take_back(2)));
  nc.ctx()->getOrLoadDialect<scf::SCFDialect>();
  nc.ctx()->getOrLoadDialect<math::MathDialect>();
  OpBuilder &b = nc.b;
  Location loc = nc.loc;
  IndexMath ix{b, loc};
  // [N, M, M] with N the product of the leading dimensions.
  SmallVector<ReassociationIndices> groups(1);
  for (int64_t d = 0; d + 2 < rank; ++d)
    groups[0].push_back(d);
  Value flat = *x;
  if (rank == 2) {
    flat = tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get({1, m, m}, elem), flat,
                                         SmallVector<ReassociationIndices>{{0, 1}, {2}});
  } else {
    groups.push_back({rank - 2});
    groups.push_back({rank - 1});
    flat = tensor::CollapseShapeOp::create(b, loc, flat, groups);
  }
  auto flatType = cast<RankedTensorType>(flat.getType());
  Value n = tensor::DimOp::create(b, loc, flat, 0);
  SmallVector<Value> dynamic;
  if (flatType.isDynamicDim(0))
    dynamic.push_back(n);
  Value out = tensor::EmptyOp::create(b, loc, RankedTensorType::get({flatType.getDimSize(0)}, elem),
                                      dynamic);
  auto matType = RankedTensorType::get({m, m}, b.getF64Type());
  auto loop = scf::ForOp::create(
      b, loc, ix.c(0), n, ix.c(1), ValueRange{out},
      [&](OpBuilder &lb, Location ll, Value batch, ValueRange acc) {
        auto gen = tensor::GenerateOp::create(
            lb, ll, matType, ValueRange{}, [&](OpBuilder &gb, Location gl, ValueRange ij) {
              Value v = tensor::ExtractOp::create(gb, gl, flat, ValueRange{batch, ij[0], ij[1]});
              if (!elem.isF64())
                v = arith::ExtFOp::create(gb, gl, gb.getF64Type(), v);
              tensor::YieldOp::create(gb, gl, v);
            });
        Value d = eliminate(lb, ll, gen, m);
        if (!elem.isF64())
          d = arith::TruncFOp::create(lb, ll, elem, d);
        scf::YieldOp::create(lb, ll,
                             tensor::InsertOp::create(lb, ll, d, acc[0], ValueRange{batch}).getResult());
      });
  Value dets = loop.getResult(0);
  // Back to the leading dimensions.
  if (rank == 2)
    return nc.setOutput(0, tensor::CollapseShapeOp::create(b, loc, RankedTensorType::get({}, elem),
                                                           dets, SmallVector<ReassociationIndices>{}));
  if (rank == 3)
    return nc.setOutput(0, dets);
  SmallVector<OpFoldResult> sizes;
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d + 2 < rank; ++d) {
    shape.push_back(t.getDimSize(d));
    sizes.push_back(t.isDynamicDim(d) ? OpFoldResult(tensor::DimOp::create(b, loc, *x, d).getResult())
                                      : OpFoldResult(b.getIndexAttr(t.getDimSize(d))));
  }
  return nc.setOutput(0, tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get(shape, elem),
                                                       dets, SmallVector<ReassociationIndices>{groups[0]},
                                                       sizes));
}

} // namespace

void registerDeterminant(HandlerTable &t) { t["Det"] = det; }

} // namespace kiln

//===- RuntimeShapes.cpp - shape arguments known only at run time ---------===//

#include "RuntimeShapes.h"
#include "SymbolicShape.h"
#include "kiln/Dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace kiln {

FailureOr<SmallVector<Value>> runtimeInts(NodeContext &nc, size_t i, StringRef what) {
  auto v = nc.input(i);
  if (failed(v))
    return failure();
  auto type = cast<RankedTensorType>(v->getType());
  if (!type.hasStaticShape() || type.getRank() > 1 || type.getNumElements() > 64 ||
      !isa<IntegerType>(type.getElementType()))
    return nc.error(what + " (input " + Twine(i) + ") must be an integer scalar or a 1-D " +
                    "tensor of at most 64 elements with a static length, not " +
                    shapeText(type.getShape()));
  SmallVector<Value> out;
  for (int64_t e = 0; e < type.getNumElements(); ++e) {
    SmallVector<Value> at;
    if (type.getRank() == 1)
      at.push_back(arith::ConstantIndexOp::create(nc.b, nc.loc, e));
    Value x = tensor::ExtractOp::create(nc.b, nc.loc, *v, at);
    out.push_back(arith::IndexCastOp::create(nc.b, nc.loc, nc.b.getIndexType(), x));
  }
  return out;
}

LogicalResult reshapeRuntime(NodeContext &nc, Value x, bool allowZero) {
  auto spec = runtimeInts(nc, 1, "shape");
  if (failed(spec))
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  if (spec->empty())
    return nc.error("reshapes to a scalar by a shape known only at run time; give the shape "
                    "as a constant");
  OpBuilder &b = nc.b;
  Location loc = nc.loc;
  auto cst = [&](int64_t c) { return arith::ConstantIndexOp::create(b, loc, c).getResult(); };
  auto eq = [&](Value a, Value c) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, a, c).getResult();
  };
  Value total = cst(1);
  for (int64_t d = 0; d < xt.getRank(); ++d)
    total = arith::MulIOp::create(b, loc, total, tensor::DimOp::create(b, loc, x, d));
  // 0 copies the input's dimension (past its rank: stays 0, invalid).
  SmallVector<Value> dims;
  Value known = cst(1), inferred = cst(0);
  for (auto [i, s] : llvm::enumerate(*spec)) {
    Value d = s;
    if (!allowZero && (int64_t)i < xt.getRank())
      d = arith::SelectOp::create(b, loc, eq(s, cst(0)),
                                  tensor::DimOp::create(b, loc, x, (int64_t)i), s);
    Value isInferred = eq(s, cst(-1));
    inferred = arith::AddIOp::create(b, loc, inferred,
                                     arith::SelectOp::create(b, loc, isInferred, cst(1), cst(0)));
    known = arith::MulIOp::create(b, loc, known,
                                  arith::SelectOp::create(b, loc, isInferred, cst(1), d));
    dims.push_back(d);
  }
  // The -1's size: what the others leave (a zero product divides by 1).
  Value divisor = arith::MaxSIOp::create(b, loc, known, cst(1));
  Value rest = arith::DivSIOp::create(b, loc, total, divisor);
  for (auto [i, s] : llvm::enumerate(*spec))
    dims[i] = arith::SelectOp::create(b, loc, eq(s, cst(-1)), rest, dims[i]);
  // Valid: at most one -1, no other negative size, the element count kept.
  Value product = cst(1);
  Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, inferred, cst(1));
  for (Value d : dims) {
    valid = arith::AndIOp::create(
        b, loc, valid, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, d, cst(0)));
    product = arith::MulIOp::create(b, loc, product, d);
  }
  valid = arith::AndIOp::create(b, loc, valid, eq(product, total));
  dims[0] = arith::SelectOp::create(b, loc, valid, dims[0], cst(-1));
  SmallVector<int64_t> shape(dims.size(), ShapedType::kDynamic);
  auto op = ReshapeOp::create(b, loc, RankedTensorType::get(shape, xt.getElementType()), x, dims);
  if (nc.shapes) {
    SmallVector<DimPoly> polys;
    for (Value d : dims)
      polys.push_back(nc.shapes->opaque(d));
    nc.shapes->record(op, polys);
  }
  return nc.setOutput(0, op);
}

} // namespace kiln

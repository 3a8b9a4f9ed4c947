//===- ScalarBits.cpp - a scalar as the 64 bits host and runtime pass -----===//

#include "kiln/Lowering/Host/ScalarBits.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

namespace kiln {

Value toBits(OpBuilder &b, Location loc, Value v) {
  Type t = v.getType(), i64 = b.getI64Type();
  if (isa<IndexType>(t))
    return arith::IndexCastOp::create(b, loc, i64, v);
  if (auto f = dyn_cast<FloatType>(t))
    v = arith::BitcastOp::create(b, loc, b.getIntegerType(f.getWidth()), v);
  auto it = dyn_cast<IntegerType>(v.getType());
  if (!it || it.getWidth() > 64)
    return Value();
  if (it.getWidth() == 64)
    return v;
  if (it.getWidth() == 1 || isa<FloatType>(t))
    return arith::ExtUIOp::create(b, loc, i64, v);
  return arith::ExtSIOp::create(b, loc, i64, v);
}

Value fromBits(OpBuilder &b, Location loc, Value bits, Type t) {
  if (isa<IndexType>(t))
    return arith::IndexCastOp::create(b, loc, t, bits);
  unsigned width = t.getIntOrFloatBitWidth();
  Value v = bits;
  if (width < 64)
    v = arith::TruncIOp::create(b, loc, b.getIntegerType(width), bits);
  if (isa<FloatType>(t))
    v = arith::BitcastOp::create(b, loc, t, v);
  return v;
}

} // namespace kiln

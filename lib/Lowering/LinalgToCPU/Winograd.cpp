//===- Winograd.cpp - F(mxm, 3x3) transforms' arithmetic -----------------===//
//
// B^T d B, A^T p A and G for F(2x2, 3x3) and F(4x4, 3x3) (Lavin and Gray,
// 2015; points 0, +-1, +-2 and infinity for 4x4), built on scalars (the
// transforms' generics) or vectors of tiles (their lowering) alike.
//
//===----------------------------------------------------------------------===//

#include "Winograd.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;

namespace kiln::winograd {
namespace {

/// Float arithmetic on scalars or vectors alike, contractible into FMAs.
struct Ops {
  OpBuilder &b;
  Location loc;

  arith::FastMathFlagsAttr contract() {
    return arith::FastMathFlagsAttr::get(b.getContext(), arith::FastMathFlags::contract);
  }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y, contract()); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y, contract()); }
  /// k x, k a constant of x's type (a splat for a vector).
  Value scale(Value x, double k) {
    Type t = x.getType();
    auto scalar = FloatAttr::get(getElementTypeOrSelf(t), k);
    TypedAttr attr = scalar;
    if (auto v = dyn_cast<VectorType>(t))
      attr = DenseElementsAttr::get(v, scalar.getValue());
    return arith::MulFOp::create(b, loc, x, arith::ConstantOp::create(b, loc, attr), contract());
  }
  /// k x + y.
  Value fma(Value x, double k, Value y) { return add(scale(x, k), y); }

  /// B^T x for one row or column of an input tile.
  SmallVector<Value, 6> inputRow(ArrayRef<Value> x, int64_t m) {
    if (m == 2) // B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
      return {sub(x[0], x[2]), add(x[1], x[2]), sub(x[2], x[1]), sub(x[1], x[3])};
    // B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0;
    //        0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]
    Value a = sub(scale(x[1], 4), x[3]), t0 = fma(x[2], -4, x[4]);
    Value c = scale(sub(x[1], x[3]), 2), t1 = sub(x[4], x[2]);
    return {fma(x[0], 4, fma(x[2], -5, x[4])), sub(t0, a), add(t0, a), sub(t1, c), add(t1, c),
            fma(x[1], 4, fma(x[3], -5, x[5]))};
  }

  /// A^T p for one column or row of the products.
  SmallVector<Value, 6> outputRow(ArrayRef<Value> p, int64_t m) {
    if (m == 2) // A^T = [1 1 1 0; 0 1 -1 -1]
      return {add(add(p[0], p[1]), p[2]), sub(sub(p[1], p[2]), p[3])};
    // A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
    Value s12 = add(p[1], p[2]), d12 = sub(p[1], p[2]);
    Value s34 = add(p[3], p[4]), d34 = sub(p[3], p[4]);
    return {add(add(p[0], s12), s34), fma(d34, 2, d12), fma(s34, 4, s12),
            add(fma(d34, 8, d12), p[5])};
  }
};

/// `step` (t values to k) applied to each row of a t x t tile, then down
/// each of the k columns of the result: the k x k tile, row-major. Both
/// transforms are such products on both sides (B^T d B, A^T p A).
/// `columnsFirst` takes the columns first (the same sums, rounded in the
/// order the output transform always had).
template <typename Step>
SmallVector<Value, 36> separable(ArrayRef<Value> tile, int64_t t, bool columnsFirst, Step step) {
  auto at = [&](int64_t row, int64_t col) { return columnsFirst ? t * col + row : t * row + col; };
  SmallVector<SmallVector<Value, 6>> firsts;
  for (int64_t a = 0; a < t; ++a) {
    SmallVector<Value, 6> line;
    for (int64_t c = 0; c < t; ++c)
      line.push_back(tile[at(a, c)]);
    firsts.push_back(step(line));
  }
  int64_t k = firsts.front().size();
  SmallVector<Value, 36> out(k * k);
  for (int64_t j = 0; j < k; ++j) {
    SmallVector<Value, 6> line;
    for (int64_t a = 0; a < t; ++a)
      line.push_back(firsts[a][j]);
    SmallVector<Value, 6> result = step(line);
    for (int64_t i = 0; i < k; ++i)
      out[columnsFirst ? k * j + i : k * i + j] = result[i];
  }
  return out;
}

} // namespace

SmallVector<Value, 36> inputTile(OpBuilder &b, Location loc, ArrayRef<Value> d, int64_t m) {
  Ops ops{b, loc};
  return separable(d, m + 2, /*columnsFirst=*/false,
                   [&](ArrayRef<Value> x) { return ops.inputRow(x, m); });
}

SmallVector<Value, 16> outputTile(OpBuilder &b, Location loc, ArrayRef<Value> p, int64_t m) {
  Ops ops{b, loc};
  SmallVector<Value, 36> y = separable(p, m + 2, /*columnsFirst=*/true,
                                       [&](ArrayRef<Value> x) { return ops.outputRow(x, m); });
  return SmallVector<Value, 16>(y.begin(), y.end());
}

ArrayRef<double> filterMatrix(int64_t m) {
  static constexpr double g2[] = {1, 0, 0, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, 0, 0, 1};
  static constexpr double g4[] = {1.0 / 4,  0,          0,         -1.0 / 6, -1.0 / 6, -1.0 / 6,
                                  -1.0 / 6, 1.0 / 6,    -1.0 / 6,  1.0 / 24, 1.0 / 12, 1.0 / 6,
                                  1.0 / 24, -1.0 / 12, 1.0 / 6,   0,        0,        1};
  return m == 2 ? ArrayRef<double>(g2) : ArrayRef<double>(g4);
}

} // namespace kiln::winograd

//===- PackInt8Weights.cpp - 8-bit weights packed for the integer tiles ---===//
//
// Part of kiln-pack-matmul-weights (PackWeights.h): an 8-bit product's
// constant weights in the layout of its CPU's integer tile, in groups of 4
// k (vpdpbusd; AVX2's vpmaddubsw) or 2 (AVX2's vpmaddwd).
//
//===----------------------------------------------------------------------===//

#include "PackWeights.h"

#include "kiln/Dialects/Kiln/IR/ConstantData.h"
#include "kiln/Lowering/MatmulTiles.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <algorithm>
#include <optional>
#include <vector>

using namespace mlir;

namespace kiln {
namespace {

/// Whether vpmaddubsw sums every pair of k of int8 weights [K, N] (rows
/// 2i, 2i + 1 of a column) with any two bytes of A exactly: 255 times the
/// pair's positive (negative) part stays within i16. So for weights of 7
/// bits (onnxruntime's `reduce_range`): 255 x 126 = 32130.
bool pairsFitI16(ArrayRef<char> raw, std::optional<int8_t> splat, int64_t K, int64_t N) {
  auto fits = [](int w0, int w1) {
    return 255 * (std::max(w0, 0) + std::max(w1, 0)) <= 32767 &&
           255 * (std::min(w0, 0) + std::min(w1, 0)) >= -32768;
  };
  if (splat)
    return fits(*splat, *splat);
  for (int64_t k = 0; k + 1 < K; k += 2)
    for (int64_t n = 0; n < N; ++n)
      if (!fits(int8_t(raw[k * N + n]), int8_t(raw[(k + 1) * N + n])))
        return false;
  return true;
}

} // namespace

bool packInt8Weights(linalg::GenericOp op, int64_t lanes, int64_t group,
                     llvm::DenseMap<Value, Value> &packed) {
  if (lanes < 8 || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 1 || !isU8S8ProductBody(*op.getBlock()))
    return false; // (vpmaddwd's 256-bit vectors at least)
  Value w = op.getDpsInputs()[1];
  auto constant = w.getDefiningOp<arith::ConstantOp>();
  auto type = dyn_cast<RankedTensorType>(w.getType());
  if (!constant || !type || type.getRank() != 2 || !type.hasStaticShape())
    return false;
  int64_t K = type.getDimSize(0), N = type.getDimSize(1);
  SmallVector<unsigned> reductions;
  op.getReductionDims(reductions);
  MLIRContext *ctx = op.getContext();
  AffineExpr k = getAffineDimExpr(reductions[0], ctx);
  AffineMap aMap = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
  AffineMap bMap = op.getMatchingIndexingMap(op.getDpsInputOperand(1));
  AffineMap cMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (K % 4 || bMap.getNumResults() != 2 || bMap.getResult(0) != k ||
      !isa<AffineDimExpr>(bMap.getResult(1)) || aMap.getResults().back() != k ||
      cMap.getResults().back() != bMap.getResult(1))
    return false;
  AffineExpr n = bMap.getResult(1);
  ArrayRef<char> raw = constantData(constant.getValue());
  auto splat = dyn_cast<SplatElementsAttr>(constant.getValue());
  if (!splat && raw.size() != size_t(K * N))
    return false;
  // AVX2: weights that no pair of A's bytes can take past i16 go to
  // vpmaddubsw's tile (group 4), exact there and ~1.3x vpmaddwd's rate.
  std::optional<int8_t> splatValue;
  if (splat)
    splatValue = int8_t(splat.getSplatValue<APInt>().getSExtValue());
  if (group == 2 && pairsFitI16(raw, splatValue, K, N))
    group = 4;
  int64_t panels = (N + lanes - 1) / lanes;
  auto packedType = RankedTensorType::get({panels, K / group, lanes, group}, type.getElementType());
  Value &copy = packed[w];
  if (!copy) {
    OpBuilder atConstant(constant);
    if (splat) {
      copy = arith::ConstantOp::create(atConstant, constant.getLoc(), splat.resizeSplat(packedType));
    } else {
      std::vector<char> bytes(panels * K * lanes, 0);
      for (int64_t r = 0; r < K; ++r)
        for (int64_t c = 0; c < N; ++c)
          bytes[((c / lanes * K + r) / group * lanes + c % lanes) * group + r % group] = raw[r * N + c];
      copy = arith::ConstantOp::create(atConstant, constant.getLoc(),
                                       cast<TypedAttr>(bytesAttr(packedType, "packed", bytes)));
    }
  }
  replaceInput(op, 1, copy, {n.floorDiv(lanes), k.floorDiv(group), n % lanes, k % group});
  return true;
}

} // namespace kiln

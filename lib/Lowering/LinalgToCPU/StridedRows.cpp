//===- StridedRows.cpp - rows read at a stride, as vectors ----------------===//

#include "StridedRows.h"

#include "kiln/Lowering/VectorRows.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace kiln {

int64_t StridedRows::lanesFor(int64_t count, unsigned vectorBits) {
  int64_t lanes = std::max<int64_t>(4, vectorBits / 32);
  while (lanes > 4 && lanes / 2 >= count)
    lanes /= 2;
  return lanes;
}

Value StridedRows::index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

Value StridedRows::add(Value x, int64_t k) {
  return k ? arith::AddIOp::create(b, loc, x, index(k)).getResult() : x;
}

Value StridedRows::times(Value x, int64_t k) {
  return k == 1 ? x : arith::MulIOp::create(b, loc, x, index(k)).getResult();
}

void StridedRows::parallel(ArrayRef<OpFoldResult> sizes,
                           llvm::function_ref<void(ArrayRef<Value>)> body) {
  SmallVector<int64_t> extents;
  for (OpFoldResult s : sizes)
    if (std::optional<int64_t> c = getConstantIntValue(s))
      extents.push_back(*c);
  if (extents.size() == sizes.size())
    return rows::forParallel(b, loc, extents, SmallVector<int64_t>(extents.size(), 1), body);
  SmallVector<Value> values;
  for (OpFoldResult s : sizes)
    values.push_back(getValueOrCreateConstantIndexOp(b, loc, s));
  rows::forParallelTo(b, loc, values, body);
}

void StridedRows::chunks(int64_t count, llvm::function_ref<void(Value, int64_t)> body) {
  int64_t full = count / lanes * lanes;
  rows::forRange(b, loc, full, lanes, [&](Value start) { body(start, lanes); });
  if (full < count)
    body(index(full), count - full);
}

SmallVector<Value> StridedRows::loadRun(Value base, SmallVector<Value> idx, int64_t vectors,
                                        int64_t valid) {
  SmallVector<Value> run;
  Value start = idx.back();
  for (int64_t v = 0; v < vectors; ++v) {
    int64_t count = std::min(valid - v * lanes, lanes);
    if (count <= 0) {
      auto type = VectorType::get({lanes}, cast<VectorType>(run.front().getType()).getElementType());
      run.push_back(arith::ConstantOp::create(b, loc, type, b.getZeroAttr(type)));
      continue;
    }
    idx.back() = add(start, v * lanes);
    run.push_back(rows::load(b, loc, base, idx, lanes, count));
  }
  return run;
}

std::pair<Value, Value> StridedRows::loadPair(Value base, SmallVector<Value> idx, int64_t valid) {
  SmallVector<Value> run = loadRun(base, std::move(idx), 2, valid);
  return {run[0], run[1]};
}

Value StridedRows::gather(ArrayRef<Value> run, int64_t first) {
  if (run.size() == 1)
    return run.front();
  SmallVector<Value> half;
  for (size_t i = 0; i + 1 < run.size(); i += 2)
    half.push_back(pick(run[i], run[i + 1], first % 2, 2));
  return gather(half, first / 2);
}

Value StridedRows::spread(ArrayRef<Value> columns, int64_t q) {
  size_t n = columns.size();
  if (n == 1)
    return columns.front();
  SmallVector<Value> paired;
  for (size_t i = 0; i < n / 2; ++i)
    paired.push_back(interleave(columns[i], columns[i + n / 2], q / int64_t(n / 2)));
  return spread(paired, q % int64_t(n / 2));
}

Value StridedRows::pick(Value lo, Value hi, int64_t first, int64_t step) {
  SmallVector<int64_t> mask;
  for (int64_t k = 0; k < lanes; ++k)
    mask.push_back(first + step * k);
  return vector::ShuffleOp::create(b, loc, lo, hi, mask);
}

Value StridedRows::interleave(Value x, Value y, int64_t half) {
  SmallVector<int64_t> mask;
  for (int64_t k = 0; k < lanes / 2; ++k) {
    mask.push_back(half * lanes / 2 + k);
    mask.push_back(lanes + half * lanes / 2 + k);
  }
  return vector::ShuffleOp::create(b, loc, x, y, mask);
}

} // namespace kiln

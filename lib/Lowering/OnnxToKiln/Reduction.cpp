//===- Reduction.cpp - ONNX Reduce* => kiln -------------------------------===//
//
// `axes` moved from an attribute to an input (ReduceSum in 13, the rest in
// 18); both forms are read. noop_with_empty_axes turns empty axes into
// identity instead of "all".
//
//===----------------------------------------------------------------------===//

#include "NodeContext.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"

using namespace mlir;

namespace kiln {
namespace {

template <typename OpTy>
LogicalResult reduce(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  std::vector<int64_t> axes = nc.attrInts("axes");
  if (nc.has(1)) {
    auto a = nc.constInts(1, "axes");
    if (failed(a))
      return failure();
    axes = *a;
  }
  if (axes.empty() && nc.attrInt("noop_with_empty_axes", 0))
    return nc.setOutput(0, *x);
  auto &b = nc.b;
  return nc.emit<OpTy>({*x}, {b.getNamedAttr("axes", b.getDenseI64ArrayAttr(axes)),
                              b.getNamedAttr("keepdims",
                                             b.getBoolAttr(nc.attrInt("keepdims", 1)))});
}

} // namespace

void registerReductionHandlers(HandlerTable &t) {
  t["ReduceSum"] = reduce<ReduceSumOp>;
  t["ReduceMean"] = reduce<ReduceMeanOp>;
  t["ReduceMax"] = reduce<ReduceMaxOp>;
}

} // namespace kiln

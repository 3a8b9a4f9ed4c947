//===- Reduction.cpp - ONNX Reduce* => kiln -------------------------------===//
//
// `axes` moved from an attribute to an input (ReduceSum in 13, the rest in
// 18); both forms are read. noop_with_empty_axes turns empty axes into
// identity instead of "all".
//
//===----------------------------------------------------------------------===//

#include "Expr.h"
#include "NodeContext.h"
#include "RuntimeShapes.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"

using namespace mlir;

namespace kiln {
namespace {

/// How an ONNX reduction is built from kiln: an optional elementwise
/// prologue, the kiln reduction, an optional epilogue.
enum class Pre { None, Abs, Square, Exp };
enum class Post { None, Sqrt, Log };

template <typename OpTy>
constexpr ReduceKind kindOf() {
  if constexpr (std::is_same_v<OpTy, ReduceMeanOp>)
    return ReduceKind::Mean;
  if constexpr (std::is_same_v<OpTy, ReduceMaxOp>)
    return ReduceKind::Max;
  if constexpr (std::is_same_v<OpTy, ReduceMinOp>)
    return ReduceKind::Min;
  if constexpr (std::is_same_v<OpTy, ReduceProdOp>)
    return ReduceKind::Prod;
  return ReduceKind::Sum;
}

template <typename OpTy, Pre pre = Pre::None, Post post = Post::None>
LogicalResult reduce(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  std::vector<int64_t> axes = nc.attrInts("axes");
  bool runtimeAxes = nc.has(1) && !nc.known(1) && nc.inputType(1) &&
                     nc.inputType(1).hasStaticShape() && nc.inputType(1).getNumElements() > 0;
  // An axes input of no elements is empty whatever its data.
  bool noAxes = nc.has(1) && nc.inputType(1) && nc.inputType(1).hasStaticShape() &&
                nc.inputType(1).getNumElements() == 0;
  if (nc.has(1) && !runtimeAxes && !noAxes) {
    auto a = nc.constInts(1, "axes");
    if (failed(a))
      return failure();
    axes = *a;
  }
  Expr e(nc, *x);
  Value in = *x;
  if (pre == Pre::Abs)
    in = e.abs(in);
  else if (pre == Pre::Square)
    in = e.mul(in, in);
  else if (pre == Pre::Exp)
    in = e.exp(in);
  Value r = in;
  if (runtimeAxes) {
    auto reduced = reduceRuntime(nc, in, kindOf<OpTy>(), nc.attrInt("keepdims", 1));
    if (failed(reduced))
      return failure();
    r = *reduced;
  } else if (!axes.empty() || !nc.attrInt("noop_with_empty_axes", 0)) {
    auto &b = nc.b;
    auto op = nc.build<OpTy>({in}, {b.getNamedAttr("axes", b.getDenseI64ArrayAttr(axes)),
                                    b.getNamedAttr("keepdims",
                                                   b.getBoolAttr(nc.attrInt("keepdims", 1)))});
    if (failed(op))
      return failure();
    r = (*op)->getResult(0);
  }
  if (post == Post::Sqrt)
    r = e.sqrt(r);
  else if (post == Post::Log)
    r = e.log(r);
  return nc.setOutput(0, r);
}

template <typename OpTy>
LogicalResult argReduce(NodeContext &nc) {
  auto x = nc.input(0);
  if (failed(x))
    return failure();
  auto &b = nc.b;
  return nc.emit<OpTy>(
      {*x}, {b.getNamedAttr("axis", b.getI64IntegerAttr(nc.attrInt("axis", 0))),
             b.getNamedAttr("keepdims", b.getBoolAttr(nc.attrInt("keepdims", 1))),
             b.getNamedAttr("select_last_index",
                            b.getBoolAttr(nc.attrInt("select_last_index", 0)))});
}

} // namespace

void registerReductionHandlers(HandlerTable &t) {
  t["ReduceSum"] = reduce<ReduceSumOp>;
  t["ReduceMean"] = reduce<ReduceMeanOp>;
  t["ReduceMax"] = reduce<ReduceMaxOp>;
  t["ReduceMin"] = reduce<ReduceMinOp>;
  t["ReduceProd"] = reduce<ReduceProdOp>;
  t["ReduceL1"] = reduce<ReduceSumOp, Pre::Abs>;
  t["ReduceL2"] = reduce<ReduceSumOp, Pre::Square, Post::Sqrt>;
  t["ReduceSumSquare"] = reduce<ReduceSumOp, Pre::Square>;
  t["ReduceLogSum"] = reduce<ReduceSumOp, Pre::None, Post::Log>;
  t["ReduceLogSumExp"] = reduce<ReduceSumOp, Pre::Exp, Post::Log>;
  t["ArgMax"] = argReduce<ArgMaxOp>;
  t["ArgMin"] = argReduce<ArgMinOp>;
}

} // namespace kiln

//===- Autograd.cpp - kiln-autograd ---------------------------------------===//
//
//   func.func @main(%x, %w {kiln.param}) -> (%loss)
// =>
//   func.func @main(%x, %w {kiln.param}) -> (%loss, %dw {kiln.grad_of = 1})
//
// Reverse mode over GradientOpInterface: the forward ops stay as they are,
// the backward ops are appended before the return, last op first.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/Transforms/Autograd.h"
#include "MainFunction.h"
#include "kiln/Dialects/Kiln/Transforms/Passes.h"

#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Dialects/Kiln/IR/ShapeUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

namespace kiln {
#define GEN_PASS_DEF_KILNAUTOGRAD
#include "kiln/Dialects/Kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {
/// Ops whose gradient rules were checked with dynamic dimensions (a
/// dynamic batch): the products, elementwise math, softmax and the
/// losses' reductions, gathers and scatters. Others refuse them.
bool dynamicReadyGradient(Operation *op) {
  auto dynamic = [](Type t) {
    auto r = dyn_cast<RankedTensorType>(t);
    return r && !r.hasStaticShape();
  };
  if (llvm::none_of(op->getOperandTypes(), dynamic) && llvm::none_of(op->getResultTypes(), dynamic))
    return true;
  // A gather of fixed indices (q, k, v picked from a stacked projection).
  if (auto gather = dyn_cast<GatherOp>(op))
    return !dynamic(gather.getIndices().getType());
  // Convolutions, pooling and batch norm over a dynamic batch (their
  // windows and channels are of known size).
  if (isa<ConvOp, MaxPoolOp, AvgPoolOp, GlobalAvgPoolOp, BatchNormOp>(op)) {
    auto x = cast<RankedTensorType>(op->getOperand(0).getType());
    return llvm::none_of(x.getShape().drop_front(), ShapedType::isDynamic) &&
           llvm::none_of(op->getOperands().drop_front().getTypes(), dynamic);
  }
  // Joined or cut along an axis of known size.
  auto knownAxis = [](Value v, int64_t axis) {
    ArrayRef<int64_t> shape = shapeOf(v);
    return !ShapedType::isDynamic(shape[*normalizeAxis(axis, shape.size())]);
  };
  if (auto concat = dyn_cast<ConcatOp>(op))
    return knownAxis(concat.getResult(), concat.getAxis());
  if (auto split = dyn_cast<SplitOp>(op))
    return knownAxis(split.getInput(), split.getAxis());
  return isa<GemmOp, MatmulOp, AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, NegOp, ReluOp, SigmoidOp,
             TanhOp, ExpOp, LogOp, SoftmaxOp, ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp,
             GatherElementsOp, UnsqueezeOp, SqueezeOp, ReshapeOp, FlattenOp, TransposeOp,
             LayerNormOp, ErfOp, SqrtOp, ReciprocalOp, AbsOp, IdentityOp, PowOp, CastOp,
             WhereOp>(op);
}

} // namespace

FailureOr<SmallVector<Value>> buildReverseGradients(OpBuilder &b, Location loc,
                                                    ArrayRef<Operation *> ops, Value y,
                                                    Value seedValue, ValueRange wrt) {
  // Values that depend on `wrt` through floating-point values...
  llvm::DenseSet<Value> active(wrt.begin(), wrt.end());
  for (Operation *op : ops)
    if (llvm::any_of(op->getOperands(), [&](Value v) { return active.contains(v); }))
      for (Value r : op->getResults())
        if (isFloatTensor(r))
          active.insert(r);
  // ...and, of those, the ones `y` depends on.
  llvm::DenseSet<Value> useful;
  if (active.contains(y))
    useful.insert(y);
  for (Operation *op : llvm::reverse(ops))
    if (llvm::any_of(op->getResults(), [&](Value r) { return useful.contains(r); }))
      for (Value v : op->getOperands())
        if (active.contains(v))
          useful.insert(v);

  llvm::DenseMap<Value, Value> grads;
  if (!seedValue) {
    GradBuilder seed(b, loc);
    seedValue = seed.splat(1.0, cast<RankedTensorType>(y.getType()));
  }
  grads[y] = seedValue;
  for (Operation *op : llvm::reverse(ops)) {
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op->getResults()) {
      Value d = useful.contains(r) ? grads.lookup(r) : Value();
      resultGrads.push_back(d);
      any |= (bool)d;
    }
    if (!any)
      continue;
    auto rule = dyn_cast<GradientOpInterface>(op);
    if (!rule)
      return op->emitError() << "'" << op->getName()
                             << "' has no gradient rule, and it lies between the trained "
                                "parameters and the loss (freeze the parameters before it with "
                                "--freeze, or report the missing rule)";
    if (!dynamicReadyGradient(op))
      return op->emitError() << "'" << op->getName()
                             << "' has dynamic dimensions, and its gradient takes static "
                                "shapes so far (pin them with --shape or --dim)";
    GradBuilder g(b, op->getLoc());
    SmallVector<Value> operandGrads;
    if (failed(rule.buildGradients(g, resultGrads, operandGrads)) || g.failed())
      return failure();
    if (operandGrads.size() != op->getNumOperands())
      return op->emitError() << "internal error: the gradient rule of '" << op->getName()
                             << "' returned " << operandGrads.size() << " gradients for "
                             << op->getNumOperands() << " operands";
    for (auto [operand, d] : llvm::zip(op->getOperands(), operandGrads)) {
      if (!d || !useful.contains(operand))
        continue;
      if (d.getType() != operand.getType())
        return op->emitError() << "internal error: the gradient rule of '" << op->getName()
                               << "' built a gradient of type " << d.getType()
                               << " for an operand of " << operand.getType();
      Value &acc = grads[operand];
      acc = acc ? g.add(acc, d) : d;
    }
  }
  SmallVector<Value> out;
  for (Value x : wrt) {
    Value d = grads.lookup(x);
    if (!d) {
      // Not on the path to y (PyTorch's grad is None): zeros.
      GradBuilder g(b, loc);
      d = g.zerosLike(x);
    }
    out.push_back(d);
  }
  return out;
}

namespace {
struct KilnAutogradPass final : impl::KilnAutogradBase<KilnAutogradPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal() || !main.getBody().hasOneBlock()) {
      module.emitError("kiln-autograd expects a func.func @main with one block");
      return signalPassFailure();
    }
    Block &body = main.front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    if (ret.getNumOperands() < 1) {
      main.emitError("kiln-autograd: @main returns no loss");
      return signalPassFailure();
    }
    Value loss = ret.getOperand(0);
    auto lossType = dyn_cast<RankedTensorType>(loss.getType());
    if (!lossType || !isa<FloatType>(lossType.getElementType()) ||
        lossType.getNumElements() != 1) {
      main.emitError() << "kiln-autograd: the loss must be a one-element floating-point "
                          "tensor, not "
                       << loss.getType();
      return signalPassFailure();
    }
    SmallVector<Value> params;
    for (BlockArgument arg : main.getArguments())
      if (main.getArgAttr(arg.getArgNumber(), KilnDialect::getParamAttrName()))
        params.push_back(arg);

    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    llvm::DenseSet<Operation *> forward(ops.begin(), ops.end());
    OpBuilder b(ret);
    auto grads = buildReverseGradients(b, ret.getLoc(), ops, loss, Value(), params);
    if (failed(grads))
      return signalPassFailure();
    // Everything built here is the backward pass (kiln-partition reads this).
    for (Operation &op : body.without_terminator())
      if (!forward.contains(&op))
        op.setAttr(KilnDialect::getBackwardAttrName(), b.getUnitAttr());

    SmallVector<DictionaryAttr> gradAttrs;
    for (Value p : params) {
      unsigned argNumber = cast<BlockArgument>(p).getArgNumber();
      auto name = main.getArgAttrOfType<StringAttr>(argNumber, KilnDialect::getNameAttrName());
      gradAttrs.push_back(namedResult(&getContext(), "grad:" + (name ? name.str() : ""),
                                      {b.getNamedAttr(KilnDialect::getGradOfAttrName(),
                                                      b.getI64IntegerAttr(argNumber))}));
    }
    appendResults(main, *grads, gradAttrs);
  }
};

} // namespace
} // namespace kiln

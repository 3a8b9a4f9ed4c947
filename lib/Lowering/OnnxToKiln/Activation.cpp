//===- Activation.cpp - ONNX activations as kiln compositions -------------===//
//
// Each follows the ONNX operator definition; elementwise fusion merges the
// pieces back into one kernel.
//
//===----------------------------------------------------------------------===//

#include "Expr.h"

using namespace mlir;

namespace kiln {
namespace {

/// Handler for an activation y = f(x) given by `body(expr, x)`.
template <typename Fn>
Handler activation(Fn body) {
  return [body](NodeContext &nc) -> LogicalResult {
    auto x = nc.input(0);
    if (failed(x))
      return failure();
    if (!isa<FloatType>(cast<RankedTensorType>(x->getType()).getElementType()))
      return nc.error("expects a floating-point input");
    Expr e(nc, *x);
    return nc.setOutput(0, body(nc, e, *x));
  };
}

} // namespace

void registerActivationHandlers(HandlerTable &t) {
  t["Elu"] = activation([](NodeContext &nc, Expr &e, Value x) {
    Value neg = e.mul(e.c(nc.attrFloat("alpha", 1.0)), e.sub(e.exp(x), e.c(1)));
    return e.where(e.less(x, e.c(0)), neg, x);
  });
  t["Selu"] = activation([](NodeContext &nc, Expr &e, Value x) {
    double alpha = nc.attrFloat("alpha", 1.67326319217681884765625);
    double gamma = nc.attrFloat("gamma", 1.05070102214813232421875);
    Value neg = e.sub(e.mul(e.c(alpha), e.exp(x)), e.c(alpha));
    return e.mul(e.c(gamma), e.where(e.lessEq(x, e.c(0)), neg, x));
  });
  t["Celu"] = activation([](NodeContext &nc, Expr &e, Value x) {
    Value alpha = e.c(nc.attrFloat("alpha", 1.0));
    Value neg = e.mul(alpha, e.sub(e.exp(e.div(x, alpha)), e.c(1)));
    return e.add(e.max(x, e.c(0)), e.min(e.c(0), neg));
  });
  t["LeakyRelu"] = activation([](NodeContext &nc, Expr &e, Value x) {
    return e.where(e.less(x, e.c(0)), e.mul(e.c(nc.attrFloat("alpha", 0.01)), x), x);
  });
  t["ThresholdedRelu"] = activation([](NodeContext &nc, Expr &e, Value x) {
    return e.where(e.greater(x, e.c(nc.attrFloat("alpha", 1.0))), x, e.c(0));
  });
  t["HardSigmoid"] = activation([](NodeContext &nc, Expr &e, Value x) {
    Value lin = e.add(e.mul(e.c(nc.attrFloat("alpha", 0.2)), x), e.c(nc.attrFloat("beta", 0.5)));
    return e.max(e.c(0), e.min(e.c(1), lin));
  });
  t["HardSwish"] = activation([](NodeContext &, Expr &e, Value x) {
    Value gate = e.max(e.c(0), e.min(e.c(1), e.add(e.mul(e.c(1.0 / 6.0), x), e.c(0.5))));
    return e.mul(x, gate);
  });
  t["Softplus"] = activation([](NodeContext &, Expr &e, Value x) {
    return e.log(e.add(e.exp(x), e.c(1)));
  });
  t["Softsign"] = activation([](NodeContext &, Expr &e, Value x) {
    return e.div(x, e.add(e.c(1), e.abs(x)));
  });
  t["Mish"] = activation([](NodeContext &, Expr &e, Value x) {
    return e.mul(x, e.tanh(e.log(e.add(e.exp(x), e.c(1)))));
  });
  t["Shrink"] = activation([](NodeContext &nc, Expr &e, Value x) {
    Value bias = e.c(nc.attrFloat("bias", 0.0)), lambd = e.c(nc.attrFloat("lambd", 0.5));
    Value low = e.where(e.less(x, e.sub(e.c(0), lambd)), e.add(x, bias), e.c(0));
    return e.where(e.greater(x, lambd), e.sub(x, bias), low);
  });
  t["PRelu"] = [](NodeContext &nc) -> LogicalResult {
    auto x = nc.input(0), slope = nc.input(1);
    if (failed(x) || failed(slope))
      return failure();
    Expr e(nc, *x);
    Value s = *slope;
    // Before opset 7 a 1-D slope applied per channel (dimension 1).
    auto xt = cast<RankedTensorType>(x->getType()), st = cast<RankedTensorType>(s.getType());
    if (nc.opset < 7 && st.getRank() == 1 && xt.getRank() > 2 && st.getDimSize(0) > 1) {
      SmallVector<int64_t> shape{st.getDimSize(0)};
      shape.append(xt.getRank() - 2, 1);
      s = e.reshape(s, shape);
    }
    auto prod = nc.build<MulOp>({s, *x});
    if (failed(prod))
      return failure();
    return nc.setOutput(0, e.where(e.less(*x, e.c(0)), (*prod)->getResult(0), *x));
  };
}

} // namespace kiln

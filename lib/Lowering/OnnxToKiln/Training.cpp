//===- Training.cpp - ai.onnx.preview.training ----------------------------===//
//
// Adagrad, Adam, Momentum: the optimizer update ops of ONNX's training
// domain, as elementwise kiln expressions (the formulas of the ONNX spec,
// term for term). Inputs are R (learning rate), T (update count, int64),
// then the tensors X..., their gradients G..., and one or two state tensors
// per X; outputs are the new X..., then the new state.
// Gradient: d sum(y) / d x for each x of `xs`, by kiln-autograd's reverse
// mode over the ops already imported (the same gradient rules).
//
//===----------------------------------------------------------------------===//

#include "Expr.h"

#include "kiln/Dialects/Kiln/Transforms/Autograd.h"

using namespace mlir;

namespace kiln {
namespace {

/// R, T as tensors of X's element type, and the number of optimized tensors.
struct UpdateInputs {
  Value r, t;
  int64_t n = 0;
  SmallVector<Value> in; // everything after R and T
};

FailureOr<UpdateInputs> updateInputs(NodeContext &nc, int groups) {
  UpdateInputs u;
  if (nc.numInputs() < 2 + (size_t)groups || (nc.numInputs() - 2) % groups)
    return nc.error("expects R, T and " + Twine(groups) + " inputs per optimized tensor");
  u.n = (nc.numInputs() - 2) / groups;
  auto r = nc.input(0), t = nc.input(1);
  if (failed(r) || failed(t))
    return failure();
  for (size_t i = 2; i < nc.numInputs(); ++i) {
    auto v = nc.input(i);
    if (failed(v))
      return failure();
    u.in.push_back(*v);
  }
  Type et = cast<RankedTensorType>(u.in[0].getType()).getElementType();
  if (!isa<FloatType>(et))
    return nc.error("optimized tensors must be floating point");
  u.r = nc.castTo(*r, et);
  u.t = nc.castTo(*t, et);
  if (nc.numOutputs() != (size_t)(u.n * groups - u.n))
    return nc.error("expects " + Twine(u.n * (groups - 1)) + " outputs");
  return u;
}

/// Adagrad: r = R / (1 + T * decay); g = norm * X + G; H' = H + g^2;
/// X' = X - r * g / (sqrt(H') + eps).
LogicalResult adagrad(NodeContext &nc) {
  auto u = updateInputs(nc, 3);
  if (failed(u))
    return failure();
  Expr e(nc, u->in[0]);
  double decay = nc.attrFloat("decay_factor", 0), eps = nc.attrFloat("epsilon", 0),
         norm = nc.attrFloat("norm_coefficient", 0);
  Value r = e.div(u->r, e.add(e.c(1), e.mul(u->t, e.c(decay))));
  for (int64_t i = 0; i < u->n; ++i) {
    Value x = u->in[i], g = u->in[u->n + i], h = u->in[2 * u->n + i];
    Value greg = e.add(e.mul(e.c(norm), x), g);
    Value hNew = e.add(h, e.mul(greg, greg));
    Value xNew = e.sub(x, e.div(e.mul(r, greg), e.add(e.sqrt(hNew), e.c(eps))));
    if (failed(nc.setOutput(i, xNew)) || failed(nc.setOutput(u->n + i, hNew)))
      return failure();
  }
  return success();
}

/// Momentum: g = norm * X + G; V' = alpha V + (T > 0 ? beta : 1) g;
/// standard X' = X - R V'; nesterov X' = X - R (g + alpha V').
LogicalResult momentum(NodeContext &nc) {
  auto u = updateInputs(nc, 3);
  if (failed(u))
    return failure();
  Expr e(nc, u->in[0]);
  double alpha = nc.attrFloat("alpha", 0), beta = nc.attrFloat("beta", 0),
         norm = nc.attrFloat("norm_coefficient", 0);
  std::string mode = nc.attrString("mode", "standard");
  if (mode != "standard" && mode != "nesterov")
    return nc.error("mode must be standard or nesterov, not '" + mode + "'");
  Value betaAdjusted = e.where(e.greater(u->t, e.c(0)), e.c(beta), e.c(1));
  for (int64_t i = 0; i < u->n; ++i) {
    Value x = u->in[i], g = u->in[u->n + i], v = u->in[2 * u->n + i];
    Value greg = e.add(e.mul(e.c(norm), x), g);
    Value vNew = e.add(e.mul(e.c(alpha), v), e.mul(betaAdjusted, greg));
    Value step = mode == "standard" ? vNew : e.add(greg, e.mul(e.c(alpha), vNew));
    Value xNew = e.sub(x, e.mul(u->r, step));
    if (failed(nc.setOutput(i, xNew)) || failed(nc.setOutput(u->n + i, vNew)))
      return failure();
  }
  return success();
}

/// Adam: g = norm * X + G; V' = alpha V + (1 - alpha) g;
/// H' = beta H + (1 - beta) g^2; R' = T > 0 ? R sqrt(1 - beta^T) / (1 - alpha^T) : R;
/// X' = (1 - norm_post) (X - R' V' / (sqrt(H') + eps)).
LogicalResult adam(NodeContext &nc) {
  auto u = updateInputs(nc, 4);
  if (failed(u))
    return failure();
  Expr e(nc, u->in[0]);
  double alpha = nc.attrFloat("alpha", 0.9), beta = nc.attrFloat("beta", 0.999),
         eps = nc.attrFloat("epsilon", 1e-6), norm = nc.attrFloat("norm_coefficient", 0),
         post = nc.attrFloat("norm_coefficient_post", 0);
  Value corrected = e.div(e.mul(u->r, e.sqrt(e.sub(e.c(1), e.pow(e.c(beta), u->t)))),
                          e.sub(e.c(1), e.pow(e.c(alpha), u->t)));
  Value r = e.where(e.greater(u->t, e.c(0)), corrected, u->r);
  for (int64_t i = 0; i < u->n; ++i) {
    Value x = u->in[i], g = u->in[u->n + i], v = u->in[2 * u->n + i], h = u->in[3 * u->n + i];
    Value greg = e.add(e.mul(e.c(norm), x), g);
    Value vNew = e.add(e.mul(e.c(alpha), v), e.mul(e.c(1 - alpha), greg));
    Value hNew = e.add(e.mul(e.c(beta), h), e.mul(e.c(1 - beta), e.mul(greg, greg)));
    Value xNew = e.sub(x, e.mul(r, e.div(vNew, e.add(e.sqrt(hNew), e.c(eps)))));
    xNew = e.mul(e.c(1 - post), xNew);
    if (failed(nc.setOutput(i, xNew)) || failed(nc.setOutput(u->n + i, vNew)) ||
        failed(nc.setOutput(2 * u->n + i, hNew)))
      return failure();
  }
  return success();
}

LogicalResult gradient(NodeContext &nc) {
  const onnx::AttributeProto *xs = nc.attr("xs"), *y = nc.attr("y"), *zs = nc.attr("zs");
  if (!xs || !y)
    return nc.error("needs the attributes xs and y");
  size_t nx = xs->strings_size(), nz = zs ? zs->strings_size() : 0;
  if (nc.numInputs() != nx + nz || nc.numOutputs() != nx)
    return nc.error("expects one input per name in xs and zs, and one output per xs");
  SmallVector<Value> wrt;
  for (size_t i = 0; i < nx; ++i) {
    auto x = nc.valueNamed(xs->strings(i));
    if (failed(x))
      return failure();
    if (!isFloatTensor(*x))
      return nc.error("xs '" + xs->strings(i) + "' is not a floating-point tensor");
    wrt.push_back(*x);
  }
  auto yv = nc.valueNamed(y->s());
  if (failed(yv))
    return failure();
  if (!isFloatTensor(*yv))
    return nc.error("y '" + y->s() + "' is not a floating-point tensor");
  SmallVector<Operation *> ops;
  for (Operation &op : *nc.b.getInsertionBlock())
    ops.push_back(&op);
  auto grads = buildReverseGradients(nc.b, nc.loc, ops, *yv, Value(), wrt);
  if (failed(grads))
    return failure();
  for (size_t i = 0; i < nx; ++i)
    if (failed(nc.setOutput(i, (*grads)[i])))
      return failure();
  return success();
}

} // namespace

void registerTrainingHandlers(HandlerTable &t) {
  t["ai.onnx.preview.training::Gradient"] = gradient;
  t["ai.onnx.preview.training::Adagrad"] = adagrad;
  t["ai.onnx.preview.training::Momentum"] = momentum;
  t["ai.onnx.preview.training::Adam"] = adam;
}

} // namespace kiln

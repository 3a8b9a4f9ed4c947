//===- kiln-gradcheck.cpp - every gradient rule against finite differences -===//
//
// kiln-gradcheck CASES.mlir [--filter NAME]
//
// Each func.func of CASES.mlir is one case: f64 tensor arguments, one f64
// result. For each, two artifacts are compiled through the real pipeline:
// f itself, and its vector-Jacobian product (kiln-autograd on
// loss = sum(f(x) * c) with a random cotangent c). The analytic gradient of
// every argument is compared with central differences of the same loss,
// PyTorch's gradcheck discipline: eps 1e-6, |a - n| <= atol + rtol |n| with
// atol 1e-5, rtol 1e-3. Inputs are uniform in the argument's
// `kiln.range = [lo, hi]` (default [-2, 2]); the seed is printed and fixed.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Dialects/Kiln/Transforms/Passes.h"
#include "kiln/Lowering/Artifact/Compiler.h"
#include "kiln/Lowering/Pipelines/Pipelines.h"
#include "kiln/runtime.hpp"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace mlir;

namespace {
constexpr double kEps = 1e-6, kAtol = 1e-5, kRtol = 1e-3;
constexpr unsigned kSeed = 20261130;

bool writeModule(ModuleOp m, const std::string &path) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return false;
  m.print(os);
  return true;
}

bool compile(const std::string &in, const std::string &out) {
  kiln::CompileOptions opts;
  opts.input = in;
  opts.output = out;
  return kiln::compileModel(opts) == 0;
}

/// The case as @main in a module of its own.
OwningOpRef<ModuleOp> single(func::FuncOp fn) {
  OpBuilder b(fn.getContext());
  OwningOpRef<ModuleOp> m = ModuleOp::create(fn.getLoc());
  b.setInsertionPointToEnd(m->getBody());
  auto clone = cast<func::FuncOp>(b.clone(*fn));
  clone.setName("main");
  clone.setPublic();
  return m;
}

/// @main(x..., c) -> (sum(f(x) * c), d/dx...) via kiln-autograd.
LogicalResult buildVjp(ModuleOp m) {
  auto main = m.lookupSymbol<func::FuncOp>("main");
  MLIRContext *ctx = m.getContext();
  for (unsigned i = 0; i < main.getNumArguments(); ++i)
    main.setArgAttr(i, "kiln.param", UnitAttr::get(ctx));
  auto ret = cast<func::ReturnOp>(main.front().getTerminator());
  Value y = ret.getOperand(0);
  if (failed(main.insertArgument(main.getNumArguments(), y.getType(), {}, main.getLoc())))
    return failure();
  Value c = main.getArgument(main.getNumArguments() - 1);
  OpBuilder b(ret);
  kiln::GradBuilder g(b, ret.getLoc());
  Value loss = g.reduceSum(g.mul(y, c), {}, false);
  func::ReturnOp::create(b, ret.getLoc(), ValueRange{loss});
  ret.erase();
  main.setType(FunctionType::get(ctx, main.getArgumentTypes(), {loss.getType()}));
  main.setAllResultAttrs(ArrayRef<DictionaryAttr>{DictionaryAttr::get(ctx)});
  PassManager pm(ctx);
  pm.addPass(kiln::createKilnAutograd());
  return pm.run(m);
}

std::vector<kiln_tensor_t> views(const kiln::Model &model, bool inputs,
                                 std::vector<std::vector<double>> &data) {
  std::vector<kiln_tensor_t> v;
  auto descs = inputs ? model.inputs() : model.outputs();
  data.resize(descs.size());
  for (size_t i = 0; i < descs.size(); ++i) {
    data[i].resize(descs[i].size_bytes / 8);
    v.push_back({nullptr, descs[i].dtype, descs[i].rank, descs[i].shape, data[i].data(),
                 descs[i].size_bytes});
  }
  return v;
}

struct Runner {
  kiln::Model model;
  kiln::Session session;
  std::vector<std::vector<double>> outData;
  std::vector<kiln_tensor_t> outViews;
  bool load(const std::string &path) {
    if (!kiln::Model::load(path, model).ok() || !kiln::Session::create(model, session, 1).ok())
      return false;
    outViews = views(model, false, outData);
    return true;
  }
  bool run(std::vector<std::vector<double>> &in) {
    std::vector<kiln_tensor_t> inViews;
    auto descs = model.inputs();
    for (size_t i = 0; i < descs.size(); ++i)
      inViews.push_back({nullptr, descs[i].dtype, descs[i].rank, descs[i].shape, in[i].data(),
                         descs[i].size_bytes});
    return session.run(inViews, outViews).ok();
  }
};

int checkCase(func::FuncOp fn, const std::string &dir, std::mt19937_64 &rng) {
  std::string name = fn.getName().str();
  for (Type t : fn.getFunctionType().getInputs())
    if (!cast<RankedTensorType>(t).getElementType().isF64()) {
      std::printf("gradcheck %s: FAIL (arguments must be f64 tensors)\n", name.c_str());
      return 1;
    }
  auto f = single(fn), vjp = single(fn);
  if (failed(buildVjp(*vjp))) {
    std::printf("gradcheck %s: FAIL (kiln-autograd failed)\n", name.c_str());
    return 1;
  }
  std::string fPath = dir + "/" + name + ".mlir", vPath = dir + "/" + name + "_vjp.mlir";
  if (!writeModule(*f, fPath) || !writeModule(*vjp, vPath) || !compile(fPath, fPath + ".so") ||
      !compile(vPath, vPath + ".so")) {
    std::printf("gradcheck %s: FAIL (did not compile)\n", name.c_str());
    return 1;
  }
  Runner fr, vr;
  if (!fr.load(fPath + ".so") || !vr.load(vPath + ".so")) {
    std::printf("gradcheck %s: FAIL (did not load)\n", name.c_str());
    return 1;
  }
  // Random inputs in each argument's range, and a random cotangent.
  std::vector<std::vector<double>> x;
  views(fr.model, true, x);
  for (unsigned i = 0; i < x.size(); ++i) {
    double lo = -2, hi = 2;
    if (auto r = fn.getArgAttrOfType<ArrayAttr>(i, "kiln.range")) {
      lo = cast<FloatAttr>(r[0]).getValueAsDouble();
      hi = cast<FloatAttr>(r[1]).getValueAsDouble();
    }
    std::uniform_real_distribution<double> u(lo, hi);
    for (double &v : x[i])
      v = u(rng);
  }
  std::vector<double> c(fr.outData[0].size());
  std::uniform_real_distribution<double> u(-1, 1);
  for (double &v : c)
    v = u(rng);
  auto loss = [&](std::vector<std::vector<double>> &in, double &l) {
    if (!fr.run(in))
      return false;
    l = 0;
    for (size_t k = 0; k < c.size(); ++k)
      l += fr.outData[0][k] * c[k];
    return true;
  };
  std::vector<std::vector<double>> vin = x;
  vin.push_back(c);
  if (!vr.run(vin)) {
    std::printf("gradcheck %s: FAIL (the gradient artifact did not run)\n", name.c_str());
    return 1;
  }
  size_t checked = 0, bad = 0;
  double worst = 0;
  std::string firstBad;
  for (size_t i = 0; i < x.size(); ++i) {
    for (size_t k = 0; k < x[i].size(); ++k) {
      double saved = x[i][k], lp, lm;
      x[i][k] = saved + kEps;
      bool ok = loss(x, lp);
      x[i][k] = saved - kEps;
      ok = ok && loss(x, lm);
      x[i][k] = saved;
      if (!ok) {
        std::printf("gradcheck %s: FAIL (f did not run)\n", name.c_str());
        return 1;
      }
      double numeric = (lp - lm) / (2 * kEps), analytic = vr.outData[1 + i][k];
      double err = std::fabs(analytic - numeric);
      ++checked;
      worst = std::max(worst, err);
      if (!(err <= kAtol + kRtol * std::fabs(numeric))) {
        if (!bad++)
          firstBad = "argument " + std::to_string(i) + " element " + std::to_string(k) +
                     ": analytic " + std::to_string(analytic) + ", numeric " +
                     std::to_string(numeric);
      }
    }
  }
  if (bad) {
    std::printf("gradcheck %s: FAIL (%zu of %zu elements; first: %s)\n", name.c_str(), bad,
                checked, firstBad.c_str());
    return 1;
  }
  std::printf("gradcheck %s: ok (%zu elements, max abs error %.2e)\n", name.c_str(), checked,
              worst);
  return 0;
}
} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: kiln-gradcheck CASES.mlir [--filter NAME]\n");
    return 2;
  }
  std::string filter = argc >= 4 && std::strcmp(argv[2], "--filter") == 0 ? argv[3] : "";
  DialectRegistry registry;
  kiln::registerKilnDialects(registry);
  MLIRContext ctx(registry);
  ctx.disableMultithreading();
  OwningOpRef<ModuleOp> cases = parseSourceFile<ModuleOp>(argv[1], &ctx);
  if (!cases)
    return 1;
  llvm::SmallString<128> dir;
  if (llvm::sys::fs::createUniqueDirectory("kiln-gradcheck", dir)) {
    std::fprintf(stderr, "error: cannot create a temporary directory\n");
    return 1;
  }
  std::printf("kiln-gradcheck: seed %u, eps %g, atol %g, rtol %g\n", kSeed, kEps, kAtol, kRtol);
  std::mt19937_64 rng(kSeed);
  int failures = 0, total = 0;
  for (auto fn : cases->getOps<func::FuncOp>()) {
    if (!filter.empty() && fn.getName() != filter)
      continue;
    ++total;
    failures += checkCase(fn, dir.str().str(), rng);
    std::fflush(stdout);
  }
  llvm::sys::fs::remove_directories(dir);
  std::printf("kiln-gradcheck: %d of %d cases pass\n", total - failures, total);
  return failures ? 1 : 0;
}

//===- Commands.cpp - `kiln run` and `kiln inspect ARTIFACT` --------------===//
//
// Built only on the runtime's public API, like any application would be.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "kiln/runtime.hpp"
#include "kiln/tensor_io.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <sys/stat.h>

namespace kiln {
namespace {

int fail(const std::string &msg) {
  std::fprintf(stderr, "error: %s\n", msg.c_str());
  return 1;
}

std::string shapeStr(const int64_t *shape, int32_t rank) {
  std::string s = "[";
  for (int32_t i = 0; i < rank; ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

void printTensor(const HostTensor &t) {
  std::printf("%s: %s %s", t.name.c_str(), kiln_dtype_name(t.dtype),
              shapeStr(t.shape.data(), t.shape.size()).c_str());
  size_t n = t.numElements(), shown = n < 8 ? n : 8;
  std::printf(" [");
  for (size_t i = 0; i < shown; ++i)
    std::printf("%s%.6g", i ? ", " : "", elementAsDouble(t, i));
  std::printf("%s]\n", n > shown ? ", ..." : "");
}

} // namespace

/// A loaded artifact with its inputs read and output buffers allocated.
struct Prepared {
  Model model;
  Session session;
  std::map<std::string, HostTensor> given;
  std::vector<kiln_tensor_t> inViews, outViews;
  std::vector<HostTensor> outs;
};

/// Loads the artifact, reads the NAME=FILE inputs and binds everything.
int prepare(const std::string &artifact, const std::vector<std::string> &inputs, int threads,
            Prepared &p) {
  Model &model = p.model;
  auto &given = p.given;
  auto &inViews = p.inViews;
  auto &outViews = p.outViews;
  auto &outs = p.outs;
  if (Status s = Model::load(artifact, model); !s.ok())
    return fail(s.message());
  auto inDescs = model.inputs();
  for (const auto &spec : inputs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      return fail("--input expects NAME=FILE, got '" + spec + "'");
    std::string name = spec.substr(0, eq), error;
    HostTensor t;
    if (!readTensorFile(spec.substr(eq + 1), t, error))
      return fail(error);
    t.name = name;
    if (given.count(name))
      return fail("input '" + name + "' is given twice");
    given[name] = std::move(t);
  }
  for (const auto &d : inDescs) {
    auto it = given.find(d.name);
    if (it == given.end())
      return fail(artifact + ": missing input '" + std::string(d.name) + "' (" +
                  kiln_dtype_name(d.dtype) + " " + shapeStr(d.shape, d.rank) +
                  "); pass --input " + d.name + "=FILE");
    inViews.push_back(it->second.view(true));
  }
  for (const auto &[name, t] : given) {
    bool known = false;
    for (const auto &d : inDescs)
      known |= name == d.name;
    if (!known)
      return fail(artifact + ": the model has no input named '" + name + "'");
  }
  outs.clear();
  for (const auto &d : model.outputs()) {
    HostTensor t;
    t.name = d.name;
    t.dtype = d.dtype;
    t.shape.assign(d.shape, d.shape + d.rank);
    t.data.resize(d.size_bytes);
    outs.push_back(std::move(t));
  }
  for (auto &t : outs)
    outViews.push_back(t.view());
  if (Status s = Session::create(model, p.session, threads); !s.ok())
    return fail(s.message());
  return 0;
}

/// Loads, binds and runs; fills `outs` with the outputs in signature order.
int execute(const std::string &artifact, const std::vector<std::string> &inputs,
            std::vector<HostTensor> &outs, int threads) {
  Prepared p;
  if (int rc = prepare(artifact, inputs, threads, p))
    return rc;
  if (Status s = p.session.run(p.inViews, p.outViews); !s.ok())
    return fail(artifact + ": " + s.message());
  outs = std::move(p.outs);
  return 0;
}

int runArtifact(const std::string &artifact, const std::vector<std::string> &inputs,
                const std::string &outputDir, int threads) {
  std::vector<HostTensor> outs;
  if (int rc = execute(artifact, inputs, outs, threads))
    return rc;
  if (!outputDir.empty())
    ::mkdir(outputDir.c_str(), 0755);
  for (auto &t : outs) {
    printTensor(t);
    if (outputDir.empty())
      continue;
    std::string file = t.name, error;
    for (char &c : file)
      if (c == '/' || c == '\\' || c == ':')
        c = '_';
    if (!writeNpyFile(outputDir + "/" + file + ".npy", t, error))
      return fail(error);
  }
  return 0;
}

int verifyArtifact(const std::string &artifact, const std::vector<std::string> &inputs,
                   const std::vector<std::string> &expected, double rtol, double atol,
                   int threads) {
  std::vector<HostTensor> outs;
  if (int rc = execute(artifact, inputs, outs, threads))
    return rc;
  int failures = 0;
  for (const auto &spec : expected) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      return fail("--expected expects NAME=FILE, got '" + spec + "'");
    std::string name = spec.substr(0, eq), error;
    HostTensor want;
    if (!readTensorFile(spec.substr(eq + 1), want, error))
      return fail(error);
    const HostTensor *got = nullptr;
    for (const auto &t : outs)
      if (t.name == name)
        got = &t;
    if (!got)
      return fail("the model has no output named '" + name + "'");
    if (got->shape != want.shape)
      return fail("output '" + name + "' has shape " +
                  shapeStr(got->shape.data(), got->shape.size()) + ", reference has " +
                  shapeStr(want.shape.data(), want.shape.size()));
    size_t bad = 0, first = 0;
    double worst = 0;
    for (size_t i = 0; i < got->numElements(); ++i) {
      double g = elementAsDouble(*got, i), w = elementAsDouble(want, i);
      bool ok = (std::isnan(g) && std::isnan(w)) || g == w ||
                std::fabs(g - w) <= atol + rtol * std::fabs(w);
      if (!ok) {
        if (!bad)
          first = i;
        ++bad;
        worst = std::max(worst, std::fabs(g - w));
      }
    }
    if (bad) {
      ++failures;
      std::printf("MISMATCH %s: %zu of %zu elements differ (max abs diff %g; first at %zu: "
                  "got %.7g, want %.7g)\n",
                  name.c_str(), bad, got->numElements(), worst, first,
                  elementAsDouble(*got, first), elementAsDouble(want, first));
    } else {
      std::printf("ok %s: %zu elements within rtol %g, atol %g\n", name.c_str(),
                  got->numElements(), rtol, atol);
    }
  }
  return failures ? 1 : 0;
}

int benchArtifact(const std::string &artifact, const std::vector<std::string> &inputs,
                  int warmup, int iterations, int threads) {
  Prepared p;
  if (int rc = prepare(artifact, inputs, threads, p))
    return rc;
  std::vector<double> ms;
  for (int i = 0; i < warmup + iterations; ++i) {
    auto start = std::chrono::steady_clock::now();
    if (Status s = p.session.run(p.inViews, p.outViews); !s.ok())
      return fail(artifact + ": " + s.message());
    auto end = std::chrono::steady_clock::now();
    if (i >= warmup)
      ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("%s: %d runs, %d threads: median %.4f ms, min %.4f ms, max %.4f ms\n",
              artifact.c_str(), iterations, p.session.threads(), ms[ms.size() / 2], ms.front(),
              ms.back());
  return 0;
}

int inspectArtifact(const std::string &artifact) {
  Model model;
  if (Status s = Model::load(artifact, model); !s.ok())
    return fail(s.message());
  std::printf("artifact: %s\ninputs:\n", artifact.c_str());
  for (const auto &d : model.inputs())
    std::printf("  %s: %s %s\n", d.name, kiln_dtype_name(d.dtype), shapeStr(d.shape, d.rank).c_str());
  std::printf("outputs:\n");
  for (const auto &d : model.outputs())
    std::printf("  %s: %s %s\n", d.name, kiln_dtype_name(d.dtype), shapeStr(d.shape, d.rank).c_str());
  std::printf("memory: %zu bytes of intermediates (arena), %zu bytes of weights",
              model.arenaBytes(), model.weightBytes());
  if (size_t external = model.externalWeightBytes())
    std::printf(", %zu bytes of external weights", external);
  std::printf("\n");
  return 0;
}

} // namespace kiln

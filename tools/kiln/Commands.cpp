//===- Commands.cpp - `kiln run`, `verify`, `bench`, `compare` ----------===//
//
// Built only on the runtime's public API, like any application would be.
//
//===----------------------------------------------------------------------===//

#include "CommandSupport.h"
#include "Commands.h"

#include "kiln/Lowering/Artifact/Compiler.h" // parseShapeFlag
#include "kiln/runtime.hpp"
#include "kiln/tensor_io.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <dirent.h>
#include <sys/stat.h>

namespace kiln::cli {

int fail(const std::string &msg) {
  std::fprintf(stderr, "error: %s\n", msg.c_str());
  return 1;
}

std::string shapeStr(const int64_t *shape, int32_t rank) {
  std::string s = "[";
  for (int32_t i = 0; i < rank; ++i)
    s += (i ? "x" : "") + (shape[i] < 0 ? std::string("?") : std::to_string(shape[i]));
  return s + "]";
}

/// mkdir -p (errors surface when the files are written).
void makeDirs(const std::string &dir) {
  for (size_t slash = dir.find('/', 1); slash != std::string::npos; slash = dir.find('/', slash + 1))
    ::mkdir(dir.substr(0, slash).c_str(), 0755);
  ::mkdir(dir.c_str(), 0755);
}

/// A zeroed tensor of `d`'s name and dtype and of `shape` (an output buffer).
HostTensor allocateLike(const kiln_tensor_desc_t &d, const std::vector<int64_t> &shape) {
  HostTensor t;
  t.name = d.name;
  t.dtype = d.dtype;
  t.shape = shape;
  size_t bytes = kiln_dtype_size(d.dtype);
  for (int64_t n : shape)
    bytes *= (size_t)n;
  t.data.resize(bytes);
  return t;
}

/// The same with `d`'s own (static) shape.
HostTensor allocateLike(const kiln_tensor_desc_t &d) {
  return allocateLike(d, std::vector<int64_t>(d.shape, d.shape + d.rank));
}

} // namespace kiln::cli

namespace kiln {
using cli::fail;
using cli::KernelLine;
using cli::shapeStr;
using cli::allocateLike;
using cli::makeDirs;

namespace {

void printTensor(const HostTensor &t) {
  std::printf("%s: %s %s", t.name.c_str(), kiln_dtype_name(t.dtype),
              shapeStr(t.shape.data(), t.shape.size()).c_str());
  size_t n = t.numElements(), shown = n < 8 ? n : 8;
  std::printf(" [");
  for (size_t i = 0; i < shown; ++i)
    std::printf("%s%.6g", i ? ", " : "", elementAsDouble(t, i));
  std::printf("%s]\n", n > shown ? ", ..." : "");
}

/// Prints `ok NAME: ...` or `MISMATCH NAME: ...`: |got - want| <= atol +
/// rtol * |want| everywhere (NaN == NaN); false on a mismatch.
bool compareTensors(const std::string &name, const HostTensor &got, const HostTensor &want,
                    double rtol, double atol) {
  if (got.shape != want.shape) {
    std::printf("MISMATCH %s: shape %s, reference has %s\n", name.c_str(),
                shapeStr(got.shape.data(), got.shape.size()).c_str(),
                shapeStr(want.shape.data(), want.shape.size()).c_str());
    return false;
  }
  size_t bad = 0, first = 0;
  double worst = 0;
  for (size_t i = 0; i < got.numElements(); ++i) {
    double g = elementAsDouble(got, i), w = elementAsDouble(want, i);
    bool ok = (std::isnan(g) && std::isnan(w)) || g == w ||
              std::fabs(g - w) <= atol + rtol * std::fabs(w);
    worst = std::max(worst, std::isnan(g - w) ? 0.0 : std::fabs(g - w));
    if (!ok && !bad++)
      first = i;
  }
  if (bad) {
    std::printf("MISMATCH %s: %zu of %zu elements differ (max abs diff %g; first at %zu: "
                "got %.7g, want %.7g)\n",
                name.c_str(), bad, got.numElements(), worst, first, elementAsDouble(got, first),
                elementAsDouble(want, first));
    return false;
  }
  std::printf("ok %s: %zu elements within rtol %g, atol %g (max abs diff %.3g)\n", name.c_str(),
              got.numElements(), rtol, atol, worst);
  return true;
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


/// Loads the artifact, reads the NAME=FILE inputs and binds everything;
/// with `randomMissing`, inputs not given get random data instead of an error.
int prepare(const std::string &artifact, const std::vector<std::string> &inputs, int threads,
            Prepared &p, bool randomMissing = false, const std::string &device = "",
            const std::vector<std::string> &shapes = {}) {
  Model &model = p.model;
  auto &given = p.given;
  auto &inViews = p.inViews;
  auto &outViews = p.outViews;
  auto &outs = p.outs;
  if (Status s = Model::load(artifact, model); !s.ok())
    return fail(s.message());
  // The device follows from how the artifact was compiled; --device checks it.
  std::string target = kiln_model_target(model.get());
  if (!device.empty() && device != target)
    return fail(artifact + ": compiled for " + (target == "cuda" ? "CUDA (--target=cuda)" : "the CPU") +
                ", so it runs with --device=" + target + ", not --device=" + device);
  auto inDescs = model.inputs();
  // --shape NAME=D0xD1...: the sizes of random inputs (kiln bench).
  std::map<std::string, std::vector<int64_t>> randomShapes;
  for (const auto &flag : shapes) {
    std::map<std::string, std::vector<DimRange>> parsed;
    std::string error;
    if (!parseShapeFlag(flag, parsed, error))
      return fail(error);
    const std::string name = parsed.begin()->first;
    const std::vector<DimRange> &dims = parsed.begin()->second;
    if (std::none_of(inDescs.begin(), inDescs.end(),
                     [&](const kiln_tensor_desc_t &d) { return name == d.name; }))
      return fail(artifact + ": --shape names '" + name + "', which is not an input");
    for (const DimRange &r : dims) {
      if (!r.pinned())
        return fail("--shape " + flag + ": a random input needs sizes, not ranges");
      randomShapes[name].push_back(r.min);
    }
  }
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
    if (it == given.end() && randomMissing) {
      // A dynamic input's shape comes from --shape NAME=D0xD1...
      std::vector<int64_t> shape(d.shape, d.shape + d.rank);
      if (auto flag = randomShapes.find(d.name); flag != randomShapes.end())
        shape = flag->second;
      bool dynamic = false;
      size_t bytes = kiln_dtype_size(d.dtype);
      for (int64_t n : shape) {
        dynamic |= n < 0;
        bytes *= n < 0 ? 0 : (size_t)n;
      }
      if (dynamic)
        return fail(artifact + ": input '" + d.name + "' has dynamic dimensions (" +
                    shapeStr(d.shape, d.rank) + "); give its shape with --shape " + d.name +
                    "=D0xD1...");
      kiln_tensor_desc_t sized = d;
      sized.rank = (int32_t)shape.size();
      sized.shape = shape.data();
      sized.size_bytes = bytes;
      std::printf("input '%s': random %s %s\n", d.name, kiln_dtype_name(d.dtype),
                  shapeStr(sized.shape, sized.rank).c_str());
      it = given.emplace(d.name, randomTensor(sized, given.size() + 1)).first;
    }
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
  auto outDescs = model.outputs();
  for (size_t i = 0; i < outDescs.size(); ++i) {
    // A dynamic output's shape follows from the inputs'.
    std::vector<int64_t> shape;
    if (Status s = model.outputShape(inViews, i, shape); !s.ok())
      return fail(artifact + ": " + s.message());
    outs.push_back(allocateLike(outDescs[i], shape));
  }
  for (auto &t : outs)
    outViews.push_back(t.view());
  if (Status s = Session::create(model, p.session, threads); !s.ok())
    return fail(s.message());
  return 0;
}

/// Loads, binds and runs; fills `outs` with the outputs in signature order.
int execute(const std::string &artifact, const std::vector<std::string> &inputs,
            std::vector<HostTensor> &outs, int threads, const std::string &device = "") {
  Prepared p;
  if (int rc = prepare(artifact, inputs, threads, p, false, device))
    return rc;
  if (Status s = p.session.run(p.inViews, p.outViews); !s.ok())
    return fail(artifact + ": " + s.message());
  outs = std::move(p.outs);
  return 0;
}

int runArtifact(const std::string &artifact, const std::vector<std::string> &inputs,
                const std::string &outputDir, int threads, const std::string &device) {
  std::vector<HostTensor> outs;
  if (int rc = execute(artifact, inputs, outs, threads, device))
    return rc;
  if (!outputDir.empty())
    makeDirs(outputDir);
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
    failures += !compareTensors(name, *got, want, rtol, atol);
  }
  return failures ? 1 : 0;
}

std::vector<KernelLine> cli::parseKernelTable(const std::string &table) {
  std::vector<KernelLine> lines;
  std::istringstream in(table);
  for (std::string line; std::getline(in, line);) {
    if (line.empty())
      continue;
    KernelLine k;
    std::istringstream fields(line);
    std::getline(fields, k.name, '\t');
    for (std::string f; std::getline(fields, f, '\t');)
      if (f.rfind("#cost ", 0) == 0)
        std::sscanf(f.c_str() + 6, "%lld %lld", &k.flops, &k.bytes);
      else
        k.nodes.push_back(f);
    lines.push_back(std::move(k));
  }
  return lines;
}

namespace {
/// `kiln bench --per-kernel`: each kernel's share of the timed runs, the
/// heaviest first, its throughput (GFLOP/s of the float operations it
/// executes, GB/s of the distinct buffers it touches) and the ONNX nodes
/// fused into it.
void printKernelProfile(const kiln_session_t *session, const Model &model, int runs) {
  size_t n = kiln_session_profile(session, nullptr, nullptr, 0);
  std::vector<double> ms(n);
  std::vector<int64_t> calls(n);
  kiln_session_profile(session, ms.data(), calls.data(), n);
  std::vector<KernelLine> lines = cli::parseKernelTable(model.kernels());
  double total = 0;
  for (double v : ms)
    total += v;
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ms[a] > ms[b]; });
  std::printf("per kernel, %d runs (%.4f ms of kernels per run):\n", runs, total / runs);
  std::printf("  %6s %10s %6s %8s %8s  %s\n", "share", "us/run", "calls", "GFLOP/s", "GB/s",
              "kernel: nodes");
  for (size_t i : order) {
    if (!calls[i])
      continue;
    KernelLine k = i < lines.size() ? lines[i] : KernelLine{"kernel " + std::to_string(i), {}};
    std::string line = k.name + ":";
    for (const std::string &node : k.nodes)
      line += " " + node;
    double seconds = ms[i] / 1000 / calls[i]; // per call
    auto rate = [&](long long amount) {
      char buf[16] = "-";
      if (amount >= 0 && seconds > 0)
        std::snprintf(buf, sizeof buf, "%.1f", amount / seconds / 1e9);
      return std::string(buf);
    };
    std::printf("  %5.1f%% %10.2f %6lld %8s %8s  %s\n", total > 0 ? 100 * ms[i] / total : 0.0,
                1000 * ms[i] / runs, (long long)(calls[i] / runs), rate(k.flops).c_str(),
                rate(k.bytes).c_str(), line.c_str());
  }
}
} // namespace

int benchArtifact(const std::string &artifact, const std::vector<std::string> &inputs,
                  int warmup, int runs, int threads, const std::string &device,
                  bool perKernel, const std::vector<std::string> &shapes) {
  Prepared p;
  if (int rc = prepare(artifact, inputs, threads, p, /*randomMissing=*/true, device, shapes))
    return rc;
  std::vector<double> ms;
  for (int i = 0; i < warmup + runs; ++i) {
    if (perKernel && i == warmup)
      if (Status s(kiln_session_enable_profiling(p.session.get(), 1)); !s.ok())
        return fail(artifact + ": " + s.message());
    auto start = std::chrono::steady_clock::now();
    if (Status s = p.session.run(p.inViews, p.outViews); !s.ok())
      return fail(artifact + ": " + s.message());
    auto end = std::chrono::steady_clock::now();
    if (i >= warmup)
      ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
  }
  std::sort(ms.begin(), ms.end());
  // Nearest-rank percentiles.
  auto pct = [&](double q) { return ms[std::min(ms.size() - 1, (size_t)(q * ms.size()))]; };
  std::printf("%s: %d runs after %d warm-up, %d threads: min %.4f ms, max %.4f ms\n",
              artifact.c_str(), runs, warmup, p.session.threads(), ms.front(), ms.back());
  if (perKernel)
    printKernelProfile(p.session.get(), p.model, runs);
  // The contract scripts parse: always the last line.
  std::printf("median_ms=%.6f p10_ms=%.6f p90_ms=%.6f runs=%d\n", pct(0.5), pct(0.1), pct(0.9),
              runs);
  return 0;
}

} // namespace kiln


namespace kiln {
int compareFiles(const std::string &got, const std::string &want, double rtol, double atol) {
  // Directories: every .npy of `want` against the same name in `got`.
  std::vector<std::pair<std::string, std::string>> pairs;
  struct stat st;
  if (::stat(want.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    if (DIR *d = ::opendir(want.c_str())) {
      while (dirent *e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n.size() > 4 && n.compare(n.size() - 4, 4, ".npy") == 0)
          pairs.push_back({got + "/" + n, want + "/" + n});
      }
      ::closedir(d);
    }
    std::sort(pairs.begin(), pairs.end());
    if (pairs.empty())
      return fail(want + ": no .npy files to compare with");
  } else {
    pairs.push_back({got, want});
  }
  int failures = 0;
  for (const auto &[g, w] : pairs) {
    HostTensor a, b;
    std::string error;
    if (!readTensorFile(w, b, error))
      return fail(error);
    if (!readTensorFile(g, a, error)) {
      std::printf("MISSING %s: %s\n", g.c_str(), error.c_str());
      ++failures;
      continue;
    }
    failures += !compareTensors(g, a, b, rtol, atol);
  }
  return failures ? 1 : 0;
}
} // namespace kiln

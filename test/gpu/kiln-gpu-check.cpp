//===- kiln-gpu-check.cpp - runs CUDA artifacts compiled elsewhere --------===//
//
// The GPU machine's half of scripts/gpu-check.sh: it has a GPU but no MLIR,
// so the artifacts are compiled on the build machine and only run here.
// Links the runtime alone.
//
//   kiln-gpu-check conformance DIR [--jobs N] [--test-seconds S]
//       DIR/<suite>__<test>/{model.so, frozen, test_data_set_*}: every data
//       set run on the GPU and compared at ONNX's tolerances (per-test
//       relaxations in DIR/tolerances.txt); one line per failure, then
//       `cuda: N passed, M failed`. Each test runs in a forked child.
//   kiln-gpu-check run MODEL.so --input NAME=FILE... [--random] --out DIR
//                      [--shape NAME=D0xD1...]
//       writes each output as DIR/<name>.npy. --random: inputs not given get
//       the same seeded random data as bench's, so a CPU and a CUDA artifact
//       of one model can be run on equal inputs and compared (a dynamic
//       input's shape from --shape; outputs are sized from the inputs).
//       Each run goes twice (eager, then its CUDA graph: equal bytes). An
//       input given several --shape runs the rounds in one session, round
//       r's outputs in DIR/r<r>/.
//   kiln-gpu-check bench MODEL.so [--input NAME=FILE]... [--warmup N] [--runs N]
//                        [--per-kernel]
//       last line `median_ms=... p10_ms=... p90_ms=... runs=N` (kiln bench's
//       contract); a run includes copying inputs in and outputs out. Inputs
//       not given get random data. --per-kernel first prints each kernel's mean
//       time (CUDA events) with the ONNX nodes in it.
//   kiln-gpu-check train STEP.so --input NAME=FILE... [--steps N]
//       a `--train` artifact's steps from its initial parameters (the label
//       is one of the inputs, by name); prints `step=<i> loss=<f>` like
//       `kiln train`, so a CUDA and a CPU step can be compared.
//   kiln-gpu-check device MODEL.so
//       exit 0 when a CUDA session can be created, 77 (ctest's skip) with
//       the reason when there is no driver or device.
//
//===----------------------------------------------------------------------===//

#include "../conformance/DataSets.h"

#include <chrono>
#include <csignal>
#include <cstring>
#include <cstdlib>
#include <map>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace kiln;
using namespace kiln::conformance;

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: kiln-gpu-check conformance DIR [--jobs N] [--test-seconds S]\n"
               "       kiln-gpu-check run MODEL.so --input NAME=FILE... [--random] --out DIR\n"
               "                          [--shape NAME=D0xD1...]\n"
               "       kiln-gpu-check bench MODEL.so [--input NAME=FILE]... [--warmup N] [--runs N]\n"
               "                            [--per-kernel]\n"
               "       kiln-gpu-check train STEP.so --input NAME=FILE... [--steps N]\n"
               "       kiln-gpu-check device MODEL.so\n");
  return 2;
}

/// One conformance test, in a child: 0 passed, 1 wrong, 2 could not run.
int runOne(const std::string &dir, const Tolerance &tol) {
  Model model;
  if (Status s = Model::load(dir + "/model.so", model); !s.ok()) {
    std::fprintf(stderr, "load: %s\n", s.message().c_str());
    return 2;
  }
  Session session;
  if (Status s = Session::create(model, session); !s.ok()) {
    std::fprintf(stderr, "session: %s\n", s.message().c_str());
    return 2;
  }
  std::set<size_t> frozen;
  std::ifstream f(dir + "/frozen");
  for (size_t i; f >> i;)
    frozen.insert(i);
  for (const auto &ds : listDir(dir, "test_data_set_"))
    switch (runDataSet(session, model, dir + "/" + ds, tol, frozen)) {
    case DataSetResult::Ok: break;
    case DataSetResult::Wrong: return 1;
    case DataSetResult::RunFailed: return 2;
    }
  return 0;
}

/// A child's batch of tests, one after another in one process (a CUDA
/// context takes seconds to create): each result goes to `results` as
/// `PASS name` or `FAIL name: why` before the next test starts, so a crash
/// or a hang names its test and loses no other result.
[[noreturn]] void runBatch(const std::string &root, const std::vector<std::string> &batch,
                           const std::map<std::string, Tolerance> &tolerances,
                           const std::string &results, unsigned testSeconds) {
  std::FILE *out = std::fopen(results.c_str(), "w");
  if (!out)
    _exit(2);
  std::string err = results + ".err";
  for (const auto &t : batch) {
    std::string name = t;
    if (auto p = name.find("__"); p != std::string::npos)
      name.replace(p, 2, "/");
    std::fprintf(out, "START %s\n", name.c_str());
    std::fflush(out);
    if (!std::freopen(err.c_str(), "w", stderr))
      _exit(2);
    auto it = tolerances.find(name);
    // A test that hangs (a kernel that never ends) is reported, not waited on.
    alarm(testSeconds);
    int rc = runOne(root + "/" + t, it != tolerances.end() ? it->second : Tolerance());
    alarm(0);
    std::fflush(stderr);
    std::ifstream log(err);
    std::string first;
    std::getline(log, first);
    if (rc == 0)
      std::fprintf(out, "PASS %s\n", name.c_str());
    else
      std::fprintf(out, "FAIL %s: %s%s%s\n", name.c_str(),
                   rc == 1 ? "wrong result" : "run error", first.empty() ? "" : ": ",
                   first.c_str());
    std::fflush(out);
  }
  std::fclose(out);
  std::remove(err.c_str());
  _exit(0);
}

int runConformance(const std::string &root, int jobs, unsigned testSeconds) {
  std::map<std::string, Tolerance> tolerances;
  for (const auto &line : readList(root + "/tolerances.txt")) {
    std::istringstream ls(line);
    std::string name;
    Tolerance t;
    ls >> name >> t.rtol >> t.atol;
    tolerances[name] = t;
  }
  auto tests = listDir(root, "");
  tests.erase(std::remove_if(tests.begin(), tests.end(),
                             [&](const std::string &t) {
                               return !exists(root + "/" + t + "/model.so");
                             }),
              tests.end());
  // Batches small enough to keep every job busy to the end.
  size_t per = std::max<size_t>(1, std::min<size_t>(16, tests.size() / (4 * jobs)));
  std::vector<std::vector<std::string>> queue;
  for (size_t i = 0; i < tests.size(); i += per)
    queue.emplace_back(tests.begin() + i, tests.begin() + std::min(tests.size(), i + per));
  std::map<pid_t, std::vector<std::string>> running;
  int passed = 0, failed = 0;
  auto reap = [&]() {
    int status = 0;
    pid_t pid = wait(&status);
    auto batch = std::move(running[pid]);
    running.erase(pid);
    std::string results = "/tmp/kiln-gpu-check." + std::to_string(pid);
    std::ifstream in(results);
    std::string started;
    size_t done = 0;
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("START ", 0) == 0) {
        started = line.substr(6);
        continue;
      }
      started.clear();
      ++done;
      (line.rfind("PASS ", 0) == 0 ? passed : failed)++;
      std::printf("%s\n", line.c_str());
    }
    if (done < batch.size()) {
      // The test in progress crashed or hung; the rest of the batch goes on.
      bool timedOut = WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM;
      std::string why = timedOut ? "timed out"
                        : WIFSIGNALED(status)
                            ? std::string("crash (") + strsignal(WTERMSIG(status)) + ")"
                            : "the test process exited early";
      std::ifstream err(results + ".err");
      std::string first;
      std::getline(err, first);
      std::string name = started.empty() ? batch[done] : started;
      std::printf("FAIL %s: %s%s%s\n", name.c_str(), why.c_str(), first.empty() ? "" : ": ",
                  first.c_str());
      ++failed;
      size_t next = done + 1; // past the one that failed, so the loop ends
      if (next < batch.size())
        queue.emplace_back(batch.begin() + next, batch.end());
    }
    std::fflush(stdout);
    std::remove(results.c_str());
    std::remove((results + ".err").c_str());
  };
  while (!queue.empty() || !running.empty()) {
    if (queue.empty() || (int)running.size() >= jobs) {
      reap();
      continue;
    }
    auto batch = std::move(queue.back());
    queue.pop_back();
    std::fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
      runBatch(root, batch, tolerances, "/tmp/kiln-gpu-check." + std::to_string(getpid()),
               testSeconds);
    running[pid] = std::move(batch);
  }
  std::printf("cuda: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}

/// `--input NAME=FILE` tensors in the model's input order (random data for
/// those not given when `randomMissing`).
/// --shape flags: per input, the shapes of each round (a dynamic model run
/// at several shapes in one session).
using Shapes = std::map<std::string, std::vector<std::vector<int64_t>>>;

bool readInputs(const Model &model, const std::vector<std::string> &flags,
                std::vector<HostTensor> &ins, bool randomMissing = false,
                const Shapes &shapes = {}, size_t round = 0) {
  std::map<std::string, std::string> files;
  for (const auto &f : flags) {
    auto eq = f.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "--input expects NAME=FILE, got '%s'\n", f.c_str());
      return false;
    }
    files[f.substr(0, eq)] = f.substr(eq + 1);
  }
  for (const auto &d : model.inputs()) {
    auto it = files.find(d.name);
    if (it == files.end() && randomMissing) {
      kiln_tensor_desc_t sized = d;
      auto given = shapes.find(d.name);
      if (given != shapes.end()) {
        const auto &shape = given->second[std::min(round, given->second.size() - 1)];
        sized.rank = (int32_t)shape.size();
        sized.shape = shape.data();
        sized.size_bytes = kiln_dtype_size(d.dtype);
        for (int64_t n : shape)
          sized.size_bytes *= (size_t)n;
      } else if (std::any_of(d.shape, d.shape + d.rank, [](int64_t n) { return n < 0; })) {
        std::fprintf(stderr, "input '%s' has dynamic dimensions: give its shape with --shape\n",
                     d.name);
        return false;
      }
      ins.push_back(randomTensor(sized, ins.size() + 1));
      continue;
    }
    if (it == files.end()) {
      std::fprintf(stderr, "no --input for '%s'\n", d.name);
      return false;
    }
    HostTensor t;
    std::string error;
    if (!readTensorFile(it->second, t, error)) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return false;
    }
    t.name = d.name;
    ins.push_back(std::move(t));
  }
  return true;
}

int runOrBench(const std::string &command, const std::string &so,
               const std::vector<std::string> &inputs, const std::string &outDir, int warmup,
               int runs, bool perKernel, bool random, const Shapes &shapes) {
  Model model;
  Session session;
  if (Status s = Model::load(so, model); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  if (Status s = Session::create(model, session); !s.ok()) {
    std::fprintf(stderr, "%s: %s\n", command == "device" ? "skipped" : "error",
                 s.message().c_str());
    return command == "device" ? 77 : 1;
  }
  if (command == "device")
    return 0;
  // Rounds of shapes (one unless --shape gives an input several).
  size_t rounds = 1;
  for (const auto &[name, list] : shapes)
    rounds = std::max(rounds, list.size());
  if (command != "run")
    rounds = 1;
  std::vector<HostTensor> ins, outs;
  std::vector<kiln_tensor_t> inViews, outViews;
  auto prepare = [&](size_t round) {
    ins.clear(), outs.clear(), inViews.clear(), outViews.clear();
    if (!readInputs(model, inputs, ins, command == "bench" || random, shapes, round))
      return false;
    for (auto &t : ins)
      inViews.push_back(t.view(true));
    auto outDescs = model.outputs();
    for (size_t i = 0; i < outDescs.size(); ++i) {
      HostTensor t;
      t.name = outDescs[i].name;
      t.dtype = outDescs[i].dtype;
      // A dynamic output's shape follows from the inputs'.
      if (Status s = model.outputShape(inViews, i, t.shape); !s.ok()) {
        std::fprintf(stderr, "error: %s\n", s.message().c_str());
        return false;
      }
      size_t bytes = kiln_dtype_size(t.dtype);
      for (int64_t n : t.shape)
        bytes *= (size_t)n;
      t.data.resize(bytes);
      outs.push_back(std::move(t));
    }
    for (auto &t : outs)
      outViews.push_back(t.view(true));
    return true;
  };
  if (command == "run") {
    // Each round twice: eagerly, then as the CUDA graph captured from it,
    // which must give the same bytes. Round r's outputs go to DIR/r<r>/
    // when there are several.
    for (size_t r = 0; r < rounds; ++r) {
      if (!prepare(r))
        return 1;
      std::vector<std::vector<uint8_t>> first;
      for (int pass = 0; pass < 2; ++pass) {
        if (Status s = session.run(inViews, outViews); !s.ok()) {
          std::fprintf(stderr, "error: %s\n", s.message().c_str());
          return 1;
        }
        for (size_t i = 0; i < outs.size(); ++i)
          if (pass == 0)
            first.push_back(outs[i].data);
          else if (first[i] != outs[i].data) {
            std::fprintf(stderr, "error: output '%s' differs between two runs (an eager "
                                 "one and its graph's replay)\n", outs[i].name.c_str());
            return 1;
          }
      }
      std::string dir = rounds > 1 ? outDir + "/r" + std::to_string(r) : outDir;
      if (rounds > 1)
        mkdir(dir.c_str(), 0755);
      for (auto &t : outs) {
        std::string error;
        if (!writeNpyFile(dir + "/" + tensorFileStem(t.name) + ".npy", t, error)) {
          std::fprintf(stderr, "error: %s\n", error.c_str());
          return 1;
        }
      }
    }
    return 0;
  }
  if (!prepare(0))
    return 1;
  if (perKernel) {
    // Warm (first launches, lazy module loading) before timing kernels.
    for (int i = 0; i < 3; ++i)
      if (Status s = session.run(inViews, outViews); !s.ok()) {
        std::fprintf(stderr, "error: %s\n", s.message().c_str());
        return 1;
      }
    if (Status s(kiln_session_enable_profiling(session.get(), 1)); !s.ok()) {
      std::fprintf(stderr, "error: %s\n", s.message().c_str());
      return 1;
    }
    for (int i = 0; i < runs; ++i)
      if (Status s = session.run(inViews, outViews); !s.ok()) {
        std::fprintf(stderr, "error: %s\n", s.message().c_str());
        return 1;
      }
    size_t n = kiln_session_profile(session.get(), nullptr, nullptr, 0);
    std::vector<double> kms(n);
    std::vector<int64_t> calls(n);
    kiln_session_profile(session.get(), kms.data(), calls.data(), n);
    std::vector<std::string> lines;
    std::istringstream table(model.kernels());
    for (std::string line; std::getline(table, line);)
      lines.push_back(line);
    double total = 0;
    for (double v : kms)
      total += v;
    for (size_t k = 0; k < n; ++k)
      std::printf("  %5.1f%% %9.4f ms  %s\n", total > 0 ? 100 * kms[k] / total : 0.0,
                  kms[k] / runs, k < lines.size() ? lines[k].substr(0, 160).c_str() : "?");
    std::printf("kernels: %.4f ms per run in %zu kernels\n", total / runs, n);
    if (Status s(kiln_session_enable_profiling(session.get(), 0)); !s.ok())
      return 1;
  }
  std::vector<double> ms;
  for (int i = 0; i < warmup + runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    if (Status s = session.run(inViews, outViews); !s.ok()) {
      std::fprintf(stderr, "error: %s\n", s.message().c_str());
      return 1;
    }
    auto t1 = std::chrono::steady_clock::now();
    if (i >= warmup)
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double q) { return ms[std::min(ms.size() - 1, (size_t)(q * ms.size()))]; };
  std::printf("median_ms=%.6f p10_ms=%.6f p90_ms=%.6f runs=%d\n", pct(0.5), pct(0.1), pct(0.9),
              runs);
  return 0;
}

int train(const std::string &so, const std::vector<std::string> &flags, int steps) {
  Model model;
  Trainer trainer;
  if (Status s = Model::load(so, model); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  if (Status s = Trainer::create(model, trainer); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  std::map<std::string, std::string> files;
  for (const auto &f : flags)
    if (auto eq = f.find('='); eq != std::string::npos)
      files[f.substr(0, eq)] = f.substr(eq + 1);
  std::vector<HostTensor> ins;
  for (const auto &d : trainer.inputs()) {
    HostTensor t;
    std::string error;
    auto it = files.find(d.name);
    if (it == files.end() || !readTensorFile(it->second, t, error)) {
      std::fprintf(stderr, "error: input '%s': %s\n", d.name,
                   it == files.end() ? "no --input" : error.c_str());
      return 1;
    }
    t.name = d.name;
    ins.push_back(std::move(t));
  }
  std::vector<kiln_tensor_t> views;
  for (auto &t : ins)
    views.push_back(t.view(true));
  for (int i = 1; i <= steps; ++i) {
    double loss = 0;
    if (Status s = trainer.step(views, loss); !s.ok()) {
      std::fprintf(stderr, "error: step %d: %s\n", i, s.message().c_str());
      return 1;
    }
    std::printf("step=%d loss=%.9g\n", i, loss);
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 3)
    return usage();
  std::string command = argv[1], target = argv[2], outDir = ".";
  std::vector<std::string> inputs;
  int jobs = 8, warmup = 20, runs = 100, steps = 10;
  unsigned testSeconds = 30;
  bool perKernel = false, random = false;
  Shapes shapes;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--input") inputs.push_back(next());
    else if (a == "--out") outDir = next();
    else if (a == "--jobs") jobs = std::max(1, std::atoi(next().c_str()));
    else if (a == "--test-seconds") testSeconds = std::max(1, std::atoi(next().c_str()));
    else if (a == "--warmup") warmup = std::max(0, std::atoi(next().c_str()));
    else if (a == "--runs") runs = std::max(1, std::atoi(next().c_str()));
    else if (a == "--steps") steps = std::max(1, std::atoi(next().c_str()));
    else if (a == "--per-kernel") perKernel = true;
    else if (a == "--random") random = true;
    else if (a == "--shape") {
      // NAME=D0xD1... for a random input with dynamic dimensions.
      std::string flag = next();
      auto eq = flag.find('=');
      if (eq == std::string::npos)
        return usage();
      std::vector<int64_t> dims;
      std::stringstream rest(flag.substr(eq + 1));
      for (std::string d; std::getline(rest, d, 'x');)
        dims.push_back(std::max(0L, std::atol(d.c_str())));
      shapes[flag.substr(0, eq)].push_back(dims);
    } else return usage();
  }
  if (command == "conformance")
    return runConformance(target, jobs, testSeconds);
  if (command == "train")
    return train(target, inputs, steps);
  if (command == "run" || command == "bench" || command == "device")
    return runOrBench(command, target, inputs, outDir, warmup, runs, perKernel, random, shapes);
  return usage();
}

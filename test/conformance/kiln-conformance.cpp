//===- kiln-conformance.cpp - the ONNX backend test suite runner ----------===//
//
// For every test folder of the given suites: compile model.onnx to a CPU
// artifact, or a CUDA one (--target cuda: run by whatever driver
// KILN_CUDA_DRIVER names, the PTX emulator in CI, and compiled for sm_90a
// too), in a forked child, so a crash or hang is a result, not the end
// of the run; run it on every test_data_set_*, and compare each output at
// ONNX's tolerances. Prints one line per failing test with its category and
// `<suite>: N passed, M failed` per suite. With --ratchet, exits 1 when a
// test listed as passing fails; --update-ratchet rewrites that list.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Artifact/Compiler.h"
#include "kiln/Lowering/OnnxToKiln/OnnxImporter.h"
#include "DataSets.h"
#include "kiln/runtime.hpp"
#include "kiln/tensor_io.hpp"

#include <algorithm>
#include <iterator>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

using namespace kiln::conformance;

// Child exit codes: how a test ended.
enum Outcome : int {
  Pass = 0,
  PassFrozen = 1, // passed with integer inputs compiled in (--const-input-fallback, CUDA)
  Unsupported = 10,
  CompileError = 11,
  WrongResult = 12,
  RunError = 13,
};

/// Integer or tiny (<= 8 values) inputs that hold the same value in every
/// data set: the shape arguments (Reshape's shape, axes, OneHot's depth,
/// Resize's scales...) that tests feed as graph inputs.
/// Maps input position => name.
std::map<size_t, std::string> constantIntegerInputs(const std::string &testDir) {
  std::map<size_t, std::string> out;
  auto sets = listDir(testDir, "test_data_set_");
  if (sets.empty())
    return out;
  // Data files may leave the name empty: fall back to the graph's inputs.
  auto graphInputs = kiln::onnxGraphInputNames(testDir + "/model.onnx");
  for (size_t i = 0;; ++i) {
    std::string file = "/input_" + std::to_string(i) + ".pb";
    if (!exists(testDir + "/" + sets[0] + file))
      break;
    kiln::HostTensor t;
    std::string error;
    if (!kiln::readTensorFile(testDir + "/" + sets[0] + file, t, error))
      continue;
    if (t.name.empty() && i < graphInputs.size())
      t.name = graphInputs[i];
    if (t.name.empty())
      continue;
    bool integer = t.dtype == KILN_DTYPE_I64 || t.dtype == KILN_DTYPE_I32;
    if (!integer && t.numElements() > 8) // data, not a parameter
      continue;
    std::string bytes = readFile(testDir + "/" + sets[0] + file);
    bool same = std::all_of(sets.begin(), sets.end(), [&](const std::string &s) {
      return readFile(testDir + "/" + s + file) == bytes;
    });
    if (same)
      out[i] = t.name;
  }
  return out;
}

/// What a run does with each test (the command line's --target ...).
struct Mode {
  std::string target = "cpu"; // cpu | cuda
  bool compileOnly = false;   // cuda: PTX for sm_80 and sm_90a, checked by ptxas
  std::string ptxas;          // ptxas to run on the PTX ("" = none)
  std::string keep;           // cuda: also keep <keep>/<suite>__<test>/model.so
  bool constFallback = false; // retry with integer inputs compiled in
};

/// ptxas -arch=ARCH FILE; false (its messages on stderr) when it refuses.
bool assemble(const std::string &ptxas, const std::string &arch, const std::string &file) {
  std::fflush(stderr);
  std::string cmd = "'" + ptxas + "' -arch=" + arch + " '" + file + "' -o /dev/null 1>&2";
  if (std::system(cmd.c_str()) == 0)
    return true;
  std::fprintf(stderr, "ptxas -arch=%s rejected the PTX\n", arch.c_str());
  return false;
}

/// The CUDA compile-only checks, after the sm_80 PTX compiled with `opts`:
/// ptxas on it, the sm_90a PTX and ptxas on that, and the kept artifact.
[[noreturn]] void checkCuda(kiln::CompileOptions opts, const Mode &mode, const std::string &name,
                            const std::string &workDir, const std::set<size_t> &frozen) {
  if (!mode.ptxas.empty() && !assemble(mode.ptxas, "sm_80", opts.output))
    exit(CompileError);
  opts.gpuArch = "sm_90a";
  opts.output = workDir + "/sm_90a.ptx";
  if (kiln::compileModel(opts) != 0 ||
      (!mode.ptxas.empty() && !assemble(mode.ptxas, "sm_90a", opts.output)))
    exit(CompileError);
  if (!mode.keep.empty()) {
    // For kiln-gpu-check on a GPU machine: the sm_80 artifact, the test's
    // data sets, and which inputs were compiled in.
    std::string dir = mode.keep + "/" + name.substr(0, name.find('/')) + "__" +
                      name.substr(name.find('/') + 1);
    ::mkdir(dir.c_str(), 0755);
    opts.gpuArch = "sm_80";
    opts.emit = "so";
    opts.output = dir + "/model.so";
    if (kiln::compileModel(opts) != 0)
      exit(CompileError);
    std::ofstream f(dir + "/frozen");
    for (size_t i : frozen)
      f << i << "\n";
  }
  exit(frozen.empty() ? Pass : PassFrozen);
}

/// The body of one test, in a child process.
[[noreturn]] void runTest(const std::string &testDir, const std::string &workDir,
                          const Tolerance &tol, const Mode &mode, const std::string &name) {
  std::string so = workDir + "/model.so";
  kiln::CompileOptions opts;
  opts.input = testDir + "/model.onnx";
  opts.output = so;
  opts.target = mode.target;
  if (mode.target == "cuda" && mode.compileOnly) {
    opts.emit = "ptx";
    opts.output = workDir + "/sm_80.ptx";
  }
  std::set<size_t> frozen;
  if (kiln::compileModel(opts) != 0) {
    std::fflush(stderr);
    std::string text = readFile(workDir + "/stderr");
    if (text.find("unsupported node") != std::string::npos)
      exit(Unsupported);
    // Shape arguments given as graph inputs are read at run time; with
    // --const-input-fallback they are compiled in instead when that fails
    // (kiln compile --const-input). CUDA artifacts take no sizes read from
    // data yet (their buffers are sized at load), and their host program
    // reads no device memory: a CUDA compile refused for either retries
    // with them compiled in.
    auto ints = constantIntegerInputs(testDir);
    bool retry = (mode.constFallback && text.find("known at compile time") != std::string::npos) ||
                 (mode.target == "cuda" &&
                  (text.find("which CUDA artifacts do not take yet") != std::string::npos ||
                   text.find("only kernels may read device memory") != std::string::npos));
    if (!retry || ints.empty())
      exit(CompileError);
    std::string first = testDir + "/" + listDir(testDir, "test_data_set_")[0];
    for (const auto &[index, name] : ints) {
      opts.constInputs[name] = first + "/input_" + std::to_string(index) + ".pb";
      frozen.insert(index);
    }
    std::fprintf(stderr, "retrying with constant inputs compiled in\n");
    if (kiln::compileModel(opts) != 0)
      exit(CompileError);
  }
  if (mode.target == "cuda" && mode.compileOnly)
    checkCuda(opts, mode, name, workDir, frozen);
  kiln::Model model;
  kiln::Status s = kiln::Model::load(so, model);
  if (!s.ok()) {
    std::fprintf(stderr, "load: %s\n", s.message().c_str());
    exit(RunError);
  }
  kiln::Session session;
  if (!kiln::Session::create(model, session, 1).ok())
    exit(RunError);
  for (const auto &ds : listDir(testDir, "test_data_set_"))
    switch (runDataSet(session, model, testDir + "/" + ds, tol, frozen)) {
    case DataSetResult::Ok: break;
    case DataSetResult::Wrong: exit(WrongResult);
    case DataSetResult::RunFailed: exit(RunError);
    }
  // CUDA run on the emulator: the artifact's own compile assembled its
  // sm_80 kernels (ptxas, when the toolkit is here); Hopper's sm_90a
  // kernels (wgmma, TMA) are other code, compiled here, and assembled
  // with --ptxas.
  if (mode.target == "cuda") {
    opts.emit = "ptx";
    opts.gpuArch = "sm_90a";
    opts.output = workDir + "/sm_90a.ptx";
    if (kiln::compileModel(opts) != 0 ||
        (!mode.ptxas.empty() && !assemble(mode.ptxas, "sm_90a", opts.output)))
      exit(CompileError);
  }
  exit(frozen.empty() ? Pass : PassFrozen);
}

struct Running {
  pid_t pid;
  size_t index;
  std::chrono::steady_clock::time_point start;
  std::string workDir;
};

struct Result {
  std::string category; // empty = passed
  std::string detail;
  bool frozen = false;  // passed with integer inputs compiled in
};

std::string firstErrorLine(const std::string &path) {
  std::ifstream in(path);
  std::string line, all;
  while (std::getline(in, line)) {
    if (line.empty())
      continue;
    // Drop the long file path prefix of compiler diagnostics.
    auto onnx = line.find("model.onnx: ");
    if (onnx != std::string::npos)
      line = line.substr(onnx + 12);
    if (all.empty())
      all = line;
    else if (all.find("unsupported node") != std::string::npos)
      return all + " " + line.substr(line.find_first_not_of(' '));
    else
      break;
  }
  return all.substr(0, 300);
}

Result classify(int status, bool timedOut, const std::string &workDir) {
  if (timedOut)
    return {"timeout", ""};
  std::string detail = firstErrorLine(workDir + "/stderr");
  if (WIFSIGNALED(status))
    return {"crash", std::string("signal ") + strsignal(WTERMSIG(status))};
  switch (WEXITSTATUS(status)) {
  case Pass: return {"", ""};
  case PassFrozen: return {"", detail, true};
  case Unsupported: return {"unsupported op", detail};
  case CompileError: return {"compile error", detail};
  case WrongResult: return {"wrong result", detail};
  default: return {"run error", detail};
  }
}

int usage() {
  std::fprintf(stderr,
               "usage: kiln-conformance --data DIR [--suite NAME]... [--jobs N] [--timeout S]\n"
               "         [--filter SUBSTR] [--every N] [--ratchet passing.txt [--update-ratchet]]\n"
               "         [--out-of-scope FILE] [--pending FILE] [--tolerances FILE] [--work DIR]\n"
               "         [--max-rss-mb N] [--target cpu|cuda] [--compile-only]\n"
               "         [--ptxas PATH] [--keep DIR] [--const-input-fallback]\n");
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  std::string data = "/usr/share/libonnx-testdata/data", ratchet, outOfScopeFile, tolFile,
              pendingFile,
              filter, work = "/tmp/kiln-conformance." + std::to_string(getpid());
  std::vector<std::string> suites;
  int jobs = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)), timeoutS = 120, every = 1;
  Mode mode;
  long maxRssMb = 0; // 0 = not enforced (sanitizers inflate RSS)
  bool update = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--data") data = next();
    else if (a == "--suite") suites.push_back(next());
    else if (a == "--jobs") jobs = std::max(1, std::atoi(next().c_str()));
    else if (a == "--timeout") timeoutS = std::max(1, std::atoi(next().c_str()));
    else if (a == "--filter") filter = next();
    else if (a == "--every") every = std::max(1, std::atoi(next().c_str()));
    else if (a == "--ratchet") ratchet = next();
    else if (a == "--update-ratchet") update = true;
    else if (a == "--out-of-scope") outOfScopeFile = next();
    else if (a == "--pending") pendingFile = next();
    else if (a == "--tolerances") tolFile = next();
    else if (a == "--work") work = next();
    else if (a == "--max-rss-mb") maxRssMb = std::atol(next().c_str());
    else if (a == "--target") mode.target = next();
    else if (a == "--compile-only") mode.compileOnly = true;
    else if (a == "--ptxas") mode.ptxas = next();
    else if (a == "--keep") mode.keep = next();
    else if (a == "--const-input-fallback") mode.constFallback = true;
    else return usage();
  }
  if (mode.target != "cpu" && mode.target != "cuda")
    return usage();
  // CUDA checks the CPU's passing list: each test must compile (and
  // assemble) or, run (on a GPU or the PTX emulator), match; nothing is
  // listed anew.
  bool cudaCheck = mode.target == "cuda" && mode.compileOnly;
  if (mode.target == "cuda" && update) {
    std::fprintf(stderr, "--update-ratchet goes with the CPU run\n");
    return 2;
  }
  if (!mode.keep.empty())
    ::mkdir(mode.keep.c_str(), 0755);
  if (suites.empty())
    suites = {"node", "pytorch-converted", "pytorch-operator", "simple"};
  ::mkdir(work.c_str(), 0755);

  // Per-test relaxations: "suite/test rtol atol  # reason".
  std::map<std::string, Tolerance> tolerances;
  if (!tolFile.empty())
    for (const auto &line : readList(tolFile)) {
      std::istringstream ls(line);
      std::string name;
      Tolerance t;
      ls >> name >> t.rtol >> t.atol;
      tolerances[name] = t;
    }
  std::set<std::string> outOfScope;
  if (!outOfScopeFile.empty())
    for (const auto &line : readList(outOfScopeFile))
      outOfScope.insert(line.substr(0, line.find_first_of(" \t")));

  // Listed as passing, but known not to on this target yet: reported, not
  // a regression.
  std::set<std::string> pending;
  if (!pendingFile.empty())
    for (const auto &line : readList(pendingFile))
      pending.insert(line.substr(0, line.find_first_of(" \t")));
  std::set<std::string> ratchetList;
  if (!ratchet.empty())
    for (const auto &l : readList(ratchet))
      ratchetList.insert(l);
  std::vector<std::string> tests; // suite/test
  for (const auto &suite : suites)
    for (const auto &t : listDir(data + "/" + suite, "test_"))
      if (exists(data + "/" + suite + "/" + t + "/model.onnx") &&
          (filter.empty() || (suite + "/" + t).find(filter) != std::string::npos) &&
          (mode.target != "cuda" || ratchetList.count(suite + "/" + t)))
        tests.push_back(suite + "/" + t);
  // A deterministic sample (every Nth test): the sanitizer builds' CUDA
  // runs, which would otherwise take most of CI's time.
  if (every > 1) {
    std::vector<std::string> sample;
    for (size_t i = 0; i < tests.size(); i += every)
      sample.push_back(tests[i]);
    tests = std::move(sample);
  }

  std::vector<Result> results(tests.size());
  std::vector<Running> running;
  long peakRssKb = 0; // of one test's child: compile + run
  std::string peakTest;
  size_t next = 0;
  while (next < tests.size() || !running.empty()) {
    while (next < tests.size() && (int)running.size() < jobs) {
      std::string dir = work + "/" + std::to_string(next);
      ::mkdir(dir.c_str(), 0755);
      std::fflush(stdout);
      pid_t pid = fork();
      if (pid == 0) {
        std::freopen((dir + "/stderr").c_str(), "w", stderr);
        std::freopen("/dev/null", "w", stdout);
        const std::string &name = tests[next];
        Tolerance tol = tolerances.count(name) ? tolerances[name] : Tolerance();
        runTest(data + "/" + name, dir, tol, mode, name);
      }
      running.push_back({pid, next, std::chrono::steady_clock::now(), dir});
      ++next;
    }
    int status;
    struct rusage usage;
    pid_t done = wait4(-1, &status, WNOHANG, &usage);
    if (done <= 0) {
      usleep(2000);
      auto now = std::chrono::steady_clock::now();
      for (auto it = running.begin(); it != running.end(); ++it)
        if (now - it->start > std::chrono::seconds(timeoutS)) {
          kill(it->pid, SIGKILL);
          waitpid(it->pid, &status, 0);
          results[it->index] = classify(status, true, it->workDir);
          running.erase(it);
          break;
        }
      continue;
    }
    auto it = std::find_if(running.begin(), running.end(),
                           [&](const Running &r) { return r.pid == done; });
    if (it == running.end())
      continue;
    results[it->index] = classify(status, false, it->workDir);
    if (usage.ru_maxrss > peakRssKb) {
      peakRssKb = usage.ru_maxrss;
      peakTest = tests[it->index];
    }
    if (maxRssMb > 0 && usage.ru_maxrss > maxRssMb * 1024 && results[it->index].category.empty())
      results[it->index] = {"memory", "peak RSS " + std::to_string(usage.ru_maxrss / 1024) +
                                          " MiB, over the " + std::to_string(maxRssMb) +
                                          " MiB limit"};
    std::string cleanup = "rm -rf '" + it->workDir + "'";
    (void)std::system(cleanup.c_str());
    running.erase(it);
  }
  (void)std::system(("rm -rf '" + work + "'").c_str());

  std::set<std::string> listed;
  if (!ratchet.empty())
    for (const auto &l : readList(ratchet))
      listed.insert(l);
  std::map<std::string, std::pair<int, int>> perSuite;
  std::map<std::string, int> perCategory;
  std::vector<std::string> regressions, newlyPassing, passing;
  int frozenPasses = 0;
  int scopedPass = 0, scopedTotal = 0;
  for (size_t i = 0; i < tests.size(); ++i) {
    const std::string &name = tests[i];
    std::string suite = name.substr(0, name.find('/'));
    const Result &r = results[i];
    bool inScope = !outOfScope.count(name);
    if (suite == "node" && inScope) {
      ++scopedTotal;
      scopedPass += r.category.empty();
    }
    if (r.category.empty()) {
      ++perSuite[suite].first;
      frozenPasses += r.frozen;
      if (r.frozen)
        std::printf("FROZEN %s: %s\n", name.c_str(), r.detail.c_str());
      passing.push_back(name);
      if (!ratchet.empty() && !listed.count(name))
        newlyPassing.push_back(name);
      continue;
    }
    ++perSuite[suite].second;
    ++perCategory[inScope ? r.category : "out of scope"];
    std::printf("FAIL %s: %s%s%s%s\n", name.c_str(), r.category.c_str(),
                inScope ? "" : " (out of scope)", r.detail.empty() ? "" : ": ",
                r.detail.c_str());
    if (listed.count(name) && pending.count(name))
      std::printf("PENDING %s: listed in %s, not on this target yet\n", name.c_str(),
                  pendingFile.c_str());
    else if (listed.count(name))
      regressions.push_back(name);
  }
  std::printf("\nfailures by category:");
  for (const auto &[cat, n] : perCategory)
    std::printf(" %s %d;", cat.c_str(), n);
  std::printf("\nnode tests in scope: %d of %d pass (%.1f%%)\n", scopedPass, scopedTotal,
              scopedTotal ? 100.0 * scopedPass / scopedTotal : 0.0);
  std::printf("of the passing tests, %d needed constant inputs compiled in "
              "(--const-input)\n", frozenPasses);
  if (!newlyPassing.empty())
    std::printf("%zu tests pass that %s does not list yet (run with --update-ratchet)\n",
                newlyPassing.size(), ratchet.c_str());
  for (const auto &r : regressions)
    std::printf("REGRESSION %s: listed in %s but fails\n", r.c_str(), ratchet.c_str());
  if (update && !ratchet.empty()) {
    std::ofstream out(ratchet);
    out << "# Conformance tests that pass on the CPU; CI fails when one of them stops\n"
           "# passing. Regenerate with kiln-conformance --ratchet THIS --update-ratchet.\n";
    for (const auto &p : passing)
      out << p << "\n";
  }
  for (const auto &[suite, pf] : perSuite)
    std::printf("%s: %d passed, %d failed\n", suite.c_str(), pf.first, pf.second);
  int total = 0, failed = 0;
  for (const auto &[suite, pf] : perSuite) {
    total += pf.first;
    failed += pf.second;
  }
  std::printf("peak RSS of one test (compile and run, in-process): %ld MiB (%s)%s\n",
              peakRssKb / 1024, peakTest.c_str(),
              maxRssMb > 0 ? (", limit " + std::to_string(maxRssMb) + " MiB").c_str() : "");
  std::string how;
  if (cudaCheck)
    how = " (compile only" + std::string(mode.ptxas.empty() ? "" : ", ptxas") + " sm_80 and sm_90a)";
  else if (mode.target == "cuda")
    how = " (run; sm_90a compiled" + std::string(mode.ptxas.empty() ? ")" : ", ptxas)");
  std::printf("%s%s: %d passed, %d failed\n", mode.target.c_str(), how.c_str(), total, failed);
  return regressions.empty() ? 0 : 1;
}

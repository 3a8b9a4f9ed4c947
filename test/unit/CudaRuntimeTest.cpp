//===- CudaRuntimeTest.cpp - the CUDA backend against a fake driver -------===//
//
// A hand-made CUDA artifact (signature `target cuda`, PTX text, two kernels
// and a host program that launches them, as generated code will) runs on
// libkiln_fake_cuda.so: the tests read the driver calls it recorded.
//
//===----------------------------------------------------------------------===//

#include "kiln/runtime.hpp"

#include "CudaDriver.h"
#include "DevicePool.h"

#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {
const char *kSignature = "kiln-signature 1\ninput 1 x f32 1 4\noutput 1 y f32 1 4\narena 64\n"
                         "weights 0\ntarget cuda sm_80\n";
const char *kKernels = "k_scale\tnode 'mul' (Mul)\nk_again\tnode 'mul2' (Mul)\n";

/// Dynamic shared memory of the second kernel (0 but in one test).
uint32_t secondShared = 0;

/// When set, the second kernel also takes a TMA tensor map of x (as a
/// sm_90a matmul built with --gpu-loads=tma does), and it lands here.
bool askTensorMap = false;
void *tensorMap = nullptr, *mappedTensor = nullptr;

/// The generated host program's part: y = 2x, then y = 2y, on the device.
int32_t hostProgram(void **buffers, const kiln_artifact_host_t *host) {
  const uint32_t grid[3] = {2, 1, 1}, block[3] = {128, 1, 1};
  void *args1[] = {&buffers[1], &buffers[0]};
  if (host->launch(host->device, 0, grid, block, 0, args1))
    return 1;
  if (askTensorMap) {
    // f32 (7), 2-d: 4 x 1 elements, a 4 x 1 box, rows 16 bytes apart, no swizzle.
    const uint64_t desc[KILN_TENSOR_MAP_WORDS] = {7, 2, 4, 1, 0, 0, 0, 16, 0, 0, 0, 4, 1};
    mappedTensor = buffers[0];
    tensorMap = host->tensor_map(host->device, buffers[0], desc);
    if (!tensorMap)
      return 1;
  }
  void *args2[] = {&buffers[1], &buffers[1], &tensorMap};
  return host->launch(host->device, 1, grid, block, secondShared, args2);
}

struct Fake {
  void *lib;
  const char *(*log)();
  void (*reset)(int);
  void (*fail)(const char *, int);
  Fake() {
    setenv("KILN_CUDA_DRIVER", KILN_FAKE_CUDA_DRIVER, 1);
    lib = dlopen(KILN_FAKE_CUDA_DRIVER, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(lib);
    log = (const char *(*)())dlsym(lib, "fake_cuda_log");
    reset = (void (*)(int))dlsym(lib, "fake_cuda_reset");
    fail = (void (*)(const char *, int))dlsym(lib, "fake_cuda_fail");
    reset(1);
  }
  ~Fake() { dlclose(lib); }
  std::string calls() const { return log(); }
};

kiln::Status load(kiln::Model &model, const char *ptx = ".version 8.0\n.target sm_80\n") {
  kiln_artifact_static_t artifact{KILN_ARTIFACT_ABI_VERSION, kSignature, &hostProgram, nullptr,
                                  ptx, kKernels, nullptr, 0};
  return kiln::Model::loadStatic(artifact, "fake", model);
}

/// A session on the fake driver, with x = [1, 2, 3, 4] to run on.
struct FakeSession {
  Fake fake;
  kiln::Model model;
  kiln::Session session;
  float x[4] = {1, 2, 3, 4}, y[4] = {};
  int64_t four = 4;
  kiln_tensor_t in{"x", KILN_DTYPE_F32, 1, &four, x, 16};
  kiln_tensor_t out{"y", KILN_DTYPE_F32, 1, &four, y, 16};
  FakeSession() {
    REQUIRE(load(model).ok());
    REQUIRE(kiln::Session::create(model, session).ok());
  }
  kiln::Status run() { return session.run(&in, 1, &out, 1); }
};

/// The position of `what` in the log after `from` (npos when absent).
size_t find(const std::string &log, const std::string &what, size_t from = 0) {
  return log.find(what, from);
}

/// How many calls of the log name `what`.
size_t count(const std::string &log, const std::string &what) {
  size_t n = 0;
  for (size_t at = log.find(what); at != std::string::npos; at = log.find(what, at + 1))
    ++n;
  return n;
}
} // namespace

TEST_CASE("CUDA: a clear error without a driver or a device", "[cuda]") {
  kiln::Model model;
  REQUIRE(load(model).ok());
  CHECK(std::string(kiln_model_target(model.get())) == "cuda");
  setenv("KILN_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  kiln::Session session;
  kiln::Status s = kiln::Session::create(model, session);
  CHECK(s.code() == KILN_FAILED_PRECONDITION);
  CHECK(s.message().find("no CUDA driver: cannot load /nonexistent/libcuda.so.1") !=
        std::string::npos);
  Fake fake;
  fake.reset(0);
  s = kiln::Session::create(model, session);
  CHECK(s.code() == KILN_FAILED_PRECONDITION);
  CHECK(s.message().find("the driver sees no CUDA device") != std::string::npos);
}

TEST_CASE("CUDA: load, copy in, launch in order, copy out, graphs from the second run",
          "[cuda]") {
  Fake fake;
  kiln::Model model;
  REQUIRE(load(model).ok());
  kiln::Session session;
  REQUIRE(kiln::Session::create(model, session).ok());
  std::string setup = fake.calls();
  size_t p = 0;
  for (const char *call : {"cuInit", "cuDeviceGetCount", "cuDeviceGet", "cuDevicePrimaryCtxRetain",
                           "cuCtxSetCurrent", "cuStreamCreate", "cuModuleLoadDataEx",
                           "cuModuleGetFunction k_scale", "cuModuleGetFunction k_again",
                           "cuMemAlloc 16", "cuMemAlloc 16", "cuMemAlloc 64"}) {
    CAPTURE(call, setup);
    p = find(setup, call, p);
    REQUIRE(p != std::string::npos);
  }

  float x[4] = {1, 2, 3, 4}, y[4] = {0, 0, 0, 0};
  int64_t four = 4;
  kiln_tensor_t in{"x", KILN_DTYPE_F32, 1, &four, x, 16}, out{"y", KILN_DTYPE_F32, 1, &four, y, 16};
  fake.reset(1);
  REQUIRE(session.run(&in, 1, &out, 1).ok());
  CHECK(y[0] == 4); // 2 * 2 * x[0]: both kernels ran, on the right buffers
  std::string run1 = fake.calls();
  p = 0;
  for (const char *call : {"cuMemcpyHtoD 16", "cuLaunchKernel k_scale grid 2 block 128",
                           "cuLaunchKernel k_again grid 2 block 128", "cuMemcpyDtoH 16",
                           "cuStreamSynchronize"}) {
    CAPTURE(call, run1);
    p = find(run1, call, p);
    REQUIRE(p != std::string::npos);
  }
  CHECK(find(run1, "cuStreamBeginCapture") == std::string::npos);

  // The second run captures the launches into a graph, the third replays it.
  fake.reset(1);
  REQUIRE(session.run(&in, 1, &out, 1).ok());
  std::string run2 = fake.calls();
  CHECK(find(run2, "cuStreamBeginCapture") < find(run2, "cuStreamEndCapture"));
  CHECK(find(run2, "cuGraphInstantiate") < find(run2, "cuGraphLaunch"));
  fake.reset(1);
  REQUIRE(session.run(&in, 1, &out, 1).ok());
  std::string run3 = fake.calls();
  CHECK(find(run3, "cuGraphLaunch") != std::string::npos);
  CHECK(find(run3, "cuLaunchKernel") == std::string::npos);
  CHECK(find(run3, "cuMemcpyHtoD") < find(run3, "cuGraphLaunch"));

  // Releasing frees everything it made.
  fake.reset(1);
  session = kiln::Session();
  std::string teardown = fake.calls();
  CHECK(find(teardown, "cuGraphExecDestroy") != std::string::npos);
  CHECK(find(teardown, "cuMemFree") != std::string::npos);
  CHECK(find(teardown, "cuModuleUnload") != std::string::npos);
  CHECK(find(teardown, "cuDevicePrimaryCtxRelease") != std::string::npos);
}

TEST_CASE("CUDA: a run on tensors already in GPU memory copies device to device", "[cuda]") {
  Fake fake;
  kiln::Model model;
  REQUIRE(load(model).ok());
  kiln::Session session;
  REQUIRE(kiln::Session::create(model, session).ok());
  // The fake driver's device memory is host memory: these stand for
  // cudaMalloc'd buffers.
  float x[4] = {1, 2, 3, 4}, y[4] = {0, 0, 0, 0};
  int64_t four = 4;
  std::vector<kiln_tensor_t> in{{"x", KILN_DTYPE_F32, 1, &four, x, 16}},
      out{{"y", KILN_DTYPE_F32, 1, &four, y, 16}};
  fake.reset(1);
  REQUIRE(session.runDevice(in, out).ok());
  CHECK(y[3] == 16);
  std::string log = fake.calls();
  CHECK(find(log, "cuMemcpyDtoD 16") < find(log, "cuLaunchKernel k_scale"));
  CHECK(find(log, "cuMemcpyDtoD 16", find(log, "cuLaunchKernel k_again")) != std::string::npos);
  CHECK(find(log, "cuMemcpyHtoD") == std::string::npos);
  CHECK(find(log, "cuMemcpyDtoH") == std::string::npos);
  // Checked like any run.
  out[0].size_bytes = 8;
  kiln::Status bad = session.runDevice(in, out);
  CHECK(!bad.ok());
}

TEST_CASE("CUDA: the device pool hands a released block out again at once", "[cuda]") {
  Fake fake;
  std::string error;
  const kiln::rt::CudaDriver *driver = kiln::rt::cudaDriver(error);
  REQUIRE(driver);
  {
    kiln::rt::DevicePool pool(driver);
    fake.reset(1);
    // A loop's state of a changing size: each step's block released before
    // the next step asks; all go to one stream, so the block is reused
    // right away (one step's blocks, not one per step).
    void *first = pool.alloc(1000);
    REQUIRE(first);
    for (int step = 0; step < 5; ++step) {
      pool.release(first);
      void *next = pool.alloc(900 + step);
      CHECK(next == first);
      first = next;
    }
    // A live block is not handed out twice; one that would waste more than
    // half is not handed out for a small request.
    void *second = pool.alloc(1000);
    CHECK(second != first);
    pool.release(first);
    void *small = pool.alloc(100);
    CHECK(small != first);
    CHECK(count(fake.calls(), "cuMemAlloc") == 3);
  }
  // Every block is freed with the pool.
  CHECK(count(fake.calls(), "cuMemFree") == 3);
}

namespace {
/// A model whose host program reads a value from its input's data: the
/// repeat count n, computed before the run (kiln_model_output_dims, on
/// the host) and read from host->dims; and a value a kernel computed, read
/// back through host->read (a Loop's condition).
const char *kValueSignature = "kiln-signature 1\ninput 1 n i64 1 1\ninput 1 x f32 1 4\n"
                              "output 1 y f32 1 4\nhostvalues 0 1\narena 64\nweights 0\n"
                              "target cuda sm_80\n";
int64_t seenRepeats = -1, seenReadBack = -1;

int32_t valueDims(void **buffers, const kiln_artifact_host_t *, int64_t *values) {
  values[0] = *static_cast<const int64_t *>(buffers[0]);
  return 0;
}

int32_t repeatProgram(void **buffers, const kiln_artifact_host_t *host) {
  seenRepeats = host->dims[0];
  const uint32_t grid[3] = {1, 1, 1}, block[3] = {4, 1, 1};
  void *args[] = {&buffers[2], &buffers[1]};
  for (int64_t i = 0; i < seenRepeats; ++i)
    if (host->launch(host->device, 0, grid, block, 0, args))
      return 1;
  int64_t bits = 0;
  if (host->read(host->device, &bits, buffers[0], sizeof bits))
    return 1;
  seenReadBack = bits;
  return 0;
}
} // namespace

TEST_CASE("CUDA: a run on GPU inputs whose sizes or scalars come from their values", "[cuda]") {
  Fake fake;
  kiln_artifact_static_t artifact{KILN_ARTIFACT_ABI_VERSION, kValueSignature, &repeatProgram,
                                  nullptr, ".version 8.0\n.target sm_80\n", "k_scale\tnode 'm' (Mul)\n",
                                  nullptr, 0, &valueDims};
  kiln::Model model;
  REQUIRE(kiln::Model::loadStatic(artifact, "values", model).ok());
  kiln::Session session;
  REQUIRE(kiln::Session::create(model, session).ok());
  // The fake driver's device memory is host memory: these stand for
  // cudaMalloc'd buffers.
  int64_t n = 3, one = 1, four = 4;
  float x[4] = {1, 2, 3, 4}, y[4] = {};
  std::vector<kiln_tensor_t> in{{"n", KILN_DTYPE_I64, 1, &one, &n, 8},
                                {"x", KILN_DTYPE_F32, 1, &four, x, 16}},
      out{{"y", KILN_DTYPE_F32, 1, &four, y, 16}};
  fake.reset(1);
  seenRepeats = seenReadBack = -1;
  REQUIRE(session.runDevice(in, out).ok());
  // The inputs came down for kiln_model_output_dims, before any launch.
  std::string log = fake.calls();
  size_t launch = find(log, "cuLaunchKernel k_scale");
  CHECK(find(log, "cuMemcpyDtoH 8") < launch);
  CHECK(find(log, "cuMemcpyDtoH 16") < launch);
  CHECK(seenRepeats == 3);
  CHECK(find(log, "cuLaunchKernel k_scale", find(log, "cuLaunchKernel k_scale", launch + 1) + 1) !=
        std::string::npos);
  // host->read: after the launches, on the stream.
  CHECK(seenReadBack == 3);
  CHECK(find(log, "cuMemcpyDtoH 8", launch) != std::string::npos);

  // A run that read back is not captured as a graph, however often it runs.
  fake.reset(1);
  REQUIRE(session.runDevice(in, out).ok());
  REQUIRE(session.runDevice(in, out).ok());
  CHECK(find(fake.calls(), "cuStreamBeginCapture") == std::string::npos);
}

#ifdef KILN_TEST_HAVE_ARTIFACT
TEST_CASE("CUDA: a CPU session has no device run", "[cuda]") {
  kiln::Model model;
  REQUIRE(kiln::Model::load(KILN_TEST_ARTIFACT_DIR "/mlp.so", model).ok());
  kiln::Session session;
  REQUIRE(kiln::Session::create(model, session).ok());
  std::vector<kiln_tensor_t> in, out;
  kiln::Status s = session.runDevice(in, out);
  CHECK(s.code() == KILN_FAILED_PRECONDITION);
  CHECK(s.message().find("needs a CUDA artifact") != std::string::npos);
}
#endif

TEST_CASE("CUDA: graphs can be turned off", "[cuda]") {
  Fake fake;
  kiln::Model model;
  REQUIRE(load(model).ok());
  kiln_session_options_t options{};
  options.disable_cuda_graphs = 1;
  kiln_session_t *raw = nullptr;
  REQUIRE(kiln::Status(kiln_session_create(model.get(), &options, &raw)).ok());
  float x[4] = {1, 2, 3, 4}, y[4];
  int64_t four = 4;
  kiln_tensor_t in{"x", KILN_DTYPE_F32, 1, &four, x, 16}, out{"y", KILN_DTYPE_F32, 1, &four, y, 16};
  for (int i = 0; i < 3; ++i)
    REQUIRE(kiln::Status(kiln_session_run(raw, &in, 1, &out, 1)).ok());
  std::string log = fake.calls();
  CHECK(find(log, "cuStreamBeginCapture") == std::string::npos);
  size_t launches = 0;
  for (size_t p = find(log, "cuLaunchKernel"); p != std::string::npos;
       p = find(log, "cuLaunchKernel", p + 1))
    ++launches;
  CHECK(launches == 6);
  kiln_session_release(raw);
}

TEST_CASE("CUDA: driver errors become statuses that say what failed", "[cuda]") {
  Fake fake;
  kiln::Model model;
  kiln::Session session;
  // The JIT's error log is carried into the status.
  REQUIRE(load(model, ".version 8.0\nBROKEN\n").ok());
  kiln::Status s = kiln::Session::create(model, session);
  CHECK(s.code() == KILN_INVALID_ARGUMENT);
  CHECK(s.message().find("cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX") != std::string::npos);
  CHECK(s.message().find("ptxas fatal: unknown instruction 'BROKEN'") != std::string::npos);

  // Out of device memory at load.
  kiln::Model good;
  REQUIRE(load(good).ok());
  fake.reset(1);
  fake.fail("cuMemAlloc", 2);
  s = kiln::Session::create(good, session);
  CHECK(s.code() == KILN_RESOURCE_EXHAUSTED);
  CHECK(s.message().find("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory) for 16 bytes") !=
        std::string::npos);

  // A failing launch fails the run, naming the call.
  fake.reset(1);
  REQUIRE(kiln::Session::create(good, session).ok());
  fake.fail("cuLaunchKernel", 700);
  float x[4] = {1, 2, 3, 4}, y[4];
  int64_t four = 4;
  kiln_tensor_t in{"x", KILN_DTYPE_F32, 1, &four, x, 16}, out{"y", KILN_DTYPE_F32, 1, &four, y, 16};
  s = session.run(&in, 1, &out, 1);
  CHECK(s.code() == KILN_INTERNAL);
  CHECK(s.message().find("cuLaunchKernel: CUDA_ERROR_UNKNOWN") != std::string::npos);
}

#ifdef KILN_TEST_HAVE_CUDA_ARTIFACT
/// The kernel table's names, in order.
std::vector<std::string> kernelNames(const kiln::Model &model) {
  std::vector<std::string> names;
  std::string table = kiln_model_kernels(model.get());
  for (size_t p = 0; p < table.size();) {
    size_t end = table.find('\n', p);
    std::string line = table.substr(p, end - p);
    names.push_back(line.substr(0, line.find('\t')));
    p = end == std::string::npos ? table.size() : end + 1;
  }
  return names;
}

TEST_CASE("CUDA: a compiled model launches every kernel of its table, in order", "[cuda]") {
  Fake fake;
  kiln::Model model;
  // `kiln compile examples/mlp/model.onnx --target=cuda` (test/unit/CMakeLists.txt).
  REQUIRE(kiln::Model::load(KILN_TEST_ARTIFACT_DIR "/mlp_cuda.so", model).ok());
  CHECK(std::string(kiln_model_target(model.get())) == "cuda");
  auto names = kernelNames(model);
  REQUIRE(names.size() >= 3);
  kiln::Session session;
  REQUIRE(kiln::Session::create(model, session).ok());
  std::string setup = fake.calls();
  for (const auto &name : names)
    CHECK(find(setup, "cuModuleGetFunction " + name) != std::string::npos);

  std::vector<float> x(4 * 64, 0.5f), y(4 * 10);
  int64_t xs[] = {4, 64}, ys[] = {4, 10};
  kiln_tensor_t in{"input", KILN_DTYPE_F32, 2, xs, x.data(), x.size() * 4};
  kiln_tensor_t out{"output", KILN_DTYPE_F32, 2, ys, y.data(), y.size() * 4};
  fake.reset(1);
  REQUIRE(session.run(&in, 1, &out, 1).ok());
  std::string run = fake.calls();
  size_t p = find(run, "cuMemcpyHtoD");
  REQUIRE(p != std::string::npos);
  for (const auto &name : names) {
    CAPTURE(name, run);
    p = find(run, "cuLaunchKernel " + name + " grid ", p);
    REQUIRE(p != std::string::npos);
  }
  CHECK(find(run, "cuMemcpyDtoH", p) != std::string::npos);

  // The first failed launch ends the run: nothing more is launched.
  kiln::Session fresh;
  REQUIRE(kiln::Session::create(model, fresh).ok());
  fake.reset(1);
  fake.fail("cuLaunchKernel", 700);
  kiln::Status s = fresh.run(&in, 1, &out, 1);
  CHECK(s.code() == KILN_INTERNAL);
  std::string failed = fake.calls();
  size_t first = find(failed, "cuLaunchKernel");
  CHECK(first != std::string::npos);
  CHECK(find(failed, "cuLaunchKernel", first + 1) == std::string::npos);
}
#endif

#ifdef KILN_TEST_HAVE_CUDA_ARTIFACT
TEST_CASE("CUDA: machine code first, the PTX when the GPU has another arch", "[cuda]") {
  Fake fake;
  kiln::Model model;
  REQUIRE(kiln::Model::load(KILN_TEST_ARTIFACT_DIR "/mlp_cuda.so", model).ok());
  void *lib = dlopen(KILN_TEST_ARTIFACT_DIR "/mlp_cuda.so", RTLD_NOW | RTLD_LOCAL);
  REQUIRE(lib);
  bool hasCubin = dlsym(lib, "kiln_artifact_cubin") != nullptr; // ptxas at build time
  dlclose(lib);
  kiln::Session session;
  REQUIRE(kiln::Session::create(model, session).ok());
  std::string log = fake.calls();
  if (hasCubin) {
    CHECK(find(log, "cuModuleLoadDataEx_cubin") != std::string::npos);
    CHECK(find(log, "cuModuleLoadDataEx\n") == std::string::npos); // no JIT
    fake.reset(1);
    fake.fail("cuModuleLoadDataEx_cubin", 209); // CUDA_ERROR_NO_BINARY_FOR_GPU
    kiln::Session other;
    REQUIRE(kiln::Session::create(model, other).ok());
    log = fake.calls();
    CHECK(find(log, "cuModuleLoadDataEx_cubin") < find(log, "cuModuleLoadDataEx\n"));
  } else {
    CHECK(find(log, "cuModuleLoadDataEx") != std::string::npos);
  }
}
#endif

#ifdef KILN_TEST_HAVE_CUDA_ARTIFACT
TEST_CASE("CUDA: per-kernel profiles time each launch with events", "[cuda]") {
  Fake fake;
  kiln::Model model;
  REQUIRE(kiln::Model::load(KILN_TEST_ARTIFACT_DIR "/mlp_cuda.so", model).ok());
  size_t numKernels = kernelNames(model).size();
  kiln::Session session;
  REQUIRE(kiln::Session::create(model, session).ok());
  REQUIRE(kiln::Status(kiln_session_enable_profiling(session.get(), 1)).ok());
  std::vector<float> x(4 * 64, 0.5f), y(4 * 10);
  int64_t xs[] = {4, 64}, ys[] = {4, 10};
  kiln_tensor_t in{"input", KILN_DTYPE_F32, 2, xs, x.data(), x.size() * 4};
  kiln_tensor_t out{"output", KILN_DTYPE_F32, 2, ys, y.data(), y.size() * 4};
  for (int i = 0; i < 3; ++i) // graphs would start at the second run: not while profiling
    REQUIRE(session.run(&in, 1, &out, 1).ok());
  std::vector<double> ms(numKernels);
  std::vector<int64_t> calls(numKernels);
  REQUIRE(kiln_session_profile(session.get(), ms.data(), calls.data(), numKernels) == numKernels);
  for (size_t k = 0; k < numKernels; ++k) {
    CAPTURE(k);
    CHECK(calls[k] == 3);
    CHECK(ms[k] == Approx(3 * 0.25));
  }
  std::string log = fake.calls();
  CHECK(find(log, "cuStreamBeginCapture") == std::string::npos);
  CHECK(find(log, "cuEventRecord") != std::string::npos);
}
#endif

#ifdef KILN_TEST_HAVE_CUDA_TRAIN_ARTIFACT

TEST_CASE("CUDA: a trainer's parameters, state and gradients stay on the device", "[cuda]") {
  Fake fake;
  kiln::Model model;
  REQUIRE(kiln::Model::load(KILN_TEST_ARTIFACT_DIR "/mlp_train_cuda.so", model).ok());
  kiln_trainer_t *trainer = nullptr;
  REQUIRE(kiln::Status(kiln_trainer_create(model.get(), nullptr, &trainer)).ok());
  // Zero data and labels (class 0) of the step's shapes.
  std::vector<std::vector<uint8_t>> data;
  std::vector<kiln_tensor_t> in;
  for (size_t i = 0; i < kiln_trainer_num_inputs(trainer); ++i) {
    kiln_tensor_desc_t d;
    REQUIRE(kiln::Status(kiln_trainer_input(trainer, i, &d)).ok());
    data.emplace_back(d.size_bytes, 0);
    in.push_back({d.name, d.dtype, d.rank, d.shape, data.back().data(), d.size_bytes});
  }
  double loss = 0;
  fake.reset(1); // from here on: the steps' calls, not the weights' upload
  REQUIRE(kiln::Status(kiln_trainer_step(trainer, in.data(), in.size(), &loss)).ok());
  size_t firstUploads = count(fake.calls(), "cuMemcpyHtoD ");
  fake.reset(1);
  REQUIRE(kiln::Status(kiln_trainer_step(trainer, in.data(), in.size(), &loss)).ok());
  std::string log = fake.calls();
  // Each kept input (parameters, momentum, the step counter) takes its
  // output on the device; only the data, the label and the learning rate
  // go up; the gradients stay there too.
  size_t kept = count(log, "cuMemcpyDtoD ");
  size_t params = kiln_trainer_num_params(trainer);
  size_t inputs = kiln_model_num_inputs(model.get()), outputs = kiln_model_num_outputs(model.get());
  CHECK(kept == inputs - kiln_trainer_num_inputs(trainer) - 1); // all but data and the rate
  CHECK(kept > 2 * params - 1);
  CHECK(count(log, "cuMemcpyHtoD ") == firstUploads - kept);
  CHECK(count(log, "cuMemcpyDtoH ") == outputs - kept - params);
  CHECK(find(log, "cuMemcpyDtoD ") > find(log, "cuLaunchKernel"));
  // Asking for a parameter or a gradient fetches them, once.
  fake.reset(1);
  kiln_tensor_desc_t desc;
  const void *value = nullptr;
  REQUIRE(kiln::Status(kiln_trainer_param(trainer, 0, &desc, &value)).ok());
  REQUIRE(kiln::Status(kiln_trainer_param(trainer, 1, &desc, &value)).ok());
  CHECK(count(fake.calls(), "cuMemcpyDtoH ") == kept);
  fake.reset(1);
  REQUIRE(kiln::Status(kiln_trainer_grad(trainer, 0, &desc, &value)).ok());
  CHECK(count(fake.calls(), "cuMemcpyDtoH ") == params);
  // A parameter set on the host goes up with the next step.
  std::vector<uint8_t> fresh(desc.size_bytes, 0);
  kiln_tensor_desc_t p0;
  REQUIRE(kiln::Status(kiln_trainer_param(trainer, 0, &p0, &value)).ok());
  kiln_tensor_t set{p0.name, p0.dtype, p0.rank, p0.shape, fresh.data(), p0.size_bytes};
  REQUIRE(kiln::Status(kiln_trainer_set_param(trainer, &set)).ok());
  fake.reset(1);
  REQUIRE(kiln::Status(kiln_trainer_step(trainer, in.data(), in.size(), &loss)).ok());
  CHECK(count(fake.calls(), "cuMemcpyHtoD ") == firstUploads - kept + 1);
  // Inference with the trainer's parameters: the forward pass compiled for
  // the CPU beside the CUDA step, fed the parameters fetched from the device.
  REQUIRE(kiln_trainer_can_infer(trainer));
  std::vector<kiln_tensor_t> inferIn;
  for (size_t i = 0; i < kiln_trainer_num_infer_inputs(trainer); ++i) {
    kiln_tensor_desc_t d;
    REQUIRE(kiln::Status(kiln_trainer_infer_input(trainer, i, &d)).ok());
    inferIn.push_back(in[i]); // the data input, as the step took it
    CHECK(std::string(d.name) == in[i].name);
  }
  kiln_tensor_desc_t od;
  REQUIRE(kiln::Status(kiln_trainer_infer_output(trainer, 0, &od)).ok());
  std::vector<float> logits(od.size_bytes / 4, -1.0f);
  kiln_tensor_t out{od.name, od.dtype, od.rank, od.shape, logits.data(), od.size_bytes};
  fake.reset(1);
  REQUIRE(kiln::Status(kiln_trainer_infer(trainer, inferIn.data(), inferIn.size(), &out, 1)).ok());
  CHECK(count(fake.calls(), "cuMemcpyDtoH ") == kept); // the parameters came up
  for (float v : logits)
    CHECK(std::isfinite(v));
  kiln_trainer_release(trainer);
}
#endif

TEST_CASE("CUDA: a kernel with over 48 KiB of dynamic shared memory opts in once", "[cuda]") {
  FakeSession f;
  secondShared = 132096;
  REQUIRE(f.run().ok());
  REQUIRE(f.run().ok());
  secondShared = 0;
  std::string log = f.fake.calls();
  CAPTURE(log);
  size_t set = find(log, "cuFuncSetAttribute k_again 8 132096");
  REQUIRE(set != std::string::npos);
  CHECK(set < find(log, "cuLaunchKernel k_again grid 2 block 128 shared 132096"));
  CHECK(find(log, "cuFuncSetAttribute", set + 1) == std::string::npos);
  CHECK(find(log, "cuFuncSetAttribute k_scale") == std::string::npos);
  CHECK(f.y[0] == 4);
}

TEST_CASE("CUDA: a refused shared-memory size fails the run with the driver's error", "[cuda]") {
  FakeSession f;
  f.fake.fail("cuFuncSetAttribute", 1);
  secondShared = 300000;
  kiln::Status s = f.run();
  secondShared = 0;
  CHECK_FALSE(s.ok());
  CHECK(s.message().find("cuFuncSetAttribute: CUDA_ERROR_UNKNOWN") != std::string::npos);
  CHECK(s.message().find("300000 bytes of shared memory") != std::string::npos);
}

TEST_CASE("CUDA: TMA tensor maps are encoded once per session, before the launch", "[cuda]") {
  FakeSession f;
  f.fake.reset(1);
  askTensorMap = true;
  REQUIRE(f.run().ok());
  std::string run1 = f.fake.calls();
  CAPTURE(run1);
  size_t encode = find(run1, "cuTensorMapEncodeTiled dtype 7 dims 4 1 box 4 1 swizzle 0");
  REQUIRE(encode != std::string::npos);
  // The map goes to device memory of its own, on the stream, before the
  // launch that reads it.
  size_t alloc = find(run1, "cuMemAlloc 128", encode);
  size_t copy = find(run1, "cuMemcpyHtoD 128", alloc);
  REQUIRE(copy != std::string::npos);
  CHECK(copy < find(run1, "cuLaunchKernel k_again"));
  REQUIRE(tensorMap);
  void *first = tensorMap;
  // What the fake encoded (the tensor's address: x's device buffer) is
  // what went up.
  CHECK(*(void **)tensorMap == mappedTensor);
  // The captured run and the replays find it; nothing is encoded again.
  f.fake.reset(1);
  REQUIRE(f.run().ok());
  REQUIRE(f.run().ok());
  std::string later = f.fake.calls();
  CAPTURE(later);
  CHECK(find(later, "cuStreamBeginCapture") != std::string::npos);
  CHECK(find(later, "cuTensorMapEncodeTiled") == std::string::npos);
  CHECK(tensorMap == first);
  askTensorMap = false;
}

TEST_CASE("CUDA: a tensor map the driver refuses fails the run and says why", "[cuda]") {
  FakeSession f;
  f.fake.fail("cuTensorMapEncodeTiled", 1);
  askTensorMap = true;
  kiln::Status s = f.run();
  askTensorMap = false;
  CHECK_FALSE(s.ok());
  CAPTURE(s.message());
  CHECK(s.message().find("a TMA tensor map: cuTensorMapEncodeTiled: CUDA_ERROR_UNKNOWN") !=
        std::string::npos);
  CHECK(s.message().find("a 4x1 tensor") != std::string::npos);
  CHECK(f.fake.calls().find("cuLaunchKernel k_again") == std::string::npos);
}

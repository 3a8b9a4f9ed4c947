//===- FakeCudaDriver.cpp - a CUDA driver that records, for the tests -----===//
//
// libkiln_fake_cuda.so exports the driver entry points the runtime looks up
// (KILN_CUDA_DRIVER points the runtime at it). "Device" memory is host
// memory, so copies really move bytes; every call is appended to a log the
// tests read (fake_cuda_log), and any call can be made to fail
// (fake_cuda_fail). No GPU, no CUDA headers.
//
//===----------------------------------------------------------------------===//

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {
std::string &log() {
  static std::string l;
  return l;
}
std::map<std::string, int> &failures() {
  static std::map<std::string, int> f;
  return f;
}
int devices = 1;
std::map<void *, std::string> functions;
int record(const std::string &call) {
  log() += call + "\n";
  auto it = failures().find(call.substr(0, call.find(' ')));
  return it == failures().end() ? 0 : it->second;
}
} // namespace

extern "C" {
// Test controls.
const char *fake_cuda_log() { return log().c_str(); }
void fake_cuda_reset(int deviceCount) {
  log().clear();
  failures().clear();
  devices = deviceCount;
}
void fake_cuda_fail(const char *call, int code) { failures()[call] = code; }

int cuInit(unsigned) { return record("cuInit"); }
int cuDeviceGetCount(int *n) {
  *n = devices;
  return record("cuDeviceGetCount");
}
int cuDeviceGet(int *d, int i) {
  *d = i;
  return record("cuDeviceGet");
}
int cuDeviceGetName(char *name, int len, int) {
  std::strncpy(name, "Fake GPU", len);
  return record("cuDeviceGetName");
}
int cuDeviceGetAttribute(int *v, int attr, int) {
  *v = attr == 75 ? 9 : 0;
  return record("cuDeviceGetAttribute");
}
int cuDevicePrimaryCtxRetain(void **ctx, int) {
  static int context;
  *ctx = &context;
  return record("cuDevicePrimaryCtxRetain");
}
int cuDevicePrimaryCtxRelease_v2(int) { return record("cuDevicePrimaryCtxRelease"); }
int cuCtxSetCurrent(void *) { return record("cuCtxSetCurrent"); }
int cuStreamCreate(void **s, unsigned) {
  static int stream;
  *s = &stream;
  return record("cuStreamCreate");
}
int cuStreamDestroy_v2(void *) { return record("cuStreamDestroy"); }
int cuStreamSynchronize(void *) { return record("cuStreamSynchronize"); }
int cuModuleLoadDataEx(void **m, const void *image, unsigned n, int *options, void **values) {
  static int module;
  *m = &module;
  int r = record("cuModuleLoadDataEx");
  if (r || std::strstr((const char *)image, "BROKEN")) {
    for (unsigned i = 0; i < n; ++i)
      if (options[i] == 5) // CU_JIT_ERROR_LOG_BUFFER
        std::strcpy((char *)values[i], "ptxas fatal: unknown instruction 'BROKEN'");
    return r ? r : 218; // CUDA_ERROR_INVALID_PTX
  }
  return 0;
}
int cuModuleUnload(void *) { return record("cuModuleUnload"); }
int cuModuleGetFunction(void **f, void *, const char *name) {
  void *handle = std::malloc(1);
  functions[handle] = name;
  *f = handle;
  return record(std::string("cuModuleGetFunction ") + name);
}
int cuMemAlloc_v2(unsigned long long *p, size_t bytes) {
  int r = record("cuMemAlloc " + std::to_string(bytes));
  if (!r)
    *p = (unsigned long long)(uintptr_t)std::calloc(1, bytes);
  return r;
}
int cuMemFree_v2(unsigned long long p) {
  std::free((void *)(uintptr_t)p);
  return record("cuMemFree");
}
int cuMemcpyHtoDAsync_v2(unsigned long long dst, const void *src, size_t n, void *) {
  std::memcpy((void *)(uintptr_t)dst, src, n);
  return record("cuMemcpyHtoD " + std::to_string(n));
}
int cuMemcpyDtoHAsync_v2(void *dst, unsigned long long src, size_t n, void *) {
  std::memcpy(dst, (const void *)(uintptr_t)src, n);
  return record("cuMemcpyDtoH " + std::to_string(n));
}
int cuLaunchKernel(void *f, unsigned gx, unsigned, unsigned, unsigned bx, unsigned, unsigned,
                   unsigned, void *, void **params, void **) {
  // The fake "kernel" (every test kernel takes dst, src): dst[i] = 2 src[i]
  // for 4 floats, so a test sees each launch happen on the right buffers.
  float *dst = *(float **)params[0];
  const float *src = *(float **)params[1];
  for (int i = 0; i < 4; ++i)
    dst[i] = 2 * src[i];
  return record("cuLaunchKernel " + functions[f] + " grid " + std::to_string(gx) + " block " +
                std::to_string(bx));
}
int cuStreamBeginCapture_v2(void *, int) { return record("cuStreamBeginCapture"); }
int cuStreamEndCapture(void *, void **g) {
  static int graph;
  *g = &graph;
  return record("cuStreamEndCapture");
}
int cuGraphInstantiateWithFlags(void **e, void *, unsigned long long) {
  static int exec;
  *e = &exec;
  return record("cuGraphInstantiate");
}
int cuGraphLaunch(void *, void *) { return record("cuGraphLaunch"); }
int cuGraphExecDestroy(void *) { return record("cuGraphExecDestroy"); }
int cuGraphDestroy(void *) { return record("cuGraphDestroy"); }
int cuGetErrorName(int r, const char **s) {
  *s = r == 2 ? "CUDA_ERROR_OUT_OF_MEMORY" : r == 218 ? "CUDA_ERROR_INVALID_PTX" : "CUDA_ERROR_UNKNOWN";
  return 0;
}
int cuGetErrorString(int r, const char **s) {
  *s = r == 2 ? "out of memory" : r == 218 ? "a PTX JIT compilation failed" : "unknown error";
  return 0;
}
}

//===- FakeCudaDriver.cpp - a CUDA driver that records, for the tests -----===//
//
// libkiln_fake_cuda.so exports the driver entry points the runtime looks up
// (KILN_CUDA_DRIVER points the runtime at it). "Device" memory is host
// memory, so copies really move bytes; every call is appended to a log the
// tests read (fake_cuda_log), and any call can be made to fail
// (fake_cuda_fail). No GPU, no CUDA headers.
//
//===----------------------------------------------------------------------===//

#include "CudaDriver.h" // the runtime's declarations: the same function types

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

using namespace kiln::rt;

extern "C" {
// Test controls.
const char *fake_cuda_log() { return log().c_str(); }
void fake_cuda_reset(int deviceCount) {
  log().clear();
  failures().clear();
  devices = deviceCount;
}
void fake_cuda_fail(const char *call, int code) { failures()[call] = code; }

CUresult cuInit(unsigned) { return record("cuInit"); }
CUresult cuDeviceGetCount(int *n) {
  *n = devices;
  return record("cuDeviceGetCount");
}
CUresult cuDeviceGet(CUdevice *d, int i) {
  *d = i;
  return record("cuDeviceGet");
}
CUresult cuDeviceGetName(char *name, int len, CUdevice) {
  std::strncpy(name, "Fake GPU", len);
  return record("cuDeviceGetName");
}
CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice) {
  *v = attr == 75 ? 9 : 0;
  return record("cuDeviceGetAttribute");
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice) {
  static int context;
  *ctx = (CUcontext)&context;
  return record("cuDevicePrimaryCtxRetain");
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice) { return record("cuDevicePrimaryCtxRelease"); }
CUresult cuCtxSetCurrent(CUcontext) { return record("cuCtxSetCurrent"); }
CUresult cuStreamCreate(CUstream *s, unsigned) {
  static int stream;
  *s = (CUstream)&stream;
  return record("cuStreamCreate");
}
CUresult cuStreamDestroy_v2(CUstream) { return record("cuStreamDestroy"); }
CUresult cuStreamSynchronize(CUstream) { return record("cuStreamSynchronize"); }
CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned n, int *options,
                            void **values) {
  static int module;
  *m = (CUmodule)&module;
  // Machine code (an ELF cubin, or a fat binary of several) is recorded
  // apart from PTX, so a test can make only it fail (a GPU of another arch).
  if (std::memcmp(image, "\x7f" "ELF", 4) == 0 || std::memcmp(image, "\x50\xed\x55\xba", 4) == 0)
    return record("cuModuleLoadDataEx_cubin");
  int r = record("cuModuleLoadDataEx");
  if (r || std::strstr((const char *)image, "BROKEN")) {
    for (unsigned i = 0; i < n; ++i)
      if (options[i] == 5) // CU_JIT_ERROR_LOG_BUFFER
        std::strcpy((char *)values[i], "ptxas fatal: unknown instruction 'BROKEN'");
    return r ? r : 218; // CUDA_ERROR_INVALID_PTX
  }
  return 0;
}
CUresult cuModuleUnload(CUmodule) { return record("cuModuleUnload"); }
CUresult cuModuleGetFunction(CUfunction *f, CUmodule, const char *name) {
  void *handle = std::malloc(1);
  functions[handle] = name;
  *f = (CUfunction)handle;
  return record(std::string("cuModuleGetFunction ") + name);
}
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
  int r = record("cuMemAlloc " + std::to_string(bytes));
  if (!r)
    *p = (unsigned long long)(uintptr_t)std::calloc(1, bytes);
  return r;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  std::free((void *)(uintptr_t)p);
  return record("cuMemFree");
}
CUresult cuTensorMapEncodeTiled(void *map, int dtype, unsigned rank, void *global,
                                const unsigned long long *dims, const unsigned long long *,
                                const unsigned *box, const unsigned *, int, int swizzle, int,
                                int) {
  std::string call = "cuTensorMapEncodeTiled dtype " + std::to_string(dtype) + " dims";
  for (unsigned i = 0; i < rank; ++i)
    call += " " + std::to_string(dims[i]);
  call += " box";
  for (unsigned i = 0; i < rank; ++i)
    call += " " + std::to_string(box[i]);
  call += " swizzle " + std::to_string(swizzle);
  int r = record(call);
  if (!r) // the map's first word: the tensor's address, for the test to read back
    std::memcpy(map, &global, sizeof(global));
  return r;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream) {
  std::memcpy((void *)(uintptr_t)dst, src, n);
  return record("cuMemcpyHtoD " + std::to_string(n));
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream) {
  std::memcpy(dst, (const void *)(uintptr_t)src, n);
  return record("cuMemcpyDtoH " + std::to_string(n));
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream) {
  std::memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
  return record("cuMemcpyDtoD " + std::to_string(n));
}
CUresult cuFuncSetAttribute(CUfunction f, int attr, int value) {
  return record("cuFuncSetAttribute " + functions[(void *)f] + " " + std::to_string(attr) + " " +
                std::to_string(value));
}
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned, unsigned, unsigned bx, unsigned,
                        unsigned, unsigned shared, CUstream, void **params, void **) {
  // The hand-made test kernels ("k_*", each takes dst, src): dst[i] = 2 src[i]
  // for 4 floats, so a test sees each launch happen on the right buffers.
  // Compiled kernels are only recorded.
  if (functions[(void *)f].rfind("k_", 0) == 0) {
    float *dst = *(float **)params[0];
    const float *src = *(float **)params[1];
    for (int i = 0; i < 4; ++i)
      dst[i] = 2 * src[i];
  }
  return record("cuLaunchKernel " + functions[(void *)f] + " grid " + std::to_string(gx) + " block " +
                std::to_string(bx) + (shared ? " shared " + std::to_string(shared) : ""));
}
CUresult cuStreamBeginCapture_v2(CUstream, int) { return record("cuStreamBeginCapture"); }
CUresult cuStreamEndCapture(CUstream, CUgraph *g) {
  static int graph;
  *g = (CUgraph)&graph;
  return record("cuStreamEndCapture");
}
CUresult cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph, unsigned long long) {
  static int exec;
  *e = (CUgraphExec)&exec;
  return record("cuGraphInstantiate");
}
CUresult cuGraphLaunch(CUgraphExec, CUstream) { return record("cuGraphLaunch"); }
CUresult cuGraphExecDestroy(CUgraphExec) { return record("cuGraphExecDestroy"); }
CUresult cuGraphDestroy(CUgraph) { return record("cuGraphDestroy"); }
// An event is one byte: whether it was recorded (the driver answers
// CUDA_ERROR_INVALID_HANDLE for the time between events never recorded).
CUresult cuEventCreate(CUevent *e, unsigned) {
  *e = (CUevent)std::calloc(1, 1);
  return record("cuEventCreate");
}
CUresult cuEventRecord(CUevent e, CUstream) {
  *(char *)e = 1;
  return record("cuEventRecord");
}
CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
  if (!*(char *)a || !*(char *)b)
    return (CUresult)400;
  *ms = 0.25f; // every launch "takes" 0.25 ms
  return record("cuEventElapsedTime");
}
CUresult cuEventDestroy_v2(CUevent e) {
  std::free(e);
  return record("cuEventDestroy");
}
CUresult cuGetErrorName(CUresult r, const char **s) {
  *s = r == 2 ? "CUDA_ERROR_OUT_OF_MEMORY" : r == 218 ? "CUDA_ERROR_INVALID_PTX"
                                     : r == 400 ? "CUDA_ERROR_INVALID_HANDLE" : "CUDA_ERROR_UNKNOWN";
  return 0;
}
CUresult cuGetErrorString(CUresult r, const char **s) {
  *s = r == 2 ? "out of memory" : r == 218 ? "a PTX JIT compilation failed" : "unknown error";
  return 0;
}
}

//===- EmuDriver.cpp - a CUDA driver that runs PTX on the CPU -------------===//
//
// libkiln_ptx_emu.so exports the driver entry points the runtime looks up,
// like the tests' fake driver, but its kernels really run: the module's PTX
// is parsed (PtxParse.cpp) and each launch interpreted (PtxExec.cpp), so a
// CUDA artifact runs end to end through the real runtime on a machine with
// no GPU (KILN_CUDA_DRIVER=.../libkiln_ptx_emu.so). It checks what the
// kernels compute, not how fast: one thread at a time, every block in turn.
//
// Machine code (a cubin) is refused as "no binary for this GPU", so the
// runtime falls back to the artifact's PTX. Device memory is host memory.
// A failed launch answers CUDA_ERROR_LAUNCH_FAILED, and cuGetErrorString
// then carries the emulator's reason (the kernel, PTX line and fault).
//
//===----------------------------------------------------------------------===//

#include "CudaDriver.h" // the runtime's declarations: the same function types
#include "Ptx.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

using namespace kiln::rt;
using namespace kiln::emu;

namespace {
constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
constexpr CUresult CUDA_ERROR_INVALID_PTX = 218;
constexpr CUresult CUDA_ERROR_LAUNCH_FAILED = 719;

std::mutex mutex;
std::string lastError = "unknown error";

struct EmuFunction {
  const Entry *entry;
  int maxDynamicShared = 48 * 1024;
};
struct EmuModule {
  std::unique_ptr<Module> ptx;
  std::map<std::string, EmuFunction> functions; // handed out by cuModuleGetFunction
};
// A stream's work while it is being captured into a graph.
struct EmuGraph {
  std::vector<std::function<CUresult()>> work;
};
bool capturing = false;
EmuGraph *captured = nullptr;

CUresult launch(const EmuFunction &f, const Launch &l) {
  std::string error;
  if (!runKernel(*f.entry, l, error)) {
    lastError = "ptx-emu: " + error;
    std::fprintf(stderr, "%s\n", lastError.c_str());
    return CUDA_ERROR_LAUNCH_FAILED;
  }
  return CUDA_SUCCESS;
}

CUresult enqueue(std::function<CUresult()> work) {
  if (capturing) {
    captured->work.push_back(std::move(work));
    return CUDA_SUCCESS;
  }
  return work();
}
} // namespace

extern "C" {
CUresult cuInit(unsigned) { return CUDA_SUCCESS; }
CUresult cuDeviceGetCount(int *n) {
  *n = 1;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice *d, int i) {
  *d = i;
  return i == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice) {
  std::snprintf(name, len, "Kiln PTX emulator (CPU)");
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice) {
  // Compute capability 9.0: sm_80 and sm_90a PTX both run.
  *v = attr == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9 : 0;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice) {
  static int context;
  *ctx = (CUcontext)&context;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice) { return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext) { return CUDA_SUCCESS; }
CUresult cuStreamCreate(CUstream *s, unsigned) {
  static int stream;
  *s = (CUstream)&stream;
  return CUDA_SUCCESS;
}
CUresult cuStreamDestroy_v2(CUstream) { return CUDA_SUCCESS; }
CUresult cuStreamSynchronize(CUstream) { return CUDA_SUCCESS; }

CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned n, int *options,
                            void **values) {
  if (std::memcmp(image, "\x7f" "ELF", 4) == 0 || std::memcmp(image, "\x50\xed\x55\xba", 4) == 0)
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  std::string error;
  auto mod = std::make_unique<EmuModule>();
  mod->ptx = parsePtx((const char *)image, error);
  if (!mod->ptx) {
    for (unsigned i = 0; i < n; ++i)
      if (options[i] == CU_JIT_ERROR_LOG_BUFFER) {
        size_t cap = 0;
        for (unsigned j = 0; j < n; ++j)
          if (options[j] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            cap = (size_t)(uintptr_t)values[j];
        if (cap)
          std::snprintf((char *)values[i], cap, "ptx-emu: %s", error.c_str());
      }
    std::fprintf(stderr, "ptx-emu: %s\n", error.c_str());
    return CUDA_ERROR_INVALID_PTX;
  }
  *m = (CUmodule)mod.release();
  return CUDA_SUCCESS;
}
CUresult cuModuleUnload(CUmodule m) {
  for (uint64_t a : ((EmuModule *)m)->ptx->globalAddresses)
    removeDeviceMemory(a);
  delete (EmuModule *)m;
  return CUDA_SUCCESS;
}
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  auto *mod = (EmuModule *)m;
  auto it = mod->ptx->entries.find(name);
  if (it == mod->ptx->entries.end())
    return CUDA_ERROR_NOT_FOUND;
  // Freed with their module, as the driver's are.
  *f = (CUfunction)&mod->functions.try_emplace(name, EmuFunction{&it->second}).first->second;
  return CUDA_SUCCESS;
}
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
  // 256-byte aligned, as the driver's are; not zeroed, as the driver's are not.
  void *q = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!q)
    return CUDA_ERROR_OUT_OF_MEMORY;
  std::memset(q, 0xa5, bytes);
  *p = (CUdeviceptr)(uintptr_t)q;
  addDeviceMemory(*p, bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  removeDeviceMemory(p);
  std::free((void *)(uintptr_t)p);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream) {
  return enqueue([=] {
    std::memcpy((void *)(uintptr_t)dst, src, n);
    return CUDA_SUCCESS;
  });
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream) {
  return enqueue([=] {
    std::memcpy(dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
  });
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream) {
  return enqueue([=] {
    std::memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
  });
}
CUresult cuFuncSetAttribute(CUfunction f, int attr, int value) {
  if (attr == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    if (value > 227 * 1024)
      return CUDA_ERROR_INVALID_VALUE;
    ((EmuFunction *)f)->maxDynamicShared = value;
  }
  return CUDA_SUCCESS;
}
CUresult cuLaunchKernel(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, CUstream, void **params,
                        void **extra) {
  const EmuFunction &f = *(EmuFunction *)fn;
  if (extra || !gx || !gy || !gz || !bx || !by || !bz || (size_t)bx * by * bz > 1024 ||
      (!params && !f.entry->params.empty()))
    return CUDA_ERROR_INVALID_VALUE;
  // The hardware's rule: more than 48 KiB of dynamic shared memory only
  // after cuFuncSetAttribute raised the function's limit.
  if ((int)shared > f.maxDynamicShared) {
    lastError = "ptx-emu: " + f.entry->name + " asks for " + std::to_string(shared) +
                " bytes of dynamic shared memory, above its limit of " +
                std::to_string(f.maxDynamicShared);
    return CUDA_ERROR_INVALID_VALUE;
  }
  Launch l{{gx, gy, gz}, {bx, by, bz}, shared, {}};
  l.params.resize(f.entry->paramBytes);
  for (size_t i = 0; i < f.entry->params.size(); ++i)
    std::memcpy(l.params.data() + f.entry->params[i].offset, params[i], f.entry->params[i].size);
  return enqueue([&f, l] { return launch(f, l); });
}
CUresult cuStreamBeginCapture_v2(CUstream, int) {
  if (capturing)
    return CUDA_ERROR_INVALID_VALUE;
  capturing = true;
  captured = new EmuGraph;
  return CUDA_SUCCESS;
}
CUresult cuStreamEndCapture(CUstream, CUgraph *g) {
  if (!capturing)
    return CUDA_ERROR_INVALID_VALUE;
  capturing = false;
  *g = (CUgraph)captured;
  captured = nullptr;
  return CUDA_SUCCESS;
}
CUresult cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long) {
  *e = (CUgraphExec) new EmuGraph(*(EmuGraph *)g);
  return CUDA_SUCCESS;
}
CUresult cuGraphLaunch(CUgraphExec e, CUstream) {
  for (auto &w : ((EmuGraph *)e)->work)
    if (CUresult r = w(); r != CUDA_SUCCESS)
      return r;
  return CUDA_SUCCESS;
}
CUresult cuGraphExecDestroy(CUgraphExec e) {
  delete (EmuGraph *)e;
  return CUDA_SUCCESS;
}
CUresult cuGraphDestroy(CUgraph g) {
  delete (EmuGraph *)g;
  return CUDA_SUCCESS;
}
// Events hold the host time they were recorded at.
CUresult cuEventCreate(CUevent *e, unsigned) {
  *e = (CUevent) new double(-1);
  return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent e, CUstream) {
  return enqueue([e] {
    *(double *)e = std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now().time_since_epoch())
                       .count();
    return CUDA_SUCCESS;
  });
}
CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
  double x = *(double *)a, y = *(double *)b;
  if (x < 0 || y < 0)
    return (CUresult)400; // CUDA_ERROR_INVALID_HANDLE
  *ms = (float)(y - x);
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy_v2(CUevent e) {
  delete (double *)e;
  return CUDA_SUCCESS;
}
// The checks the driver documents for a tiled map (those Kiln's maps can
// break), then the emulator's own layout of the 128 bytes (Ptx.h).
CUresult cuTensorMapEncodeTiled(void *out, int dtype, unsigned rank, void *global,
                                const unsigned long long *dims,
                                const unsigned long long *strides, const unsigned *box,
                                const unsigned *elementStrides, int interleave, int swizzle,
                                int, int) {
  auto invalid = [](const std::string &why) {
    std::lock_guard<std::mutex> lock(mutex);
    lastError = "cuTensorMapEncodeTiled: " + why;
    return CUDA_ERROR_INVALID_VALUE;
  };
  // CUtensorMapDataType: u8 0, u16 1, u32 2, i32 3, u64 4, i64 5, f16 6,
  // f32 7, f64 8, bf16 9.
  static const unsigned sizes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2};
  if (dtype < 0 || dtype > 9)
    return invalid("an unsupported data type " + std::to_string(dtype));
  if (rank < 1 || rank > 5)
    return invalid("rank " + std::to_string(rank));
  if ((uintptr_t)out % 64 || (uintptr_t)global % 16)
    return invalid("the map must be 64-byte aligned and the tensor 16-byte aligned");
  if (interleave != 0 || (swizzle != 0 && swizzle != 3))
    return invalid("the emulator models no interleave and the 128-byte swizzle only");
  TensorMap map{};
  map.magic = TensorMap::kMagic;
  map.global = (uint64_t)(uintptr_t)global;
  map.rank = (uint8_t)rank;
  map.swizzle = (uint8_t)swizzle;
  map.strides[0] = sizes[dtype];
  for (unsigned d = 0; d < rank; ++d) {
    if (!dims[d] || dims[d] > (1ull << 32))
      return invalid("size " + std::to_string(dims[d]) + " of dimension " + std::to_string(d));
    if (!box[d] || box[d] > 256)
      return invalid("box size " + std::to_string(box[d]) + " (1 to 256)");
    if (elementStrides[d] != 1)
      return invalid("the emulator models element strides of 1 only");
    if (d && (strides[d - 1] % 16 || strides[d - 1] >= (1ull << 40)))
      return invalid("stride " + std::to_string(strides[d - 1]) + " (a multiple of 16)");
    map.dims[d] = dims[d];
    map.box[d] = box[d];
    if (d)
      map.strides[d] = strides[d - 1];
  }
  if (box[0] * sizes[dtype] % 16)
    return invalid("the box's inner extent must be a multiple of 16 bytes");
  if (swizzle == 3 && box[0] * sizes[dtype] > 128)
    return invalid("the 128-byte swizzle takes an inner box of at most 128 bytes");
  std::memset(out, 0, 128);
  std::memcpy(out, &map, sizeof(map));
  return CUDA_SUCCESS;
}
CUresult cuGetErrorName(CUresult r, const char **s) {
  switch (r) {
  case CUDA_ERROR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
  case CUDA_ERROR_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
  case CUDA_ERROR_INVALID_PTX: *s = "CUDA_ERROR_INVALID_PTX"; break;
  case CUDA_ERROR_NO_BINARY_FOR_GPU: *s = "CUDA_ERROR_NO_BINARY_FOR_GPU"; break;
  case CUDA_ERROR_NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; break;
  case CUDA_ERROR_LAUNCH_FAILED: *s = "CUDA_ERROR_LAUNCH_FAILED"; break;
  default: *s = "CUDA_ERROR_UNKNOWN"; break;
  }
  return CUDA_SUCCESS;
}
CUresult cuGetErrorString(CUresult r, const char **s) {
  std::lock_guard<std::mutex> lock(mutex);
  *s = r == CUDA_ERROR_LAUNCH_FAILED || r == CUDA_ERROR_INVALID_VALUE ? lastError.c_str()
       : r == CUDA_ERROR_INVALID_PTX ? "the emulator cannot run this PTX"
                                      : "unknown error";
  return CUDA_SUCCESS;
}
}

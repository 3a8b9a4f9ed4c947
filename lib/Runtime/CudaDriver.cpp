//===- CudaDriver.cpp - loading the CUDA driver ---------------------------===//

#include "CudaDriver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

namespace kiln::rt {

namespace {
struct Loaded {
  CudaDriver driver{};
  std::string error; // empty when loaded
};
} // namespace

const CudaDriver *cudaDriver(std::string &error) {
  // One load per library path (the process's driver is normally one;
  // the tests switch KILN_CUDA_DRIVER between a missing and a fake one).
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Loaded>> loaded;
  const char *env = std::getenv("KILN_CUDA_DRIVER");
  std::string path = env && *env ? env : "libcuda.so.1";
  std::lock_guard<std::mutex> lock(mutex);
  auto &slot = loaded[path];
  if (!slot) {
    slot = std::make_unique<Loaded>();
    CudaDriver &driver = slot->driver;
    std::string &loadError = slot->error;
    [&] {
    void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char *e = dlerror();
      loadError = "no CUDA driver: cannot load " + path + " (" + (e ? e : "unknown error") +
                  "); is the NVIDIA driver installed?";
      return;
    }
    bool ok = true;
    auto bind = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
      if (!fn && ok) {
        ok = false;
        loadError = "the CUDA driver " + path + " lacks " + name +
                    " (a driver for CUDA 12 or newer is needed)";
      }
    };
    bind(driver.cuInit, "cuInit");
    bind(driver.cuDeviceGetCount, "cuDeviceGetCount");
    bind(driver.cuDeviceGet, "cuDeviceGet");
    bind(driver.cuDeviceGetName, "cuDeviceGetName");
    bind(driver.cuDeviceGetAttribute, "cuDeviceGetAttribute");
    bind(driver.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    bind(driver.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    bind(driver.cuCtxSetCurrent, "cuCtxSetCurrent");
    bind(driver.cuStreamCreate, "cuStreamCreate");
    bind(driver.cuStreamDestroy, "cuStreamDestroy_v2");
    bind(driver.cuStreamSynchronize, "cuStreamSynchronize");
    bind(driver.cuModuleLoadDataEx, "cuModuleLoadDataEx");
    bind(driver.cuModuleUnload, "cuModuleUnload");
    bind(driver.cuModuleGetFunction, "cuModuleGetFunction");
    bind(driver.cuMemAlloc, "cuMemAlloc_v2");
    bind(driver.cuMemFree, "cuMemFree_v2");
    bind(driver.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
    bind(driver.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    bind(driver.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
    bind(driver.cuFuncSetAttribute, "cuFuncSetAttribute");
    bind(driver.cuLaunchKernel, "cuLaunchKernel");
    bind(driver.cuStreamBeginCapture, "cuStreamBeginCapture_v2");
    bind(driver.cuStreamEndCapture, "cuStreamEndCapture");
    bind(driver.cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
    bind(driver.cuGraphLaunch, "cuGraphLaunch");
    bind(driver.cuGraphExecDestroy, "cuGraphExecDestroy");
    bind(driver.cuGraphDestroy, "cuGraphDestroy");
    bind(driver.cuEventCreate, "cuEventCreate");
    bind(driver.cuEventRecord, "cuEventRecord");
    // CUDA 12.8 added _v2 (cuda.h maps the name to it); the driver of CUDA
    // 13 answered the old entry with CUDA_ERROR_INVALID_HANDLE on an H200.
    if (void *v2 = dlsym(h, "cuEventElapsedTime_v2"))
      driver.cuEventElapsedTime = reinterpret_cast<decltype(driver.cuEventElapsedTime)>(v2);
    else
      bind(driver.cuEventElapsedTime, "cuEventElapsedTime");
    bind(driver.cuEventDestroy, "cuEventDestroy_v2");
    bind(driver.cuGetErrorName, "cuGetErrorName");
    bind(driver.cuGetErrorString, "cuGetErrorString");
    driver.cuTensorMapEncodeTiled = reinterpret_cast<decltype(driver.cuTensorMapEncodeTiled)>(
        dlsym(h, "cuTensorMapEncodeTiled"));
    if (!ok)
      dlclose(h);
    // Else kept loaded for the life of the process (the driver is process-wide).
    }();
  }
  if (!slot->error.empty()) {
    error = slot->error;
    return nullptr;
  }
  return &slot->driver;
}

std::string cudaErrorText(const CudaDriver &d, const char *call, CUresult r) {
  const char *name = nullptr, *text = nullptr;
  d.cuGetErrorName(r, &name);
  d.cuGetErrorString(r, &text);
  return std::string(call) + ": " + (name ? name : "CUDA error " + std::to_string(r)) +
         (text ? std::string(" (") + text + ")" : "");
}

} // namespace kiln::rt

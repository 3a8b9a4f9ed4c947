//===- CudaSession.h - running a CUDA artifact ------------------*- C++ -*-===//
//
// One session of a `target cuda` artifact: the primary context of device 0,
// a stream, the artifact's PTX loaded as a module (the JIT's error log goes
// into the status), one device arena sized at load, device copies of the
// inputs, outputs and weights. A run copies the inputs in, runs the host
// program -- whose launches go to cuLaunchKernel on the session's stream --
// and copies the outputs back. From the second run on, the launch sequence
// is captured once into a CUDA graph and replayed. A model with dynamic
// dimensions has its device buffers sized for the largest shapes (the
// artifact's arena is planned so too); a run at new sizes runs eagerly
// and is captured at its second run at those sizes. An output sized by the
// inputs' values grows at the run that needs more; buffers the host
// program sizes by such values come from the session's DevicePool, and
// such a model always runs eagerly.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_CUDASESSION_H
#define KILN_LIB_RUNTIME_CUDASESSION_H

#include "CudaDriver.h"
#include "DevicePool.h"
#include "Model.h"

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace kiln::rt {

class CudaSession {
public:
  static kiln_status_t create(kiln_model_t *model, bool useGraphs,
                              std::unique_ptr<CudaSession> &out);
  ~CudaSession();
  /// Host buffers of every input then every output, in signature order
  /// (device addresses when `onDevice`: copied device to device). A model
  /// with dynamic dimensions needs `bytes` (each buffer's, this run) and
  /// `dims` (host->dims: every dynamic dimension, inputs then outputs).
  kiln_status_t run(const std::vector<void *> &hostBuffers, bool onDevice = false,
                    const std::vector<size_t> *bytes = nullptr,
                    const std::vector<int64_t> *dims = nullptr);
  /// Per-kernel times from CUDA events around each launch (runs go
  /// eagerly, not as a graph, while on); totals by kernel-table line.
  void enableProfiling(bool enable);
  const std::vector<double> &kernelMs() const { return profileMs; }
  const std::vector<int64_t> &kernelCalls() const { return profileCalls; }

  /// Keeps input `input` on the device, fed after each run by output
  /// `output` (a device-to-device copy, after a graph's replay too): a
  /// training step's parameters and optimizer state. Neither crosses to the
  /// host in a run; the input goes up once, and again after
  /// hostChanged(input).
  void keepOnDevice(size_t input, size_t output);
  /// Leaves output `output` on the device after a run (fetchOutput reads it).
  void keepOutputOnDevice(size_t output);
  /// The host copy of input `input` changed: the next run uploads it.
  void hostChanged(size_t input);
  /// A data-parallel run's collectives go to `comm`'s all_reduce_device on
  /// the session's stream (null: none). Runs then go eagerly, not as a
  /// captured graph: a communicator may act on the host when called.
  void setCommunicator(const kiln_communicator_t *comm);
  /// Copies the device's input `input` (a kept one: its current value) or
  /// output `output` (as the last run left it) to `host`, synchronously.
  kiln_status_t fetchInput(size_t input, void *host);
  kiln_status_t fetchOutput(size_t output, void *host);
  /// Copies `bytes` of device memory at `device` (the caller's, in this
  /// session's context) to `host`, synchronously.
  kiln_status_t copyToHost(void *host, const void *device, size_t bytes);

private:
  CudaSession() = default;
  kiln_status_t fail(const char *call, CUresult r, kiln_status_code_t code = KILN_INTERNAL);
  static int32_t launchThunk(void *self, uint32_t kernel, const uint32_t grid[3],
                             const uint32_t block[3], uint32_t sharedBytes, void **params);
  static void profileThunk(void *self, uint32_t kernel, int32_t end);
  static void *tensorMapThunk(void *self, void *global, const uint64_t *desc);
  static int32_t readThunk(void *self, void *dst, const void *src, uint64_t bytes);
  static int32_t allReduceThunk(void *self, void *data, uint64_t count, int32_t dtype,
                                int32_t op);
  kiln_status_t collectProfile();
  /// Reallocates buffer `buffer` (an output sized by the inputs' values)
  /// for `bytes`.
  kiln_status_t grow(size_t buffer, size_t bytes);

  kiln_model_t *model = nullptr;
  const CudaDriver *d = nullptr;
  CUdevice device = 0;
  bool contextRetained = false;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  CUmodule module = nullptr;
  std::vector<CUfunction> kernels;
  // The dynamic shared memory each kernel may use, raised (from the
  // driver's 48 KiB default) at the first launch that asks for more.
  std::vector<uint32_t> sharedLimit;
  std::vector<CUdeviceptr> allocations; // every device buffer, freed at the end
  std::vector<void *> deviceBuffers;    // inputs, outputs, arena, weights
  kiln_artifact_host_t host{};
  bool useGraphs = true;
  const kiln_communicator_t *comm = nullptr; // a data-parallel run's
  int64_t runs = 0; // at the current dims
  CUgraphExec graph = nullptr;
  // A dynamic model's: each buffer's bytes in the last run (inputs then
  // outputs), and the dims the graph was captured at.
  std::vector<size_t> runBytes, capacityBytes;
  std::vector<bool> valueSized; // per buffer: has a size read from data
  DevicePool pool{d};
  std::vector<int64_t> graphDims;
  std::string launchError; // set by launchThunk and tensorMapThunk
  // TMA tensor maps, encoded at the first run that asks for each (global
  // address and description) and kept in device memory for the session:
  // the buffers never move, so a captured graph's launches find them here.
  struct TensorMap {
    std::array<uint64_t, 1 + KILN_TENSOR_MAP_WORDS> key; // the address, the description
    alignas(64) unsigned char bytes[128];
    void *device = nullptr;
  };
  std::vector<std::unique_ptr<TensorMap>> tensorMaps;
  bool capturing = false;
  bool readsDevice = false; // the host program read device memory (no graph then)
  bool profiling = false;
  std::vector<CUevent> events;                          // reused across runs
  std::vector<std::pair<uint32_t, size_t>> timed;       // kernel, its start event
  std::string profileError;                             // set by profileThunk
  std::vector<double> profileMs;
  std::vector<int64_t> profileCalls;
  // Device residency (keepOnDevice): per input, the output that feeds it
  // (-1: none) and whether the device has the host's value; per output,
  // whether a run leaves it on the device.
  std::vector<long> fedBy;
  std::vector<bool> uploaded;
  std::vector<bool> outputStays;
  kiln_status_t fetch(size_t buffer, size_t bytes, void *host);
};

} // namespace kiln::rt

#endif // KILN_LIB_RUNTIME_CUDASESSION_H

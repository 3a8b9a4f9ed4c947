//===- CudaSession.cpp - running a CUDA artifact --------------------------===//

#include "CudaSession.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace kiln::rt {

kiln_status_t CudaSession::fail(const char *call, CUresult r, kiln_status_code_t code) {
  if (r == CUDA_ERROR_OUT_OF_MEMORY)
    code = KILN_RESOURCE_EXHAUSTED;
  return makeStatus(code, model->path + ": " + cudaErrorText(*d, call, r));
}

namespace {
/// The bytes of `t` at its symbols' maxima; false when one has none.
bool largestBytes(const Signature &sig, const TensorSpec &t, size_t &bytes) {
  uint64_t elems = 1;
  for (size_t d = 0; d < t.shape.size(); ++d) {
    int64_t n = t.shape[d];
    if (d < t.symbols.size() && t.symbols[d] >= 0)
      n = sig.dims[t.symbols[d]].max;
    if (n < 0 || __builtin_mul_overflow(elems, (uint64_t)n, &elems) || elems > (1ull << 48))
      return false;
  }
  bytes = elems * kiln_dtype_size(t.dtype);
  return true;
}
} // namespace

kiln_status_t CudaSession::create(kiln_model_t *m, bool useGraphs,
                                  std::unique_ptr<CudaSession> &out) {
  std::unique_ptr<CudaSession> s(new CudaSession());
  s->model = m;
  s->useGraphs = useGraphs;
  std::string error;
  s->d = cudaDriver(error);
  if (!s->d)
    return makeStatus(KILN_FAILED_PRECONDITION, m->path + ": a CUDA artifact, but " + error);
  const CudaDriver &d = *s->d;
// `else {}`: an `else` written after the macro cannot attach to its `if`.
#define KILN_CU(call, ...)                                                                  \
  if (CUresult r = d.call(__VA_ARGS__); r != CUDA_SUCCESS)                                  \
    return s->fail(#call, r);                                                               \
  else {}
  KILN_CU(cuInit, 0)
  int count = 0;
  KILN_CU(cuDeviceGetCount, &count)
  if (count == 0)
    return makeStatus(KILN_FAILED_PRECONDITION,
                      m->path + ": a CUDA artifact, but the driver sees no CUDA device");
  KILN_CU(cuDeviceGet, &s->device, 0)
  KILN_CU(cuDevicePrimaryCtxRetain, &s->context, s->device)
  s->contextRetained = true;
  KILN_CU(cuCtxSetCurrent, s->context)
  KILN_CU(cuStreamCreate, &s->stream, CU_STREAM_NON_BLOCKING)
  if (!m->ptx || !*m->ptx)
    return makeStatus(KILN_INVALID_ARGUMENT, m->path + ": a CUDA artifact without PTX");
  // Machine code for the artifact's arch first; on another GPU (the driver
  // says there is no binary for it) the PTX, compiled by the driver's JIT.
  if (m->cubin && m->cubinSize) {
    CUresult r = d.cuModuleLoadDataEx(&s->module, m->cubin, 0, nullptr, nullptr);
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_NO_BINARY_FOR_GPU && r != CUDA_ERROR_INVALID_IMAGE)
      return s->fail("cuModuleLoadDataEx (cubin)", r, KILN_INVALID_ARGUMENT);
    if (r != CUDA_SUCCESS)
      s->module = nullptr;
  }
  // The JIT's log explains a PTX the driver refuses (wrong arch, ptxas error).
  char errorLog[8192] = {0}, infoLog[4096] = {0};
  int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                   CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {errorLog, (void *)(uintptr_t)sizeof(errorLog), infoLog,
                    (void *)(uintptr_t)sizeof(infoLog)};
  if (CUresult r = s->module ? CUDA_SUCCESS
                             : d.cuModuleLoadDataEx(&s->module, m->ptx, 4, options, values);
      r != CUDA_SUCCESS) {
    kiln_status_t st = s->fail("cuModuleLoadDataEx", r, KILN_INVALID_ARGUMENT);
    errorLog[sizeof(errorLog) - 1] = 0;
    if (*errorLog)
      st->message += "; the JIT compiler says: " + std::string(errorLog);
    return st;
  }
  // Launch indices follow the kernel table's lines; a line's first field is
  // the PTX entry point.
  for (const char *line = m->kernels; line && *line;) {
    const char *end = std::strchr(line, '\n');
    std::string row(line, end ? end - line : std::strlen(line));
    std::string name = row.substr(0, row.find('\t'));
    if (!name.empty()) {
      CUfunction f = nullptr;
      if (CUresult r = d.cuModuleGetFunction(&f, s->module, name.c_str()); r != CUDA_SUCCESS)
        return makeStatus(KILN_INVALID_ARGUMENT, m->path + ": " +
                                                     cudaErrorText(d, "cuModuleGetFunction", r) +
                                                     " for kernel '" + name + "'");
      s->kernels.push_back(f);
      s->sharedLimit.push_back(48 * 1024);
    }
    line = end ? end + 1 : nullptr;
  }
  // Device memory: inputs, outputs, the arena, the weights (copied once).
  const Signature &sig = m->signature;
  auto alloc = [&](size_t bytes, void *&slot) -> kiln_status_t {
    CUdeviceptr p = 0;
    if (bytes)
      if (CUresult r = d.cuMemAlloc(&p, bytes); r != CUDA_SUCCESS)
        return makeStatus(r == CUDA_ERROR_OUT_OF_MEMORY ? KILN_RESOURCE_EXHAUSTED : KILN_INTERNAL,
                          m->path + ": " + cudaErrorText(d, "cuMemAlloc", r) + " for " +
                              std::to_string(bytes) + " bytes");
    if (p)
      s->allocations.push_back(p);
    slot = (void *)(uintptr_t)p;
    return nullptr;
  };
  s->deviceBuffers.resize(sig.inputs.size() + sig.outputs.size() + 2, nullptr);
  size_t k = 0;
  for (const auto *list : {&sig.inputs, &sig.outputs})
    for (const TensorSpec &t : *list) {
      size_t bytes = t.sizeBytes;
      // A size read from the inputs' data has no maximum: the buffer is
      // allocated at the first run, and grows when a run needs more.
      bool byValue = std::any_of(t.symbols.begin(), t.symbols.end(), [&](int32_t k) {
        return k >= 0 && sig.dims[k].valueIndex >= 0;
      });
      s->valueSized.push_back(byValue);
      if (byValue)
        bytes = 0;
      else if (t.dynamic() && !largestBytes(sig, t, bytes))
        return makeStatus(KILN_INVALID_ARGUMENT,
                          m->path + ": tensor '" + t.name +
                              "' has a dynamic dimension without a maximum (or past 2^48 "
                              "elements at it); a CUDA artifact needs one for every dimension");
      s->runBytes.push_back(t.dynamic() ? 0 : bytes);
      s->capacityBytes.push_back(bytes);
      if (kiln_status_t st = alloc(bytes, s->deviceBuffers[k++]))
        return st;
    }
  if (kiln_status_t st = alloc(sig.arenaBytes, s->deviceBuffers[k++]))
    return st;
  size_t weightBytes = m->weights ? sig.externalWeightBytes : sig.weightBytes;
  if (kiln_status_t st = alloc(m->weightsData() ? weightBytes : 0, s->deviceBuffers[k]))
    return st;
  if (s->deviceBuffers[k]) {
    KILN_CU(cuMemcpyHtoDAsync, (CUdeviceptr)(uintptr_t)s->deviceBuffers[k], m->weightsData(),
            weightBytes, s->stream)
    KILN_CU(cuStreamSynchronize, s->stream)
  }
#undef KILN_CU
  s->host.device = s.get();
  s->host.launch = &CudaSession::launchThunk;
  s->host.allocator = &s->pool;
  s->host.alloc = &DevicePool::allocThunk;
  s->host.release = &DevicePool::releaseThunk;
  s->host.read = &CudaSession::readThunk;
  s->host.tensor_map = &CudaSession::tensorMapThunk;
  out = std::move(s);
  return nullptr;
}

CudaSession::~CudaSession() {
  if (!d)
    return;
  for (CUevent e : events)
    d->cuEventDestroy(e);
  if (graph)
    d->cuGraphExecDestroy(graph);
  pool.freeAll();
  for (CUdeviceptr p : allocations)
    d->cuMemFree(p);
  if (module)
    d->cuModuleUnload(module);
  if (stream)
    d->cuStreamDestroy(stream);
  if (contextRetained)
    d->cuDevicePrimaryCtxRelease(device);
}

int32_t CudaSession::launchThunk(void *self, uint32_t kernel, const uint32_t grid[3],
                                 const uint32_t block[3], uint32_t sharedBytes, void **params) {
  auto *s = static_cast<CudaSession *>(self);
  if (kernel >= s->kernels.size()) {
    s->launchError = "the host program launched kernel " + std::to_string(kernel) +
                     ", the artifact has " + std::to_string(s->kernels.size());
    return 1;
  }
  if (sharedBytes > 48 * 1024 && s->sharedLimit[kernel] < sharedBytes) {
    // Above 48 KiB a kernel must opt in (Hopper's wgmma tiles take ~130 KiB).
    if (CUresult r = s->d->cuFuncSetAttribute(
            s->kernels[kernel], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)sharedBytes);
        r != CUDA_SUCCESS) {
      s->launchError = cudaErrorText(*s->d, "cuFuncSetAttribute", r) + " for " +
                       std::to_string(sharedBytes) + " bytes of shared memory";
      return 1;
    }
    s->sharedLimit[kernel] = sharedBytes;
  }
  CUresult r = s->d->cuLaunchKernel(s->kernels[kernel], grid[0], grid[1], grid[2], block[0],
                                    block[1], block[2], sharedBytes, s->stream, params, nullptr);
  if (r != CUDA_SUCCESS) {
    s->launchError = cudaErrorText(*s->d, "cuLaunchKernel", r);
    return 1;
  }
  return 0;
}

int32_t CudaSession::readThunk(void *self, void *dst, const void *src, uint64_t bytes) {
  auto *s = static_cast<CudaSession *>(self);
  // The host program goes on by what the device computed: a run that does
  // so is never captured as a graph (its launches depend on the data).
  // (A first run that happened to read nothing, a loop of no steps, has
  // still asked the pool for its read-back slots, so pool.used() keeps
  // that one eager too.)
  s->readsDevice = true;
  const char *call = "cuMemcpyDtoHAsync";
  CUresult r = s->d->cuMemcpyDtoHAsync(dst, (CUdeviceptr)(uintptr_t)src, bytes, s->stream);
  if (r == CUDA_SUCCESS) {
    call = "cuStreamSynchronize";
    r = s->d->cuStreamSynchronize(s->stream);
  }
  if (r != CUDA_SUCCESS) {
    s->launchError =
        cudaErrorText(*s->d, call, r) + " reading a value the host program branches on";
    return 1;
  }
  return 0;
}

void *CudaSession::tensorMapThunk(void *self, void *global, const uint64_t *desc) {
  auto *s = static_cast<CudaSession *>(self);
  // Every eager run asks again (a graph's replays do not): found in place.
  for (const auto &m : s->tensorMaps)
    if (m->key[0] == (uint64_t)(uintptr_t)global &&
        std::equal(desc, desc + KILN_TENSOR_MAP_WORDS, m->key.begin() + 1))
      return m->device;
  auto fail = [&](const std::string &why) -> void * {
    s->launchError = "a TMA tensor map: " + why;
    return nullptr;
  };
  if (s->capturing) // the eager first run asked for every map the launches use
    return fail("first asked for while capturing a CUDA graph");
  if (!s->d->cuTensorMapEncodeTiled)
    return fail("the CUDA driver lacks cuTensorMapEncodeTiled (a CUDA 12 driver is needed)");
  unsigned rank = (unsigned)desc[1];
  if (rank < 1 || rank > 5)
    return fail("rank " + std::to_string(rank) + " (1 to 5)");
  unsigned long long dims[5], strides[4];
  unsigned box[5], ones[5] = {1, 1, 1, 1, 1};
  for (unsigned i = 0; i < rank; ++i) {
    dims[i] = desc[2 + i];
    box[i] = (unsigned)desc[11 + i];
    if (i)
      strides[i - 1] = desc[7 + i - 1];
  }
  auto map = std::make_unique<TensorMap>();
  map->key[0] = (uint64_t)(uintptr_t)global;
  std::copy(desc, desc + KILN_TENSOR_MAP_WORDS, map->key.begin() + 1);
  // No interleave, L2 promotion of 128 bytes, out-of-bounds elements zero.
  if (CUresult r = s->d->cuTensorMapEncodeTiled(map->bytes, (int)desc[0], rank, global, dims,
                                                 strides, box, ones, 0, (int)desc[16], 2, 0);
      r != CUDA_SUCCESS) {
    std::string shape;
    for (unsigned i = 0; i < rank; ++i)
      shape += (i ? "x" : "") + std::to_string(dims[i]);
    return fail(cudaErrorText(*s->d, "cuTensorMapEncodeTiled", r) + " for a " + shape +
                " tensor (innermost first)");
  }
  CUdeviceptr at = 0;
  if (CUresult r = s->d->cuMemAlloc(&at, sizeof(map->bytes)); r != CUDA_SUCCESS)
    return fail(cudaErrorText(*s->d, "cuMemAlloc", r));
  s->allocations.push_back(at);
  // On the stream, before the launch that reads it; the bytes stay here.
  if (CUresult r = s->d->cuMemcpyHtoDAsync(at, map->bytes, sizeof(map->bytes), s->stream);
      r != CUDA_SUCCESS)
    return fail(cudaErrorText(*s->d, "cuMemcpyHtoDAsync", r));
  map->device = (void *)(uintptr_t)at;
  s->tensorMaps.push_back(std::move(map));
  return s->tensorMaps.back()->device;
}

void CudaSession::setCommunicator(const kiln_communicator_t *c) {
  comm = c;
  host.comm = c ? this : nullptr;
  host.all_reduce = c ? &CudaSession::allReduceThunk : nullptr;
  if (c && graph) { // captured without the collectives' host calls
    d->cuGraphExecDestroy(graph);
    graph = nullptr;
  }
}

int32_t CudaSession::allReduceThunk(void *self, void *data, uint64_t count, int32_t dtype,
                                    int32_t op) {
  auto *s = static_cast<CudaSession *>(self);
  int32_t rc = s->comm->all_reduce_device(s->comm->impl, data, count, dtype, op, s->stream);
  if (rc) {
    const char *why = s->comm->last_error ? s->comm->last_error(s->comm->impl) : "";
    s->launchError = std::string("rank ") + std::to_string(s->comm->rank) + " of " +
                     std::to_string(s->comm->size) + ": a collective of the step failed" +
                     (why && *why ? std::string(": ") + why : std::string());
  }
  return rc;
}

void CudaSession::enableProfiling(bool enable) {
  profiling = enable;
  profileMs.clear();
  profileCalls.clear();
  host.profiler = enable ? this : nullptr;
  host.profile = enable ? &CudaSession::profileThunk : nullptr;
}

// Before (end = 0) and after (end = 1) each launch: an event on the stream.
void CudaSession::profileThunk(void *self, uint32_t kernel, int32_t end) {
  auto *s = static_cast<CudaSession *>(self);
  // Launch i records events 2i (before) and 2i + 1 (after).
  if (!end)
    s->timed.push_back({kernel, 2 * s->timed.size()});
  else if (s->timed.empty())
    return;
  size_t index = s->timed.back().second + (end ? 1 : 0);
  while (s->events.size() <= index) {
    CUevent e = nullptr;
    if (CUresult r = s->d->cuEventCreate(&e, 0); r != CUDA_SUCCESS) {
      s->profileError = cudaErrorText(*s->d, "cuEventCreate", r);
      return;
    }
    s->events.push_back(e);
  }
  if (CUresult r = s->d->cuEventRecord(s->events[index], s->stream); r != CUDA_SUCCESS)
    s->profileError = cudaErrorText(*s->d, "cuEventRecord", r);
}

// After the stream synchronized: each launch's time between its events.
kiln_status_t CudaSession::collectProfile() {
  auto timedRun = std::move(timed);
  timed.clear();
  if (!profileError.empty())
    return makeStatus(KILN_INTERNAL, model->path + ": " + std::exchange(profileError, ""));
  for (auto [kernel, start] : timedRun) {
    float ms = 0;
    if (start + 1 >= events.size())
      continue;
    if (CUresult r = d->cuEventElapsedTime(&ms, events[start], events[start + 1]);
        r != CUDA_SUCCESS)
      return fail("cuEventElapsedTime", r);
    if (kernel >= profileMs.size()) {
      profileMs.resize(kernel + 1);
      profileCalls.resize(kernel + 1);
    }
    profileMs[kernel] += ms;
    ++profileCalls[kernel];
  }
  return nullptr;
}

kiln_status_t CudaSession::run(const std::vector<void *> &hostBuffers, bool onDevice,
                               const std::vector<size_t> *bytes,
                               const std::vector<int64_t> *dims) {
  const Signature &sig = model->signature;
  const CudaDriver &dr = *d;
  if (!sig.dims.empty() || sig.numHostValues) {
    // This run's sizes, within what the buffers were sized for (the caller
    // checked the dims against their ranges).
    if (!bytes || !dims || bytes->size() != capacityBytes.size())
      return makeStatus(KILN_INTERNAL, model->path + ": a run of a model with dynamic "
                                                     "dimensions needs its buffers' sizes");
    for (size_t i = 0; i < bytes->size(); ++i)
      if ((*bytes)[i] > capacityBytes[i]) {
        if (!valueSized[i])
          return makeStatus(KILN_INTERNAL, model->path + ": a buffer of " +
                                               std::to_string((*bytes)[i]) +
                                               " bytes is past the device's " +
                                               std::to_string(capacityBytes[i]));
        if (kiln_status_t st = grow(i, (*bytes)[i]))
          return st;
      }
    runBytes = *bytes;
    host.dims = dims->data();
    if (*dims != graphDims) {
      // The captured launches are this shape's: capture again at the new one.
      if (graph)
        dr.cuGraphExecDestroy(graph);
      graph = nullptr;
      graphDims = *dims;
      runs = 0;
    }
  }
#define KILN_CU(call, ...)                                                                  \
  if (CUresult r = dr.call(__VA_ARGS__); r != CUDA_SUCCESS)                                 \
    return fail(#call, r);                                                                  \
  else {}
  KILN_CU(cuCtxSetCurrent, context)
  size_t n = sig.inputs.size();
  for (size_t i = 0; i < n; ++i) {
    bool kept = i < fedBy.size() && fedBy[i] >= 0;
    if (kept && uploaded[i])
      continue; // the device has it (the last run's output, or the upload)
    if (kept)
      uploaded[i] = true;
    if (!runBytes[i])
      continue;
    if (onDevice) {
      KILN_CU(cuMemcpyDtoDAsync, (CUdeviceptr)(uintptr_t)deviceBuffers[i],
              (CUdeviceptr)(uintptr_t)hostBuffers[i], runBytes[i], stream)
    } else {
      KILN_CU(cuMemcpyHtoDAsync, (CUdeviceptr)(uintptr_t)deviceBuffers[i], hostBuffers[i],
              runBytes[i], stream)
    }
  }
  launchError.clear();
  auto launchAll = [&]() -> kiln_status_t {
    std::vector<void *> buffers = deviceBuffers; // the program may not keep them
    if (model->run(buffers.data(), &host) != 0)
      return makeStatus(KILN_INTERNAL, model->path + ": " +
                                           (launchError.empty() ? "the artifact reported a failure"
                                                                : launchError));
    return nullptr;
  };
  timed.clear();
  if (useGraphs && !profiling && !comm && !pool.used() && !readsDevice && runs >= 1 && !graph) {
    // The first run went eagerly (and proved the launches); capture now.
    KILN_CU(cuStreamBeginCapture, stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
    capturing = true;
    kiln_status_t st = launchAll();
    capturing = false;
    CUgraph g = nullptr;
    CUresult end = dr.cuStreamEndCapture(stream, &g);
    if (st) {
      if (g)
        dr.cuGraphDestroy(g);
      return st;
    }
    if (end != CUDA_SUCCESS)
      return fail("cuStreamEndCapture", end);
    CUresult inst = dr.cuGraphInstantiateWithFlags(&graph, g, 0);
    dr.cuGraphDestroy(g);
    if (inst != CUDA_SUCCESS) {
      graph = nullptr;
      return fail("cuGraphInstantiateWithFlags", inst);
    }
  }
  if (graph && !profiling) {
    KILN_CU(cuGraphLaunch, graph, stream)
  } else if (kiln_status_t st = launchAll()) {
    // Blocks given out before the failure: the stream may still read them.
    if (CUresult r = dr.cuStreamSynchronize(stream); r == CUDA_SUCCESS)
      pool.reclaim();
    if (!pool.error.empty())
      st->message += "; " + std::exchange(pool.error, "");
    return st;
  }
  // Kept inputs take their next value from their outputs, on the device.
  for (size_t i = 0; i < fedBy.size(); ++i) {
    if (fedBy[i] < 0 || !runBytes[i])
      continue;
    KILN_CU(cuMemcpyDtoDAsync, (CUdeviceptr)(uintptr_t)deviceBuffers[i],
            (CUdeviceptr)(uintptr_t)deviceBuffers[n + fedBy[i]], runBytes[i], stream)
  }
  for (size_t i = 0; i < sig.outputs.size(); ++i) {
    if (!runBytes[n + i] || (i < outputStays.size() && outputStays[i]))
      continue;
    if (onDevice) {
      KILN_CU(cuMemcpyDtoDAsync, (CUdeviceptr)(uintptr_t)hostBuffers[n + i],
              (CUdeviceptr)(uintptr_t)deviceBuffers[n + i], runBytes[n + i], stream)
    } else {
      KILN_CU(cuMemcpyDtoHAsync, hostBuffers[n + i], (CUdeviceptr)(uintptr_t)deviceBuffers[n + i],
              runBytes[n + i], stream)
    }
  }
  KILN_CU(cuStreamSynchronize, stream)
#undef KILN_CU
  pool.reclaim();
  ++runs;
  return profiling ? collectProfile() : nullptr;
}

kiln_status_t CudaSession::grow(size_t buffer, size_t bytes) {
  // The old bytes go (a captured graph's launches had their address).
  if (graph)
    d->cuGraphExecDestroy(graph);
  graph = nullptr;
  runs = 0;
  auto old = (CUdeviceptr)(uintptr_t)deviceBuffers[buffer];
  if (old) {
    allocations.erase(std::find(allocations.begin(), allocations.end(), old));
    d->cuMemFree(old);
  }
  deviceBuffers[buffer] = nullptr;
  capacityBytes[buffer] = 0;
  CUdeviceptr p = 0;
  if (CUresult r = d->cuMemAlloc(&p, bytes); r != CUDA_SUCCESS)
    return fail("cuMemAlloc", r);
  allocations.push_back(p);
  deviceBuffers[buffer] = (void *)(uintptr_t)p;
  capacityBytes[buffer] = bytes;
  return nullptr;
}

void CudaSession::keepOnDevice(size_t input, size_t output) {
  size_t n = model->signature.inputs.size(), m = model->signature.outputs.size();
  if (input >= n || output >= m)
    return;
  fedBy.resize(n, -1);
  uploaded.resize(n, false);
  fedBy[input] = (long)output;
  uploaded[input] = false;
  keepOutputOnDevice(output);
}

void CudaSession::keepOutputOnDevice(size_t output) {
  outputStays.resize(model->signature.outputs.size(), false);
  if (output < outputStays.size())
    outputStays[output] = true;
}

void CudaSession::hostChanged(size_t input) {
  if (input < uploaded.size())
    uploaded[input] = false;
}

kiln_status_t CudaSession::fetch(size_t buffer, size_t bytes, void *host) {
  return copyToHost(host, deviceBuffers[buffer], bytes);
}

kiln_status_t CudaSession::copyToHost(void *host, const void *device, size_t bytes) {
  if (!bytes)
    return nullptr;
  if (CUresult r = d->cuCtxSetCurrent(context); r != CUDA_SUCCESS)
    return fail("cuCtxSetCurrent", r);
  if (CUresult r = d->cuMemcpyDtoHAsync(host, (CUdeviceptr)(uintptr_t)device, bytes, stream);
      r != CUDA_SUCCESS)
    return fail("cuMemcpyDtoHAsync", r);
  if (CUresult r = d->cuStreamSynchronize(stream); r != CUDA_SUCCESS)
    return fail("cuStreamSynchronize", r);
  return nullptr;
}

kiln_status_t CudaSession::fetchInput(size_t input, void *host) {
  const Signature &sig = model->signature;
  if (input >= sig.inputs.size())
    return makeStatus(KILN_INVALID_ARGUMENT, model->path + ": no input " + std::to_string(input));
  return fetch(input, runBytes[input], host);
}

kiln_status_t CudaSession::fetchOutput(size_t output, void *host) {
  const Signature &sig = model->signature;
  if (output >= sig.outputs.size())
    return makeStatus(KILN_INVALID_ARGUMENT, model->path + ": no output " + std::to_string(output));
  return fetch(sig.inputs.size() + output, runBytes[sig.inputs.size() + output], host);
}

} // namespace kiln::rt

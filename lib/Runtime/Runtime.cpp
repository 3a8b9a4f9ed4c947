//===- Runtime.cpp - the Kiln runtime C API -------------------------------===//
//
// Loads an artifact with dlopen, validates it, and checks every call's
// tensors against its signature before any generated code touches them.
//
//===----------------------------------------------------------------------===//

#include "kiln/runtime.h"
#include "kiln/tensor_io.hpp"
#include "CudaSession.h"
#include "ElfCheck.h"
#include "Model.h"
#include "Trainer.h"
#include "BlockCache.h"
#include "HostMemory.h"
#include "Signature.h"
#include "ThreadPool.h"

#include "kiln/ArtifactFormat.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <cerrno>
#include <cstring>
#include <new>
#include <string>
#include <vector>

using kiln::rt::Signature;
using kiln::rt::TensorSpec;
using kiln::rt::concreteShape;


struct kiln_session_s {
  kiln_model_t *model;
  std::vector<void *> buffers; // inputs, outputs, arena, weights
  std::unique_ptr<kiln::rt::ThreadPool> pool;
  kiln_artifact_host_t host;
  std::vector<int64_t> dims; // this run's dynamic dimensions (host.dims)
  std::vector<int64_t> hostValues; // then a CUDA host program's scalars
  std::vector<size_t> bytes; // this run's buffers' sizes, inputs then outputs
  std::vector<size_t> slots;  // bindRun's scratch: each caller input's slot,
  std::vector<int64_t> values, shape; // the symbols' sizes, a dynamic tensor's shape
  // kiln_session_run_device of a model whose sizes depend on its inputs'
  // values: the inputs copied to the host for kiln_model_output_dims.
  std::vector<std::vector<unsigned char>> staged;
  std::vector<kiln_tensor_t> stagedInputs;
  kiln::rt::BlockCache blocks; // buffers sized at run time (host.alloc)
  const kiln_communicator_t *comm = nullptr; // a data-parallel run's (host.comm)
  void *arena = nullptr; // allocateHost(arenaBytes)
  uint64_t arenaBytes = 0;
  std::unique_ptr<kiln::rt::CudaSession> cuda; // CUDA artifacts
  // Per-kernel profile (kiln_session_enable_profiling): totals by kernel.
  std::vector<double> kernelMs;
  std::vector<int64_t> kernelCalls;
  std::chrono::steady_clock::time_point kernelStart;
  ~kiln_session_s() { kiln::rt::releaseHost(arena, arenaBytes); }

  static void profileThunk(void *self, uint32_t kernel, int32_t end) {
    auto *s = static_cast<kiln_session_s *>(self);
    auto now = std::chrono::steady_clock::now();
    if (!end) {
      s->kernelStart = now;
      return;
    }
    if (kernel >= s->kernelMs.size()) {
      s->kernelMs.resize(kernel + 1);
      s->kernelCalls.resize(kernel + 1);
    }
    s->kernelMs[kernel] += std::chrono::duration<double, std::milli>(now - s->kernelStart).count();
    ++s->kernelCalls[kernel];
  }
};

using kiln::rt::makeStatus;

namespace {

std::string shapeStr(const int64_t *shape, int32_t rank) {
  std::string s = "[";
  for (int32_t i = 0; i < rank; ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

kiln_tensor_desc_t describe(const TensorSpec &t) {
  return {t.name.c_str(), t.dtype, (int32_t)t.shape.size(), t.shape.data(), t.sizeBytes};
}

/// Checks a caller tensor against the signature entry it is bound to, whose
/// shape under this call's dynamic dimensions is `shape`.
kiln_status_t check(const char *kind, size_t index, const kiln_tensor_t &t,
                    const TensorSpec &spec, const std::vector<int64_t> &shape) {
  // The name for a message, made only when there is one to give.
  auto what = [&] { return std::string(kind) + " '" + spec.name + "'"; };
  if (t.name && spec.name != t.name)
    return makeStatus(KILN_INVALID_ARGUMENT, std::string(kind) + " " + std::to_string(index) +
                                                 " is named '" + t.name + "', the model expects '" +
                                                 spec.name + "'");
  if (t.dtype != spec.dtype)
    return makeStatus(KILN_INVALID_ARGUMENT, what() + " has dtype " + kiln_dtype_name(t.dtype) +
                                                 ", expected " + kiln_dtype_name(spec.dtype));
  bool same = t.rank == (int32_t)shape.size() && (t.rank == 0 || t.shape);
  for (int32_t i = 0; same && i < t.rank; ++i)
    same = t.shape[i] == shape[i];
  if (!same)
    return makeStatus(KILN_INVALID_ARGUMENT,
                      what() + " has shape " + shapeStr(t.shape, t.shape ? t.rank : 0) +
                          ", expected " + shapeStr(shape.data(), shape.size()));
  size_t bytes = kiln::rt::denseBytes(spec.dtype, shape);
  if (bytes == SIZE_MAX)
    return makeStatus(KILN_INVALID_ARGUMENT, what() + " has shape " +
                                                 shapeStr(shape.data(), shape.size()) +
                                                 ", past 2^48 elements");
  if (t.size_bytes != bytes || (!t.data && bytes))
    return makeStatus(KILN_INVALID_ARGUMENT, what() + " has " + std::to_string(t.size_bytes) +
                                                 " bytes of data, expected " +
                                                 std::to_string(bytes));
  return nullptr;
}
kiln_status_t abiMismatch(const std::string &what, uint32_t found) {
  return makeStatus(KILN_FAILED_PRECONDITION,
                    what + ": artifact ABI version " + std::to_string(found) +
                        ", this runtime reads version " +
                        std::to_string(KILN_ARTIFACT_ABI_VERSION) + "; recompile the model");
}

/// Maps the external weights file and checks it against the signature.
kiln_status_t mapWeights(kiln_model_s &m, const std::string &file) {
  const Signature &sig = m.signature;
  int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return makeStatus(KILN_NOT_FOUND, m.path + ": cannot open its weights file '" + file +
                                          "': " + strerror(errno) +
                                          " (the model was compiled with --weights=external)");
  struct stat st;
  if (fstat(fd, &st) != 0 || (uint64_t)st.st_size != sig.externalWeightBytes) {
    close(fd);
    return makeStatus(KILN_FAILED_PRECONDITION,
                      m.path + ": weights file '" + file + "' has " +
                          std::to_string((long long)st.st_size) + " bytes, the artifact needs " +
                          std::to_string(sig.externalWeightBytes));
  }
  void *p = sig.externalWeightBytes
                ? mmap(nullptr, sig.externalWeightBytes, PROT_READ, MAP_PRIVATE, fd, 0)
                : nullptr;
  close(fd);
  if (p == MAP_FAILED)
    return makeStatus(KILN_RESOURCE_EXHAUSTED,
                      m.path + ": cannot map weights file '" + file + "': " + strerror(errno));
  m.weights = p;
  m.weightsSize = sig.externalWeightBytes;
  if (kiln_fnv1a64(KILN_FNV1A64_INIT, p, m.weightsSize) != sig.externalWeightHash)
    return makeStatus(KILN_FAILED_PRECONDITION,
                      m.path + ": weights file '" + file +
                          "' does not match the artifact (checksum differs): it belongs to "
                          "another compile of the model, or is damaged");
  return nullptr;
}

/// A model over an artifact's exports (`handle` is null when linked in);
/// `weightsFile` is where external weights are, if the artifact has them.
kiln_status_t makeModel(const std::string &path, void *handle, const char *sig,
                        kiln_artifact_run_fn run, kiln_artifact_output_dims_fn outputDims,
                        const std::string &weightsFile, kiln_model_t **out) {
  auto *m = new (std::nothrow) kiln_model_s;
  if (!m)
    return makeStatus(KILN_RESOURCE_EXHAUSTED, "out of memory");
  std::string error;
  if (!kiln::rt::parseSignature(sig, 1 << 20, m->signature, error)) {
    delete m;
    return makeStatus(KILN_INVALID_ARGUMENT, path + ": " + error);
  }
  m->path = path;
  if ((m->signature.numValueDims || m->signature.numHostValues) && !outputDims) {
    delete m;
    return makeStatus(KILN_INVALID_ARGUMENT, path + ": the signature has sizes or scalars "
                                                    "computed from the inputs' values, but the "
                                                    "artifact exports no kiln_model_output_dims");
  }
  m->outputDims = outputDims;
  if (std::string lacks = kiln::rt::missingCpuFeature(m->signature); !lacks.empty()) {
    std::string message = path + ": compiled for CPU '" + m->signature.cpuName +
                          "', its code needs " + lacks +
                          (lacks == "amx-int8" ? ", which this machine lacks (or Linux does not "
                                                 "grant a process its tile state)"
                                               : ", which this machine lacks") +
                          "; recompile here, or with --cpu=x86-64-v2 for any x86-64";
    delete m;
    return makeStatus(KILN_FAILED_PRECONDITION, message);
  }
  if (m->signature.externalWeightHash || m->signature.externalWeightBytes)
    if (kiln_status_t st = mapWeights(*m, weightsFile)) {
      delete m;
      return st;
    }
  m->handle = handle;
  m->run = run;
  *out = m;
  return nullptr;
}
} // namespace

void kiln::rt::setSessionCommunicator(kiln_session_t *s, const kiln_communicator_t *comm) {
  s->comm = comm;
  s->host.comm = comm ? comm->impl : nullptr;
  s->host.all_reduce = comm ? comm->all_reduce : nullptr;
  bool async = comm && comm->all_reduce_start && comm->all_reduce_wait;
  s->host.all_reduce_start = async ? comm->all_reduce_start : nullptr;
  s->host.all_reduce_wait = async ? comm->all_reduce_wait : nullptr;
}

kiln::rt::CudaSession *kiln::rt::cudaSessionOf(kiln_session_t *s) {
  return s ? s->cuda.get() : nullptr;
}

extern "C" {

kiln_status_code_t kiln_status_code(kiln_status_t s) { return s ? s->code : KILN_OK; }
const char *kiln_status_message(kiln_status_t s) { return s ? s->message.c_str() : ""; }
void kiln_status_free(kiln_status_t s) { delete s; }

size_t kiln_dtype_size(kiln_dtype_t d) {
  switch (d) {
  case KILN_DTYPE_F64: case KILN_DTYPE_I64: case KILN_DTYPE_U64: return 8;
  case KILN_DTYPE_F32: case KILN_DTYPE_I32: case KILN_DTYPE_U32: return 4;
  case KILN_DTYPE_F16: case KILN_DTYPE_BF16: case KILN_DTYPE_I16: case KILN_DTYPE_U16: return 2;
  case KILN_DTYPE_I8: case KILN_DTYPE_U8: case KILN_DTYPE_BOOL: return 1;
  }
  return 0;
}

const char *kiln_dtype_name(kiln_dtype_t d) {
  static const char *names[] = {"f32", "f64", "f16", "bf16", "i8",  "i16", "i32",
                                "i64", "u8",  "bool", "u16", "u32", "u64"};
  return (unsigned)d < 13 ? names[d] : "invalid";
}

kiln_status_t kiln_model_load(const char *path, kiln_model_t **out_model) {
  if (!path || !out_model)
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_model_load: null argument");
  *out_model = nullptr;
  // A bare name would make dlopen search the library path; load files only.
  std::string file = path;
  if (file.find('/') == std::string::npos)
    file = "./" + file;
  if (std::string why; !kiln::rt::checkElfFile(file, why))
    return makeStatus(KILN_NOT_FOUND, std::string(path) + ": cannot load artifact: " + why);
  void *h = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    return makeStatus(KILN_NOT_FOUND, std::string(path) + ": cannot load artifact: " +
                                          (e ? e : "unknown error"));
  }
  auto *version = (const uint32_t *)dlsym(h, "kiln_artifact_abi_version");
  auto *sig = (const char *)dlsym(h, "kiln_artifact_signature");
  auto run = (kiln_artifact_run_fn)dlsym(h, "kiln_model_run");
  auto outputDims = (kiln_artifact_output_dims_fn)dlsym(h, "kiln_model_output_dims");
  if (!version || !sig || !run) {
    dlclose(h);
    return makeStatus(KILN_INVALID_ARGUMENT, std::string(path) + ": not a Kiln artifact");
  }
  if (uint32_t found = *version; found != KILN_ARTIFACT_ABI_VERSION) {
    dlclose(h); // unmaps `version`: read it first
    return abiMismatch(path, found);
  }
  // NAME.so -> NAME.weights, when the model keeps its weights outside.
  std::string weightsFile = file;
  size_t slash = weightsFile.rfind('/'), dot = weightsFile.rfind('.');
  if (dot != std::string::npos && dot > slash)
    weightsFile.resize(dot);
  weightsFile += ".weights";
  kiln_model_t *m = nullptr;
  if (kiln_status_t st = makeModel(path, h, sig, run, outputDims, weightsFile, &m)) {
    dlclose(h);
    return st;
  }
  if (auto *kernels = (const char *)dlsym(h, "kiln_artifact_kernels"))
    m->kernels = kernels;
  m->ptx = (const char *)dlsym(h, "kiln_artifact_ptx");
  m->cubin = dlsym(h, "kiln_artifact_cubin");
  if (auto *size = (const uint64_t *)dlsym(h, "kiln_artifact_cubin_size"))
    m->cubinSize = *size;
  m->machineCode = kiln::rt::machineCodeArchs(*m);
  if (!m->weights)
    m->embeddedWeights = dlsym(h, "kiln_artifact_weights");
  *out_model = m;
  return nullptr;
}

kiln_status_t kiln_model_load_static(const kiln_artifact_static_t *artifact, const char *name,
                                     kiln_model_t **out_model) {
  if (!artifact || !out_model)
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_model_load_static: null argument");
  *out_model = nullptr;
  std::string what = name ? name : "linked model";
  if (!artifact->signature || !artifact->run)
    return makeStatus(KILN_INVALID_ARGUMENT, what + ": the artifact has no signature or entry");
  if (artifact->abi_version != KILN_ARTIFACT_ABI_VERSION)
    return abiMismatch(what, artifact->abi_version);
  kiln_status_t st = makeModel(what, nullptr, artifact->signature, artifact->run,
                               artifact->output_dims, what + ".weights", out_model);
  if (!st && !(*out_model)->weights)
    (*out_model)->embeddedWeights = artifact->weights;
  if (!st) {
    (*out_model)->ptx = artifact->ptx;
    (*out_model)->cubin = artifact->cubin;
    (*out_model)->cubinSize = artifact->cubin ? artifact->cubin_size : 0;
    (*out_model)->machineCode = kiln::rt::machineCodeArchs(**out_model);
    if (artifact->kernels)
      (*out_model)->kernels = artifact->kernels;
  }
  return st;
}

void kiln_model_release(kiln_model_t *m) {
  if (!m)
    return;
  if (m->handle)
    dlclose(m->handle);
  delete m;
}

size_t kiln_model_arena_bytes(const kiln_model_t *m) { return m ? m->signature.arenaBytes : 0; }
size_t kiln_model_weight_bytes(const kiln_model_t *m) { return m ? m->signature.weightBytes : 0; }
const char *kiln_model_kernels(const kiln_model_t *m) { return m ? m->kernels : ""; }

const char *kiln_model_target(const kiln_model_t *m) {
  return m ? m->signature.target.c_str() : "";
}

const char *kiln_model_machine_code(const kiln_model_t *m) {
  return m ? m->machineCode.c_str() : "";
}

size_t kiln_model_external_weight_bytes(const kiln_model_t *m) {
  return m ? m->signature.externalWeightBytes : 0;
}

size_t kiln_model_num_inputs(const kiln_model_t *m) { return m ? m->signature.inputs.size() : 0; }
size_t kiln_model_num_outputs(const kiln_model_t *m) { return m ? m->signature.outputs.size() : 0; }

kiln_status_t kiln_model_input(const kiln_model_t *m, size_t i, kiln_tensor_desc_t *out) {
  if (!m || !out || i >= m->signature.inputs.size())
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_model_input: index out of range");
  *out = describe(m->signature.inputs[i]);
  return nullptr;
}

kiln_status_t kiln_model_output(const kiln_model_t *m, size_t i, kiln_tensor_desc_t *out) {
  if (!m || !out || i >= m->signature.outputs.size())
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_model_output: index out of range");
  *out = describe(m->signature.outputs[i]);
  return nullptr;
}

kiln_status_t kiln_session_create(kiln_model_t *m, const kiln_session_options_t *options,
                                  kiln_session_t **out) {
  if (!m || !out)
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_session_create: null argument");
  *out = nullptr;
  int threads = options ? options->num_threads : 0;
  if (threads < 0 || threads > 1024)
    return makeStatus(KILN_INVALID_ARGUMENT,
                      "num_threads must be in [0, 1024], got " + std::to_string(threads));
  if (threads == 0)
    threads = std::max(1u, std::thread::hardware_concurrency());
  auto *s = new (std::nothrow) kiln_session_s();
  if (!s)
    return makeStatus(KILN_RESOURCE_EXHAUSTED, "out of memory");
  s->model = m;
  if (m->signature.target == "cuda") {
    // Device memory instead of the host arena; one thread drives the GPU.
    s->pool = std::make_unique<kiln::rt::ThreadPool>(1);
    s->buffers.resize(m->signature.inputs.size() + m->signature.outputs.size() + 2);
    bool graphs = !(options && options->disable_cuda_graphs);
    if (kiln_status_t st = kiln::rt::CudaSession::create(m, graphs, s->cuda)) {
      delete s;
      return st;
    }
    *out = s;
    return nullptr;
  }
  uint64_t arenaBytes = m->signature.arenaBytes;
  static_assert(KILN_ARTIFACT_ARENA_ALIGNMENT <= 64, "allocateHost aligns to 64 bytes");
  if (arenaBytes && !(s->arena = kiln::rt::allocateHost(arenaBytes))) {
    delete s;
    return makeStatus(KILN_RESOURCE_EXHAUSTED,
                      m->path + ": cannot allocate " + kiln::formatBytes(arenaBytes) +
                          " for the model's intermediate tensors");
  }
  s->arenaBytes = arenaBytes;
  // inputs, outputs, arena, external weights (ArtifactFormat.h)
  s->buffers.resize(m->signature.inputs.size() + m->signature.outputs.size() + 2);
  s->pool = std::make_unique<kiln::rt::ThreadPool>(threads);
  s->host = {s->pool.get(), &kiln::rt::ThreadPool::parallelForThunk, nullptr, nullptr, nullptr,
             nullptr, /*tensor_map=*/nullptr, /*dims=*/nullptr, &s->blocks,
             &kiln::rt::BlockCache::allocThunk, &kiln::rt::BlockCache::releaseThunk};
  *out = s;
  return nullptr;
}

void kiln_session_release(kiln_session_t *s) { delete s; }

kiln_status_t kiln_session_enable_profiling(kiln_session_t *s, int enable) {
  if (!s)
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_session_enable_profiling: null session");
  if (s->cuda) { // CUDA events around each launch
    s->cuda->enableProfiling(enable);
    return nullptr;
  }
  s->kernelMs.clear();
  s->kernelCalls.clear();
  s->host.profiler = enable ? s : nullptr;
  s->host.profile = enable ? &kiln_session_s::profileThunk : nullptr;
  return nullptr;
}

size_t kiln_session_profile(const kiln_session_t *s, double *total_ms, int64_t *calls,
                            size_t capacity) {
  if (!s)
    return 0;
  const auto &ms = s->cuda ? s->cuda->kernelMs() : s->kernelMs;
  const auto &n = s->cuda ? s->cuda->kernelCalls() : s->kernelCalls;
  for (size_t i = 0; i < capacity && i < ms.size(); ++i) {
    if (total_ms)
      total_ms[i] = ms[i];
    if (calls)
      calls[i] = n[i];
  }
  return ms.size();
}

int32_t kiln_session_num_threads(const kiln_session_t *s) { return s ? s->pool->size() : 0; }

namespace {
/// Checks a run's tensors against the signature and binds their buffers
/// into `s->buffers` (inputs by name or position, then outputs).
kiln_status_t bindRun(kiln_session_t *s, const kiln_tensor_t *inputs, size_t numInputs,
                      kiln_tensor_t *outputs, size_t numOutputs, bool onDevice);
} // namespace

kiln_status_t kiln_session_run_device(kiln_session_t *s, const kiln_tensor_t *inputs,
                                      size_t numInputs, kiln_tensor_t *outputs,
                                      size_t numOutputs) {
  if (!s)
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_session_run_device: null session");
  if (!s->cuda)
    return makeStatus(KILN_FAILED_PRECONDITION,
                      s->model->path + ": kiln_session_run_device needs a CUDA artifact (this "
                                       "one runs on the CPU: use kiln_session_run)");
  if (kiln_status_t st = bindRun(s, inputs, numInputs, outputs, numOutputs, /*onDevice=*/true))
    return st;
  return s->cuda->run(s->buffers, /*onDevice=*/true, &s->bytes, &s->dims);
}

kiln_status_t kiln_session_run(kiln_session_t *s, const kiln_tensor_t *inputs,
                               size_t numInputs, kiln_tensor_t *outputs, size_t numOutputs) {
  if (!s)
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_session_run: null session");
  if (kiln_status_t st = bindRun(s, inputs, numInputs, outputs, numOutputs, /*onDevice=*/false))
    return st;
  if (s->cuda)
    return s->cuda->run(s->buffers, /*onDevice=*/false, &s->bytes, &s->dims);
  const size_t numIn = s->model->signature.inputs.size(), numOut = s->model->signature.outputs.size();
  s->buffers[numIn + numOut] = s->arena;
  s->buffers[numIn + numOut + 1] =
      s->model->weights ? s->model->weights : const_cast<void *>(s->model->embeddedWeights);
  int32_t failed = s->model->run(s->buffers.data(), &s->host);
  s->blocks.endRun();
  if (failed != 0 && s->comm) {
    const char *why = s->comm->last_error ? s->comm->last_error(s->comm->impl) : "";
    return makeStatus(KILN_INTERNAL, "rank " + std::to_string(s->comm->rank) + " of " +
                                         std::to_string(s->comm->size) +
                                         ": a collective of the step failed" +
                                         (why && *why ? std::string(": ") + why : std::string()));
  }
  if (failed != 0)
    return makeStatus(KILN_INTERNAL, "the artifact reported a failure");
  return nullptr;
}

} // extern "C"

namespace {
kiln_status_t bindRun(kiln_session_t *s, const kiln_tensor_t *inputs, size_t numInputs,
                      kiln_tensor_t *outputs, size_t numOutputs, bool onDevice) {
  const Signature &sig = s->model->signature;
  if (numOutputs != sig.outputs.size() || (numOutputs && !outputs))
    return makeStatus(KILN_INVALID_ARGUMENT, "model has " + std::to_string(sig.outputs.size()) +
                                                 " outputs, got " + std::to_string(numOutputs) +
                                                 " output buffers");
  std::fill(s->buffers.begin(), s->buffers.end(), nullptr);
  // The session's vectors: a run of a static model allocates nothing here.
  std::vector<size_t> &slots = s->slots;
  std::vector<int64_t> &values = s->values;
  std::string error = kiln::rt::bindInputs(sig, inputs, numInputs, slots, values);
  if (!error.empty())
    return makeStatus(KILN_INVALID_ARGUMENT, error);
  s->dims.clear();
  s->bytes.assign(numInputs + numOutputs, 0);
  auto shapeOf = [&](const TensorSpec &spec) -> const std::vector<int64_t> & {
    if (!spec.dynamic())
      return spec.shape;
    s->shape = concreteShape(spec, values);
    return s->shape;
  };
  for (size_t i = 0; i < numInputs; ++i) {
    const TensorSpec &spec = sig.inputs[slots[i]];
    if (kiln_status_t st = check("input", i, inputs[i], spec, shapeOf(spec)))
      return st;
    s->buffers[slots[i]] = inputs[i].data;
    s->bytes[slots[i]] = inputs[i].size_bytes;
  }
  s->hostValues.clear();
  if (sig.numValueDims || sig.numHostValues) {
    // Sizes and scalars read from the inputs' data, on the host: inputs in
    // GPU memory are copied down first (every input: the signature does
    // not say which ones the sizes read).
    const kiln_tensor_t *hostInputs = inputs;
    if (onDevice) {
      s->staged.resize(numInputs);
      s->stagedInputs.assign(inputs, inputs + numInputs);
      for (size_t i = 0; i < numInputs; ++i) {
        s->staged[i].resize(inputs[i].size_bytes);
        s->stagedInputs[i].data = s->staged[i].data();
        if (kiln_status_t st =
                s->cuda->copyToHost(s->staged[i].data(), inputs[i].data, inputs[i].size_bytes))
          return st;
      }
      hostInputs = s->stagedInputs.data();
    }
    error = kiln::rt::computeValueDims(*s->model, hostInputs, slots, values, &s->hostValues);
    if (!error.empty())
      return makeStatus(KILN_INVALID_ARGUMENT, error);
  }
  for (size_t i = 0; i < numOutputs; ++i) {
    if (kiln_status_t st = check("output", i, outputs[i], sig.outputs[i], shapeOf(sig.outputs[i])))
      return st;
    s->buffers[numInputs + i] = outputs[i].data;
    s->bytes[numInputs + i] = outputs[i].size_bytes;
  }
  // host->dims: every dynamic dimension, inputs then outputs.
  for (const auto *list : {&sig.inputs, &sig.outputs})
    for (const TensorSpec &spec : *list)
      for (int32_t k : spec.symbols)
        if (k >= 0)
          s->dims.push_back(values[k]);
  // Then the scalars a CUDA host program reads (`hostvalues`).
  s->dims.insert(s->dims.end(), s->hostValues.begin(), s->hostValues.end());
  s->host.dims = s->dims.data();
  // The generated kernels assume their buffers don't alias (noalias): an
  // output may not share bytes with an input or another output.
  auto overlap = [&](const kiln_tensor_t &a, const kiln_tensor_t &b) {
    auto *pa = (const char *)a.data, *pb = (const char *)b.data;
    return a.size_bytes && b.size_bytes && pa < pb + b.size_bytes && pb < pa + a.size_bytes;
  };
  for (size_t i = 0; i < numOutputs; ++i) {
    for (size_t j = 0; j < numInputs; ++j)
      if (overlap(outputs[i], inputs[j]))
        return makeStatus(KILN_INVALID_ARGUMENT, "output '" + sig.outputs[i].name +
                                                     "' overlaps an input's memory; outputs "
                                                     "need buffers of their own");
    for (size_t j = 0; j < i; ++j)
      if (overlap(outputs[i], outputs[j]))
        return makeStatus(KILN_INVALID_ARGUMENT, "outputs '" + sig.outputs[j].name + "' and '" +
                                                     sig.outputs[i].name + "' overlap in memory");
  }
  return nullptr;
}
} // namespace

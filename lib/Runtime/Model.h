//===- Model.h - the runtime's model and status objects ---------*- C++ -*-===//
//
// Shared by Runtime.cpp (loading, sessions) and Trainer.cpp (training).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_MODEL_H
#define KILN_LIB_RUNTIME_MODEL_H

#include "Signature.h"

#include "kiln/runtime.h"

#include <sys/mman.h>

#include <new>
#include <string>
#include <vector>

struct kiln_status_s {
  kiln_status_code_t code;
  std::string message;
};

struct kiln_model_s {
  void *handle = nullptr;
  void *weights = nullptr; // the external weights file, mapped read-only
  size_t weightsSize = 0;
  const void *embeddedWeights = nullptr; // kiln_artifact_weights
  ~kiln_model_s() {
    if (weights)
      munmap(weights, weightsSize);
  }
  kiln_artifact_run_fn run = nullptr;
  /// kiln_model_output_dims: output sizes from the inputs' values, when
  /// the signature has `dimvalue` lines.
  kiln_artifact_output_dims_fn outputDims = nullptr;
  const char *kernels = ""; // kiln_artifact_kernels, when exported
  const char *ptx = nullptr; // kiln_artifact_ptx of a CUDA artifact
  const void *cubin = nullptr; // kiln_artifact_cubin (its arch's machine code), if any
  uint64_t cubinSize = 0;
  kiln::rt::Signature signature;
  std::string path;
  std::string machineCode; // machineCodeArchs, for kiln_model_machine_code
  /// The weights blob, wherever it lives.
  const void *weightsData() const { return weights ? weights : embeddedWeights; }
};

namespace kiln::rt {
class CudaSession;
/// The CUDA session behind `session`, or null for a CPU one.
CudaSession *cudaSessionOf(kiln_session_t *session);

/// The SMs (as "sm_80 sm_90") that the artifact's machine code is for, ""
/// when it has none (the driver JIT-compiles its PTX).
std::string machineCodeArchs(const kiln_model_s &m);

/// Computes the value symbols (`dimvalue`) of a model whose output sizes
/// depend on its inputs' data, into `values`, after bindInputs bound the
/// others: checks each input's dtype and size first (the function reads
/// them by their shapes). `slots` maps caller inputs to the signature's.
/// A CUDA artifact's `hostvalues` go into `hostValues` when given.
/// "" when fine, else the error.
std::string computeValueDims(const kiln_model_s &m, const kiln_tensor_t *inputs,
                             const std::vector<size_t> &slots, std::vector<int64_t> &values,
                             std::vector<int64_t> *hostValues = nullptr);

inline kiln_status_t makeStatus(kiln_status_code_t code, std::string message) {
  return new (std::nothrow) kiln_status_s{code, std::move(message)};
}
} // namespace kiln::rt

#endif // KILN_LIB_RUNTIME_MODEL_H

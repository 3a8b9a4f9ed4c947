//===- Trainer.h - the trainer object ---------------------------*- C++ -*-===//
//
// Shared by Trainer.cpp (steps, parameters, inference) and TrainerComm.cpp
// (data-parallel runs, optimizer state for checkpoints).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_TRAINER_H
#define KILN_LIB_RUNTIME_TRAINER_H

#include "Model.h"

#include <cstdint>
#include <vector>

namespace kiln::rt {
class CudaSession;
} // namespace kiln::rt

struct kiln_trainer_s {
  kiln_model_t *model = nullptr;
  kiln_session_t *session = nullptr;
  struct Slot {
    size_t input, output;
    std::vector<uint8_t> current, next;
    bool onDevice = false; // CUDA: a parameter or optimizer state
  };
  std::vector<Slot> slots;          // parameters first, then optimizer state
  size_t numParams = 0;
  std::vector<size_t> dataInputs;   // model inputs the caller gives
  std::vector<std::vector<uint8_t>> outputs; // every output's buffer
  int64_t steps = 0;
  const kiln_communicator_t *comm = nullptr; // a data-parallel run's, or null
  kiln::rt::CudaSession *cuda = nullptr; // the session's, on CUDA
  bool hostStale = false;  // the device's parameters and state are newer
  bool gradsStale = false; // the device's gradients are newer
  // The inference entry (exports kiln_infer_*): its inputs are the data
  // inputs and the parameters by name, fed from `slots`.
  kiln_model_t *inferModel = nullptr;
  kiln_session_t *inferSession = nullptr; // created at the first infer
  std::vector<size_t> inferData;           // its inputs the caller gives
  std::vector<long> inferSlot;             // its input i -> slot, or -1
  ~kiln_trainer_s() {
    kiln_session_release(inferSession);
    kiln_model_release(inferModel);
    kiln_session_release(session);
  }

  const kiln::rt::Signature &sig() const { return model->signature; }
  kiln_session_options_t options{};
};

namespace kiln::rt {
/// Whether `value` has `spec`'s dtype, shape and size (a parameter or state
/// tensor being replaced).
inline bool sameTensor(const kiln_tensor_t &value, const TensorSpec &spec) {
  bool same = value.dtype == spec.dtype && value.rank == (int32_t)spec.shape.size() &&
              value.size_bytes == spec.sizeBytes && (value.data || !spec.sizeBytes);
  for (int32_t d = 0; same && d < value.rank; ++d)
    same = value.shape && value.shape[d] == spec.shape[d];
  return same;
}

/// The host copies of the device-resident parameters and state, brought up
/// to date after steps on CUDA.
kiln_status_t refreshHost(kiln_trainer_s &t);
/// Makes `session`'s runs call `comm` for the artifact's collectives (NULL:
/// none, a single rank).
void setSessionCommunicator(kiln_session_t *session, const kiln_communicator_t *comm);
} // namespace kiln::rt

#endif // KILN_LIB_RUNTIME_TRAINER_H

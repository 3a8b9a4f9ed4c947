//===- TrainerComm.cpp - data-parallel trainers and optimizer state -------===//
//
// A data-parallel trainer is an ordinary one whose session lends the
// artifact a communicator: the step's kiln.all_reduce calls average the loss
// and gradients there (kiln-data-parallel). Joining checks that every rank
// runs the same artifact, then starts every rank from rank 0's parameters
// and state. The state accessors serve checkpoints that resume exactly.
//
//===----------------------------------------------------------------------===//

#include "CudaSession.h"
#include "Trainer.h"

#include <cstring>
#include <string>

using kiln::rt::makeStatus;
using kiln::rt::Signature;
using kiln::rt::TensorSpec;

namespace {

/// A rank's failure as a status naming the rank.
kiln_status_t commFailure(const kiln_communicator_t &c, const std::string &what) {
  const char *why = c.last_error ? c.last_error(c.impl) : "";
  return makeStatus(KILN_INTERNAL, "rank " + std::to_string(c.rank) + " of " +
                                       std::to_string(c.size) + ": " + what +
                                       (why && *why ? std::string(": ") + why : std::string()));
}

/// What must agree across ranks: the signature (every shape, the layout of
/// parameters and state) and the weights.
uint64_t fingerprint(const kiln_model_t &m) {
  const Signature &sig = m.signature;
  uint64_t h = KILN_FNV1A64_INIT;
  auto mix = [&](const void *p, size_t n) { h = kiln_fnv1a64(h, p, n); };
  for (const auto *list : {&sig.inputs, &sig.outputs})
    for (const TensorSpec &t : *list) {
      mix(t.name.data(), t.name.size() + 1);
      mix(&t.dtype, sizeof t.dtype);
      mix(t.shape.data(), t.shape.size() * sizeof(int64_t));
    }
  for (const auto *list : {&sig.params, &sig.states, &sig.hypers})
    for (const auto &u : *list) {
      uint64_t words[3] = {u.input, u.output, u.initialOffset};
      mix(words, sizeof words);
    }
  // The weights themselves: the constants and initial values, and the
  // compiled-in hyperparameters, are among them.
  uint64_t bytes = sig.weightBytes;
  mix(&bytes, sizeof bytes);
  if (const void *w = m.weightsData())
    mix(w, bytes);
  return h;
}

/// Every rank's `slot` becomes rank 0's: a sum in which the others add
/// zeros (exact, and needs no broadcast beyond all_reduce).
kiln_status_t fromRankZero(const kiln_communicator_t &c, std::vector<uint8_t> &bytes,
                           const TensorSpec &spec) {
  if (c.rank != 0)
    std::memset(bytes.data(), 0, bytes.size());
  size_t elements = bytes.size() / kiln_dtype_size(spec.dtype);
  if (elements && c.all_reduce(c.impl, bytes.data(), elements, spec.dtype, KILN_REDUCE_SUM))
    return commFailure(c, "could not take '" + spec.name + "' from rank 0");
  return nullptr;
}

} // namespace

extern "C" {

kiln_status_t kiln_trainer_set_communicator(kiln_trainer_t *t, const kiln_communicator_t *comm) {
  if (!t)
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_trainer_set_communicator: null trainer");
  if (!comm) {
    t->comm = nullptr;
    if (t->cuda)
      t->cuda->setCommunicator(nullptr);
    kiln::rt::setSessionCommunicator(t->session, nullptr);
    return nullptr;
  }
  if (!comm->all_reduce || comm->size < 1 || comm->rank < 0 || comm->rank >= comm->size)
    return makeStatus(KILN_INVALID_ARGUMENT,
                      "kiln_trainer_set_communicator: a communicator needs all_reduce and "
                      "0 <= rank < size");
  if (!t->sig().distributed)
    return makeStatus(KILN_FAILED_PRECONDITION,
                      t->model->path + ": not compiled for data-parallel training (compile it "
                                       "with --train --distributed)");
  if (t->cuda && !comm->all_reduce_device)
    return makeStatus(KILN_FAILED_PRECONDITION,
                      t->model->path + ": a CUDA step reduces GPU memory: it needs a "
                                       "communicator of device memory (NCCL, kiln/nccl.h)");
  // The same artifact everywhere: the largest and smallest fingerprint
  // over ranks agree (as two 32-bit halves, exact in any integer type).
  uint64_t mine = fingerprint(*t->model);
  int64_t halves[4] = {int64_t(mine >> 32), int64_t(mine & 0xffffffffu), int64_t(mine >> 32),
                       int64_t(mine & 0xffffffffu)};
  if (comm->all_reduce(comm->impl, halves, 2, KILN_DTYPE_I64, KILN_REDUCE_MAX) ||
      comm->all_reduce(comm->impl, halves + 2, 2, KILN_DTYPE_I64, KILN_REDUCE_MIN))
    return commFailure(*comm, "could not compare the ranks' artifacts");
  if (halves[0] != halves[2] || halves[1] != halves[3])
    return makeStatus(KILN_FAILED_PRECONDITION,
                      "rank " + std::to_string(comm->rank) + " of " + std::to_string(comm->size) +
                          ": the ranks run different artifacts (their signatures or weights "
                          "differ; " +
                          t->model->path + " here): every rank must load the same one");
  if (kiln_status_t st = kiln::rt::refreshHost(*t))
    return st;
  for (auto &s : t->slots) {
    if (kiln_status_t st = fromRankZero(*comm, s.current, t->sig().inputs[s.input]))
      return st;
    if (s.onDevice)
      t->cuda->hostChanged(s.input);
  }
  t->comm = comm;
  if (t->cuda)
    t->cuda->setCommunicator(comm);
  else
    kiln::rt::setSessionCommunicator(t->session, comm);
  return nullptr;
}

size_t kiln_trainer_num_states(const kiln_trainer_t *t) {
  return t ? t->sig().states.size() : 0;
}

kiln_status_t kiln_trainer_state(const kiln_trainer_t *t, size_t i, kiln_tensor_desc_t *desc,
                                 const void **data) {
  if (!t || !desc || !data || i >= t->sig().states.size())
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_trainer_state: no state " + std::to_string(i));
  if (kiln_status_t st = kiln::rt::refreshHost(const_cast<kiln_trainer_s &>(*t)))
    return st;
  const auto &slot = t->slots[t->numParams + i];
  const TensorSpec &spec = t->sig().inputs[slot.input];
  *desc = {spec.name.c_str(), spec.dtype, (int32_t)spec.shape.size(), spec.shape.data(),
           spec.sizeBytes};
  *data = slot.current.data();
  return nullptr;
}

kiln_status_t kiln_trainer_set_state(kiln_trainer_t *t, const kiln_tensor_t *value) {
  if (!t || !value || !value->name)
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_trainer_set_state: a named tensor is needed");
  for (size_t i = 0; i < t->sig().states.size(); ++i) {
    auto &slot = t->slots[t->numParams + i];
    const TensorSpec &spec = t->sig().inputs[slot.input];
    if (spec.name != value->name)
      continue;
    if (!kiln::rt::sameTensor(*value, spec))
      return makeStatus(KILN_INVALID_ARGUMENT, "optimizer state '" + spec.name + "' is " +
                                                   kiln_dtype_name(spec.dtype) + " of " +
                                                   std::to_string(spec.sizeBytes) +
                                                   " bytes; the value given does not match");
    if (kiln_status_t st = kiln::rt::refreshHost(*t))
      return st;
    std::memcpy(slot.current.data(), value->data, spec.sizeBytes);
    if (slot.onDevice)
      t->cuda->hostChanged(slot.input);
    return nullptr;
  }
  return makeStatus(KILN_NOT_FOUND, std::string("the training step has no optimizer state named '") +
                                        value->name + "'");
}

} // extern "C"

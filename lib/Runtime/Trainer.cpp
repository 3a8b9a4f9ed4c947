//===- Trainer.cpp - training sessions of `--train` artifacts -------------===//
//
// A training artifact is an ordinary artifact whose signature says which
// inputs are parameters and optimizer state and which outputs replace them
// (ArtifactFormat.h). The trainer keeps two buffers of each: a step reads
// one and writes the other, then they swap, so nothing is copied.
//
//===----------------------------------------------------------------------===//

#include "Model.h"

#include <cstring>
#include <memory>
#include <vector>

using kiln::rt::makeStatus;
using kiln::rt::Signature;
using kiln::rt::TensorSpec;

namespace {
kiln_tensor_desc_t describe(const TensorSpec &t) {
  return {t.name.c_str(), t.dtype, (int32_t)t.shape.size(), t.shape.data(), t.sizeBytes};
}
} // namespace

struct kiln_trainer_s {
  kiln_model_t *model = nullptr;
  kiln_session_t *session = nullptr;
  struct Slot {
    size_t input, output;
    std::vector<uint8_t> current, next;
  };
  std::vector<Slot> slots;          // parameters first, then optimizer state
  size_t numParams = 0;
  std::vector<size_t> dataInputs;   // model inputs the caller gives
  std::vector<std::vector<uint8_t>> outputs; // every output's buffer
  int64_t steps = 0;
  ~kiln_trainer_s() { kiln_session_release(session); }

  const Signature &sig() const { return model->signature; }
};

extern "C" {

int kiln_model_is_training(const kiln_model_t *m) { return m && m->signature.training; }

kiln_status_t kiln_trainer_create(kiln_model_t *m, const kiln_session_options_t *options,
                                  kiln_trainer_t **out) {
  if (!m || !out)
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_trainer_create: null argument");
  *out = nullptr;
  const Signature &sig = m->signature;
  if (!sig.training)
    return makeStatus(KILN_INVALID_ARGUMENT,
                      m->path + ": not a training artifact (compile it with --train)");
  auto t = std::make_unique<kiln_trainer_s>();
  t->model = m;
  const auto *weights = static_cast<const uint8_t *>(m->weightsData());
  std::vector<bool> isState(sig.inputs.size());
  for (const auto *list : {&sig.params, &sig.states})
    for (const auto &u : *list) {
      const TensorSpec &spec = sig.inputs[u.input];
      kiln_trainer_s::Slot slot{u.input, u.output, {}, {}};
      slot.current.assign(spec.sizeBytes, 0);
      slot.next.assign(spec.sizeBytes, 0);
      if (list == &sig.params) {
        if (!weights || (m->weights && u.initialOffset + spec.sizeBytes > m->weightsSize))
          return makeStatus(KILN_INVALID_ARGUMENT, m->path + ": parameter '" + spec.name +
                                                       "' has no initial value in the weights");
        std::memcpy(slot.current.data(), weights + u.initialOffset, spec.sizeBytes);
      }
      isState[u.input] = true;
      t->slots.push_back(std::move(slot));
    }
  t->numParams = sig.params.size();
  for (size_t i = 0; i < sig.inputs.size(); ++i)
    if (!isState[i])
      t->dataInputs.push_back(i);
  for (const TensorSpec &o : sig.outputs)
    t->outputs.emplace_back(o.sizeBytes, 0);
  if (kiln_status_t st = kiln_session_create(m, options, &t->session))
    return st;
  *out = t.release();
  return nullptr;
}

void kiln_trainer_release(kiln_trainer_t *t) { delete t; }

size_t kiln_trainer_num_inputs(const kiln_trainer_t *t) { return t ? t->dataInputs.size() : 0; }

kiln_status_t kiln_trainer_input(const kiln_trainer_t *t, size_t i, kiln_tensor_desc_t *out) {
  if (!t || !out || i >= t->dataInputs.size())
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_trainer_input: no input " + std::to_string(i));
  *out = describe(t->sig().inputs[t->dataInputs[i]]);
  return nullptr;
}

kiln_status_t kiln_trainer_step(kiln_trainer_t *t, const kiln_tensor_t *inputs, size_t n,
                                double *out_loss) {
  if (!t || (n && !inputs))
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_trainer_step: null argument");
  const Signature &sig = t->sig();
  if (n != t->dataInputs.size())
    return makeStatus(KILN_INVALID_ARGUMENT,
                      t->model->path + ": a training step takes " +
                          std::to_string(t->dataInputs.size()) + " inputs (data and label), got " +
                          std::to_string(n));
  auto view = [](const TensorSpec &spec, void *data) {
    return kiln_tensor_t{spec.name.c_str(), spec.dtype, (int32_t)spec.shape.size(),
                         spec.shape.data(), data, spec.sizeBytes};
  };
  std::vector<kiln_tensor_t> in(sig.inputs.size()), out(sig.outputs.size());
  for (size_t k = 0; k < n; ++k)
    in[t->dataInputs[k]] = inputs[k];
  for (auto &s : t->slots) {
    in[s.input] = view(sig.inputs[s.input], s.current.data());
    out[s.output] = view(sig.outputs[s.output], s.next.data());
  }
  for (size_t o = 0; o < out.size(); ++o)
    if (!out[o].name) // the loss, gradients and anything else: trainer-owned
      out[o] = view(sig.outputs[o], t->outputs[o].data());
  if (kiln_status_t st = kiln_session_run(t->session, in.data(), in.size(), out.data(), out.size()))
    return st;
  for (auto &s : t->slots)
    s.current.swap(s.next);
  ++t->steps;
  if (out_loss) {
    const uint8_t *p = t->outputs[sig.lossOutput].data();
    if (sig.outputs[sig.lossOutput].dtype == KILN_DTYPE_F64) {
      std::memcpy(out_loss, p, 8);
    } else {
      float f;
      std::memcpy(&f, p, 4);
      *out_loss = f;
    }
  }
  return nullptr;
}

int64_t kiln_trainer_steps(const kiln_trainer_t *t) { return t ? t->steps : 0; }

size_t kiln_trainer_num_params(const kiln_trainer_t *t) { return t ? t->numParams : 0; }

kiln_status_t kiln_trainer_param(const kiln_trainer_t *t, size_t i, kiln_tensor_desc_t *desc,
                                 const void **data) {
  if (!t || !desc || !data || i >= t->numParams)
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_trainer_param: no parameter " + std::to_string(i));
  *desc = describe(t->sig().inputs[t->slots[i].input]);
  *data = t->slots[i].current.data();
  return nullptr;
}

kiln_status_t kiln_trainer_grad(const kiln_trainer_t *t, size_t i, kiln_tensor_desc_t *desc,
                                const void **data) {
  if (!t || !desc || !data || i >= t->numParams)
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_trainer_grad: no parameter " + std::to_string(i));
  for (const auto &[out, in] : t->sig().grads)
    if (in == t->slots[i].input) {
      *desc = describe(t->sig().outputs[out]);
      *data = t->outputs[out].data();
      return nullptr;
    }
  return makeStatus(KILN_NOT_FOUND, "parameter " + std::to_string(i) + " has no gradient output");
}

kiln_status_t kiln_trainer_set_param(kiln_trainer_t *t, const kiln_tensor_t *value) {
  if (!t || !value || !value->name)
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_trainer_set_param: a named tensor is needed");
  for (size_t i = 0; i < t->numParams; ++i) {
    const TensorSpec &spec = t->sig().inputs[t->slots[i].input];
    if (spec.name != value->name)
      continue;
    bool same = value->dtype == spec.dtype && value->rank == (int32_t)spec.shape.size() &&
                value->size_bytes == spec.sizeBytes && (value->data || !spec.sizeBytes);
    for (int32_t d = 0; same && d < value->rank; ++d)
      same = value->shape && value->shape[d] == spec.shape[d];
    if (!same)
      return makeStatus(KILN_INVALID_ARGUMENT, "parameter '" + spec.name + "' is " +
                                                   kiln_dtype_name(spec.dtype) + " of " +
                                                   std::to_string(spec.sizeBytes) +
                                                   " bytes; the value given does not match");
    std::memcpy(t->slots[i].current.data(), value->data, spec.sizeBytes);
    return nullptr;
  }
  return makeStatus(KILN_NOT_FOUND, std::string("the model has no parameter named '") +
                                        value->name + "'");
}

} // extern "C"

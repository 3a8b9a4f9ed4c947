//===- Trainer.cpp - training sessions of `--train` artifacts -------------===//
//
// A training artifact is an ordinary artifact whose signature says which
// inputs are parameters and optimizer state and which outputs replace them
// (ArtifactFormat.h). The trainer keeps two buffers of each: a step reads
// one and writes the other, then they swap, so nothing is copied. On CUDA
// the parameters and optimizer state stay on the device between steps (the
// session copies each output into its input there), and the gradients stay
// there too: the host copies are fetched when asked for.
//
//===----------------------------------------------------------------------===//

#include "CudaSession.h"
#include "Trainer.h"

#include <dlfcn.h>

#include <cstring>
#include <memory>
#include <vector>

using kiln::rt::makeStatus;
using kiln::rt::refreshHost;
using kiln::rt::Signature;
using kiln::rt::TensorSpec;

namespace {
kiln_tensor_desc_t describe(const TensorSpec &t) {
  return {t.name.c_str(), t.dtype, (int32_t)t.shape.size(), t.shape.data(), t.sizeBytes};
}
} // namespace

namespace {
/// Binds the library's kiln_infer_* exports, when it has them.
kiln_status_t loadInferenceEntry(kiln_trainer_s &t) {
  kiln_model_t *m = t.model;
  if (!m->handle)
    return nullptr; // linked statically: no inference entry
  auto *abi = (const uint32_t *)dlsym(m->handle, "kiln_infer_kiln_artifact_abi_version");
  auto *sig = (const char *)dlsym(m->handle, "kiln_infer_kiln_artifact_signature");
  auto run = (kiln_artifact_run_fn)dlsym(m->handle, "kiln_infer_kiln_model_run");
  const void *weights = dlsym(m->handle, "kiln_infer_kiln_artifact_weights");
  if (!abi || !sig || !run)
    return nullptr;
  kiln_artifact_static_t entry{*abi, sig, run, weights, nullptr, nullptr, nullptr, 0};
  if (kiln_status_t st =
          kiln_model_load_static(&entry, (m->path + " (inference entry)").c_str(), &t.inferModel))
    return st;
  const Signature &isig = t.inferModel->signature;
  for (size_t i = 0; i < isig.inputs.size(); ++i) {
    long slot = -1;
    for (size_t k = 0; k < t.slots.size(); ++k)
      if (t.sig().inputs[t.slots[k].input].name == isig.inputs[i].name)
        slot = (long)k;
    t.inferSlot.push_back(slot);
    if (slot < 0)
      t.inferData.push_back(i);
  }
  return nullptr;
}
} // namespace

extern "C" {

int kiln_model_is_training(const kiln_model_t *m) { return m && m->signature.training; }

int kiln_model_is_distributed(const kiln_model_t *m) {
  return m && m->signature.training && m->signature.distributed;
}

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
  for (const auto *list : {&sig.params, &sig.states, &sig.hypers})
    for (const auto &u : *list) {
      const TensorSpec &spec = sig.inputs[u.input];
      kiln_trainer_s::Slot slot{u.input, u.output, {}, {}};
      slot.current.assign(spec.sizeBytes, 0);
      slot.next.assign(spec.sizeBytes, 0);
      if (list != &sig.states) { // parameters and hyperparameters: from the weights
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
  // On CUDA, a step moves no parameter, state or gradient over PCIe.
  if ((t->cuda = kiln::rt::cudaSessionOf(t->session))) {
    size_t kept = sig.params.size() + sig.states.size(); // slots: params, states, hypers
    for (size_t k = 0; k < kept && k < t->slots.size(); ++k) {
      t->cuda->keepOnDevice(t->slots[k].input, t->slots[k].output);
      t->slots[k].onDevice = true;
    }
    for (const auto &grad : sig.grads)
      t->cuda->keepOutputOnDevice(grad.first);
  }
  if (kiln_status_t st = loadInferenceEntry(*t))
    return st;
  if (options)
    t->options = *options;
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
                      "a training step takes " +
                          std::to_string(t->dataInputs.size()) + " inputs (data and label), got " +
                          std::to_string(n));
  auto view = [](const TensorSpec &spec, void *data) {
    return kiln_tensor_t{spec.name.c_str(), spec.dtype, (int32_t)spec.shape.size(),
                         spec.shape.data(), data, spec.sizeBytes};
  };
  std::vector<kiln_tensor_t> in(sig.inputs.size()), out(sig.outputs.size());
  for (size_t k = 0; k < n; ++k)
    in[t->dataInputs[k]] = inputs[k];
  // Class labels out of range would read another class's logit (the
  // gather clamps); PyTorch refuses them, so does the trainer.
  for (const auto &[index, classes] : sig.classLabels) {
    const kiln_tensor_t &label = in[index];
    const TensorSpec &spec = sig.inputs[index];
    // Its bytes as its own shape says (a dynamic batch), checked against
    // the signature by kiln_session_run.
    size_t bytes = spec.sizeBytes;
    if (spec.dynamic() && label.rank == (int32_t)spec.shape.size() && label.shape)
      bytes = kiln::rt::denseBytes(KILN_DTYPE_I64,
                                   std::vector<int64_t>(label.shape, label.shape + label.rank));
    if (label.dtype != KILN_DTYPE_I64 || label.size_bytes != bytes || !label.data)
      continue; // kiln_session_run reports the mismatch
    const auto *v = static_cast<const int64_t *>(label.data);
    for (size_t e = 0; e < bytes / 8; ++e)
      if (v[e] < 0 || (uint64_t)v[e] >= classes)
        return makeStatus(KILN_INVALID_ARGUMENT,
                          "label '" + spec.name + "' element " +
                              std::to_string(e) + " is " + std::to_string(v[e]) +
                              "; the model has " + std::to_string(classes) + " classes (0 to " +
                              std::to_string(classes - 1) + ")");
  }
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
    if (!s.onDevice)
      s.current.swap(s.next);
  t->hostStale = t->gradsStale = t->cuda != nullptr;
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

} // extern "C"

kiln_status_t kiln::rt::refreshHost(kiln_trainer_s &t) {
  if (!t.hostStale)
    return nullptr;
  for (auto &s : t.slots)
    if (s.onDevice)
      if (kiln_status_t st = t.cuda->fetchInput(s.input, s.current.data()))
        return st;
  t.hostStale = false;
  return nullptr;
}

extern "C" {

namespace {

kiln_status_t refreshGrads(kiln_trainer_s &t) {
  if (!t.gradsStale)
    return nullptr;
  for (const auto &grad : t.sig().grads)
    if (kiln_status_t st = t.cuda->fetchOutput(grad.first, t.outputs[grad.first].data()))
      return st;
  t.gradsStale = false;
  return nullptr;
}

float *learningRate(const kiln_trainer_t *t) {
  if (!t)
    return nullptr;
  for (const auto &s : t->slots)
    if (t->sig().inputs[s.input].name == "learning_rate" && s.current.size() == 4)
      for (const auto &h : t->sig().hypers)
        if (h.input == s.input)
          return (float *)s.current.data();
  return nullptr;
}
} // namespace

double kiln_trainer_learning_rate(const kiln_trainer_t *t) {
  float *lr = learningRate(t);
  return lr ? *lr : 0.0;
}

kiln_status_t kiln_trainer_set_learning_rate(kiln_trainer_t *t, double lr) {
  float *p = learningRate(t);
  if (!p)
    return makeStatus(KILN_NOT_FOUND, "this training artifact has no learning-rate input "
                                      "(compiled by an older Kiln)");
  if (!(lr >= 0))
    return makeStatus(KILN_INVALID_ARGUMENT, "the learning rate must be >= 0");
  *p = (float)lr;
  return nullptr;
}

size_t kiln_trainer_num_params(const kiln_trainer_t *t) { return t ? t->numParams : 0; }

kiln_status_t kiln_trainer_param(const kiln_trainer_t *t, size_t i, kiln_tensor_desc_t *desc,
                                 const void **data) {
  if (!t || !desc || !data || i >= t->numParams)
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_trainer_param: no parameter " + std::to_string(i));
  if (kiln_status_t st = refreshHost(const_cast<kiln_trainer_s &>(*t)))
    return st;
  *desc = describe(t->sig().inputs[t->slots[i].input]);
  *data = t->slots[i].current.data();
  return nullptr;
}

kiln_status_t kiln_trainer_grad(const kiln_trainer_t *t, size_t i, kiln_tensor_desc_t *desc,
                                const void **data) {
  if (!t || !desc || !data || i >= t->numParams)
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_trainer_grad: no parameter " + std::to_string(i));
  if (kiln_status_t st = refreshGrads(const_cast<kiln_trainer_s &>(*t)))
    return st;
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
    if (!kiln::rt::sameTensor(*value, spec))
      return makeStatus(KILN_INVALID_ARGUMENT, "parameter '" + spec.name + "' is " +
                                                   kiln_dtype_name(spec.dtype) + " of " +
                                                   std::to_string(spec.sizeBytes) +
                                                   " bytes; the value given does not match");
    // Every host copy current first, so none is fetched over this one later.
    if (kiln_status_t st = refreshHost(*t))
      return st;
    std::memcpy(t->slots[i].current.data(), value->data, spec.sizeBytes);
    if (t->slots[i].onDevice)
      t->cuda->hostChanged(t->slots[i].input);
    return nullptr;
  }
  return makeStatus(KILN_NOT_FOUND, std::string("the model has no parameter named '") +
                                        value->name + "'");
}

int kiln_trainer_can_infer(const kiln_trainer_t *t) { return t && t->inferModel; }

size_t kiln_trainer_num_infer_inputs(const kiln_trainer_t *t) {
  return t && t->inferModel ? t->inferData.size() : 0;
}

kiln_status_t kiln_trainer_infer_input(const kiln_trainer_t *t, size_t i, kiln_tensor_desc_t *out) {
  if (!t || !t->inferModel || !out || i >= t->inferData.size())
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_trainer_infer_input: no input " + std::to_string(i));
  return kiln_model_input(t->inferModel, t->inferData[i], out);
}

size_t kiln_trainer_num_infer_outputs(const kiln_trainer_t *t) {
  return t && t->inferModel ? kiln_model_num_outputs(t->inferModel) : 0;
}

kiln_status_t kiln_trainer_infer_output(const kiln_trainer_t *t, size_t i,
                                        kiln_tensor_desc_t *out) {
  if (!t || !t->inferModel)
    return makeStatus(KILN_FAILED_PRECONDITION, "this training artifact has no inference entry");
  return kiln_model_output(t->inferModel, i, out);
}

namespace {
/// The inference entry's inputs: the caller's data, then the trainer's
/// current parameters.
std::vector<kiln_tensor_t> inferInputs(const kiln_trainer_s &t, const kiln_tensor_t *inputs,
                                       size_t n) {
  const Signature &isig = t.inferModel->signature;
  std::vector<kiln_tensor_t> in(isig.inputs.size());
  for (size_t k = 0; k < n; ++k)
    in[t.inferData[k]] = inputs[k];
  for (size_t i = 0; i < in.size(); ++i)
    if (t.inferSlot[i] >= 0) {
      const TensorSpec &spec = isig.inputs[i];
      in[i] = kiln_tensor_t{spec.name.c_str(), spec.dtype, (int32_t)spec.shape.size(),
                            spec.shape.data(),
                            const_cast<uint8_t *>(t.slots[t.inferSlot[i]].current.data()),
                            spec.sizeBytes};
    }
  return in;
}
} // namespace

kiln_status_t kiln_trainer_infer(kiln_trainer_t *t, const kiln_tensor_t *inputs, size_t n,
                                 kiln_tensor_t *outputs, size_t m) {
  if (!t || (n && !inputs))
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_trainer_infer: null argument");
  if (!t->inferModel)
    return makeStatus(KILN_FAILED_PRECONDITION,
                      "no inference entry (compiled with --emit=obj/static, "
                                       "or by an older Kiln)");
  if (n != t->inferData.size())
    return makeStatus(KILN_INVALID_ARGUMENT, "inference takes " +
                                                 std::to_string(t->inferData.size()) +
                                                 " inputs, got " + std::to_string(n));
  if (!t->inferSession)
    if (kiln_status_t st = kiln_session_create(t->inferModel, &t->options, &t->inferSession))
      return st;
  if (kiln_status_t st = refreshHost(*t)) // the parameters the last step left
    return st;
  std::vector<kiln_tensor_t> in = inferInputs(*t, inputs, n);
  return kiln_session_run(t->inferSession, in.data(), in.size(), outputs, m);
}

kiln_status_t kiln_trainer_infer_output_shape(const kiln_trainer_t *t, const kiln_tensor_t *inputs,
                                              size_t n, size_t output, int64_t *shape) {
  if (!t || (n && !inputs))
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_trainer_infer_output_shape: null argument");
  if (!t->inferModel)
    return makeStatus(KILN_FAILED_PRECONDITION, "this training artifact has no inference entry");
  if (n != t->inferData.size())
    return makeStatus(KILN_INVALID_ARGUMENT, "inference takes " +
                                                 std::to_string(t->inferData.size()) +
                                                 " inputs, got " + std::to_string(n));
  std::vector<kiln_tensor_t> in = inferInputs(*t, inputs, n);
  return kiln_model_output_shape(t->inferModel, in.data(), in.size(), output, shape);
}

} // extern "C"

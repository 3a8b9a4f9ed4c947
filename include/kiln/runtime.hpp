//===- runtime.hpp - header-only C++ wrapper of the Kiln runtime -*- C++ -*-===//
//
// RAII over runtime.h. Errors are returned as kiln::Status (no exceptions),
// so it works in -fno-exceptions code.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_HPP
#define KILN_RUNTIME_HPP

#include "kiln/runtime.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

/// An owned status: ok() when the call succeeded.
class Status {
public:
  Status() = default;
  explicit Status(kiln_status_t s) : status_(s, &kiln_status_free) {}
  bool ok() const { return !status_; }
  kiln_status_code_t code() const { return kiln_status_code(status_.get()); }
  std::string message() const { return kiln_status_message(status_.get()); }

private:
  std::unique_ptr<kiln_status_s, void (*)(kiln_status_t)> status_{nullptr, &kiln_status_free};
};

/// A loaded artifact; share one between sessions.
class Model {
public:
  static Status load(const std::string &path, Model &out) {
    kiln_model_t *m = nullptr;
    Status s(kiln_model_load(path.c_str(), &m));
    if (s.ok())
      out.model_.reset(m);
    return s;
  }
  /// A model linked into the program (the static form).
  static Status loadStatic(const kiln_artifact_static_t &artifact, const std::string &name,
                           Model &out) {
    kiln_model_t *m = nullptr;
    Status s(kiln_model_load_static(&artifact, name.c_str(), &m));
    if (s.ok())
      out.model_.reset(m);
    return s;
  }
  kiln_model_t *get() const { return model_.get(); }
  std::vector<kiln_tensor_desc_t> inputs() const { return describe(true); }
  std::vector<kiln_tensor_desc_t> outputs() const { return describe(false); }
  /// Scratch bytes each session allocates once; weight bytes in the artifact.
  size_t arenaBytes() const { return kiln_model_arena_bytes(get()); }
  size_t weightBytes() const { return kiln_model_weight_bytes(get()); }
  size_t externalWeightBytes() const { return kiln_model_external_weight_bytes(get()); }
  /// One line per kernel: its name, then the ONNX nodes it computes (tabs).
  std::string kernels() const { return kiln_model_kernels(get()); }
  /// Dynamic dimensions: how many symbols the model has (descriptions give
  /// -1 for a dynamic dimension), and output `i`'s shape when it runs on
  /// `inputs` (their shapes bind the symbols; allocate outputs with it).
  size_t numDims() const { return kiln_model_num_dims(get()); }
  Status outputShape(const std::vector<kiln_tensor_t> &inputs, size_t i,
                     std::vector<int64_t> &shape) const {
    kiln_tensor_desc_t d;
    Status st(kiln_model_output(get(), i, &d));
    if (!st.ok())
      return st;
    shape.assign(d.rank, 0);
    return Status(kiln_model_output_shape(get(), inputs.data(), inputs.size(), i, shape.data()));
  }

private:
  std::vector<kiln_tensor_desc_t> describe(bool in) const {
    std::vector<kiln_tensor_desc_t> r;
    size_t n = in ? kiln_model_num_inputs(get()) : kiln_model_num_outputs(get());
    for (size_t i = 0; i < n; ++i) {
      kiln_tensor_desc_t d;
      Status(in ? kiln_model_input(get(), i, &d) : kiln_model_output(get(), i, &d));
      r.push_back(d);
    }
    return r;
  }
  std::unique_ptr<kiln_model_t, void (*)(kiln_model_t *)> model_{nullptr, &kiln_model_release};
};

/// Runs a model; one per thread.
class Session {
public:
  /// `threads`: 0 = one per hardware thread, 1 = the calling thread only.
  static Status create(const Model &model, Session &out, int threads = 0) {
    kiln_session_t *s = nullptr;
    kiln_session_options_t options{};
    options.num_threads = threads;
    Status st(kiln_session_create(model.get(), &options, &s));
    if (st.ok())
      out.session_.reset(s);
    return st;
  }
  int threads() const { return kiln_session_num_threads(session_.get()); }
  kiln_session_t *get() const { return session_.get(); }
  Status run(const std::vector<kiln_tensor_t> &inputs, std::vector<kiln_tensor_t> &outputs) {
    return run(inputs.data(), inputs.size(), outputs.data(), outputs.size());
  }
  /// Outputs are written into the caller's buffers: no copy.
  Status run(const kiln_tensor_t *inputs, size_t numInputs, kiln_tensor_t *outputs,
             size_t numOutputs) {
    return Status(kiln_session_run(session_.get(), inputs, numInputs, outputs, numOutputs));
  }
  /// A CUDA session's run on tensors in GPU memory (`data`: device addresses).
  Status runDevice(const std::vector<kiln_tensor_t> &inputs, std::vector<kiln_tensor_t> &outputs) {
    return Status(kiln_session_run_device(session_.get(), inputs.data(), inputs.size(),
                                          outputs.data(), outputs.size()));
  }

private:
  std::unique_ptr<kiln_session_t, void (*)(kiln_session_t *)> session_{nullptr,
                                                                       &kiln_session_release};
};

/// Trains a model compiled with `kiln compile --train`; one per thread.
class Trainer {
public:
  static Status create(const Model &model, Trainer &out, int threads = 0) {
    kiln_trainer_t *t = nullptr;
    kiln_session_options_t options{};
    options.num_threads = threads;
    Status st(kiln_trainer_create(model.get(), &options, &t));
    if (st.ok())
      out.trainer_.reset(t);
    return st;
  }
  kiln_trainer_t *get() const { return trainer_.get(); }
  /// The inputs of a step: data inputs, then the label.
  std::vector<kiln_tensor_desc_t> inputs() const {
    std::vector<kiln_tensor_desc_t> r(kiln_trainer_num_inputs(get()));
    for (size_t i = 0; i < r.size(); ++i)
      Status(kiln_trainer_input(get(), i, &r[i]));
    return r;
  }
  /// One step: forward, backward, update; `loss` is before the update.
  Status step(const std::vector<kiln_tensor_t> &inputs, double &loss) {
    return Status(kiln_trainer_step(get(), inputs.data(), inputs.size(), &loss));
  }
  int64_t steps() const { return kiln_trainer_steps(get()); }
  size_t numParams() const { return kiln_trainer_num_params(get()); }
  /// Parameter `i` (or its last gradient): description and current data.
  Status param(size_t i, kiln_tensor_desc_t &desc, const void *&data) const {
    return Status(kiln_trainer_param(get(), i, &desc, &data));
  }
  Status grad(size_t i, kiln_tensor_desc_t &desc, const void *&data) const {
    return Status(kiln_trainer_grad(get(), i, &desc, &data));
  }
  Status setParam(const kiln_tensor_t &value) {
    return Status(kiln_trainer_set_param(get(), &value));
  }
  /// Optimizer state (named `<param>.exp_avg`, `step`, ...), for checkpoints.
  size_t numStates() const { return kiln_trainer_num_states(get()); }
  Status state(size_t i, kiln_tensor_desc_t &desc, const void *&data) const {
    return Status(kiln_trainer_state(get(), i, &desc, &data));
  }
  Status setState(const kiln_tensor_t &value) {
    return Status(kiln_trainer_set_state(get(), &value));
  }
  /// One rank of a data-parallel run (kiln_trainer_set_communicator).
  Status setCommunicator(const kiln_communicator_t *comm) {
    return Status(kiln_trainer_set_communicator(get(), comm));
  }
  double learningRate() const { return kiln_trainer_learning_rate(get()); }
  Status setLearningRate(double lr) { return Status(kiln_trainer_set_learning_rate(get(), lr)); }
  /// Inference with the current parameters: the model's data inputs and
  /// outputs (false when the artifact has no inference entry).
  bool canInfer() const { return kiln_trainer_can_infer(get()); }
  std::vector<kiln_tensor_desc_t> inferInputs() const {
    std::vector<kiln_tensor_desc_t> r(kiln_trainer_num_infer_inputs(get()));
    for (size_t i = 0; i < r.size(); ++i)
      Status(kiln_trainer_infer_input(get(), i, &r[i]));
    return r;
  }
  std::vector<kiln_tensor_desc_t> inferOutputs() const {
    std::vector<kiln_tensor_desc_t> r(kiln_trainer_num_infer_outputs(get()));
    for (size_t i = 0; i < r.size(); ++i)
      Status(kiln_trainer_infer_output(get(), i, &r[i]));
    return r;
  }
  Status infer(const std::vector<kiln_tensor_t> &inputs, std::vector<kiln_tensor_t> &outputs) {
    return Status(kiln_trainer_infer(get(), inputs.data(), inputs.size(), outputs.data(),
                                     outputs.size()));
  }
  /// Inference output `i`'s shape for `inputs` (a dynamic batch).
  Status inferOutputShape(const std::vector<kiln_tensor_t> &inputs, size_t i,
                          std::vector<int64_t> &shape) const {
    kiln_tensor_desc_t d;
    Status st(kiln_trainer_infer_output(get(), i, &d));
    if (!st.ok())
      return st;
    shape.assign(d.rank, 0);
    return Status(kiln_trainer_infer_output_shape(get(), inputs.data(), inputs.size(), i,
                                                  shape.data()));
  }

private:
  std::unique_ptr<kiln_trainer_t, void (*)(kiln_trainer_t *)> trainer_{nullptr,
                                                                       &kiln_trainer_release};
};

} // namespace kiln

#endif // KILN_RUNTIME_HPP

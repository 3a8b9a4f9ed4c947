//===- Dims.cpp - a model's dynamic dimensions ----------------------------===//
//
// The symbols of a model compiled with dynamic dimensions, and the output
// shapes a call's inputs give (the signature binds every output dimension
// to an input's symbol, or to a size the artifact computes from the inputs'
// values; ArtifactFormat.h).
//
//===----------------------------------------------------------------------===//

#include "Model.h"

using kiln::rt::makeStatus;
using kiln::rt::Signature;
using kiln::rt::TensorSpec;

extern "C" {

size_t kiln_model_num_dims(const kiln_model_t *m) { return m ? m->signature.dims.size() : 0; }

kiln_status_t kiln_model_dim(const kiln_model_t *m, size_t k, const char **name, int64_t *min,
                             int64_t *max) {
  if (!m || k >= m->signature.dims.size())
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_model_dim: index out of range");
  const auto &d = m->signature.dims[k];
  if (name)
    *name = d.name.c_str();
  if (min)
    *min = d.min;
  if (max)
    *max = d.max;
  return nullptr;
}

kiln_status_t kiln_model_dim_symbols(const kiln_model_t *m, size_t index, int32_t *symbols) {
  if (!m || index >= m->signature.inputs.size() + m->signature.outputs.size())
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_model_dim_symbols: index out of range");
  size_t numIn = m->signature.inputs.size();
  const auto &spec =
      index < numIn ? m->signature.inputs[index] : m->signature.outputs[index - numIn];
  for (size_t i = 0; symbols && i < spec.shape.size(); ++i)
    symbols[i] = spec.symbols.empty() ? -1 : spec.symbols[i];
  return nullptr;
}

kiln_status_t kiln_model_output_shape(const kiln_model_t *m, const kiln_tensor_t *inputs,
                                      size_t numInputs, size_t output, int64_t *shape) {
  if (!m || output >= m->signature.outputs.size())
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_model_output_shape: index out of range");
  std::vector<size_t> slots;
  std::vector<int64_t> values;
  std::string error = kiln::rt::bindInputs(m->signature, inputs, numInputs, slots, values);
  if (error.empty())
    error = kiln::rt::computeValueDims(*m, inputs, slots, values);
  if (!error.empty())
    return makeStatus(KILN_INVALID_ARGUMENT, error);
  const auto &spec = m->signature.outputs[output];
  auto dims = kiln::rt::concreteShape(spec, values);
  // Derived sizes multiply symbols: refuse what no buffer could hold.
  if (kiln::rt::denseBytes(spec.dtype, dims) == SIZE_MAX)
    return makeStatus(KILN_INVALID_ARGUMENT, "output '" + spec.name +
                                                 "' would have more than 2^48 elements for "
                                                 "these inputs' shapes");
  for (size_t i = 0; shape && i < dims.size(); ++i)
    shape[i] = dims[i];
  return nullptr;
}

} // extern "C"

std::string kiln::rt::computeValueDims(const kiln_model_s &m, const kiln_tensor_t *inputs,
                                       const std::vector<size_t> &slots,
                                       std::vector<int64_t> &values,
                                       std::vector<int64_t> *hostValues) {
  const Signature &sig = m.signature;
  if (!sig.numValueDims && !(hostValues && sig.numHostValues))
    return "";
  std::vector<void *> buffers(sig.inputs.size(), nullptr);
  std::vector<int64_t> dims; // the inputs' dynamic sizes, in signature order
  for (size_t i = 0; i < slots.size(); ++i) {
    const TensorSpec &spec = sig.inputs[slots[i]];
    size_t need = denseBytes(spec.dtype, concreteShape(spec, values));
    if (inputs[i].dtype != spec.dtype || inputs[i].size_bytes < need || (need && !inputs[i].data))
      return "input '" + spec.name + "': the model's sizes are computed from its "
             "inputs' values, so every input needs its " + kiln_dtype_name(spec.dtype) +
             " data (" + std::to_string(need) + " bytes)";
    buffers[slots[i]] = inputs[i].data;
  }
  for (const TensorSpec &spec : sig.inputs)
    for (int32_t k : spec.symbols)
      if (k >= 0)
        dims.push_back(values[k]);
  kiln_artifact_host_t host{};
  host.dims = dims.data();
  std::vector<int64_t> computed(
      std::max(sig.numValueDims, sig.hostValuesFirst + sig.numHostValues), -1);
  if (m.outputDims(buffers.data(), &host, computed.data()) != 0)
    return "the artifact failed to compute its output sizes";
  for (size_t k = 0; k < sig.dims.size(); ++k) {
    const DimSymbol &sym = sig.dims[k];
    if (sym.valueIndex < 0)
      continue;
    int64_t v = computed[sym.valueIndex];
    if (v < 0 || v > (int64_t(1) << 48))
      return "output dimension '" + sym.name + "' computes to " + std::to_string(v) +
             " for these inputs' values, which no tensor can have";
    values[k] = v;
  }
  if (hostValues)
    hostValues->assign(computed.begin() + sig.hostValuesFirst,
                       computed.begin() + sig.hostValuesFirst + sig.numHostValues);
  return "";
}

//===- Signature.h - parse an artifact's signature text ---------*- C++ -*-===//

#ifndef KILN_LIB_RUNTIME_SIGNATURE_H
#define KILN_LIB_RUNTIME_SIGNATURE_H

#include "kiln/runtime.h"

#include <string>
#include <vector>

namespace kiln::rt {

struct TensorSpec {
  std::string name;
  kiln_dtype_t dtype;
  std::vector<int64_t> shape; // -1: dynamic
  size_t sizeBytes;           // 0 when the shape is dynamic
  /// Per dimension, the symbol (index into Signature::dims) a dynamic one
  /// is bound to; -1 when static.
  std::vector<int32_t> symbols;
  bool dynamic() const { return !symbols.empty(); }
};

/// A dynamic dimension's symbol (`dim` line): its name and range.
struct DimSymbol {
  std::string name;
  int64_t min = 1, max = -1; // max -1: none
  /// A symbol that only outputs have, computed from the inputs' symbols
  /// (`dimexpr` line): constant + sum of coef * product of factors, each
  /// factor an earlier symbol. Say a KV cache's past + new length.
  struct Term {
    int64_t coef;
    std::vector<int32_t> factors;
  };
  bool derived = false;
  int64_t constant = 0;
  std::vector<Term> terms;
  /// An output size computed from the inputs' values (`dimvalue` line):
  /// entry `valueIndex` of kiln_model_output_dims' values; -1 otherwise.
  int32_t valueIndex = -1;
};

struct Signature {
  std::vector<DimSymbol> dims;
  size_t numValueDims = 0; // symbols with a valueIndex
  /// A CUDA artifact's `hostvalues FIRST COUNT`: results FIRST.. of
  /// kiln_model_output_dims are scalars its host program reads, passed
  /// after the buffers' sizes in host->dims.
  size_t hostValuesFirst = 0, numHostValues = 0;
  std::vector<TensorSpec> inputs, outputs;
  uint64_t arenaBytes = 0;  // one buffer for every intermediate, per session
  uint64_t weightBytes = 0; // constants held by the artifact
  uint64_t externalWeightBytes = 0; // in the NAME.weights file
  uint64_t externalWeightHash = 0;  // its FNV-1a 64
  std::string target = "cpu";       // or "cuda" (`target cuda sm_80`)
  std::string gpuArch;              // sm_80, sm_90a... for CUDA
  std::string cpuName;              // what the code was compiled for
  std::vector<std::string> cpuFeatures; // ... and the features it needs

  // A training step (`kiln compile --train`): output `lossOutput` is the
  // loss; each parameter or optimizer state is an input whose next value is
  // an output; parameters start from the weights at `initialOffset`, state
  // from zeros; gradients are outputs too.
  struct Update {
    size_t input, output;
    uint64_t initialOffset = 0;
  };
  bool training = false;
  size_t lossOutput = 0;
  std::vector<Update> params, states;
  std::vector<Update> hypers; // the learning rate: from the weights, settable
  std::vector<std::pair<size_t, size_t>> grads; // (output, parameter input)
  std::vector<std::pair<size_t, uint64_t>> classLabels; // (input, classes)
  bool distributed = false; // loss and gradients averaged over ranks (--distributed)
};

/// The first feature of `sig.cpuFeatures` this CPU lacks ("" if none).
std::string missingCpuFeature(const Signature &sig);

/// Parses the text format of ArtifactFormat.h; false with `error` on any
/// malformed or out-of-range field (the input may be hostile).
bool parseSignature(const char *text, size_t length, Signature &out, std::string &error);

/// Binds the symbols of a model with dynamic dimensions from its inputs'
/// shapes (`values[k]`, -1 while unbound): a shape of the wrong rank, a
/// static dimension that differs, a dimension outside its symbol's range
/// or disagreeing with an earlier input is an error (returned; "" if fine).
std::string bindShape(const Signature &sig, const std::string &what, const TensorSpec &spec,
                      const int64_t *shape, int32_t rank, std::vector<int64_t> &values);

/// Binds caller inputs (by name, or by position when unnamed) to the
/// signature's inputs: `slots[i]` is input i's, and the dynamic symbols
/// get their `values` from the inputs' shapes, then the derived symbols
/// from theirs (dtype, shape and size are checked later, against
/// concreteShape). "" when fine, else the error.
std::string bindInputs(const Signature &sig, const kiln_tensor_t *inputs, size_t numInputs,
                       std::vector<size_t> &slots, std::vector<int64_t> &values);

/// The derived symbols' `values` from the bound ones (bindInputs' last
/// step): an overflow, or a value outside the symbol's range (a hostile
/// signature), is an error (returned; "" if fine).
std::string deriveDims(const Signature &sig, std::vector<int64_t> &values);

/// `spec`'s shape under the symbols' `values`.
std::vector<int64_t> concreteShape(const TensorSpec &spec, const std::vector<int64_t> &values);

/// Bytes of a dense tensor of `dtype` and `shape`; SIZE_MAX past 2^48
/// elements (or for a negative dimension).
size_t denseBytes(kiln_dtype_t dtype, const std::vector<int64_t> &shape);

/// Parses a dtype name ("f32"...); false when unknown.
bool parseDtype(const std::string &name, kiln_dtype_t &out);

} // namespace kiln::rt

#endif // KILN_LIB_RUNTIME_SIGNATURE_H

//===- FuzzSignature.cpp - libFuzzer: the artifact signature parser ------===//
//
// The runtime parses the signature text of whatever .so it is given: any
// text is parsed or refused, and what parses has sizes that agree with its
// shapes.
//
//===----------------------------------------------------------------------===//

#include "Signature.h"

#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kiln::rt::Signature sig;
  std::string error;
  if (!kiln::rt::parseSignature(reinterpret_cast<const char *>(data), size, sig, error))
    return 0;
  // A dynamic dimension (-1) is bound to a symbol the signature has; a
  // static one is not.
  for (const auto *list : {&sig.inputs, &sig.outputs})
    for (const auto &t : *list) {
      if (t.dynamic() && t.symbols.size() != t.shape.size())
        __builtin_trap();
      size_t elems = 1;
      for (size_t i = 0; i < t.shape.size(); ++i) {
        int32_t k = t.dynamic() ? t.symbols[i] : -1;
        if ((t.shape[i] < 0) != (k >= 0) || (k >= 0 && (size_t)k >= sig.dims.size()))
          __builtin_trap();
        elems *= t.shape[i] < 0 ? 1 : (size_t)t.shape[i];
      }
      if (t.sizeBytes != (t.dynamic() ? 0 : elems * kiln_dtype_size(t.dtype)))
        __builtin_trap();
    }
  // Inputs at their symbols' smallest sizes bind (unless past 2^48
  // elements), and every shape then has a size that did not wrap around.
  std::vector<int64_t> mins, values(sig.dims.size(), -1);
  for (const auto &d : sig.dims)
    mins.push_back(d.min);
  for (const auto &t : sig.inputs) {
    std::vector<int64_t> shape = kiln::rt::concreteShape(t, mins);
    if (!kiln::rt::bindShape(sig, "input", t, shape.data(), (int32_t)shape.size(), values).empty())
      return 0;
  }
  if (!kiln::rt::deriveDims(sig, values).empty())
    return 0;
  // Sizes computed from the inputs' values (`dimvalue`): the artifact's
  // kiln_model_output_dims gives any size >= 0; the smallest stands in.
  for (size_t k = 0; k < sig.dims.size(); ++k)
    if (sig.dims[k].valueIndex >= 0)
      values[k] = sig.dims[k].min;
  for (const auto *list : {&sig.inputs, &sig.outputs})
    for (const auto &t : *list) {
      std::vector<int64_t> shape = kiln::rt::concreteShape(t, values);
      size_t bytes = kiln::rt::denseBytes(t.dtype, shape);
      long double exact = kiln_dtype_size(t.dtype);
      for (int64_t d : shape) {
        if (d < 0)
          __builtin_trap();
        exact *= (long double)d;
      }
      if (bytes != SIZE_MAX && (long double)bytes != exact)
        __builtin_trap();
    }
  return 0;
}

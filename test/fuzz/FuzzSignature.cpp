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

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kiln::rt::Signature sig;
  std::string error;
  if (!kiln::rt::parseSignature(reinterpret_cast<const char *>(data), size, sig, error))
    return 0;
  for (const auto *list : {&sig.inputs, &sig.outputs})
    for (const auto &t : *list) {
      size_t elems = 1;
      for (int64_t d : t.shape) {
        if (d < 0)
          __builtin_trap();
        elems *= (size_t)d;
      }
      if (t.sizeBytes != elems * kiln_dtype_size(t.dtype))
        __builtin_trap();
    }
  return 0;
}

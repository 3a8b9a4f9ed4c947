//===- FuzzTensorIO.cpp - libFuzzer: the .npy and TensorProto readers ----===//
//
// Both readers take bytes from users' files: any input is parsed or
// refused, and what parses holds exactly the bytes its shape needs.
//
//===----------------------------------------------------------------------===//

#include "kiln/tensor_io.hpp"

#include <cstddef>
#include <cstdint>

namespace {
void check(const kiln::HostTensor &t) {
  size_t need = t.numElements() * kiln_dtype_size(t.dtype);
  if (t.data.size() != need)
    __builtin_trap();
  // Round trip: what we read, we can write and read back identically.
  kiln::HostTensor back;
  std::string error;
  if (!kiln::parseNpy(kiln::toNpy(t), back, error) || back.data != t.data ||
      back.shape != t.shape || back.dtype != t.dtype)
    __builtin_trap();
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  kiln::HostTensor t;
  std::string error;
  if (kiln::parseNpy(bytes, t, error))
    check(t);
  kiln::HostTensor p;
  if (kiln::parseTensorProto(bytes, p, error))
    check(p);
  return 0;
}

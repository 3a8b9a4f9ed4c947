//===- tensor_io.hpp - read and write .npy and ONNX TensorProto files -*- C++ -*-===//
//
// Part of the runtime library (no protobuf dependency: TensorProto is read
// by a small wire-format parser). Every reader validates sizes against the
// bytes actually present, so a malformed file is an error, never a crash.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TENSOR_IO_HPP
#define KILN_TENSOR_IO_HPP

#include "kiln/runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

/// A host tensor owning its bytes.
struct HostTensor {
  std::string name;
  kiln_dtype_t dtype = KILN_DTYPE_F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  size_t numElements() const;
  /// A kiln_tensor_t view (valid while this object lives).
  kiln_tensor_t view(bool withName = false);
};

/// "1.5 GiB (1610612736 bytes)": sizes in messages people read.
std::string formatBytes(uint64_t bytes);

/// Parses .npy bytes (format 1.0-3.0, little-endian, C order).
bool parseNpy(const std::string &bytes, HostTensor &out, std::string &error);
/// Serializes to .npy format 1.0.
std::string toNpy(const HostTensor &t);
/// Parses ONNX TensorProto bytes (raw_data or typed fields).
bool parseTensorProto(const std::string &bytes, HostTensor &out, std::string &error);

/// Reads `path` as .npy or .pb (by extension, else by content).
bool readTensorFile(const std::string &path, HostTensor &out, std::string &error);
/// Writes `t` as .npy to `path` atomically (temporary file, then rename).
bool writeNpyFile(const std::string &path, const HostTensor &t, std::string &error);

/// The file name (without .npy) a tensor named `name` is saved under:
/// '/', '\\' and ':' become '_' ("onnx::MatMul_9" -> "onnx__MatMul_9").
inline std::string tensorFileStem(std::string name) {
  for (char &c : name)
    if (c == '/' || c == '\\' || c == ':')
      c = '_';
  return name;
}

/// Deterministic stand-in data for an input a benchmark was not given:
/// floats uniform in [-1, 1), bools random, integers zero (a valid index for
/// any Gather), so timing never depends on a file nobody has, nor on zeros.
HostTensor randomTensor(const kiln_tensor_desc_t &d, uint64_t seed);

/// Element `i` as a double, for printing and comparing.
double elementAsDouble(const HostTensor &t, size_t i);

} // namespace kiln

#endif // KILN_TENSOR_IO_HPP

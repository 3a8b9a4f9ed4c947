//===- Signature.cpp - parse an artifact's signature text -----------------===//

#include "Signature.h"

#include "kiln/ArtifactFormat.h"

#include <cstring>
#include <sstream>

namespace kiln::rt {

bool parseDtype(const std::string &name, kiln_dtype_t &out) {
  static const char *names[] = {"f32", "f64", "f16", "bf16", "i8",  "i16", "i32",
                                "i64", "u8",  "bool", "u16", "u32", "u64"};
  for (int i = 0; i < 13; ++i)
    if (name == names[i]) {
      out = (kiln_dtype_t)i;
      return true;
    }
  return false;
}

bool parseSignature(const char *text, size_t length, Signature &out, std::string &error) {
  std::string s(text, strnlen(text, length));
  std::istringstream in(s);
  std::string line;
  if (!std::getline(in, line) || line != KILN_ARTIFACT_SIGNATURE_MAGIC) {
    error = "artifact signature has an unknown format";
    return false;
  }
  while (std::getline(in, line)) {
    if (line.empty())
      continue;
    std::istringstream ls(line);
    std::string kind, dtype;
    if (line.rfind("cpu ", 0) == 0) {
      ls >> kind >> out.cpuName;
      for (std::string f; ls >> f;)
        if (f.size() <= 32 && out.cpuFeatures.size() < 64)
          out.cpuFeatures.push_back(f);
      continue;
    }
    if (line.rfind("external_weights ", 0) == 0) {
      std::string hash, rest;
      if (!(ls >> kind >> out.externalWeightBytes >> hash) || (ls >> rest) || hash.size() != 16 ||
          hash.find_first_not_of("0123456789abcdef") != std::string::npos ||
          out.externalWeightBytes > (uint64_t(1) << 56)) {
        error = "malformed signature line: " + line;
        return false;
      }
      out.externalWeightHash = std::stoull(hash, nullptr, 16);
      continue;
    }
    if (line.rfind("arena ", 0) == 0 || line.rfind("weights ", 0) == 0) {
      uint64_t bytes;
      std::string rest;
      if (!(ls >> kind >> bytes) || (ls >> rest) || bytes > (uint64_t(1) << 56)) {
        error = "malformed signature line: " + line;
        return false;
      }
      (kind == "arena" ? out.arenaBytes : out.weightBytes) = bytes;
      continue;
    }
    size_t nameLen;
    if (!(ls >> kind >> nameLen) || (kind != "input" && kind != "output") ||
        nameLen > 4096) {
      error = "malformed signature line: " + line;
      return false;
    }
    ls.get(); // the space before the name
    TensorSpec spec;
    spec.name.resize(nameLen);
    if (!ls.read(spec.name.data(), nameLen)) {
      error = "malformed signature name: " + line;
      return false;
    }
    int rank;
    if (!(ls >> dtype >> rank) || !parseDtype(dtype, spec.dtype) || rank < 0 || rank > 16) {
      error = "malformed signature type: " + line;
      return false;
    }
    size_t elems = 1;
    for (int i = 0; i < rank; ++i) {
      int64_t d;
      if (!(ls >> d) || d < 0 || (d > 0 && elems > (size_t(1) << 48) / (size_t)d)) {
        error = "malformed signature shape: " + line;
        return false;
      }
      spec.shape.push_back(d);
      elems *= d;
    }
    spec.sizeBytes = elems * kiln_dtype_size(spec.dtype);
    (kind == "input" ? out.inputs : out.outputs).push_back(std::move(spec));
  }
  return true;
}

} // namespace kiln::rt

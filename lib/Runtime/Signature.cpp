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

namespace {
/// The training lines must name existing inputs and outputs of matching
/// types, each at most once.
bool checkTraining(const Signature &sig, std::string &error) {
  if (!sig.training)
    return true;
  std::vector<bool> inUsed(sig.inputs.size()), outUsed(sig.outputs.size());
  auto claim = [&](std::vector<bool> &used, size_t i) {
    if (i >= used.size() || used[i])
      return false;
    used[i] = true;
    return true;
  };
  auto sameType = [&](const TensorSpec &a, const TensorSpec &b) {
    return a.dtype == b.dtype && a.shape == b.shape;
  };
  bool ok = claim(outUsed, sig.lossOutput) &&
            (sig.outputs[sig.lossOutput].dtype == KILN_DTYPE_F32 ||
             sig.outputs[sig.lossOutput].dtype == KILN_DTYPE_F64) &&
            sig.outputs[sig.lossOutput].sizeBytes == kiln_dtype_size(sig.outputs[sig.lossOutput].dtype);
  for (const auto *list : {&sig.params, &sig.states, &sig.hypers})
    for (const auto &u : *list)
      ok = ok && claim(inUsed, u.input) && claim(outUsed, u.output) &&
           sameType(sig.inputs[u.input], sig.outputs[u.output]);
  for (const auto &h : sig.hypers) // a float scalar
    ok = ok && h.input < sig.inputs.size() && sig.inputs[h.input].dtype == KILN_DTYPE_F32 &&
         sig.inputs[h.input].sizeBytes == 4;
  for (const auto &[out, in] : sig.grads) {
    bool isParam = false;
    for (const auto &p : sig.params)
      isParam |= p.input == in;
    ok = ok && isParam && claim(outUsed, out) && sameType(sig.inputs[in], sig.outputs[out]);
  }
  for (const auto &[in, classes] : sig.classLabels)
    ok = ok && in < sig.inputs.size() && sig.inputs[in].dtype == KILN_DTYPE_I64 && classes > 0;
  if (!ok)
    error = "artifact signature has inconsistent training lines";
  return ok;
}
} // namespace

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
    if (line.rfind("target ", 0) == 0) {
      std::string rest;
      if (!(ls >> kind >> out.target) || (out.target != "cpu" && out.target != "cuda") ||
          (out.target == "cuda" && !(ls >> out.gpuArch)) || (ls >> rest) ||
          out.gpuArch.size() > 16) {
        error = "malformed signature line: " + line;
        return false;
      }
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
    if (line.rfind("train ", 0) == 0 || line.rfind("param ", 0) == 0 ||
        line.rfind("state ", 0) == 0 || line.rfind("grad ", 0) == 0 ||
        line.rfind("hyper ", 0) == 0 || line.rfind("labels ", 0) == 0) {
      uint64_t a = 0, b = 0, c = 0;
      std::string rest;
      bool ok = (bool)(ls >> kind >> a);
      if (ok && kind != "train")
        ok = (bool)(ls >> b);
      if (ok && (kind == "param" || kind == "hyper"))
        ok = (bool)(ls >> c);
      if (!ok || (ls >> rest) || a > 65536 || b > 65536 || c > (uint64_t(1) << 56)) {
        error = "malformed signature line: " + line;
        return false;
      }
      out.training = true;
      if (kind == "train")
        out.lossOutput = a;
      else if (kind == "param")
        out.params.push_back({a, b, c});
      else if (kind == "hyper")
        out.hypers.push_back({a, b, c});
      else if (kind == "labels")
        out.classLabels.push_back({a, b});
      else if (kind == "state")
        out.states.push_back({a, b, 0});
      else
        out.grads.push_back({a, b});
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
  return checkTraining(out, error);
}

} // namespace kiln::rt

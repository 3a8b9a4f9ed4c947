//===- Signature.cpp - parse an artifact's signature text -----------------===//

#include "Signature.h"

#include "kiln/ArtifactFormat.h"

#include <cstdlib>
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
  // Parameters, state and gradients are sized at load: static (a dynamic
  // batch reaches the data and label only).
  auto sameType = [&](const TensorSpec &a, const TensorSpec &b) {
    return a.dtype == b.dtype && a.shape == b.shape && !a.dynamic() && !b.dynamic();
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

/// The rest of an `input`/`output` line: name, dtype, rank and shape
/// (sizes, or $k for symbol k of `sig.dims`).
bool parseTensorLine(std::istringstream &ls, const std::string &line, const Signature &out,
                   std::string &kind, TensorSpec &spec, std::string &error) {
  std::string dtype;
  size_t nameLen;
  if (!(ls >> kind >> nameLen) || (kind != "input" && kind != "output") ||
      nameLen > 4096) {
    error = "malformed signature line: " + line;
    return false;
  }
  ls.get(); // the space before the name
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
  std::vector<int32_t> symbols;
  for (int i = 0; i < rank; ++i) {
    std::string word;
    if (!(ls >> word) || word.empty() || word.size() > 20) {
      error = "malformed signature shape: " + line;
      return false;
    }
    if (word[0] == '$') { // a dynamic dimension: symbol k
      char *end = nullptr;
      long k = std::strtol(word.c_str() + 1, &end, 10);
      if (word.size() < 2 || *end || k < 0 || (size_t)k >= out.dims.size()) {
        error = "malformed signature shape: " + line;
        return false;
      }
      symbols.resize(rank, -1);
      symbols[i] = (int32_t)k;
      spec.shape.push_back(-1);
      continue;
    }
    char *end = nullptr;
    long long d = std::strtoll(word.c_str(), &end, 10);
    if (*end || d < 0 || (d > 0 && elems > (size_t(1) << 48) / (size_t)d)) {
      error = "malformed signature shape: " + line;
      return false;
    }
    spec.shape.push_back(d);
    elems *= d;
  }
  spec.symbols = std::move(symbols);
  spec.sizeBytes = spec.dynamic() ? 0 : elems * kiln_dtype_size(spec.dtype);
  return true;
}

/// The rest of a `dimexpr` line: symbol k = constant + terms, each term a
/// coefficient and the earlier symbols it multiplies.
static bool parseDimExpr(std::istringstream &ls, Signature &out) {
  std::string kind, rest;
  size_t k, numTerms;
  int64_t constant;
  if (!(ls >> kind >> k >> constant >> numTerms) || k >= out.dims.size() ||
      out.dims[k].derived || numTerms > 64)
    return false;
  DimSymbol &sym = out.dims[k];
  for (size_t t = 0; t < numTerms; ++t) {
    DimSymbol::Term term;
    size_t numFactors;
    if (!(ls >> term.coef >> numFactors) || numFactors > 16)
      return false;
    for (size_t f = 0; f < numFactors; ++f) {
      size_t j;
      if (!(ls >> j) || j >= k)
        return false;
      term.factors.push_back((int32_t)j);
    }
    sym.terms.push_back(std::move(term));
  }
  sym.derived = true;
  sym.constant = constant;
  return !(ls >> rest);
}

/// A `dim`, `dimexpr` or `dimvalue` line.
static bool parseDimLine(std::istringstream &ls, Signature &out) {
  std::string kind, rest;
  if (ls.str().rfind("dimexpr ", 0) == 0)
    return parseDimExpr(ls, out);
  if (ls.str().rfind("dimvalue ", 0) == 0) {
    // Symbol k is values[i] of kiln_model_output_dims, in order.
    size_t k, i;
    if (!(ls >> kind >> k >> i) || (ls >> rest) || k >= out.dims.size() ||
        out.dims[k].derived || out.dims[k].valueIndex >= 0 || i != out.numValueDims)
      return false;
    out.dims[k].valueIndex = (int32_t)out.numValueDims++;
    return true;
  }
  DimSymbol d;
  size_t nameLen;
  if (ls.str().rfind("dim ", 0) != 0 || !(ls >> kind >> nameLen) || nameLen > 4096 ||
      out.dims.size() >= 1024)
    return false;
  ls.get();
  d.name.resize(nameLen);
  if (!ls.read(d.name.data(), nameLen) || !(ls >> d.min >> d.max) || (ls >> rest) ||
      d.min < 0 || d.max < -1 || (d.max >= 0 && d.max < d.min))
    return false;
  out.dims.push_back(std::move(d));
  return true;
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
    if (line.rfind("dim", 0) == 0) { // dim, dimexpr, dimvalue
      if (!parseDimLine(ls, out)) {
        error = "malformed signature line: " + line;
        return false;
      }
      continue;
    }
    if (line.rfind("hostvalues ", 0) == 0) {
      std::string rest;
      if (!(ls >> kind >> out.hostValuesFirst >> out.numHostValues) || (ls >> rest) ||
          out.hostValuesFirst > 65536 || out.numHostValues == 0 || out.numHostValues > 65536) {
        error = "malformed signature line: " + line;
        return false;
      }
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
    if (line == "distributed") {
      out.distributed = true;
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
    TensorSpec spec;
    if (!parseTensorLine(ls, line, out, kind, spec, error))
      return false;
    (kind == "input" ? out.inputs : out.outputs).push_back(std::move(spec));
  }
  // Device buffers are sized at load, for the largest shapes: a CUDA
  // artifact's every dimension has a maximum (the compiler requires one),
  // but for sizes read from the inputs' values (their outputs grow at run).
  if (out.target == "cuda")
    for (const DimSymbol &d : out.dims)
      if (d.max < 0 && d.valueIndex < 0) {
        error = "artifact signature: dimension '" + d.name +
                "' of a CUDA artifact has no maximum";
        return false;
      }
  std::vector<bool> fromInputs(out.dims.size(), false);
  for (const TensorSpec &t : out.inputs)
    for (int32_t k : t.symbols)
      if (k >= 0 && (out.dims[k].derived || out.dims[k].valueIndex >= 0)) {
        error = "artifact signature: input '" + t.name + "' has a computed dimension";
        return false;
      } else if (k >= 0) {
        fromInputs[k] = true;
      }
  // A derived symbol is known once all it multiplies is (they come first);
  // a value symbol once the inputs are.
  for (size_t k = 0; k < out.dims.size(); ++k)
    fromInputs[k] = fromInputs[k] || out.dims[k].valueIndex >= 0;
  for (size_t k = 0; k < out.dims.size(); ++k)
    if (out.dims[k].derived) {
      fromInputs[k] = true;
      for (const auto &term : out.dims[k].terms)
        for (int32_t j : term.factors)
          fromInputs[k] = fromInputs[k] && fromInputs[j];
    }
  for (const TensorSpec &t : out.outputs)
    for (int32_t k : t.symbols)
      if (k >= 0 && !fromInputs[k]) {
        error = "artifact signature: output '" + t.name + "' has a dynamic dimension no input has";
        return false;
      }
  return checkTraining(out, error);
}

size_t denseBytes(kiln_dtype_t dtype, const std::vector<int64_t> &shape) {
  // An output's dimensions multiply symbols the inputs bound: the product
  // may pass what fits (say $0 x $0 x $0), and then no buffer matches.
  for (int64_t d : shape)
    if (d == 0)
      return 0;
  size_t elems = 1;
  for (int64_t d : shape) {
    if (d < 0 || elems > (size_t(1) << 48) / (size_t)d)
      return SIZE_MAX;
    elems *= (size_t)d;
  }
  return elems * kiln_dtype_size(dtype);
}

std::string deriveDims(const Signature &sig, std::vector<int64_t> &values) {
  for (size_t k = 0; k < sig.dims.size(); ++k) {
    const DimSymbol &sym = sig.dims[k];
    if (!sym.derived)
      continue;
    int64_t sum = sym.constant;
    bool overflow = false;
    for (const auto &term : sym.terms) {
      int64_t product = term.coef;
      for (int32_t j : term.factors)
        overflow |= values[j] < 0 || __builtin_mul_overflow(product, values[j], &product);
      overflow |= __builtin_add_overflow(sum, product, &sum);
    }
    if (overflow || sum < sym.min || (sym.max >= 0 && sum > sym.max))
      return "output dimension '" + sym.name + "' computes to " +
             (overflow ? std::string("more than fits") : std::to_string(sum)) +
             " from the inputs' shapes, outside " + std::to_string(sym.min) + ".." +
             (sym.max >= 0 ? std::to_string(sym.max) : "");
    values[k] = sum;
  }
  return "";
}

std::string bindInputs(const Signature &sig, const kiln_tensor_t *inputs, size_t numInputs,
                       std::vector<size_t> &slots, std::vector<int64_t> &values) {
  if (numInputs != sig.inputs.size() || (numInputs && !inputs))
    return "model takes " + std::to_string(sig.inputs.size()) + " inputs, got " +
           std::to_string(numInputs);
  slots.assign(numInputs, 0);
  values.assign(sig.dims.size(), -1);
  std::vector<bool> bound(numInputs, false);
  for (size_t i = 0; i < numInputs; ++i) {
    size_t slot = i;
    if (inputs[i].name) {
      slot = sig.inputs.size();
      for (size_t j = 0; j < sig.inputs.size(); ++j)
        if (sig.inputs[j].name == inputs[i].name)
          slot = j;
      if (slot == sig.inputs.size())
        return std::string("the model has no input named '") + inputs[i].name + "'";
    }
    if (bound[slot])
      return "input '" + sig.inputs[slot].name + "' is given twice";
    bound[slot] = true;
    slots[i] = slot;
  }
  // Symbols in the inputs' signature order, so an error names the same
  // input whatever order the caller passed them in.
  for (size_t slot = 0; slot < sig.inputs.size(); ++slot) {
    const TensorSpec &spec = sig.inputs[slot];
    if (!spec.dynamic())
      continue;
    size_t i = 0;
    while (slots[i] != slot)
      ++i;
    std::string error = bindShape(sig, "input '" + spec.name + "'", spec, inputs[i].shape,
                                  inputs[i].rank, values);
    if (!error.empty())
      return error;
  }
  return deriveDims(sig, values);
}

std::vector<int64_t> concreteShape(const TensorSpec &spec, const std::vector<int64_t> &values) {
  std::vector<int64_t> shape = spec.shape;
  for (size_t i = 0; i < spec.symbols.size(); ++i)
    if (spec.symbols[i] >= 0)
      shape[i] = values[spec.symbols[i]];
  return shape;
}

std::string bindShape(const Signature &sig, const std::string &what, const TensorSpec &spec,
                      const int64_t *shape, int32_t rank, std::vector<int64_t> &values) {
  auto text = [](const int64_t *s, size_t n) {
    std::string r = "[";
    for (size_t i = 0; i < n; ++i)
      r += (i ? "x" : "") + (s[i] < 0 ? std::string("?") : std::to_string(s[i]));
    return r + "]";
  };
  std::string expected = text(spec.shape.data(), spec.shape.size());
  if (rank != (int32_t)spec.shape.size() || (rank && !shape))
    return what + " has shape " + text(shape, shape ? rank : 0) + ", expected " + expected;
  // Elements so far: a dimension that would take the tensor past 2^48
  // elements is refused like a hostile signature's.
  size_t elems = 1;
  for (int32_t i = 0; i < rank; ++i) {
    int64_t d = shape[i];
    if (d < 0 || (d > 0 && elems > (size_t(1) << 48) / (size_t)d))
      return what + " has shape " + text(shape, rank) + ": dimension " + std::to_string(i) +
             " is out of range";
    elems *= d ? (size_t)d : 1;
    int32_t k = spec.symbols.empty() ? -1 : spec.symbols[i];
    if (k < 0) {
      if (d != spec.shape[i])
        return what + " has shape " + text(shape, rank) + ", expected " + expected;
      continue;
    }
    const DimSymbol &sym = sig.dims[k];
    if (d < sym.min || (sym.max >= 0 && d > sym.max))
      return what + " has shape " + text(shape, rank) + ": dimension " + std::to_string(i) +
             " ('" + sym.name + "') must be in " + std::to_string(sym.min) + ".." +
             (sym.max >= 0 ? std::to_string(sym.max) : "") + ", not " + std::to_string(d);
    if (values[k] >= 0 && values[k] != d)
      return what + " has shape " + text(shape, rank) + ": dimension " + std::to_string(i) +
             " ('" + sym.name + "') is " + std::to_string(d) + ", but an earlier input set '" +
             sym.name + "' to " + std::to_string(values[k]);
    values[k] = d;
  }
  return "";
}

} // namespace kiln::rt

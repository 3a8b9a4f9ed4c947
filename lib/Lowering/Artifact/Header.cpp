//===- Header.cpp - the typed C++ wrapper of one model (--emit=header) ----===//
//
// Like tfcompile's generated header: a class per model with its shapes and
// dtypes as constexpr, named accessors to input and output buffers it owns,
// and run() over the runtime. One header serves both artifact forms: load()
// takes the shared library's path, load_linked() the statically linked
// symbols NAME_kiln_* (declared here, needed at link time only if called).
//
//===----------------------------------------------------------------------===//

#include "Artifact.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <map>
#include <sstream>

namespace kiln {
namespace {

struct CType {
  const char *dtype, *kilnEnum, *cxx;
};

const CType *ctypeOf(const std::string &dtype) {
  static const CType table[] = {
      {"f32", "KILN_DTYPE_F32", "float"},      {"f64", "KILN_DTYPE_F64", "double"},
      {"f16", "KILN_DTYPE_F16", "uint16_t"},   {"bf16", "KILN_DTYPE_BF16", "uint16_t"},
      {"i8", "KILN_DTYPE_I8", "int8_t"},       {"i16", "KILN_DTYPE_I16", "int16_t"},
      {"i32", "KILN_DTYPE_I32", "int32_t"},    {"i64", "KILN_DTYPE_I64", "int64_t"},
      {"u8", "KILN_DTYPE_U8", "uint8_t"},      {"bool", "KILN_DTYPE_BOOL", "bool"},
      {"u16", "KILN_DTYPE_U16", "uint16_t"},   {"u32", "KILN_DTYPE_U32", "uint32_t"},
      {"u64", "KILN_DTYPE_U64", "uint64_t"}};
  for (const CType &c : table)
    if (dtype == c.dtype)
      return &c;
  return nullptr;
}

/// A C identifier from an ONNX name ("input.1" -> "input_1").
std::string identifier(const std::string &name) {
  std::string id;
  for (char c : name)
    id += llvm::isAlnum(c) ? c : '_';
  if (id.empty() || llvm::isDigit(id[0]))
    id = "t" + id;
  return id;
}

/// A C++ string literal holding `s` exactly.
std::string quoted(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (c >= 0x20 && c < 0x7f)
      out += c;
    else {
      char buf[8];
      snprintf(buf, sizeof buf, "\\%03o", c);
      out += buf;
    }
  }
  return out + "\"";
}

/// "[2x4]", or "[batch x seq x 64]" with dynamic dimensions by their
/// symbols ("?" where an output's is computed at run time).
std::string shapeText(const TensorInfo &t) {
  bool dynamic = llvm::is_contained(t.shape, -1);
  std::string s;
  for (size_t i = 0; i < t.shape.size(); ++i)
    s += (i ? dynamic ? " x " : "x" : "") +
         (t.shape[i] >= 0 ? std::to_string(t.shape[i])
                          : t.symbols[i].empty() ? std::string("?") : t.symbols[i]);
  return "[" + s + "]";
}

/// A dynamic model's buffer: its data, shape and element count, sized by
/// resize().
const char *const kSlot =
    "  template <typename T> struct slot {\n"
    "    std::unique_ptr<T[]> data;\n"
    "    std::vector<int64_t> shape;\n"
    "    size_t count = 0;\n"
    "    // After the runtime checked the shape (sizes in range, under 2^48).\n"
    "    void allocate() {\n"
    "      size_t n = 1;\n"
    "      for (int64_t d : shape)\n"
    "        n *= (size_t)d;\n"
    "      if (!data || n != count)\n"
    "        data.reset(new T[n ? n : 1]());\n"
    "      count = n;\n"
    "    }\n"
    "    kiln_tensor_t view(const char *name, kiln_dtype_t dtype) const {\n"
    "      return {name, dtype, (int32_t)shape.size(), shape.data(), data.get(),\n"
    "              count * sizeof(T)};\n"
    "    }\n"
    "  };\n";

/// A dynamic model's dims_t (the symbols the inputs bind, from their
/// smallest sizes) and resize(): inputs sized from the symbols, outputs as
/// the runtime computes them (derived symbols included).
std::string dynamicResize(const std::vector<TensorInfo> &tensors,
                          const std::vector<std::string> &ids,
                          const std::vector<std::pair<std::string, int64_t>> &symbolMinima) {
  std::ostringstream h;
  std::map<std::string, std::string> field; // symbol -> its dims_t member
  llvm::StringSet<> used;
  h << "\n  /// The sizes of the dynamic dimensions the inputs have; resize() to them.\n"
    << "  struct dims_t {\n";
  for (const auto &[symbol, min] : symbolMinima) {
    std::string id = identifier(symbol), base = id;
    for (int k = 2; !used.insert(id).second; ++k)
      id = base + "_" + std::to_string(k);
    field[symbol] = id;
    h << "    int64_t " << id << " = " << min << "; // '" << symbol << "'\n";
  }
  h << "  };\n\n"
    << "  /// Sizes every buffer for `dims` (contents are not kept): inputs from\n"
    << "  /// them, outputs as the runtime computes them from the inputs' shapes.\n"
    << "  /// Sizes outside the model's ranges are an error (and run() refuses the\n"
    << "  /// buffers until a resize() succeeds); nothing is allocated then.\n"
    << "  kiln::Status resize(const dims_t &dims) {\n";
  std::string inputs;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo &t = tensors[i];
    if (!t.isInput)
      continue;
    h << "    buffer" << i << "_.shape = {";
    for (size_t d = 0; d < t.shape.size(); ++d)
      h << (d ? ", " : "")
        << (t.shape[d] >= 0 ? std::to_string(t.shape[d]) : "dims." + field[t.symbols[d]]);
    h << "};\n";
    inputs += (inputs.empty() ? "" : ",\n        ") + std::string("buffer") + std::to_string(i) +
              "_.view(" + ids[i] + "_t::name, " + ids[i] + "_t::dtype)";
  }
  // The runtime checks the inputs' shapes (ranges, shared symbols) while
  // computing the outputs'; nothing is allocated before that passes.
  h << "    const std::vector<kiln_tensor_t> inputs{" << inputs << "};\n";
  size_t output = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].isInput)
      continue;
    h << "    if (kiln::Status s = model_.outputShape(inputs, " << output++ << ", buffer" << i
      << "_.shape); !s.ok())\n      return s;\n";
  }
  for (size_t i = 0; i < tensors.size(); ++i)
    h << "    buffer" << i << "_.allocate();\n";
  h << "    dims_ = dims;\n    return kiln::Status();\n  }\n"
    << "  const dims_t &dims() const { return dims_; }\n";
  return h.str();
}

} // namespace

std::string buildHeader(const std::vector<TensorInfo> &tensors, const std::string &name,
                        const std::string &modelFile,
                        const std::vector<std::pair<std::string, int64_t>> &symbolMinima) {
  bool dynamic = !symbolMinima.empty();
  std::ostringstream h;
  std::string guard = "KILN_MODEL_" + llvm::StringRef(name).upper() + "_H";
  h << "// Generated by `kiln compile " << modelFile << " --emit=header --name " << name
    << "`. Do not edit.\n"
    << "// A typed wrapper over the Kiln runtime (kiln/runtime.hpp) for one model:\n"
    << "//   kiln_models::" << name << " m;\n"
    << "//   m.load(\"" << name << ".so\")   or   m.load_linked()  (static form)\n"
    << "//   fill m.in_<input>(), m.run(), read m.out_<output>().\n"
    << (dynamic ? "// Dynamic dimensions: m.resize({...}) sizes every buffer for them first\n"
                  "// (outputs as the runtime computes them); m.in_<input>_shape() ...\n"
                : "")
    << "#ifndef " << guard << "\n#define " << guard << "\n\n"
    << "#include \"kiln/runtime.hpp\"\n\n#include <array>\n#include <cstddef>\n"
    << "#include <cstdint>\n#include <memory>\n#include <string>\n#include <utility>\n"
    << (dynamic ? "#include <vector>\n\n" : "\n")
    << "// The static form's exports: referenced only by load_linked(), so a\n"
    << "// program that loads the shared library never needs them.\n"
    << "extern \"C\" {\n"
    << "extern const uint32_t " << name << "_kiln_artifact_abi_version;\n"
    << "extern const char " << name << "_kiln_artifact_signature[];\n"
    << "extern const unsigned char " << name << "_kiln_artifact_weights[];\n"
    << "int32_t " << name << "_kiln_model_run(void **buffers, const kiln_artifact_host_t *host);\n"
    << "// Only some artifacts have these (CUDA: PTX, machine code; a kernel table).\n"
    << "__attribute__((weak)) extern const char " << name << "_kiln_artifact_kernels[];\n"
    << "__attribute__((weak)) extern const char " << name << "_kiln_artifact_ptx[];\n"
    << "__attribute__((weak)) extern const unsigned char " << name << "_kiln_artifact_cubin[];\n"
    << "__attribute__((weak)) extern const uint64_t " << name << "_kiln_artifact_cubin_size;\n"
    << "__attribute__((weak)) int32_t " << name
    << "_kiln_model_output_dims(void **, const kiln_artifact_host_t *, int64_t *);\n"
    << "}\n\nnamespace kiln_models {\n\nclass " << name << " {\npublic:\n";

  // One description struct and one accessor per tensor; identifiers made
  // unique (ONNX names may collide once sanitized).
  llvm::StringSet<> used;
  std::vector<std::string> ids;
  size_t numIn = 0, numOut = 0;
  for (const TensorInfo &t : tensors) {
    std::string base = (t.isInput ? "in_" : "out_") + identifier(t.name), id = base;
    for (int k = 2; !used.insert(id).second; ++k)
      id = base + "_" + std::to_string(k);
    ids.push_back(id);
    (t.isInput ? numIn : numOut)++;
  }
  h << "  static constexpr size_t num_inputs = " << numIn << ", num_outputs = " << numOut
    << ";\n\n";
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo &t = tensors[i];
    const CType *c = ctypeOf(t.dtype);
    int64_t count = 1;
    for (int64_t d : t.shape)
      count *= d;
    h << "  // " << (t.isInput ? "input" : "output") << " '" << t.name << "': " << t.dtype << " "
      << shapeText(t) << "\n"
      << "  struct " << ids[i] << "_t {\n"
      << "    static constexpr const char *name = " << quoted(t.name) << ";\n"
      << "    static constexpr kiln_dtype_t dtype = " << c->kilnEnum << ";\n"
      << "    static constexpr std::array<int64_t, " << t.shape.size() << "> shape{{";
    for (size_t d = 0; d < t.shape.size(); ++d)
      h << (d ? ", " : "") << t.shape[d];
    h << "}};" << (dynamic ? " // -1: dynamic" : "") << "\n";
    if (!dynamic)
      h << "    static constexpr size_t count = " << count << ";\n";
    h << "    using type = " << c->cxx << ";\n  };\n"
      << "  " << (t.isInput ? "" : "const ") << c->cxx << " *" << ids[i] << "() "
      << (t.isInput ? "" : "const ") << "{ return buffer" << i << "_" << (dynamic ? ".data" : "")
      << ".get(); }\n";
    if (dynamic)
      h << "  const std::vector<int64_t> &" << ids[i] << "_shape() const { return buffer" << i
        << "_.shape; }\n"
        << "  size_t " << ids[i] << "_count() const { return buffer" << i << "_.count; }\n";
  }
  if (dynamic)
    h << dynamicResize(tensors, ids, symbolMinima);

  h << "\n  /// Loads the shared-library form (`kiln compile MODEL -o " << name << ".so`).\n"
    << "  kiln::Status load(const std::string &path, int num_threads = 0) {\n"
    << "    kiln::Status s = kiln::Model::load(path, model_);\n"
    << "    return s.ok() ? start(num_threads) : std::move(s);\n  }\n\n"
    << "  /// Uses the form linked into this program (`--emit=obj|static --name " << name
    << "`).\n"
    << "  /// With --weights=external, the weights are read from `weights_stem`.weights.\n"
    << "  kiln::Status load_linked(int num_threads = 0,\n"
    << "                           const std::string &weights_stem = " << quoted(name) << ") {\n"
    << "    const kiln_artifact_static_t artifact = {" << name << "_kiln_artifact_abi_version,\n"
    << "        " << name << "_kiln_artifact_signature, &" << name << "_kiln_model_run,\n"
    << "        " << name << "_kiln_artifact_weights, " << name << "_kiln_artifact_ptx,\n"
    << "        " << name << "_kiln_artifact_kernels, " << name << "_kiln_artifact_cubin,\n"
    << "        &" << name << "_kiln_artifact_cubin_size ? " << name
    << "_kiln_artifact_cubin_size : 0,\n"
    << "        " << name << "_kiln_model_output_dims};\n"
    << "    kiln::Status s = kiln::Model::loadStatic(artifact, weights_stem, model_);\n"
    << "    return s.ok() ? start(num_threads) : std::move(s);\n  }\n\n"
    << "  /// Runs the model on the in_*() buffers, writing the out_*() buffers.\n"
    << "  kiln::Status run() {\n";
  auto tensorList = [&](bool inputs) {
    std::string list;
    for (size_t i = 0; i < tensors.size(); ++i)
      if (tensors[i].isInput == inputs)
        list += std::string(list.empty() ? "" : ",\n        ") +
                (dynamic ? "buffer" + std::to_string(i) + "_.view(" + ids[i] + "_t::name, " +
                               ids[i] + "_t::dtype)"
                         : "view<" + ids[i] + "_t>(buffer" + std::to_string(i) + "_.get())");
    return list;
  };
  // (A model may have no inputs: C++ has no empty arrays.)
  if (numIn)
    h << "    const kiln_tensor_t inputs[] = {" << tensorList(true) << "};\n";
  if (numOut)
    h << "    kiln_tensor_t outputs[] = {" << tensorList(false) << "};\n";
  h << "    return session_.run(" << (numIn ? "inputs" : "nullptr") << ", num_inputs, "
    << (numOut ? "outputs" : "nullptr") << ", num_outputs);\n  }\n\n"
    << "  const kiln::Model &model() const { return model_; }\n\n"
    << "private:\n"
    << "  template <typename T> static kiln_tensor_t view(const void *data) {\n"
    << "    return {T::name, T::dtype, (int32_t)T::shape.size(), T::shape.data(),\n"
    << "            const_cast<void *>(data), T::count * sizeof(typename T::type)};\n  }\n\n"
    << "  // The runtime checks every name, dtype and shape in run(), so an\n"
    << "  // artifact other than the one this header was made for is an error there.\n"
    << "  kiln::Status start(int num_threads) {\n"
    << (dynamic ? "    kiln::Status s = kiln::Session::create(model_, session_, num_threads);\n"
                  "    return s.ok() ? resize(dims_t{}) : std::move(s);\n  }\n\n"
                : "    return kiln::Session::create(model_, session_, num_threads);\n  }\n\n")
    << "  kiln::Model model_;\n  kiln::Session session_;\n";
  if (dynamic)
    h << kSlot << "  dims_t dims_;\n";
  for (size_t i = 0; i < tensors.size(); ++i) {
    const char *cxx = ctypeOf(tensors[i].dtype)->cxx;
    if (dynamic)
      h << "  slot<" << cxx << "> buffer" << i << "_;\n";
    else
      h << "  std::unique_ptr<" << cxx << "[]> buffer" << i << "_{new " << cxx << "[" << ids[i]
        << "_t::count]()};\n";
  }
  h << "};\n\n} // namespace kiln_models\n\n#endif // " << guard << "\n";
  return h.str();
}

} // namespace kiln

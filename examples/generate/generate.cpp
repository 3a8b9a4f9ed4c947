// Greedy text generation with a KV cache through Kiln's C++ runtime: one
// artifact (examples/generate/model.onnx compiled with its batch, seq and
// past axes dynamic) runs the prefill over the prompt with an empty past,
// then one token a step, each step's present keys and values becoming the
// next step's past.
//
//   generate MODEL.so PROMPT.npy STEPS [--expected TOKENS.npy] [--threads N]
//            [--output TOKENS.npy] [--warmup]
//
// Prints the tokens and the decode speed (--warmup: of a second run); with --expected (onnxruntime's
// tokens, examples/generate/export.py) it fails unless every token matches.
#include "kiln/runtime.hpp"
#include "kiln/tensor_io.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

kiln_tensor_t view(const char *name, kiln_dtype_t dtype, const std::vector<int64_t> &shape,
                   void *data, size_t bytes) {
  return {name, dtype, (int32_t)shape.size(), shape.data(), data, bytes};
}

/// The model's inputs and outputs for one call: token ids and positions
/// [batch, seq], then the past keys and values (the previous call's
/// presents), and the outputs sized for this call.
struct Step {
  std::vector<int64_t> ids, positions, tokShape;
  std::vector<std::vector<float>> past, present;
  std::vector<std::vector<int64_t>> pastShapes, presentShapes;
  std::vector<float> logits;
  std::vector<int64_t> logitsShape;
};

/// Generates `steps` tokens greedily from `prompt` [batch, seq]: the
/// prefill with an empty past, then one token a step. Fills `tokens`
/// [batch, steps] and the milliseconds of the prefill and of all decode
/// steps; "" when fine, else the error.
std::string generate(kiln::Model &model, kiln::Session &session, const kiln::HostTensor &prompt,
                     long steps, std::vector<int64_t> &tokens, double &prefillMs,
                     double &decodeMs) {
  auto inputs = model.inputs(), outputs = model.outputs();
  size_t numPast = inputs.size() - 2;
  int64_t batch = prompt.shape[0], promptLen = prompt.shape[1];
  Step st;
  st.ids.assign((const int64_t *)prompt.data.data(),
                (const int64_t *)prompt.data.data() + batch * promptLen);
  st.tokShape = {batch, promptLen};
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < promptLen; ++t)
      st.positions.push_back(t);
  // The empty past: [batch, heads, 0, head_dim].
  for (size_t i = 0; i < numPast; ++i) {
    const kiln_tensor_desc_t &d = inputs[2 + i];
    if (d.rank != 4)
      return "past input '" + std::string(d.name) + "' is not 4-d";
    st.pastShapes.push_back({batch, d.shape[1], 0, d.shape[3]});
    st.past.emplace_back();
  }

  tokens.assign(batch * steps, 0);
  prefillMs = decodeMs = 0;
  for (long step = 0; step < steps; ++step) {
    std::vector<kiln_tensor_t> in = {
        view(inputs[0].name, KILN_DTYPE_I64, st.tokShape, st.ids.data(), st.ids.size() * 8),
        view(inputs[1].name, KILN_DTYPE_I64, st.tokShape, st.positions.data(),
             st.positions.size() * 8)};
    for (size_t i = 0; i < numPast; ++i)
      in.push_back(view(inputs[2 + i].name, KILN_DTYPE_F32, st.pastShapes[i], st.past[i].data(),
                        st.past[i].size() * 4));
    // Outputs sized by the runtime from the inputs' shapes: the logits
    // [batch, seq, vocab] and presents [batch, heads, past + seq, head_dim].
    st.present.resize(numPast);
    st.presentShapes.resize(numPast);
    std::vector<kiln_tensor_t> out;
    for (size_t o = 0; o < outputs.size(); ++o) {
      std::vector<int64_t> &shape = o == 0 ? st.logitsShape : st.presentShapes[o - 1];
      if (kiln::Status s = model.outputShape(in, o, shape); !s.ok())
        return s.message();
      size_t n = 1;
      for (int64_t d : shape)
        n *= (size_t)d;
      std::vector<float> &buf = o == 0 ? st.logits : st.present[o - 1];
      buf.resize(n);
      out.push_back(view(outputs[o].name, KILN_DTYPE_F32, shape, buf.data(), n * 4));
    }
    auto start = std::chrono::steady_clock::now();
    if (kiln::Status s = session.run(in, out); !s.ok())
      return s.message();
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count();
    (step == 0 ? prefillMs : decodeMs) += ms;
    // The next token: the argmax of each sequence's last logits.
    int64_t seq = st.logitsShape[1], vocab = st.logitsShape[2];
    st.ids.resize(batch);
    for (int64_t b = 0; b < batch; ++b) {
      const float *row = st.logits.data() + (b * seq + seq - 1) * vocab;
      int64_t best = 0;
      for (int64_t v = 1; v < vocab; ++v)
        best = row[v] > row[best] ? v : best;
      tokens[b * steps + step] = best;
      st.ids[b] = best;
    }
    int64_t next = st.positions.back() + 1;
    st.positions.assign(batch, next);
    st.tokShape = {batch, 1};
    st.past.swap(st.present);
    st.pastShapes.swap(st.presentShapes);
  }

  return "";
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 4)
    return fail(std::string("usage: ") + argv[0] +
                " MODEL.so PROMPT.npy STEPS [--expected TOKENS.npy] [--threads N] "
                "[--output TOKENS.npy] [--warmup]");
  std::string expectedPath, outputPath;
  int threads = 0;
  bool warmup = false;
  long steps = std::strtol(argv[3], nullptr, 10);
  for (int i = 4; i < argc; i += 2) {
    if (!std::strcmp(argv[i], "--warmup")) {
      warmup = true;
      --i;
    } else if (i + 1 == argc) {
      return fail(std::string(argv[i]) + " needs a value");
    } else if (!std::strcmp(argv[i], "--expected"))
      expectedPath = argv[i + 1];
    else if (!std::strcmp(argv[i], "--threads"))
      threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--output"))
      outputPath = argv[i + 1];
    else
      return fail(std::string("unknown option ") + argv[i]);
  }
  if (steps < 1)
    return fail("STEPS must be a positive number of tokens");

  kiln::Model model;
  kiln::Session session;
  if (kiln::Status s = kiln::Model::load(argv[1], model); !s.ok())
    return fail(s.message());
  if (kiln::Status s = kiln::Session::create(model, session, threads); !s.ok())
    return fail(s.message());
  auto inputs = model.inputs(), outputs = model.outputs();
  // The layout of Hugging Face's exports: ids and positions, then each
  // layer's past key and value in; logits, then the presents in that order.
  auto is = [](const kiln_tensor_desc_t &d, kiln_dtype_t dtype, int32_t rank) {
    return d.dtype == dtype && d.rank == rank;
  };
  if (inputs.size() < 2 || inputs.size() % 2 || outputs.size() != inputs.size() - 1 ||
      !is(inputs[0], KILN_DTYPE_I64, 2) || !is(inputs[1], KILN_DTYPE_I64, 2) ||
      !is(outputs[0], KILN_DTYPE_F32, 3) || outputs[0].shape[2] < 1)
    return fail(std::string(argv[1]) + ": expected int64 input_ids and position_ids [batch, "
                "seq] and pairs of past keys and values in, f32 logits [batch, seq, vocab] and "
                "the present keys and values out");

  kiln::HostTensor prompt;
  std::string error;
  if (!kiln::readTensorFile(argv[2], prompt, error))
    return fail(error);
  if (prompt.dtype != KILN_DTYPE_I64 || prompt.shape.size() != 2)
    return fail(std::string(argv[2]) + ": expected int64 token ids [batch, seq]");
  int64_t batch = prompt.shape[0], promptLen = prompt.shape[1], vocab = outputs[0].shape[2];
  // An id outside the vocabulary would read another row of the embedding.
  const auto *ids = (const int64_t *)prompt.data.data();
  for (int64_t i = 0; i < batch * promptLen; ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      return fail(std::string(argv[2]) + ": token " + std::to_string(ids[i]) + " at " +
                  std::to_string(i) + " is outside the vocabulary (0.." +
                  std::to_string(vocab - 1) + ")");

  std::vector<int64_t> tokens;
  double prefillMs = 0, decodeMs = 0;
  // A warm-up generation first: the timed one then finds the session's
  // buffers allocated, as a server's steady state does.
  for (int pass = warmup ? 0 : 1; pass < 2; ++pass)
    if (std::string e = generate(model, session, prompt, steps, tokens, prefillMs, decodeMs);
        !e.empty())
      return fail(std::string(argv[1]) + ": " + e);

  for (int64_t b = 0; b < batch; ++b) {
    std::printf("sequence %lld:", (long long)b);
    for (long s = 0; s < steps; ++s)
      std::printf(" %lld", (long long)tokens[b * steps + s]);
    std::printf("\n");
  }
  std::printf("prefill %lld tokens x %lld: %.3f ms; decode %ld steps: %.3f ms/step, %.1f "
              "tokens/s\n",
              (long long)promptLen, (long long)batch, prefillMs, steps - 1,
              steps > 1 ? decodeMs / (steps - 1) : 0.0,
              steps > 1 ? batch * (steps - 1) / (decodeMs / 1000) : 0.0);
  if (!outputPath.empty()) {
    kiln::HostTensor t;
    t.dtype = KILN_DTYPE_I64;
    t.shape = {batch, (int64_t)steps};
    t.data.assign((const char *)tokens.data(), (const char *)tokens.data() + tokens.size() * 8);
    if (!kiln::writeNpyFile(outputPath, t, error))
      return fail(error);
  }
  if (expectedPath.empty())
    return 0;
  kiln::HostTensor expected;
  if (!kiln::readTensorFile(expectedPath, expected, error))
    return fail(error);
  if (expected.dtype != KILN_DTYPE_I64 || expected.shape.size() != 2 ||
      expected.shape[0] != batch || expected.shape[1] < steps)
    return fail(expectedPath + ": expected int64 tokens [" + std::to_string(batch) + ", >=" +
                std::to_string(steps) + "]");
  const int64_t *want = (const int64_t *)expected.data.data();
  for (int64_t b = 0; b < batch; ++b)
    for (long s = 0; s < steps; ++s)
      if (tokens[b * steps + s] != want[b * expected.shape[1] + s])
        return fail("sequence " + std::to_string(b) + " step " + std::to_string(s) + ": token " +
                    std::to_string(tokens[b * steps + s]) + ", onnxruntime gives " +
                    std::to_string(want[b * expected.shape[1] + s]));
  std::printf("all %lld tokens match onnxruntime\n", (long long)(batch * steps));
  return 0;
}

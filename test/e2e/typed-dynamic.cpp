// The typed header of a model with dynamic dimensions (examples/generate's
// GPT, compiled with `--emit=header --name gpt`): resize() to each call's
// batch, past and sequence, fill the inputs, run, read the outputs (their
// shapes computed by the runtime, past + seq for the presents). Greedy
// generation of 4 tokens must give onnxruntime's.
//   kiln-typed-dynamic MODEL.so PROMPT.npy EXPECTED_TOKENS.npy
#include "gpt.h" // generated

#include "kiln/tensor_io.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

int main(int argc, char **argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL.so PROMPT.npy EXPECTED_TOKENS.npy\n", argv[0]);
    return 2;
  }
  kiln_models::gpt m;
  kiln::HostTensor prompt, expected;
  std::string error;
  if (!kiln::readTensorFile(argv[2], prompt, error) ||
      !kiln::readTensorFile(argv[3], expected, error)) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return 1;
  }
  if (kiln::Status s = m.load(argv[1], 2); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  int64_t batch = prompt.shape[0], len = prompt.shape[1];
  constexpr int64_t vocab = kiln_models::gpt::out_logits_t::shape[2];
  // A past beyond the model's range is refused, and nothing is allocated.
  if (m.resize({batch, 1000, 1}).ok()) {
    std::fprintf(stderr, "error: resize to past 1000 (range 0..127) was accepted\n");
    return 1;
  }
  std::vector<int64_t> ids((const int64_t *)prompt.data.data(),
                           (const int64_t *)prompt.data.data() + batch * len);
  std::vector<std::vector<float>> past(4);
  const int64_t *want = (const int64_t *)expected.data.data();
  for (int step = 0; step < 4; ++step) {
    int64_t seq = step ? 1 : len, start = step ? len + step - 1 : 0;
    if (kiln::Status s = m.resize({batch, start, seq}); !s.ok()) {
      std::fprintf(stderr, "error: %s\n", s.message().c_str());
      return 1;
    }
    std::copy(ids.begin(), ids.end(), m.in_input_ids());
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < seq; ++t)
        m.in_position_ids()[b * seq + t] = start + t;
    float *pasts[] = {m.in_past_key_values_0_key(), m.in_past_key_values_0_value(),
                      m.in_past_key_values_1_key(), m.in_past_key_values_1_value()};
    for (int i = 0; i < 4; ++i)
      std::copy(past[i].begin(), past[i].end(), pasts[i]);
    if (kiln::Status s = m.run(); !s.ok()) {
      std::fprintf(stderr, "error: %s\n", s.message().c_str());
      return 1;
    }
    if (m.out_present_0_key_shape() != std::vector<int64_t>{batch, 4, start + seq, 16}) {
      std::fprintf(stderr, "error: present.0.key is not [%lld x 4 x %lld x 16]\n",
                   (long long)batch, (long long)(start + seq));
      return 1;
    }
    const float *presents[] = {m.out_present_0_key(), m.out_present_0_value(),
                               m.out_present_1_key(), m.out_present_1_value()};
    for (int i = 0; i < 4; ++i)
      past[i].assign(presents[i], presents[i] + m.out_present_0_key_count());
    ids.assign(batch, 0);
    for (int64_t b = 0; b < batch; ++b) {
      const float *row = m.out_logits() + (b * seq + seq - 1) * vocab;
      ids[b] = std::max_element(row, row + vocab) - row;
      if (ids[b] != want[b * expected.shape[1] + step]) {
        std::fprintf(stderr, "error: sequence %lld step %d: token %lld, onnxruntime gives %lld\n",
                     (long long)b, step, (long long)ids[b],
                     (long long)want[b * expected.shape[1] + step]);
        return 1;
      }
    }
  }
  std::printf("ok: 4 tokens x %lld sequences match onnxruntime through the typed header\n",
              (long long)batch);
  return 0;
}

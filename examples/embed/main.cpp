// The MLP example compiled into this program at build time (kiln_add_model)
// and run through its generated header: no dlopen, no model file at run time.
//   embed_cpp input.npy expected_output.npy
#include "mlp.h" // generated: class kiln_models::mlp

#include "kiln/tensor_io.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s input.npy expected_output.npy\n", argv[0]);
    return 2;
  }
  using Model = kiln_models::mlp;
  Model model;
  if (kiln::Status s = model.load_linked(/*num_threads=*/2); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  kiln::HostTensor input, expected;
  std::string error;
  if (!kiln::readTensorFile(argv[1], input, error) ||
      !kiln::readTensorFile(argv[2], expected, error)) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return 1;
  }
  if (input.data.size() != Model::in_input_t::count * sizeof(Model::in_input_t::type)) {
    std::fprintf(stderr, "error: %s does not hold a [4x64] f32 tensor\n", argv[1]);
    return 1;
  }
  std::copy_n(reinterpret_cast<const float *>(input.data.data()), Model::in_input_t::count,
              model.in_input());
  if (kiln::Status s = model.run(); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  double worst = 0;
  for (size_t i = 0; i < Model::out_output_t::count; ++i)
    worst = std::max(worst, std::fabs(model.out_output()[i] - kiln::elementAsDouble(expected, i)));
  std::printf("embed_cpp: %zu outputs, max |error| vs PyTorch %.3g\n", Model::out_output_t::count,
              worst);
  return worst <= 1e-4 ? 0 : 1;
}

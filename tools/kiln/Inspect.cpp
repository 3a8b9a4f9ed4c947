//===- Inspect.cpp - `kiln inspect ARTIFACT` ------------------------------===//
//
// The artifact's signature as its users see it through the runtime's public
// API: target, dynamic dimensions, inputs and outputs, memory, kernels.
//
//===----------------------------------------------------------------------===//

#include "CommandSupport.h"
#include "Commands.h"

#include "kiln/runtime.hpp"

#include <cstdio>

namespace kiln {
using cli::fail;
using cli::KernelLine;
using cli::shapeStr;

int inspectArtifact(const std::string &artifact) {
  Model model;
  if (Status s = Model::load(artifact, model); !s.ok())
    return fail(s.message());
  std::printf("artifact: %s\ntarget: %s\n", artifact.c_str(), kiln_model_target(model.get()));
  if (std::string(kiln_model_target(model.get())) == "cuda") {
    const char *code = kiln_model_machine_code(model.get());
    std::printf("machine code: %s\n", *code ? code : "none (the driver compiles the PTX at load)");
  }
  if (kiln_model_is_training(model.get()))
    std::printf("training step%s\n", kiln_model_is_distributed(model.get())
                                          ? ": data-parallel (--distributed: the loss and "
                                            "gradients averaged over ranks)"
                                          : "");
  // A dynamic dimension by its symbol's name: [batch x past+seq x 64].
  auto shapeOf = [&](const kiln_tensor_desc_t &d, size_t index) {
    std::vector<int32_t> symbols(d.rank, -1);
    if (!model.numDims() || !Status(kiln_model_dim_symbols(model.get(), index, symbols.data())).ok())
      return shapeStr(d.shape, d.rank);
    std::string text = "[";
    for (int32_t i = 0; i < d.rank; ++i) {
      const char *name = "?";
      if (symbols[i] >= 0)
        (void)Status(kiln_model_dim(model.get(), symbols[i], &name, nullptr, nullptr));
      text += (i ? " x " : "") + (symbols[i] >= 0 ? std::string(name) : std::to_string(d.shape[i]));
    }
    return text + "]";
  };
  if (size_t n = model.numDims()) {
    std::printf("dynamic dimensions:\n");
    for (size_t k = 0; k < n; ++k) {
      const char *name = "";
      int64_t min = 0, max = -1;
      (void)Status(kiln_model_dim(model.get(), k, &name, &min, &max));
      std::printf("  %s: %lld..%s\n", name, (long long)min,
                  max < 0 ? "" : std::to_string(max).c_str());
    }
  }
  std::printf("inputs:\n");
  auto inputs = model.inputs(), outputs = model.outputs();
  for (size_t i = 0; i < inputs.size(); ++i)
    std::printf("  %s: %s %s\n", inputs[i].name, kiln_dtype_name(inputs[i].dtype),
                shapeOf(inputs[i], i).c_str());
  std::printf("outputs:\n");
  for (size_t i = 0; i < outputs.size(); ++i)
    std::printf("  %s: %s %s\n", outputs[i].name, kiln_dtype_name(outputs[i].dtype),
                shapeOf(outputs[i], inputs.size() + i).c_str());
  std::printf("memory: %zu bytes of intermediates (arena), %zu bytes of weights",
              model.arenaBytes(), model.weightBytes());
  if (size_t external = model.externalWeightBytes())
    std::printf(", %zu bytes of external weights", external);
  std::printf("\n");
  // The kernel list: each kernel with the ONNX nodes fused into it.
  std::vector<KernelLine> lines = cli::parseKernelTable(model.kernels());
  std::printf("kernels: %zu\n", lines.size());
  for (const KernelLine &k : lines) {
    std::string nodes;
    for (const std::string &node : k.nodes)
      nodes += (nodes.empty() ? "" : ", ") + node;
    bool parallel = k.name.find("_task") != std::string::npos;
    std::printf("  %s%s: %s", k.name.c_str(), parallel ? " (parallel)" : "", nodes.c_str());
    if (k.flops >= 0)
      std::printf(" [%.3g MFLOP, %.3g MB]", k.flops / 1e6, k.bytes / 1e6);
    std::printf("\n");
  }
  return 0;
}

} // namespace kiln

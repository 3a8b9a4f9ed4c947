//===- CommandSupport.h - helpers the kiln commands share -------*- C++ -*-===//

#ifndef KILN_TOOLS_KILN_COMMANDSUPPORT_H
#define KILN_TOOLS_KILN_COMMANDSUPPORT_H

#include "kiln/tensor_io.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::cli {

/// Prints `error: MSG` to stderr; returns 1 (the exit code).
int fail(const std::string &msg);

/// "[2x5x8]", "?" for a dynamic dimension.
std::string shapeStr(const int64_t *shape, int32_t rank);

/// One line of the artifact's kernel table: the kernel, the ONNX nodes in
/// it, and what it costs ("#cost FLOPS BYTES"; -1 when not recorded).
struct KernelLine {
  std::string name;
  std::vector<std::string> nodes;
  long long flops = -1, bytes = -1;
};

std::vector<KernelLine> parseKernelTable(const std::string &table);

/// mkdir -p (errors surface when the files are written).
void makeDirs(const std::string &dir);

/// A zeroed tensor of `d`'s name and dtype and of `shape` (an output
/// buffer), or of `d`'s own static shape.
HostTensor allocateLike(const kiln_tensor_desc_t &d, const std::vector<int64_t> &shape);
HostTensor allocateLike(const kiln_tensor_desc_t &d);

} // namespace kiln::cli

#endif // KILN_TOOLS_KILN_COMMANDSUPPORT_H

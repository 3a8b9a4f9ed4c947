//===- DeviceCode.cpp - which GPUs an artifact's machine code is for ------===//
//
// A CUDA artifact's machine code is one cubin (for the arch it was compiled
// for) or a fat binary of several. Its entries' headers name their SM, so
// `kiln inspect` can say which GPUs load it without the driver's JIT.
//
//===----------------------------------------------------------------------===//

#include "Model.h"

#include <cstring>

namespace kiln::rt {
namespace {

template <typename T> bool read(const unsigned char *data, uint64_t size, uint64_t at, T &out) {
  if (at > size || size - at < sizeof(T))
    return false;
  std::memcpy(&out, data + at, sizeof(T));
  return true;
}

} // namespace

std::string machineCodeArchs(const kiln_model_s &m) {
  if (!m.cubin || !m.cubinSize)
    return "";
  const auto *data = static_cast<const unsigned char *>(m.cubin);
  uint32_t magic = 0;
  uint16_t headerSize = 0;
  uint64_t fatSize = 0;
  if (!read(data, m.cubinSize, 0, magic) || magic != 0xBA55ED50u)
    return m.signature.gpuArch; // one cubin, for the arch compiled for
  if (!read(data, m.cubinSize, 6, headerSize) || !read(data, m.cubinSize, 8, fatSize))
    return "?";
  // Entries: u16 kind (2: ELF), u32 header size at 4, u64 payload size at
  // 8, u32 SM at 28.
  std::string archs;
  uint64_t end = std::min<uint64_t>(m.cubinSize, headerSize + fatSize);
  for (uint64_t at = headerSize; at < end;) {
    uint16_t kind = 0;
    uint32_t entryHeader = 0, sm = 0;
    uint64_t payload = 0;
    if (!read(data, end, at, kind) || !read(data, end, at + 4, entryHeader) ||
        !read(data, end, at + 8, payload) || !read(data, end, at + 28, sm) || entryHeader == 0)
      break;
    if (kind == 2)
      archs += (archs.empty() ? "sm_" : " sm_") + std::to_string(sm);
    at += entryHeader + payload;
  }
  return archs.empty() ? "?" : archs;
}

} // namespace kiln::rt

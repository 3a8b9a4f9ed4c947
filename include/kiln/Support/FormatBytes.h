//===- FormatBytes.h - byte counts for messages -----------------*- C++ -*-===//
//
// Header-only, so the compiler's messages and the runtime's say sizes the
// same way without the compiler linking the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SUPPORT_FORMATBYTES_H
#define KILN_SUPPORT_FORMATBYTES_H

#include <cstdint>
#include <cstdio>
#include <string>

namespace kiln {

/// "512 bytes", or "1.5 GiB (1610612736 bytes)".
inline std::string formatByteCount(uint64_t bytes) {
  static const char *units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024 && u < 6)
    v /= 1024, ++u;
  if (u == 0)
    return std::to_string(bytes) + " bytes";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f %s (%llu bytes)", v, units[u], (unsigned long long)bytes);
  return buf;
}

} // namespace kiln

#endif // KILN_SUPPORT_FORMATBYTES_H

//===- CpuCheck.cpp - does this CPU have what the artifact's code needs? --===//
//
// An artifact compiled for this machine (the default, --cpu=native) may use
// AVX-512; run elsewhere it would die of SIGILL in the middle of a call.
// The signature lists the features the code was compiled with; a model
// loads only where they all exist.
//
//===----------------------------------------------------------------------===//

#include "Signature.h"

#include <cstring>
#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace kiln::rt {

namespace {
/// AMX-INT8 in CPUID, and Linux's leave to use the tile registers, which a
/// process must ask for (ARCH_REQ_XCOMP_PERM) before its first tile
/// instruction or die of SIGILL. The leave holds for every thread.
bool amxUsable() {
#if defined(__x86_64__) && defined(__linux__)
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) || !(edx & (1u << 25)) ||
      !(edx & (1u << 24)))
    return false;
  constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}
} // namespace

bool cpuHasFeature(const std::string &f) {
  if (f == "amx-int8")
    return amxUsable();
#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
  __builtin_cpu_init();
  // __builtin_cpu_supports takes string literals only.
#define KILN_FEATURE(name)                                                                         \
  if (f == name)                                                                                   \
    return __builtin_cpu_supports(name);
  KILN_FEATURE("sse4.2")
  KILN_FEATURE("avx")
  KILN_FEATURE("avx2")
  KILN_FEATURE("fma")
  KILN_FEATURE("f16c")
  KILN_FEATURE("bmi2")
  KILN_FEATURE("avx512f")
  KILN_FEATURE("avx512bw")
  KILN_FEATURE("avx512dq")
  KILN_FEATURE("avx512vl")
  KILN_FEATURE("avx512vnni")
  KILN_FEATURE("avx512bf16")
#undef KILN_FEATURE
  return false; // a feature this runtime can't check: don't guess
#else
  (void)f;
  return true; // not x86: nothing recorded to check
#endif
}

std::string missingCpuFeature(const Signature &sig) {
  for (const std::string &f : sig.cpuFeatures)
    if (!cpuHasFeature(f))
      return f;
  return "";
}

} // namespace kiln::rt

//===- GpuTuning.h - settings of the CUDA matmul kernels --------*- C++ -*-===//
//
// Variants of the tensor-core kernels that `kiln compile --gpu-*` flags
// and the CUDA pipeline's options select, for timing one against another
// on a GPU (scripts/gpu-check.sh packs several). The defaults are what
// the kernels choose per matmul. A plain struct: no MLIR inside.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_GPUTUNING_H
#define KILN_LOWERING_GPUTUNING_H

#include <cstdint>
#include <string>

namespace kiln {

struct GpuTuning {
  /// mma.sync kernels of big products: "<k>x<stages>" (32x4, 64x3) sets
  /// the k step and the depth of the shared-memory ring; "" = 16 or 32
  /// by element type, 3 stages.
  std::string mma;
  /// sm_90a wgmma kernels: 128 or 256 columns a block; 0 = chosen per
  /// matmul (256 when there are blocks enough for every SM).
  int64_t tileN = 0;
  /// How sm_90a wgmma kernels bring tiles to shared memory: "async" (a
  /// loading warpgroup of its own, cp.async), "tma" (that warpgroup by
  /// TMA) or "ring" (every thread, a shared ring; whole tiles only).
  std::string loads = "async";
  /// The specialized f32 kernel waits for each k tile's wgmma group
  /// instead of keeping one in flight.
  bool tf32Drain = false;
  /// Blocks a cluster along M (1 or 2; 2 needs TMA): a pair shares B's
  /// tiles by multicast.
  int64_t cluster = 1;

  bool isDefault() const {
    return mma.empty() && tileN == 0 && loads == "async" && !tf32Drain && cluster == 1;
  }

  /// What is wrong with the settings themselves ("" when nothing): a
  /// setting that does not fit one matmul is ignored there with a warning.
  std::string problem() const {
    auto digits = [](const std::string &s) {
      return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
    };
    if (!mma.empty()) {
      auto x = mma.find('x');
      if (x == std::string::npos || !digits(mma.substr(0, x)) || !digits(mma.substr(x + 1)))
        return "mma=" + mma + ": expected <k>x<stages>, e.g. 32x4";
    }
    if (tileN != 0 && tileN != 128 && tileN != 256)
      return "tile-n=" + std::to_string(tileN) + ": expected 128 or 256";
    if (loads != "async" && loads != "tma" && loads != "ring")
      return "loads=" + loads + ": expected async, tma or ring";
    if (cluster != 1 && cluster != 2)
      return "cluster=" + std::to_string(cluster) + ": expected 1 or 2";
    if (cluster == 2 && loads != "tma")
      return "cluster=2: clusters share tiles by TMA, which needs loads=tma";
    return "";
  }
};

} // namespace kiln

#endif // KILN_LOWERING_GPUTUNING_H

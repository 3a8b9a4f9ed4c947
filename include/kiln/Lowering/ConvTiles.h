//===- ConvTiles.h - register tiles of CPU convolutions ---------*- C++ -*-===//
//
// A 2-D NCHW convolution on the CPU computes a block of output channels
// times a run of output columns in vector registers: per (c, kh, kw) step,
// one load of input columns and one broadcast weight per channel feed
// `channels * vectors` FMAs (kiln-vectorize-conv). Kernel formation tiles
// the output channels by the same block (kiln-form-kernels), so both read
// the choice from here.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_CONVTILES_H
#define KILN_LOWERING_CONVTILES_H

#include <algorithm>
#include <cstdint>

namespace mlir {
class Operation;
}

namespace kiln {

/// A linalg.conv_2d_nchw_fchw (or depthwise_conv_2d_nchw_chw) that
/// kiln-vectorize-conv register-tiles:
/// static f32 operands (on tensors or memrefs with unit innermost stride),
/// unit dilation, column stride 1 or 2.
bool isRegisterTiledConv(mlir::Operation *op);

struct ConvRegisterTile {
  int64_t channels = 1; // output channels per block (divides F)
  int64_t rows = 1;     // output rows per block (divides OH)
  int64_t width = 1;    // lanes per vector (a power of two)
  int64_t vectors = 1;  // vectors of output columns per row
};

/// The register tile of a convolution with F output channels, OH rows of
/// OW output columns, for vector registers of `vectorBits`: vectors as wide
/// as the row allows, at most two per row; up to 8 channels, then as many
/// rows as keep the accumulators within 16 registers (AVX-512 has 32: the
/// input vectors and broadcasts need the rest; 12 of 16 on AVX2). Each
/// input vector feeds `channels` FMAs and each broadcast weight `rows x
/// vectors`, so neither loads nor broadcasts limit the FMA rate.
/// Non-power-of-two vector widths legalize into shuffles and spills, so
/// widths are powers of two and row ends are masked.
/// A depthwise convolution's channels share no input vectors: one
/// channel, and its rows fill the registers instead.
inline ConvRegisterTile chooseConvRegisterTile(int64_t F, int64_t OH, int64_t OW,
                                               unsigned vectorBits, bool depthwise = false) {
  ConvRegisterTile t;
  int64_t lanes = std::max<int64_t>(vectorBits / 32, 1);
  while (t.width < lanes && t.width < OW)
    t.width *= 2;
  t.vectors = std::min<int64_t>((OW + t.width - 1) / t.width, 2);
  int64_t budget = (vectorBits >= 512 ? 16 : 12) / t.vectors;
  while (!depthwise && t.channels * 2 <= std::min<int64_t>(budget, 8) && F % (t.channels * 2) == 0)
    t.channels *= 2;
  while (t.channels * t.rows * 2 <= budget && OH % (t.rows * 2) == 0)
    t.rows *= 2;
  return t;
}

} // namespace kiln

#endif // KILN_LOWERING_CONVTILES_H

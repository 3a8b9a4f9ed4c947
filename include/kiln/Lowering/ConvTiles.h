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
#include <optional>

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
                                               unsigned vectorBits, bool depthwise = false,
                                               bool wideRows = true) {
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
  // A depthwise tile's one channel has no other accumulators. With
  // `wideRows` it takes up to 8 rows where no power of two divides OH, so
  // that a long epilogue's chains (SiLU's exp and division) overlap within
  // the tile: a batch-8 5x5 at 14x14 + SiLU 0.88 -> 0.69 ms with 7 rows,
  // not 2. Kernel formation asks for it only then: with a bias alone 7
  // rows were slower (49 -> 58 us; small tiles overlap across tiles).
  // The tile's own emitter always may: it gets the rows formation chose.
  if (depthwise && wideRows)
    for (int64_t r = std::min<int64_t>({budget, OH, 8}); r > t.rows; --r)
      if (OH % r == 0) {
        t.rows = r;
        break;
      }
  return t;
}

/// Whether every operand of `op` is f32 of a static shape (on tensors
/// perhaps but for the batch, which kernel formation tiles by one image)
/// and, on memrefs, rows of unit stride: what the register tiles take.
bool hasStaticF32ConvOperands(mlir::Operation *op);

/// A linalg.depthwise_conv_2d_nhwc_hwc that kiln-vectorize-conv
/// register-tiles channels last: static f32 operands (but a batch on
/// tensors; memrefs with unit innermost stride), unit dilation.
bool isChannelsLastDepthwise(mlir::Operation *op);

/// The channels a kernel-formation tile of a channels-last depthwise
/// convolution takes (its rows one at a time, each whole): all C where
/// `images` x OH rows make enough tiles for the thread pool, else the
/// widest whole vectors dividing C that do (stage 4 of ConvNeXt-T: 7 rows
/// of 768 channels in blocks of 96, 56 tiles).
inline int64_t chooseChannelsLastDepthwiseBlock(int64_t images, int64_t OH, int64_t C,
                                                unsigned vectorBits) {
  constexpr int64_t kEnoughTiles = 48;
  int64_t lanes = std::max<int64_t>(vectorBits / 32, 1);
  if (C % lanes)
    return C;
  int64_t best = lanes;
  for (int64_t cb = lanes; cb <= C; cb += lanes)
    if (C % cb == 0 && images * OH * (C / cb) >= kEnoughTiles)
      best = cb;
  return best;
}

/// Whether the CPU pipeline packs convolution weights for vectors of
/// `vectorBits`: with AVX-512 and AVX2. AVX-512's 32 registers hold 2
/// channel vectors x 8 pixels, AVX2's 16 hold 2 x 4: on a Sapphire Rapids
/// compiling for x86-64-v3 no faster than the NCHW direct tile, but on 2
/// Zen 2 cores (AVX2 alone) ResNet-50's convolutions ran 6-15% faster
/// packed (the RGB stem 2.23 -> 1.89 ms, 512 channels at 7x7 1.76 ->
/// 1.65). SSE's 4 lanes keep the direct tile.
inline bool packsConvWeights(unsigned vectorBits) { return vectorBits >= 256; }

/// A linalg.conv_2d_nchw_fchw on tensors that kiln-pack-conv-weights packs
/// into panels of `lanes` output channels: static f32 operands, unit
/// dilation, any stride, constant weights whose bytes are known (or a
/// splat), F a multiple of `lanes`. kiln-pointwise-conv-as-matmul leaves
/// such convolutions to it instead of taking them through im2col.
bool isPackableConv(mlir::Operation *op, int64_t lanes);

/// A convolution whose constant weights kiln-pack-conv-weights packed
/// into panels of `lanes` output channels: a linalg.generic over
/// (n, f, oh, ow, c, kh, kw) reading in(n, c, oh*sh + kh, ow*sw + kw) and
/// Wp(f floordiv lanes, c, kh, kw, f mod lanes), writing out(n, f, oh, ow).
struct PackedConv {
  int64_t sh = 1, sw = 1, lanes = 1;
};
std::optional<PackedConv> matchPackedConv(mlir::Operation *op);

/// The tile of a packed convolution with F output channels and OH x OW
/// output pixels: `vectors` vectors of output channels times `pixels`
/// consecutive output pixels (row-major, crossing row ends) in registers.
/// Per (c, kh, kw) step, `vectors` weight loads and `pixels` broadcast
/// input elements feed vectors x pixels FMAs: no lane idles whatever the
/// image width, and the input is read at any stride. Kernel formation
/// tiles by `lanes x vectors` channels and `rows` whole rows, enough for
/// the pixel tile. AVX2 takes 5 pixels or 4, and the rows (up to 64
/// pixels) whose tiles, a narrower last one included, take the fewest
/// latency-bound steps (one row of 56, 28 or 14; all 7 rows of a 7x7
/// image). AVX-512: the tile is the whole register budget when some whole
/// rows hold a multiple of it; otherwise `pixels` divides rows x OW when a
/// divisor at least half the budget exists (budget 9: 8 for ResNet's
/// 56-wide rows, 7 for 28, 14 and 7), and the last tile of a row block is
/// narrower when none does.
struct PackedConvTile {
  int64_t lanes = 1, vectors = 1, pixels = 1, rows = 1;
};
inline PackedConvTile choosePackedConvTile(int64_t F, int64_t OH, int64_t OW,
                                           unsigned vectorBits) {
  PackedConvTile t;
  t.lanes = std::max<int64_t>(vectorBits / 32, 1);
  int64_t registers = vectorBits >= 512 ? 32 : 16;
  t.vectors = (F / t.lanes) % 2 == 0 ? 2 : 1;
  // The accumulators, the weight vectors and every pixel's broadcast: LLVM
  // schedules a tap's broadcasts ahead of the FMAs that share them, so all
  // are live at once (V=2, P=14 spilled half the accumulators).
  int64_t most = std::max<int64_t>((registers - 2 - t.vectors) / (t.vectors + 1), 1);
  // AVX2: 2 x 4 accumulators leave the two FMA pipes of 5 cycles idle a
  // fifth of the time; 2 x 5 fill them, though a stride-1 tile then keeps
  // more broadcasts live than registers remain (a few spills). The rows
  // and pixels whose tiles, narrower last ones included, take the fewest
  // latency-bound steps: ResNet-50's 3x3 convolutions at batch 8 on one
  // Zen 2 core, 64 channels at 56x56 24.7 -> 22.0 ms (onnxruntime 19.7);
  // at two, 128 channels stride 2 12.9 -> 11.5 ms.
  if (registers == 16 && t.vectors == 2) {
    auto steps = [](int64_t n, int64_t P) {
      constexpr int64_t kLatency = 5; // FMA cycles, one step per accumulator
      return n / P * std::max(P, kLatency) + (n % P ? std::max(n % P, kLatency) : 0);
    };
    // Whole rows up to 64 pixels (a 7x7 image's 49 in one tile), the
    // fewest at equal efficiency: more rows are fewer parallel tiles.
    double best = 0;
    for (int64_t r = 1; r <= OH; ++r) {
      if (OH % r || (r > 1 && r * OW > 64))
        continue;
      for (int64_t P : {most + 1, most}) {
        int64_t n = r * OW;
        double efficiency = double(n) / double(steps(n, std::min(n, P)));
        if (efficiency > best + 1e-9) {
          best = efficiency;
          t.rows = r;
          t.pixels = std::min(n, P);
        }
      }
    }
    return t;
  }
  // The fewest whole rows that the full tile divides: AVX2's 4 pixels take 2
  // rows of a 14-wide image, where one row left 2-pixel tiles, 4 accumulators
  // against 2 FMA pipes of 5 cycles (ResNet-50's 256-channel stride-2
  // layer: 2.9 ms, onnxruntime 1.45).
  for (int64_t r = 1; r <= OH; ++r)
    if (OH % r == 0 && (r * OW) % most == 0) {
      t.rows = r;
      t.pixels = most;
      return t;
    }
  t.rows = OH;
  for (int64_t r = 1; r <= OH; ++r)
    if (OH % r == 0 && r * OW >= most) {
      t.rows = r;
      break;
    }
  int64_t pixels = t.rows * OW;
  t.pixels = std::min(most, pixels);
  for (int64_t p = t.pixels; p * 2 >= most && p >= 1; --p)
    if (pixels % p == 0) {
      t.pixels = p;
      break;
    }
  return t;
}

} // namespace kiln

#endif // KILN_LOWERING_CONVTILES_H

//===- PtxRaces.cpp - shared-memory races between warps -------------------===//

#include "PtxRaces.h"

#include <cstring>

namespace kiln::emu {

void RaceCheck::beginBlock(size_t bytes) {
  ++epoch_;
  if (words_.size() < (bytes + 3) / 4)
    words_.resize((bytes + 3) / 4);
}

namespace {
std::string describe(const char *what, uint64_t offset, unsigned warp, int line, unsigned other,
                     int otherLine) {
  return std::string("shared-memory race: warp ") + std::to_string(warp) + " " + what +
         " shared byte " + std::to_string(offset) + " at PTX line " + std::to_string(line) +
         ", which warp " + std::to_string(other) + " touched at line " +
         std::to_string(otherLine) + " with no barrier between";
}
} // namespace

bool RaceCheck::read(unsigned warp, int line, uint64_t offset, uint32_t bytes, std::string &why) {
  for (uint64_t w = offset / 4; w * 4 < offset + bytes && w < words_.size(); ++w) {
    Word &s = words_[w];
    if (s.writeEpoch == epoch_ && s.writer != warp) {
      why = describe("reads", w * 4, warp, line, s.writer, s.writeLine);
      return false;
    }
    if (s.readEpoch != epoch_)
      s.readEpoch = epoch_, s.readers = 0;
    s.readers |= 1ull << (warp % 64);
    s.readLine = line;
  }
  return true;
}

bool RaceCheck::write(unsigned warp, int line, uint64_t offset, uint32_t bytes,
                      const uint8_t *old, const uint8_t *data, std::string &why) {
  bool same = std::memcmp(old, data, bytes) == 0;
  for (uint64_t w = offset / 4; w * 4 < offset + bytes && w < words_.size(); ++w) {
    Word &s = words_[w];
    if (!same && s.writeEpoch == epoch_ && s.writer != warp) {
      why = describe("writes", w * 4, warp, line, s.writer, s.writeLine);
      return false;
    }
    if (!same && s.readEpoch == epoch_ && (s.readers & ~(1ull << (warp % 64)))) {
      unsigned other = 0;
      while (!((s.readers >> other) & 1) || other == warp % 64)
        ++other;
      why = describe("writes", w * 4, warp, line, other, s.readLine);
      return false;
    }
    if (!same || s.writeEpoch != epoch_)
      s.writeEpoch = epoch_, s.writer = (uint16_t)warp, s.writeLine = line;
  }
  return true;
}

} // namespace kiln::emu

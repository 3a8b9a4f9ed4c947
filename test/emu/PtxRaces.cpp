//===- PtxRaces.cpp - shared-memory races between warps -------------------===//

#include "PtxRaces.h"

#include <algorithm>
#include <cstring>

namespace kiln::emu {

void RaceCheck::beginBlock(size_t bytes, unsigned warps) {
  warps_ = std::min(warps, 64u);
  if (words_.size() < (bytes + 3) / 4)
    words_.resize((bytes + 3) / 4);
  if (reads_.size() < words_.size() * warps_)
    reads_.resize(words_.size() * warps_);
  barrier();
}

void RaceCheck::barrier() {
  // Everything before is ordered before everything after: a new epoch, in
  // which each warp has seen nothing of the others yet.
  ++epoch_;
  clocks_.assign((size_t)warps_ * warps_, 0);
  for (unsigned w = 0; w < warps_; ++w)
    clocks_[w * warps_ + w] = 1;
}

void RaceCheck::join(const std::vector<unsigned> &warps) {
  std::vector<uint32_t> all(warps_, 0);
  for (unsigned w : warps)
    for (unsigned u = 0; u < warps_; ++u)
      all[u] = std::max(all[u], clocks_[(w % warps_) * warps_ + u]);
  for (unsigned w : warps) {
    std::copy(all.begin(), all.end(), clocks_.begin() + (w % warps_) * warps_);
    ++clocks_[(w % warps_) * warps_ + w % warps_];
  }
}

void RaceCheck::release(unsigned warp, Clock &phase) {
  warp %= warps_;
  if (phase.epoch != epoch_)
    phase.epoch = epoch_, phase.at.assign(warps_, 0);
  for (unsigned u = 0; u < warps_; ++u)
    phase.at[u] = std::max(phase.at[u], clocks_[warp * warps_ + u]);
  ++clocks_[warp * warps_ + warp]; // what it does next is not released
}

void RaceCheck::acquire(unsigned warp, const Clock &phase) {
  if (phase.epoch != epoch_)
    return; // released before the last block barrier, which ordered it
  warp %= warps_;
  for (unsigned u = 0; u < warps_; ++u)
    clocks_[warp * warps_ + u] = std::max(clocks_[warp * warps_ + u], phase.at[u]);
}

namespace {
std::string describe(const char *what, uint64_t offset, unsigned warp, int line, unsigned other,
                     int otherLine) {
  return std::string("shared-memory race: warp ") + std::to_string(warp) + " " + what +
         " shared byte " + std::to_string(offset) + " at PTX line " + std::to_string(line) +
         ", which warp " + std::to_string(other) + " touched at line " +
         std::to_string(otherLine) + " with nothing ordering the two";
}
} // namespace

bool RaceCheck::read(unsigned warp, int line, uint64_t offset, uint32_t bytes, std::string &why) {
  warp %= warps_;
  for (uint64_t w = offset / 4; w * 4 < offset + bytes && w < words_.size(); ++w) {
    Word &s = words_[w];
    if (s.writeEpoch == epoch_ && s.writer != warp && !after(warp, s.writer, s.writeClock)) {
      why = describe("reads", w * 4, warp, line, s.writer, s.writeLine);
      return false;
    }
    if (s.readEpoch != epoch_)
      s.readEpoch = epoch_, s.readers = 0;
    s.readers |= 1ull << warp;
    reads_[w * warps_ + warp] = clocks_[warp * warps_ + warp];
    s.readLine = line;
  }
  return true;
}

bool RaceCheck::write(unsigned warp, int line, uint64_t offset, uint32_t bytes,
                      const uint8_t *old, const uint8_t *data, std::string &why) {
  warp %= warps_;
  bool same = std::memcmp(old, data, bytes) == 0;
  for (uint64_t w = offset / 4; w * 4 < offset + bytes && w < words_.size(); ++w) {
    Word &s = words_[w];
    if (!same && s.writeEpoch == epoch_ && s.writer != warp &&
        !after(warp, s.writer, s.writeClock)) {
      why = describe("writes", w * 4, warp, line, s.writer, s.writeLine);
      return false;
    }
    if (!same && s.readEpoch == epoch_)
      for (uint64_t r = s.readers & ~(1ull << warp); r; r &= r - 1) {
        unsigned other = (unsigned)__builtin_ctzll(r);
        if (!after(warp, other, reads_[w * warps_ + other])) {
          why = describe("writes", w * 4, warp, line, other, s.readLine);
          return false;
        }
      }
    if (!same || s.writeEpoch != epoch_)
      s.writeEpoch = epoch_, s.writer = (uint16_t)warp, s.writeLine = line,
      s.writeClock = clocks_[warp * warps_ + warp];
  }
  return true;
}

} // namespace kiln::emu

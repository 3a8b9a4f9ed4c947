//===- PtxRaces.h - shared-memory races between warps ------------*- C++ -*-===//
//
// Warps run in no set order unless something orders them, so two of them
// touching the same shared word, one writing, with nothing in between, is a
// race: what the other sees depends on timing (on a GPU it may work today
// and fail on the next driver). The emulator runs the warps one after
// another, which would hide that, so each shared word remembers who wrote
// and read it, and when, and a conflicting access from another warp that is
// not ordered after it is reported with both PTX lines.
//
// "Ordered" is happens-before through vector clocks, one per warp: a whole
// block barrier orders everything before it (a new epoch), a named barrier
// for some warps joins their clocks, and an mbarrier carries the clocks of
// the warps that arrived on a phase to the warps whose wait saw that phase
// complete (a producer/consumer ring). Same-warp accesses are not checked
// (a warp's collectives order them); a write of the bytes already there is
// benign.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_EMU_PTXRACES_H
#define KILN_TEST_EMU_PTXRACES_H

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::emu {

class RaceCheck {
public:
  /// What an mbarrier phase carries from its arrivals to its waiters.
  struct Clock {
    uint64_t epoch = 0;
    std::vector<uint32_t> at; // per warp
  };

  /// A new block of `bytes` of shared memory and `warps` warps.
  void beginBlock(size_t bytes, unsigned warps);
  /// All threads passed a barrier.
  void barrier();
  /// The warps in `warps` passed a barrier for them alone.
  void join(const std::vector<unsigned> &warps);
  /// Warp `warp` arrives on an mbarrier phase whose clock is `phase`.
  void release(unsigned warp, Clock &phase);
  /// Warp `warp` saw the phase with clock `phase` complete.
  void acquire(unsigned warp, const Clock &phase);
  /// Warp `warp` reads (or writes) [offset, offset + bytes) at PTX `line`;
  /// false with `why` on a race. A write's old bytes are at `old`, its new
  /// ones at `data` (a write of the same bytes is benign).
  bool read(unsigned warp, int line, uint64_t offset, uint32_t bytes, std::string &why);
  bool write(unsigned warp, int line, uint64_t offset, uint32_t bytes, const uint8_t *old,
             const uint8_t *data, std::string &why);

private:
  struct Word {
    uint64_t writeEpoch = 0, readEpoch = 0;
    uint64_t readers = 0; // warps that read in readEpoch (their clocks in reads_)
    uint32_t writeClock = 0;
    int32_t writeLine = 0, readLine = 0;
    uint16_t writer = 0;
  };
  /// Whether warp `warp` is ordered after warp `other`'s access at `clock`.
  bool after(unsigned warp, unsigned other, uint32_t clock) const {
    return clock <= clocks_[warp * warps_ + other];
  }
  std::vector<Word> words_;
  std::vector<uint32_t> reads_;  // [word][warp]: the clock of its read
  std::vector<uint32_t> clocks_; // [warp][warp]: what each warp has seen
  unsigned warps_ = 0;
  uint64_t epoch_ = 0; // never reused across blocks, so no reset is needed
};

} // namespace kiln::emu

#endif // KILN_TEST_EMU_PTXRACES_H

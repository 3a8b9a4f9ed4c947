//===- PtxRaces.h - shared-memory races between warps ------------*- C++ -*-===//
//
// Between two barriers a block's warps run in no set order, so two of them
// touching the same shared word, one writing, is a race: what the other
// sees depends on timing (on a GPU it may work today and fail on the next
// driver). The emulator runs the warps one after another, which would hide
// that, so each shared word remembers who wrote and read it in the current
// barrier interval and a conflicting access from another warp is reported
// with both PTX lines. Same-warp accesses are not checked (a warp's
// collectives order them); a write of the bytes already there is benign.
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
  /// A new block of `bytes` of shared memory.
  void beginBlock(size_t bytes);
  /// All threads passed a barrier.
  void barrier() { ++epoch_; }
  /// Warp `warp` reads (or writes) [offset, offset + bytes) at PTX `line`;
  /// false with `why` on a race. A write's old bytes are at `old`, its new
  /// ones at `data` (a write of the same bytes is benign).
  bool read(unsigned warp, int line, uint64_t offset, uint32_t bytes, std::string &why);
  bool write(unsigned warp, int line, uint64_t offset, uint32_t bytes, const uint8_t *old,
             const uint8_t *data, std::string &why);

private:
  struct Word {
    uint64_t writeEpoch = 0, readEpoch = 0;
    uint64_t readers = 0; // warps that read in readEpoch
    int32_t writeLine = 0, readLine = 0;
    uint16_t writer = 0;
  };
  std::vector<Word> words_;
  uint64_t epoch_ = 0; // never reused across blocks, so no reset is needed
};

} // namespace kiln::emu

#endif // KILN_TEST_EMU_PTXRACES_H

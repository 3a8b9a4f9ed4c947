//===- PtxProfile.h - what one block's memory accesses would cost -*- C++ -*-===//
//
// With KILN_EMU_PROFILE set, the emulator watches the first block of each
// launch and reports what a GPU's memory system would make of its
// accesses, which no timing here can show:
//  - shared memory: the wavefronts each warp request takes (32 banks of 4
//    bytes; 8-byte accesses go in 2 phases of 16 threads, 16-byte ones and
//    ldmatrix rows in 4 of 8), against the conflict-free count;
//  - global memory: the 32-byte sectors each warp request touches, against
//    the bytes it asked for.
// A warp's request is its threads' executions of one instruction with the
// same count (the n-th time each thread ran it), as if they ran together.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_EMU_PTXPROFILE_H
#define KILN_TEST_EMU_PTXPROFILE_H

#include "Ptx.h"

#include <cstdio>
#include <map>
#include <tuple>
#include <vector>

namespace kiln::emu {

class Profile {
public:
  Profile(const Entry &e, unsigned threads);
  /// Thread `thread` ran the instruction at `pc`, accessing `bytes` at `addr`.
  void access(unsigned thread, uint32_t pc, bool shared, uint64_t addr, uint32_t bytes);
  void instruction() { ++instructions_; }
  void report(const Launch &l, std::FILE *out) const;

private:
  struct Request {
    bool shared;
    uint32_t bytes;
    std::vector<std::pair<unsigned, uint64_t>> lanes; // lane, address
  };
  const Entry &entry_;
  // [(thread * code size + pc) * 2 + shared]: accesses so far, shared and
  // global counted apart (a cp.async's zero-filled lanes read no global
  // memory: one count would pair their writes with other lanes' reads).
  std::vector<uint32_t> seen_;
  std::map<std::tuple<uint32_t, uint32_t, bool, uint32_t>, Request> requests_; // warp, pc, shared, n
  uint64_t instructions_ = 0;
  unsigned threads_;
};

} // namespace kiln::emu

#endif // KILN_TEST_EMU_PTXPROFILE_H

//===- PtxExec.cpp - running decoded PTX, one block at a time -------------===//
//
// Each thread runs alone until it reaches an instruction that needs others:
// a warp collective (shfl, ldmatrix, mma), a warpgroup one (wgmma) or a
// block barrier. When every live thread of the warp (warpgroup, block) is
// there, the collective runs for all of them at once. Asynchronous copies
// land when their thread waits for them, the latest moment the PTX memory
// model allows, so a kernel that reads a tile before waiting reads stale
// bytes here too.
//
// Device pointers are host pointers (the emulating driver allocates host
// memory), so global and generic accesses are plain loads and stores;
// shared-window addresses are offsets into the block's buffer, checked.
//
//===----------------------------------------------------------------------===//

#include "Ptx.h"
#include "PtxAlu.h"
#include "PtxNumeric.h"
#include "PtxProfile.h"
#include "PtxRaces.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <sstream>

namespace kiln::emu {

namespace {
std::map<uint64_t, uint64_t> &deviceMemory() { // base -> bytes
  static std::map<uint64_t, uint64_t> m;
  return m;
}
} // namespace

void addDeviceMemory(uint64_t base, uint64_t bytes) { deviceMemory()[base] = bytes; }
void removeDeviceMemory(uint64_t base) { deviceMemory().erase(base); }

namespace {

/// Whether [a, a + bytes) lies in one allocation; else why not.
bool inDeviceMemory(uint64_t a, uint64_t bytes, std::string &why) {
  static thread_local std::pair<uint64_t, uint64_t> last{0, 0}; // the range hit last
  if (a >= last.first && a + bytes <= last.first + last.second)
    return true;
  auto &m = deviceMemory();
  auto it = m.upper_bound(a);
  if (it != m.begin()) {
    --it;
    if (a + bytes <= it->first + it->second) {
      last = *it;
      return true;
    }
    std::ostringstream os;
    os << "an access of " << bytes << " bytes at 0x" << std::hex << a << std::dec << ", "
       << (a - it->first) << " bytes into an allocation of " << it->second
       << " bytes: beyond its end";
    why = os.str();
    return false;
  }
  std::ostringstream os;
  os << "an access of " << bytes << " bytes at 0x" << std::hex << a << ", below every allocation";
  why = os.str();
  return false;
}

struct Copy {
  uint8_t *dst;
  const uint8_t *src;
  uint32_t size, srcSize;
  unsigned warp; // who issued it, where: for the race check
  int line;
};

enum class State : uint8_t { Running, Collective, Barrier, MbarWait, ClusterWait, Done };

// A function's activation: its registers and its .param bytes (its
// parameters, its return value, the arguments of the calls it makes).
struct Frame {
  const Entry *fn;
  uint32_t pc; // where the caller resumes
  std::vector<uint64_t> regs;
  std::vector<uint8_t> params;
  int64_t retAt; // where the caller's result .param is
};

struct Thread {
  uint64_t *r;
  uint32_t pc = 0;
  const Entry *fn;             // running now (the kernel, or a callee)
  std::vector<Frame> frames;   // the kernel's first
  bool carry = false;          // CC.CF
  State state = State::Running;
  unsigned barId = 0, barCount = 0; // the barrier it waits at (count 0: the block)
  uint32_t clusterArrivals = 0;     // barrier.cluster.arrive so far
  unsigned tid[3], linear, lane, warp;
  uint8_t *local;
  std::vector<std::vector<Copy>> groups; // committed, oldest first
  std::vector<Copy> open;                // not yet committed
  // wgmma accumulators in flight: register -> the wgmma group writing it
  // (1, 2, ... as committed); in flight while that group is not retired by
  // wgmma.wait_group. Only the kernel's own frame has them.
  std::vector<uint32_t> accGroup;
  // Likewise A's fragments of register-A wgmmas: read until the group
  // completes, so writing one before then is undefined (reading is not).
  std::vector<uint32_t> fragGroup;
  uint32_t accOpen = 1, accCommitted = 0, accRetired = 0;
  static bool pending(const std::vector<uint32_t> &groups, int reg, uint32_t retired) {
    return reg >= 0 && (size_t)reg < groups.size() && groups[reg] > retired;
  }
  bool inFlight(int reg) const {
    return frames.size() == 1 && pending(accGroup, reg, accRetired);
  }
  bool fragInFlight(int reg) const {
    return frames.size() == 1 && pending(fragGroup, reg, accRetired);
  }
};


struct Block;

/// The blocks of one cluster, run together: each one's shared memory and
/// mbarriers reachable from the others (mapa, multicast copies, remote
/// arrivals), one race check over all of their warps and shared bytes.
struct Cluster {
  std::vector<Block *> blocks; // by rank
  // barrier.cluster: the fewest arrivals of any thread still running; a
  // wait for the n-th arrival passes once that is n.
  uint32_t leastArrivals = 0;
  uint32_t raceGeneration = 0; // the arrivals the race check last ordered at
};

struct Block {
  const Entry &e;
  const Launch &L;
  unsigned cta[3];
  Cluster *cluster = nullptr; // null: a cluster of one
  unsigned rank = 0;          // in the cluster
  // Where this block's warps and shared bytes sit in the cluster's race
  // check.
  unsigned warpBase = 0;
  uint64_t sharedBase = 0;
  std::vector<uint8_t> shared;
  std::vector<uint8_t> locals;
  std::vector<Thread> threads;
  std::string &error;
  Profile *profile = nullptr; // watching this block
  RaceCheck *races = nullptr;  // checking this block
  // mbarrier objects by shared offset: arrivals still expected in the
  // current phase, and the clocks its arrivals (and the last completed
  // phase's) carry to the waiters.
  struct Mbar {
    uint32_t expected = 0, pending = 0;
    int64_t tx = 0; // bytes expected (expect_tx) less those completed (TMA)
    uint64_t phase = 0;
    RaceCheck::Clock open, done;
  };
  std::map<int64_t, Mbar> mbars;
  // wgmma reads shared memory until its group completes (wait_group), not
  // only when issued: per warp, the reads of the open group and of the
  // committed ones, checked again (and recorded with the warp's clock then)
  // when the group completes, so a stage handed back before that is a race.
  struct Reads {
    int64_t offset;
    uint32_t bytes;
    int line;
  };
  std::vector<std::vector<Reads>> wgOpen;
  std::vector<std::vector<std::vector<Reads>>> wgGroups;

  Block(const Entry &e, const Launch &L, std::string &error) : e(e), L(L), error(error) {}

  /// The shared-memory offset of an access, or -1 when it is not shared.
  int64_t sharedOffset(Space space, uint64_t a) const {
    uint64_t base = (uint64_t)(uintptr_t)shared.data();
    if (space == Space::Shared)
      return (int64_t)a;
    if (space == Space::Generic && a >= base && a < base + shared.size())
      return (int64_t)(a - base);
    return -1;
  }
  uint32_t ownRaceGeneration = 0; // as Cluster::raceGeneration, alone
  uint32_t &raceGeneration() { return cluster ? cluster->raceGeneration : ownRaceGeneration; }
  /// The fewest barrier.cluster arrivals of a thread still running (none
  /// running: no limit).
  uint32_t leastArrivals() const {
    uint32_t least = UINT32_MAX;
    for (const Thread &t : threads)
      if (t.state != State::Done)
        least = std::min(least, t.clusterArrivals);
    return least;
  }
  /// Whether every thread left (its shared memory gone: on a GPU another
  /// block's copy or arrival reaching it is undefined).
  bool exited() const {
    for (const Thread &t : threads)
      if (t.state != State::Done)
        return false;
    return true;
  }
  /// A warp of this block as the race check counts the cluster's.
  unsigned gw(unsigned warp) const { return warpBase + warp; }
  bool checkRead(unsigned warp, int line, int64_t offset, uint32_t bytes) {
    std::string why;
    if (!races || offset < 0 ||
        races->read(gw(warp), line, sharedBase + (uint64_t)offset, bytes, why))
      return true;
    error = e.name + ": " + why;
    return false;
  }
  bool checkWrite(unsigned warp, int line, int64_t offset, uint32_t bytes, const uint8_t *data) {
    return checkWriteBy(gw(warp), line, offset, bytes, data);
  }
  /// A write into this block's shared memory by warp `globalWarp` of the
  /// cluster (another block's, for a multicast copy).
  bool checkWriteBy(unsigned globalWarp, int line, int64_t offset, uint32_t bytes,
                    const uint8_t *data) {
    std::string why;
    if (!races || offset < 0 ||
        races->write(globalWarp, line, sharedBase + (uint64_t)offset, bytes,
                     shared.data() + offset, data, why))
      return true;
    error = e.name + ": " + why;
    return false;
  }
  /// The block and offset a shared::cluster address names.
  Block *clusterTarget(uint64_t a, int64_t &offset) {
    unsigned r = (unsigned)(a >> kClusterRankShift);
    offset = (int64_t)(a & ((1ull << kClusterRankShift) - 1));
    if (!r)
      return this;
    if (!cluster)
      return r == 1 ? this : nullptr;
    return r - 1 < cluster->blocks.size() ? cluster->blocks[r - 1] : nullptr;
  }

  /// cp.async copies landing (their thread waits for them, or exits).
  bool land(std::vector<Copy> &copies) {
    for (const Copy &c : copies) {
      uint8_t bytes[256] = {};
      if (c.srcSize)
        std::memcpy(bytes, c.src, std::min<uint32_t>(c.srcSize, sizeof(bytes)));
      if (!checkWrite(c.warp, c.line, c.dst - shared.data(), c.size, bytes))
        return false;
      if (c.srcSize) // a zero-filling copy may have no source
        std::memcpy(c.dst, c.src, c.srcSize);
      if (c.size > c.srcSize)
        std::memset(c.dst + c.srcSize, 0, c.size - c.srcSize);
    }
    copies.clear();
    return true;
  }

  /// The mbarrier at `a` (in `space`), or null after a fault.
  Mbar *mbarrier(const Inst &in, Space space, uint64_t a) {
    int64_t at = sharedOffset(space, a);
    auto it = mbars.find(at);
    if (at >= 0 && it != mbars.end())
      return &it->second;
    fail(in, at < 0 ? "an mbarrier outside shared memory"
                    : "no mbarrier was initialized at shared byte " + std::to_string(at));
    return nullptr;
  }
  /// `count` arrivals of `t` on `mb`: the phase completes at the last.
  bool arrive(Thread &t, const Inst &in, Mbar &mb, uint32_t count) {
    if (races)
      races->release(gw(t.warp), mb.open);
    if (count > mb.pending)
      return fail(in, "more arrivals on an mbarrier than its phase expects");
    mb.pending -= count;
    complete(mb);
    return true;
  }
  /// The phase completes once every arrival came and every byte expected
  /// landed.
  static void complete(Mbar &mb) {
    if (mb.pending || mb.tx)
      return;
    ++mb.phase;
    mb.pending = mb.expected;
    mb.done = std::move(mb.open);
    mb.open = {};
  }
  /// cp.async.bulk.tensor: the box at the coordinates of tensor map `map`
  /// into shared memory at `dst` (elements outside the tensor are zeros),
  /// through the map's swizzle, then its bytes complete on `mb`. The copy
  /// lands at once, as if the TMA unit were that fast: the waiters still
  /// synchronize through the mbarrier, which the race check follows.
  bool bulkTensor(Thread &t, const Inst &in, const TensorMap &map, const int64_t *coords,
                  uint64_t dst, int64_t mbar, const std::vector<Block *> &into) {
    if (map.magic != TensorMap::kMagic)
      return fail(in, "the tensor map is not one cuTensorMapEncodeTiled wrote");
    if (map.rank != in.m)
      return fail(in, "a " + std::to_string(in.m) + "-d copy with a rank-" +
                          std::to_string(map.rank) + " tensor map");
    const uint64_t elt = map.strides[0];
    const uint64_t rowBytes = map.box[0] * elt;
    uint64_t rows = 1;
    for (unsigned d = 1; d < map.rank; ++d)
      rows *= map.box[d];
    const uint64_t bytes = rowBytes * rows;
    if (dst % (map.swizzle ? 1024 : 128))
      return fail(in, "a bulk tensor copy into shared byte " + std::to_string(dst) +
                          (map.swizzle ? " (the 128-byte swizzle wants 1024-byte alignment)"
                                       : " (not 128-byte aligned)"));
    if (dst + bytes > shared.size())
      return fail(in, "a bulk tensor copy of " + std::to_string(bytes) + " bytes at shared byte " +
                          std::to_string(dst) + ", beyond the block's " +
                          std::to_string(shared.size()));
    std::vector<uint8_t> box(bytes, 0);
    for (uint64_t r = 0; r < rows; ++r) {
      // The row's coordinates in dimensions 1.., then its elements.
      int64_t at[5] = {coords[0], 0, 0, 0, 0};
      uint64_t rest = r;
      bool inside = true;
      for (unsigned d = 1; d < map.rank; ++d) {
        at[d] = coords[d] + (int64_t)(rest % map.box[d]);
        rest /= map.box[d];
        inside = inside && at[d] >= 0 && (uint64_t)at[d] < map.dims[d];
      }
      for (uint64_t i = 0; inside && i < map.box[0]; ++i) {
        int64_t x = at[0] + (int64_t)i;
        if (x < 0 || (uint64_t)x >= map.dims[0])
          continue;
        uint64_t src = map.global + (uint64_t)x * elt;
        for (unsigned d = 1; d < map.rank; ++d)
          src += (uint64_t)at[d] * map.strides[d];
        const uint8_t *p = memory(in, Space::Global, src, (uint32_t)elt);
        if (!p)
          return false;
        note(t, Space::Global, src, (uint32_t)elt);
        std::memcpy(box.data() + r * rowBytes + i * elt, p, elt);
      }
    }
    // Into each block (the issuing one, or a multicast's mask) at the
    // same offsets, completing on its mbarrier at the same offset.
    for (Block *to : into) {
      if (to->exited())
        return fail(in, "a multicast copy into block rank " + std::to_string(to->rank) +
                            " of the cluster, which has exited");
      Mbar *mb = to->mbarrier(in, Space::Shared, (uint64_t)mbar);
      if (!mb)
        return fail(in, "no mbarrier at shared byte " + std::to_string(mbar) + " of block rank " +
                            std::to_string(to->rank) + " of the cluster");
      // 128-byte swizzle: 16-byte chunk c of 128-byte line l at c ^ (l % 8).
      for (uint64_t o = 0; o < bytes; o += 16) {
        uint64_t placed = map.swizzle ? o ^ (((o >> 7) & 7) << 4) : o;
        if (!to->checkWriteBy(gw(t.warp), in.line, (int64_t)(dst + placed), 16, box.data() + o))
          return false; // (the blocks share the error)
        std::memcpy(to->shared.data() + dst + placed, box.data() + o, 16);
      }
      if (races)
        races->release(gw(t.warp), mb->open);
      mb->tx -= (int64_t)bytes;
      complete(*mb);
    }
    note(t, Space::Shared, dst, (uint32_t)bytes);
    return true;
  }

  void note(const Thread &t, Space space, uint64_t a, uint32_t bytes) {
    if (!profile || t.fn != &e || space == Space::Param || space == Space::Local)
      return;
    int64_t at = sharedOffset(space, a);
    profile->access(t.linear, t.pc, at >= 0, at >= 0 ? (uint64_t)at : a, bytes);
  }

  bool fail(const Inst &in, const std::string &msg) {
    if (error.empty())
      error = e.name + " (PTX line " + std::to_string(in.line) + "): " + msg;
    return false;
  }

  uint64_t special(const Thread &t, Sreg s) const {
    switch (s) {
    case Sreg::TidX: return t.tid[0];
    case Sreg::TidY: return t.tid[1];
    case Sreg::TidZ: return t.tid[2];
    case Sreg::NtidX: return L.block[0];
    case Sreg::NtidY: return L.block[1];
    case Sreg::NtidZ: return L.block[2];
    case Sreg::CtaX: return cta[0];
    case Sreg::CtaY: return cta[1];
    case Sreg::CtaZ: return cta[2];
    case Sreg::NctaX: return L.grid[0];
    case Sreg::NctaY: return L.grid[1];
    case Sreg::NctaZ: return L.grid[2];
    case Sreg::Lane: return t.lane;
    case Sreg::Warp: return t.warp;
    case Sreg::ClusterRank: return rank;
    case Sreg::ClusterSize: return cluster ? cluster->blocks.size() : 1;
    }
    return 0;
  }

  // A register read or written while a wgmma still writes it (undefined on
  // a GPU until wgmma.wait_group), noted here and failed after the
  // instruction.
  mutable int inFlightRead = -1, inFlightWrite = -1, fragWrite = -1;

  uint64_t val(const Thread &t, const Operand &o) const {
    switch (o.kind) {
    case Operand::Reg:
      if (t.inFlight(o.reg))
        inFlightRead = o.reg;
      return o.neg ? !t.r[o.reg] : t.r[o.reg];
    case Operand::Imm: case Operand::Label: return (uint64_t)o.imm;
    case Operand::Special: return special(t, (Sreg)o.imm);
    case Operand::Local: return (uint64_t)(uintptr_t)(t.local + o.imm);
    default: return 0;
    }
  }
  uint64_t addr(const Thread &t, const Operand &o) const {
    if (t.inFlight(o.reg))
      inFlightRead = o.reg;
    return (o.reg >= 0 ? t.r[o.reg] : 0) + (uint64_t)o.imm;
  }

  /// Where `bytes` at address `a` of `space` live on the host.
  uint8_t *memory(const Inst &in, Space space, uint64_t a, uint32_t bytes, Thread *t = nullptr) {
    switch (space) {
    case Space::Shared:
      if (a + bytes > shared.size()) {
        fail(in, "shared access at " + std::to_string(a) + " (" + std::to_string(bytes) +
                     " bytes) beyond the block's " + std::to_string(shared.size()) + " bytes");
        return nullptr;
      }
      return shared.data() + a;
    case Space::Param: {
      if (!t || a + bytes > t->frames.back().params.size()) {
        fail(in, "a .param access beyond the parameters");
        return nullptr;
      }
      return t->frames.back().params.data() + a;
    }
    default: {
      // Generic addresses may be the block's shared memory or the thread's
      // locals (host memory here); else device memory, checked.
      uint64_t sharedBase = (uint64_t)(uintptr_t)shared.data();
      if (space == Space::Generic && a >= sharedBase && a + bytes <= sharedBase + shared.size())
        return (uint8_t *)(uintptr_t)a;
      uint64_t localBase = (uint64_t)(uintptr_t)locals.data();
      if ((space == Space::Generic || space == Space::Local) && a >= localBase &&
          a + bytes <= localBase + locals.size())
        return (uint8_t *)(uintptr_t)a;
      std::string why;
      if (!inDeviceMemory(a, bytes, why)) {
        fail(in, "out of bounds: " + why);
        return nullptr;
      }
      return (uint8_t *)(uintptr_t)a;
    }
    }
  }

  void set(Thread &t, const Operand &o, uint64_t v, Ty ty) {
    if (o.kind != Operand::Reg)
      return;
    if (t.inFlight(o.reg))
      inFlightWrite = o.reg;
    else if (t.fragInFlight(o.reg))
      fragWrite = o.reg;
    t.r[o.reg] = v & mask(bitsOf(ty) == 1 ? 1 : bitsOf(ty));
  }

  bool exec(Thread &t, const Inst &in);
  /// CUDA's device-side malloc(size) / free(ptr): blocks of the host's
  /// heap, device memory to the emulator's checks; the arguments and the
  /// result are in the caller's .params, as for any call.
  void heapCall(Thread &t, const Inst &in) {
    auto &params = t.frames.back().params;
    uint64_t arg = 0;
    std::memcpy(&arg, params.data() + in.ops[1].elems[0].imm, sizeof arg);
    if (in.heapCall == 2) {
      if (arg) {
        removeDeviceMemory(arg);
        std::free((void *)(uintptr_t)arg);
      }
      return;
    }
    void *block = std::aligned_alloc(16, (std::max<uint64_t>(arg, 1) + 15) / 16 * 16);
    uint64_t p = (uint64_t)(uintptr_t)block;
    if (block)
      addDeviceMemory(p, arg);
    if (!in.ops[0].elems.empty())
      std::memcpy(params.data() + in.ops[0].elems[0].imm, &p, sizeof p);
  }
  bool collective(std::vector<Thread *> &ts, const Inst &in);
  bool mma(std::vector<Thread *> &ts, const Inst &in);
  bool wgmma(std::vector<Thread *> &ts, const Inst &in);
  bool ldmatrix(std::vector<Thread *> &ts, const Inst &in);
  /// Sets the threads up; then step() until it says Done.
  void start();
  enum class Step { Progress, Done, Stuck, Failed };
  /// Runs every thread until it blocks, then what completes (collectives,
  /// barriers): Stuck when nothing moved (perhaps waiting for another
  /// block of the cluster).
  Step step();
  /// What the stuck threads wait at, for a deadlock's report.
  std::string stuckAt() const;
  bool run();
};

bool Block::exec(Thread &t, const Inst &in) {
  const auto &o = in.ops;
  auto v = [&](int i) { return val(t, o[i]); };
  Ty ty = in.ty;
  switch (in.op) {
  case Op::Nop:
    return true;
  case Op::WgCommit: // per warp (.sync.aligned): lane 0 speaks for it
    t.accCommitted = t.accOpen++;
    if (races && t.lane == 0 && t.warp < wgOpen.size()) {
      wgGroups[t.warp].push_back(std::move(wgOpen[t.warp]));
      wgOpen[t.warp].clear();
    }
    return true;
  case Op::WgWait:
    if (t.accCommitted >= (uint32_t)v(0))
      t.accRetired = std::max(t.accRetired, t.accCommitted - (uint32_t)v(0));
    if (races && t.lane == 0 && t.warp < wgGroups.size()) {
      auto &groups = wgGroups[t.warp];
      while (groups.size() > (size_t)v(0)) {
        for (const Reads &r : groups.front())
          if (!checkRead(t.warp, r.line, r.offset, r.bytes))
            return false;
        groups.erase(groups.begin());
      }
    }
    return true;
  case Op::Mov: {
    if (o[0].kind == Operand::Vec) { // unpack
      int w = bitsOf(ty) / (int)o[0].elems.size();
      uint64_t x = v(1);
      for (size_t i = 0; i < o[0].elems.size(); ++i)
        if (o[0].elems[i].kind == Operand::Reg)
          t.r[o[0].elems[i].reg] = (x >> (w * i)) & mask(w);
      return true;
    }
    if (o[1].kind == Operand::Vec) { // pack
      int w = bitsOf(ty) / (int)o[1].elems.size();
      uint64_t x = 0;
      for (size_t i = 0; i < o[1].elems.size(); ++i)
        x |= (val(t, o[1].elems[i]) & mask(w)) << (w * i);
      set(t, o[0], x, ty);
      return true;
    }
    set(t, o[0], v(1), ty == Ty::Pred ? Ty::Pred : ty);
    return true;
  }
  case Op::Add: case Op::Sub: case Op::Min: case Op::Max: case Op::And: case Op::Or:
  case Op::Xor: case Op::Shl: case Op::Shr: case Op::Rem: case Op::Div: case Op::Copysign:
  case Op::Mul: {
    uint64_t a = v(1), b = v(2), d = 0;
    if (ty == Ty::Pred) {
      d = in.op == Op::And ? (a & b) : in.op == Op::Or ? (a | b) : (a ^ b);
      set(t, o[0], d & 1, Ty::Pred);
      return true;
    }
    if (ty == Ty::F16x2 || ty == Ty::BF16x2) {
      Ty h = ty == Ty::F16x2 ? Ty::F16 : Ty::BF16;
      uint64_t lo, hi;
      if (!binary(in.op, h, a & 0xffff, b & 0xffff, lo, in.mode, in.mode2) ||
          !binary(in.op, h, a >> 16, b >> 16, hi, in.mode, in.mode2))
        return fail(in, "unsupported packed operation");
      set(t, o[0], (lo & 0xffff) | (hi & 0xffff) << 16, Ty::B32);
      return true;
    }
    if (in.cc || in.carryIn) { // extended precision: CC.CF in and out
      int bits = bitsOf(ty);
      unsigned __int128 x = a & mask(bits), y = b & mask(bits), c = in.carryIn && t.carry;
      unsigned __int128 r = in.op == Op::Add ? x + y + c : x - y - c;
      if (in.cc)
        t.carry = (r >> bits) & 1; // the carry out, or the borrow
      set(t, o[0], (uint64_t)r, ty);
      return true;
    }
    if (in.op == Op::Mul && in.mode == 2) { // wide: 2x the source width
      int bits = bitsOf(ty);
      uint64_t r = isSigned(ty) ? (uint64_t)(sext(a, bits) * sext(b, bits))
                                : (a & mask(bits)) * (b & mask(bits));
      t.r[o[0].reg] = r & mask(2 * bits);
      return true;
    }
    if (!binary(in.op, ty, a, b, d, in.mode, in.mode2))
      return fail(in, "unsupported operation");
    if (in.sat && ty == Ty::F32) {
      float f = bitsToF32((uint32_t)d);
      d = f32ToBits(std::isnan(f) ? 0.0f : std::clamp(f, 0.0f, 1.0f));
    }
    set(t, o[0], d, ty);
    return true;
  }
  case Op::Mad: case Op::Fma: {
    uint64_t a = v(1), b = v(2), c = v(3);
    if (isFloat(ty)) {
      if (ty == Ty::F16x2 || ty == Ty::BF16x2) {
        Ty h = ty == Ty::F16x2 ? Ty::F16 : Ty::BF16;
        uint64_t r = 0;
        for (int i = 0; i < 2; ++i) {
          double x = toDouble(h, (a >> 16 * i) & 0xffff), y = toDouble(h, (b >> 16 * i) & 0xffff),
                 z = toDouble(h, (c >> 16 * i) & 0xffff);
          r |= (fromDouble(h, x * y + z) & 0xffff) << (16 * i);
        }
        set(t, o[0], r, Ty::B32);
        return true;
      }
      double x = toDouble(ty, a), y = toDouble(ty, b), z = toDouble(ty, c), r;
      if (ty == Ty::F32 && in.mode2 <= 1)
        r = std::fma((float)x, (float)y, (float)z);
      else if (ty == Ty::F64)
        r = std::fma(x, y, z);
      else
        r = x * y + z;
      uint64_t d = fromDouble(ty, r, in.mode2 ? in.mode2 : 1);
      if (in.sat && ty == Ty::F32) {
        float f = bitsToF32((uint32_t)d);
        d = f32ToBits(std::isnan(f) ? 0.0f : std::clamp(f, 0.0f, 1.0f));
      }
      set(t, o[0], d, ty);
      return true;
    }
    int bits = bitsOf(ty);
    bool s = isSigned(ty);
    uint64_t r;
    if (in.mode == 2) { // wide
      r = (s ? (uint64_t)(sext(a, bits) * sext(b, bits)) : (a & mask(bits)) * (b & mask(bits))) + c;
      t.r[o[0].reg] = r & mask(2 * bits);
      return true;
    }
    uint64_t p;
    binary(Op::Mul, ty, a, b, p, in.mode, 0);
    if (in.cc || in.carryIn) {
      unsigned __int128 r = (unsigned __int128)(p & mask(bits)) + (c & mask(bits)) +
                            (in.carryIn && t.carry);
      if (in.cc)
        t.carry = (r >> bits) & 1;
      set(t, o[0], (uint64_t)r, ty);
      return true;
    }
    set(t, o[0], p + c, ty);
    return true;
  }
  case Op::Neg: case Op::Abs: case Op::Not: case Op::Sqrt: case Op::Rsqrt: case Op::Rcp:
  case Op::Ex2: case Op::Lg2: case Op::Sin: case Op::Cos: case Op::Tanh: case Op::Popc:
  case Op::Clz: case Op::Brev: {
    uint64_t a = v(1);
    if (isFloat(ty)) {
      double x = toDouble(ty, a), r;
      float f = (float)x;
      if (in.ftz && ty == Ty::F32 && std::fpclassify(f) == FP_SUBNORMAL)
        f = std::copysign(0.0f, f), x = f;
      switch (in.op) {
      case Op::Neg: r = -x; break;
      case Op::Abs: r = std::fabs(x); break;
      case Op::Sqrt: r = ty == Ty::F32 ? std::sqrt(f) : std::sqrt(x); break;
      case Op::Rsqrt: r = ty == Ty::F32 ? 1.0f / std::sqrt(f) : 1.0 / std::sqrt(x); break;
      case Op::Rcp: r = ty == Ty::F32 ? 1.0f / f : 1.0 / x; break;
      case Op::Ex2: r = ty == Ty::F32 ? std::exp2(f) : std::exp2(x); break;
      case Op::Lg2: r = ty == Ty::F32 ? std::log2(f) : std::log2(x); break;
      case Op::Sin: r = std::sin(f); break;
      case Op::Cos: r = std::cos(f); break;
      case Op::Tanh: r = std::tanh(f); break;
      default: return fail(in, "unsupported float operation");
      }
      if (in.ftz && ty == Ty::F32 && std::fpclassify((float)r) == FP_SUBNORMAL)
        r = std::copysign(0.0, r);
      set(t, o[0], fromDouble(ty, r, in.mode2 ? in.mode2 : 1), ty);
      return true;
    }
    int bits = bitsOf(ty);
    uint64_t d;
    switch (in.op) {
    case Op::Neg: d = (uint64_t)(-sext(a, bits)); break;
    case Op::Abs: { int64_t x = sext(a, bits); d = (uint64_t)(x < 0 ? -x : x); break; }
    case Op::Not: d = ty == Ty::Pred ? !(a & 1) : ~a; break;
    case Op::Popc: d = (uint64_t)__builtin_popcountll(a & mask(bits)); break;
    case Op::Clz: {
      uint64_t x = a & mask(bits);
      d = x ? (uint64_t)(__builtin_clzll(x) - (64 - bits)) : (uint64_t)bits;
      break;
    }
    case Op::Brev: {
      uint64_t x = a & mask(bits);
      d = 0;
      for (int i = 0; i < bits; ++i)
        d |= ((x >> i) & 1) << (bits - 1 - i);
      break;
    }
    default: return fail(in, "unsupported integer operation");
    }
    set(t, o[0], d, (in.op == Op::Popc || in.op == Op::Clz) ? Ty::B32 : ty);
    return true;
  }
  case Op::Setp: {
    bool r = compare(in.mode, ty, v(1), v(2));
    if (in.mode2) {
      bool c = v(3) & 1;
      r = in.mode2 == 1 ? (r && c) : in.mode2 == 2 ? (r || c) : (r != c);
    }
    t.r[o[0].reg] = r;
    if (o[0].reg2 >= 0)
      t.r[o[0].reg2] = !r;
    return true;
  }
  case Op::Selp:
    set(t, o[0], (v(3) & 1) ? v(1) : v(2), ty);
    return true;
  case Op::Testp: {
    double x = toDouble(ty, v(1));
    bool r = in.mode == 1 ? std::isfinite(x) : in.mode == 2 ? std::isinf(x)
             : in.mode == 3 ? !std::isnan(x) : std::isnan(x);
    t.r[o[0].reg] = r;
    return true;
  }
  case Op::Cvt: {
    if (ty == Ty::F16x2 || ty == Ty::BF16x2) { // d = {hi: a, lo: b}
      Ty h = ty == Ty::F16x2 ? Ty::F16 : Ty::BF16;
      uint64_t hi = convert(h, in.ty2, v(1), in.mode, in.sat),
               lo = convert(h, in.ty2, v(2), in.mode, in.sat);
      set(t, o[0], (hi & 0xffff) << 16 | (lo & 0xffff), Ty::B32);
      return true;
    }
    uint64_t d = convert(ty, in.ty2, v(1), in.mode, in.sat);
    // An s8 result lives in a wider register (PTX has none of 8 bits),
    // sign-extended to it, as ld.s8 does: cvt.s8.s32 %rs1, %r3 then
    // cvt.rn.f32.s16 %f1, %rs1 reads -125 as -125, not 131.
    if (ty == Ty::S8) {
      set(t, o[0], (uint64_t)sext(d, 8), Ty::B64);
      return true;
    }
    set(t, o[0], d, ty == Ty::TF32 ? Ty::B32 : ty);
    return true;
  }
  case Op::Cvta: {
    // Generic addresses are host addresses: shared offsets become pointers
    // into the block's buffer (and back); global and local are unchanged.
    uint64_t a = v(1);
    if (in.space == Space::Shared)
      a = in.mode ? a - (uint64_t)(uintptr_t)shared.data() : a + (uint64_t)(uintptr_t)shared.data();
    set(t, o[0], a, ty);
    return true;
  }
  case Op::Shf: { // the 64 bits b:a shifted, 32 of them kept
    uint64_t both = (v(2) & 0xffffffff) << 32 | (v(1) & 0xffffffff);
    unsigned n = (unsigned)(v(3) & 0xffffffff);
    n = (in.mode & 2) ? std::min(n, 32u) : n & 31;
    set(t, o[0], (in.mode & 1) ? both >> n : (both << n) >> 32, Ty::B32);
    return true;
  }
  case Op::Bfe: {
    int bits = bitsOf(ty);
    uint64_t a = v(1) & mask(bits);
    unsigned pos = v(2) & 0xff, len = v(3) & 0xff;
    uint64_t d = 0;
    if (len && pos < (unsigned)bits) {
      unsigned n = std::min<unsigned>(len, bits - pos);
      d = (a >> pos) & mask(n);
      if (isSigned(ty) && ((a >> (std::min<unsigned>(pos + len, bits) - 1)) & 1))
        d |= ~mask(n);
    } else if (isSigned(ty) && len && ((a >> (bits - 1)) & 1)) {
      d = ~0ull;
    }
    set(t, o[0], d, ty);
    return true;
  }
  case Op::Bfi: {
    int bits = bitsOf(ty);
    uint64_t a = v(1), b = v(2);
    unsigned pos = v(3) & 0xff, len = v(4) & 0xff;
    uint64_t d = b;
    if (len && pos < (unsigned)bits) {
      uint64_t m = mask(std::min<unsigned>(len, bits - pos)) << pos;
      d = (b & ~m) | ((a << pos) & m);
    }
    set(t, o[0], d, ty);
    return true;
  }
  case Op::Prmt: {
    uint64_t bytes = (v(1) & 0xffffffff) | (v(2) & 0xffffffff) << 32, c = v(3), d = 0;
    for (int i = 0; i < 4; ++i) {
      unsigned sel = (c >> (4 * i)) & 0xf;
      uint64_t byte = (bytes >> (8 * (sel & 7))) & 0xff;
      if (sel & 8)
        byte = (byte & 0x80) ? 0xff : 0;
      d |= byte << (8 * i);
    }
    set(t, o[0], d, Ty::B32);
    return true;
  }
  case Op::Ld: case Op::St: {
    const Operand &data = in.op == Op::Ld ? o[0] : o[1];
    const Operand &where = in.op == Op::Ld ? o[1] : o[0];
    uint32_t eb = (uint32_t)std::max(1, bitsOf(ty) / 8), n = in.vec;
    uint8_t *p = memory(in, in.space, addr(t, where), eb * n, &t);
    if (!p)
      return false;
    note(t, in.space, addr(t, where), eb * n);
    int64_t sharedAt = sharedOffset(in.space, addr(t, where));
    if (in.op == Op::Ld && !checkRead(t.warp, in.line, sharedAt, eb * n))
      return false;
    if (in.op == Op::St && sharedAt >= 0) {
      uint8_t bytes[64];
      for (uint32_t i = 0; i < n && (i + 1) * eb <= sizeof(bytes); ++i) {
        uint64_t x = val(t, data.kind == Operand::Vec ? data.elems[i] : data);
        std::memcpy(bytes + i * eb, &x, eb);
      }
      if (!checkWrite(t.warp, in.line, sharedAt, eb * n, bytes))
        return false;
    }
    for (uint32_t i = 0; i < n; ++i) {
      const Operand &r = data.kind == Operand::Vec ? data.elems[i] : data;
      if (in.op == Op::Ld) {
        uint64_t x = 0;
        std::memcpy(&x, p + i * eb, eb);
        if (isSigned(ty))
          x = (uint64_t)sext(x, eb * 8);
        if (r.kind == Operand::Reg)
          t.r[r.reg] = x;
      } else {
        uint64_t x = val(t, r);
        std::memcpy(p + i * eb, &x, eb);
      }
    }
    return true;
  }
  case Op::CpAsync: {
    uint32_t size = (uint32_t)v(2), srcSize = o.size() > 3 ? (uint32_t)v(3) : size;
    uint8_t *dst = memory(in, Space::Shared, addr(t, o[0]), size);
    if (!dst)
      return false;
    const uint8_t *src = srcSize ? memory(in, Space::Global, addr(t, o[1]), srcSize) : nullptr;
    if (srcSize && !src)
      return false;
    note(t, Space::Shared, addr(t, o[0]), size);
    if (srcSize)
      note(t, Space::Global, addr(t, o[1]), srcSize);
    if (size > 256)
      return fail(in, "a cp.async of more than 256 bytes");
    t.open.push_back({dst, src, size, std::min(srcSize, size), t.warp, in.line});
    return true;
  }
  case Op::MbarInit: {
    int64_t at = sharedOffset(in.space, addr(t, o[0]));
    uint32_t count = (uint32_t)v(1);
    if (at < 0 || at % 8 || (uint64_t)at + 8 > shared.size())
      return fail(in, "mbarrier.init outside shared memory or not 8-byte aligned");
    if (!count || count >= (1u << 20))
      return fail(in, "mbarrier.init with an arrival count of " + std::to_string(count));
    Mbar &mb = mbars[at] = Mbar();
    mb.expected = mb.pending = count;
    return true;
  }
  case Op::MbarArrive: { // [state,] [addr] [, count]
    size_t a = o[0].kind == Operand::Addr ? 0 : 1;
    if (in.mode) { // shared::cluster: perhaps another block's
      int64_t at;
      Block *to = clusterTarget(addr(t, o[a]), at);
      Mbar *mb = to ? to->mbarrier(in, Space::Shared, (uint64_t)at) : nullptr;
      if (to && to != this && to->exited())
        return fail(in, "an arrival on block rank " + std::to_string(to->rank) +
                            " of the cluster, which has exited");
      if (!mb)
        return fail(in, to ? to->error : "an arrival on a block outside the cluster");
      if (races)
        races->release(gw(t.warp), mb->open);
      uint32_t count = o.size() > a + 1 ? (uint32_t)v(a + 1) : 1;
      if (count > mb->pending)
        return fail(in, "more arrivals on an mbarrier than its phase expects");
      mb->pending -= count;
      complete(*mb);
      return true;
    }
    Mbar *mb = mbarrier(in, in.space, addr(t, o[a]));
    if (!mb)
      return false;
    if (a)
      set(t, o[0], mb->phase << 63 | mb->pending, Ty::B64); // opaque: the phase before
    if (in.mode2) { // arrive.expect_tx: the bytes first, then one arrival
      mb->tx += (int64_t)v(a + 1);
      return arrive(t, in, *mb, 1);
    }
    return arrive(t, in, *mb, o.size() > a + 1 ? (uint32_t)v(a + 1) : 1);
  }
  case Op::CpBulkTensor: { // [dst], [map, {coords}], [mbar] [, multicast mask]
    if (o.size() != 3u + in.mode || o[1].elems.size() != in.m)
      return fail(in, "a bulk tensor copy with " + std::to_string(o[1].elems.size()) +
                          " coordinates for " + std::to_string(in.m) + " dimensions");
    const uint8_t *bytes = memory(in, Space::Generic, addr(t, o[1]), sizeof(TensorMap));
    if (!bytes)
      return false;
    // Both addresses are this block's shared offsets (shared::cluster
    // addresses of its own window); a multicast lands at them in each
    // block of the mask.
    int64_t dst, mbar;
    if (clusterTarget(addr(t, o[0]), dst) != this || clusterTarget(addr(t, o[2]), mbar) != this)
      return fail(in, "a bulk tensor copy into another block's shared memory (only multicast "
                      "copies reach other blocks)");
    std::vector<Block *> into{this};
    if (in.mode) {
      uint64_t mask = v(3) & 0xffff;
      unsigned blocks = cluster ? (unsigned)cluster->blocks.size() : 1;
      if (!mask || mask >> blocks)
        return fail(in, "a multicast mask of " + std::to_string(mask) + " for a cluster of " +
                            std::to_string(blocks) + " blocks");
      into.clear();
      for (unsigned r = 0; r < blocks; ++r)
        if (mask >> r & 1)
          into.push_back(cluster ? cluster->blocks[r] : this);
    }
    TensorMap map;
    std::memcpy(&map, bytes, sizeof(map));
    int64_t coords[5];
    for (unsigned d = 0; d < in.m; ++d)
      coords[d] = (int32_t)val(t, o[1].elems[d]);
    return bulkTensor(t, in, map, coords, (uint64_t)dst, mbar, into);
  }
  case Op::Mapa: { // d, a (this block's shared offset), rank
    int64_t offset;
    if (clusterTarget(v(1), offset) != this || offset < 0 || (uint64_t)offset >= shared.size())
      return fail(in, "mapa of an address outside the block's shared memory");
    uint64_t r = v(2), blocks = cluster ? cluster->blocks.size() : 1;
    if (r >= blocks)
      return fail(in, "mapa to block rank " + std::to_string(r) + " of a cluster of " +
                          std::to_string(blocks));
    set(t, o[0], (uint64_t)offset | (r + 1) << kClusterRankShift, in.ty);
    return true;
  }
  case Op::ClusterArrive:
    ++t.clusterArrivals;
    return true;
  case Op::CpMbarArrive: {
    // The arrival comes when the thread's copies so far complete: they
    // land now, then it arrives (.noinc: it is one of the expected ones;
    // else it was counted in advance, so the count does not move).
    Mbar *mb = mbarrier(in, in.space, addr(t, o[0]));
    if (!mb || !land(t.open))
      return false;
    for (auto &g : t.groups)
      if (!land(g))
        return false;
    return arrive(t, in, *mb, in.mode ? 1 : 0);
  }
  case Op::CpCommit:
    t.groups.push_back(std::move(t.open));
    t.open.clear();
    return true;
  case Op::CpWait: {
    size_t keep = in.mode ? 0 : (size_t)v(0);
    if (in.mode && !land(t.open))
      return false;
    while (t.groups.size() > keep) {
      if (!land(t.groups.front()))
        return false;
      t.groups.erase(t.groups.begin());
    }
    return true;
  }
  default:
    return fail(in, "unsupported instruction");
  }
}

bool Block::ldmatrix(std::vector<Thread *> &ts, const Inst &in) {
  if (ts.size() != 32 || in.ty != Ty::B16)
    return fail(in, "ldmatrix needs a whole warp and .b16");
  Thread *lane[32];
  for (Thread *t : ts)
    lane[t->lane] = t;
  for (unsigned m = 0; m < in.vec; ++m) {
    uint16_t rows[8][8];
    for (unsigned r = 0; r < 8; ++r) {
      uint8_t *p = memory(in, Space::Shared, addr(*lane[8 * m + r], in.ops[1]), 16);
      if (!p)
        return false;
      std::memcpy(rows[r], p, 16);
      note(*lane[8 * m + r], Space::Shared, addr(*lane[8 * m + r], in.ops[1]), 16);
      if (!checkRead(lane[0]->warp, in.line, (int64_t)addr(*lane[8 * m + r], in.ops[1]), 16))
        return false;
    }
    for (unsigned l = 0; l < 32; ++l) {
      uint16_t lo, hi;
      if (in.trans) {
        lo = rows[2 * (l % 4)][l / 4];
        hi = rows[2 * (l % 4) + 1][l / 4];
      } else {
        lo = rows[l / 4][2 * (l % 4)];
        hi = rows[l / 4][2 * (l % 4) + 1];
      }
      const Operand &d = in.ops[0].kind == Operand::Vec ? in.ops[0].elems[m] : in.ops[0];
      lane[l]->r[d.reg] = (uint64_t)lo | (uint64_t)hi << 16;
    }
  }
  return true;
}

// An element of an mma operand register: 32-bit (tf32) or half of one.
double element(Ty t, uint64_t reg, int half) {
  if (t == Ty::TF32)
    return bitsToF32((uint32_t)reg & 0xffffe000u); // the tensor core reads 19 bits
  return toDouble(t, (reg >> (16 * half)) & 0xffff);
}

bool Block::mma(std::vector<Thread *> &ts, const Inst &in) {
  if (ts.size() != 32 || in.ty != Ty::F32)
    return fail(in, "mma needs a whole warp and an f32 accumulator");
  Thread *lane[32];
  for (Thread *t : ts)
    lane[t->lane] = t;
  const int K = in.k;
  double A[16][16], B[16][8];
  const auto &a = in.ops[1].elems, &b = in.ops[2].elems, &c = in.ops[3].elems,
             &d = in.ops[0].elems;
  for (int l = 0; l < 32; ++l) {
    int g = l / 4, q = l % 4;
    const uint64_t *r = lane[l]->r;
    if (in.ty2 == Ty::TF32) { // m16n8k8
      A[g][q] = element(in.ty2, r[a[0].reg], 0);
      A[g + 8][q] = element(in.ty2, r[a[1].reg], 0);
      A[g][q + 4] = element(in.ty2, r[a[2].reg], 0);
      A[g + 8][q + 4] = element(in.ty2, r[a[3].reg], 0);
      B[q][g] = element(in.ty2, r[b[0].reg], 0);
      B[q + 4][g] = element(in.ty2, r[b[1].reg], 0);
    } else if (K == 16) {
      for (int h = 0; h < 2; ++h) {
        A[g][2 * q + h] = element(in.ty2, r[a[0].reg], h);
        A[g + 8][2 * q + h] = element(in.ty2, r[a[1].reg], h);
        A[g][2 * q + 8 + h] = element(in.ty2, r[a[2].reg], h);
        A[g + 8][2 * q + 8 + h] = element(in.ty2, r[a[3].reg], h);
        B[2 * q + h][g] = element(in.ty2, r[b[0].reg], h);
        B[2 * q + 8 + h][g] = element(in.ty2, r[b[1].reg], h);
      }
    } else { // f16/bf16 m16n8k8
      for (int h = 0; h < 2; ++h) {
        A[g][2 * q + h] = element(in.ty2, r[a[0].reg], h);
        A[g + 8][2 * q + h] = element(in.ty2, r[a[1].reg], h);
        B[2 * q + h][g] = element(in.ty2, r[b[0].reg], h);
      }
    }
  }
  double out[32][4];
  for (int l = 0; l < 32; ++l) {
    int g = l / 4, q = l % 4;
    for (int i = 0; i < 4; ++i) {
      int row = g + 8 * (i / 2), col = 2 * q + (i % 2);
      double s = bitsToF32((uint32_t)val(*lane[l], c[i]));
      for (int k = 0; k < K; ++k)
        s += A[row][k] * B[k][col];
      out[l][i] = s;
    }
  }
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 4; ++i)
      lane[l]->r[d[i].reg] = f32ToBits((float)out[l][i]);
  return true;
}

// wgmma's operands in shared memory, through a matrix descriptor: start
// address (bits 0-13, >> 4), leading (16-29) and stride (32-45) byte
// offsets (>> 4), base offset (49-51), swizzle (62-63: 1 is 128-byte).
// With the 128-byte swizzle the 16-byte chunk bits [4,7) of an address are
// XORed with bits [7,10), as TMA writes them.
//  K-major (8 rows of 128 bytes each, K contiguous): (mn, k) is at
//    (mn % 8) * 128 + (mn / 8) * SBO + k * size.
//  MN-major (8 k-rows of 128 bytes each, MN contiguous): (mn, k) is at
//    (mn % E) * size + (mn / E) * LBO + (k % 8) * 128 + (k / 8) * SBO,
//    E = 128 / size elements per row.
struct Descriptor {
  uint64_t start, lbo, sbo;
  bool read(uint64_t d, std::string &why) {
    start = (d & 0x3fff) << 4;
    lbo = ((d >> 16) & 0x3fff) << 4;
    sbo = ((d >> 32) & 0x3fff) << 4;
    if ((d >> 49) & 7) {
      why = "a matrix descriptor with a base offset";
      return false;
    }
    if ((d >> 62) != 1) {
      why = "a matrix descriptor without the 128-byte swizzle (mode " + std::to_string(d >> 62) +
            ")";
      return false;
    }
    return true;
  }
  uint64_t at(unsigned mn, unsigned k, unsigned size, bool mnMajor) const {
    uint64_t logical;
    if (mnMajor) {
      unsigned e = 128 / size;
      logical = start + (mn % e) * size + (mn / e) * lbo + (k % 8) * 128 + (k / 8) * sbo;
    } else {
      logical = start + (mn % 8) * 128 + (mn / 8) * sbo + k * size;
    }
    return logical ^ (((logical >> 7) & 7) << 4);
  }
};

bool Block::wgmma(std::vector<Thread *> &ts, const Inst &in) {
  if (ts.size() != 128)
    return fail(in, "wgmma needs a whole warpgroup (" + std::to_string(ts.size()) + " threads)");
  const auto &o = in.ops;
  // A from shared memory (a descriptor) or from registers (4 per thread,
  // each warp's 16 rows laid out as mma.sync's m16n8k8 / m16n8k16 A).
  bool regA = o[1].kind == Operand::Vec;
  bool tf32 = in.ty2 == Ty::TF32;
  if (o.size() != (tf32 ? 6u : regA ? 7u : 8u) || (regA && o[1].elems.size() != 4))
    return fail(in, "wgmma: unexpected operand count");
  Thread *first = ts[0];
  for (Thread *t : ts)
    if (t->linear < first->linear)
      first = t;
  Descriptor da, db;
  std::string why;
  if ((!regA && !da.read(val(*first, o[1]), why)) || !db.read(val(*first, o[2]), why))
    return fail(in, why);
  for (Thread *t : ts)
    if ((!regA && val(*t, o[1]) != val(*first, o[1])) || val(*t, o[2]) != val(*first, o[2]))
      return fail(in, "wgmma: the warpgroup's threads disagree on the descriptors");
  bool transA = !tf32 && !regA && val(*first, o[6]);
  bool transB = !tf32 && val(*first, o[regA ? 6 : 7]);
  double scaleA = (int64_t)val(*first, o[4]) < 0 ? -1 : 1;
  double scaleB = (int64_t)val(*first, o[5]) < 0 ? -1 : 1;
  unsigned M = 64, N = in.n, K = in.k, size = tf32 ? 4 : 2;
  std::vector<double> A(M * K), B(K * N);
  auto load = [&](uint64_t a, double &out) {
    uint8_t *p = memory(in, Space::Shared, a, size);
    if (!p)
      return false;
    for (unsigned w = 0; w < 4; ++w) { // the warpgroup's four warps read it
      unsigned warp = first->warp + w;
      if (!checkRead(warp, in.line, (int64_t)a, size))
        return false;
      if (!races)
        continue;
      if (wgOpen.size() <= warp)
        wgOpen.resize(warp + 1), wgGroups.resize(warp + 1);
      auto &open = wgOpen[warp];
      if (!open.empty() && open.back().offset + open.back().bytes == (int64_t)a)
        open.back().bytes += size; // contiguous: one record
      else
        open.push_back({(int64_t)a, size, in.line});
    }
    uint32_t raw = 0;
    std::memcpy(&raw, p, size);
    out = tf32 ? element(Ty::TF32, raw, 0) : toDouble(in.ty2, raw);
    return true;
  };
  if (regA) {
    for (Thread *t : ts) {
      unsigned r0 = 16 * (t->warp % 4) + t->lane / 4, q = t->lane % 4;
      const auto &a = o[1].elems;
      for (unsigned i = 0; i < 4; ++i) {
        unsigned row = r0 + 8 * (i % 2), col = (i / 2) * (K / 2);
        uint64_t raw = val(*t, a[i]);
        if (a[i].kind == Operand::Reg && t->frames.size() == 1) {
          if (t->fragGroup.size() <= (size_t)a[i].reg)
            t->fragGroup.resize(t->frames[0].regs.size(), 0);
          t->fragGroup[a[i].reg] = t->accOpen;
        }
        if (tf32)
          A[row * K + col + q] = element(Ty::TF32, raw, 0);
        else
          for (unsigned h = 0; h < 2; ++h)
            A[row * K + col + 2 * q + h] = element(in.ty2, raw, h);
      }
    }
  } else {
    for (unsigned m = 0; m < M; ++m)
      for (unsigned k = 0; k < K; ++k)
        if (!load(da.at(m, k, size, transA), A[m * K + k]))
          return false;
  }
  for (unsigned n = 0; n < N; ++n)
    for (unsigned k = 0; k < K; ++k)
      if (!load(db.at(n, k, size, transB), B[k * N + n]))
        return false;
  const auto &acc = o[0].elems;
  if (acc.size() != N / 2)
    return fail(in, "wgmma: expected " + std::to_string(N / 2) + " accumulators");
  for (Thread *t : ts) {
    unsigned w = t->warp % 4, l = t->lane;
    bool scaleD = val(*t, o[3]) & 1;
    for (unsigned i = 0; i < N / 2; ++i) {
      unsigned j = i / 4, h = (i / 2) % 2, e = i % 2;
      unsigned row = 16 * w + l / 4 + 8 * h, col = 8 * j + 2 * (l % 4) + e;
      double s = scaleD ? bitsToF32((uint32_t)t->r[acc[i].reg]) : 0.0;
      for (unsigned k = 0; k < K; ++k)
        s += scaleA * A[row * K + k] * scaleB * B[k * N + col];
      t->r[acc[i].reg] = f32ToBits((float)s);
      if (t->frames.size() == 1) { // in flight until its group is retired
        if (t->accGroup.size() <= (size_t)acc[i].reg)
          t->accGroup.resize(t->frames[0].regs.size(), 0);
        t->accGroup[acc[i].reg] = t->accOpen;
      }
    }
  }
  return true;
}

bool Block::collective(std::vector<Thread *> &ts, const Inst &in) {
  switch (in.op) {
  case Op::Ldmatrix: return ldmatrix(ts, in);
  case Op::Mma: return mma(ts, in);
  case Op::Wgmma: return wgmma(ts, in);
  case Op::Shfl: {
    // shfl.sync.mode.b32 d[|p], a, b, c, membermask
    Thread *lane[32] = {};
    for (Thread *t : ts)
      lane[t->lane] = t;
    uint64_t values[32] = {};
    for (Thread *t : ts)
      values[t->lane] = val(*t, in.ops[1]) & 0xffffffff;
    for (Thread *t : ts) {
      unsigned l = t->lane, b = val(*t, in.ops[2]) & 31, c = val(*t, in.ops[3]);
      unsigned segmask = (c >> 8) & 31, clamp = c & 31;
      unsigned maxLane = (l & segmask) | (clamp & ~segmask), minLane = l & segmask;
      int j;
      bool ok;
      switch (in.mode) {
      case 0: j = (int)l - (int)b; ok = j >= (int)maxLane; break;
      case 1: j = (int)(l + b); ok = j <= (int)maxLane; break;
      case 2: j = (int)(l ^ b); ok = j <= (int)maxLane; break;
      default: j = (int)(minLane | (b & ~segmask)); ok = j <= (int)maxLane; break;
      }
      if (!ok || j < 0 || j > 31 || !lane[j])
        j = (int)l;
      t->r[in.ops[0].reg] = values[j];
      if (in.ops[0].reg2 >= 0)
        t->r[in.ops[0].reg2] = ok;
    }
    return true;
  }
  default:
    return fail(in, "not a collective");
  }
}

bool isWarpCollective(Op op) { return op == Op::Shfl || op == Op::Ldmatrix || op == Op::Mma; }

void Block::start() {
  const unsigned n = L.block[0] * L.block[1] * L.block[2];
  threads.resize(n);
  locals.assign((size_t)n * e.localBytes + 1, 0);
  for (unsigned i = 0; i < n; ++i) {
    Thread &t = threads[i];
    // The kernel's frame: the launch's arguments, then room for its calls'.
    Frame f{&e, 0, std::vector<uint64_t>(std::max(1, e.numRegs)),
            std::vector<uint8_t>(std::max<size_t>(e.frameBytes, L.params.size())), -1};
    std::memcpy(f.params.data(), L.params.data(), L.params.size());
    t.frames.push_back(std::move(f));
    t.r = t.frames.back().regs.data();
    t.fn = &e;
    t.linear = i;
    t.tid[0] = i % L.block[0];
    t.tid[1] = (i / L.block[0]) % L.block[1];
    t.tid[2] = i / (L.block[0] * L.block[1]);
    t.lane = i % 32;
    t.warp = i / 32;
    t.local = locals.data() + (size_t)i * e.localBytes;
  }
}

bool Block::run() {
  start();
  for (;;)
    switch (step()) {
    case Step::Progress: continue;
    case Step::Done: return true;
    case Step::Failed: return false;
    case Step::Stuck: return fail(e.code[0], "deadlock: threads wait (at a barrier, an mbarrier "
                                             "or a collective) at" + stuckAt());
    }
}

std::string Block::stuckAt() const {
  std::ostringstream why;
  std::map<uint32_t, int> at;
  for (const Thread &t : threads)
    if (t.state != State::Done)
      ++at[t.fn->code[t.pc].line];
  for (auto &[line, count] : at)
    why << " line " << line << " (" << count << " threads)";
  return why.str();
}

Block::Step Block::step() {
  const unsigned n = threads.size();
  std::vector<Thread *> ts;
  // barrier.cluster: the arrivals every thread still running has made
  // (the cluster's, or this block's when it is a cluster of one).
  uint32_t least = cluster ? cluster->leastArrivals : leastArrivals();
  if (races && least > raceGeneration()) { // all arrived again: all ordered
    races->barrier();
    raceGeneration() = least;
  }
  {
    uint64_t executed = 0; // instructions run in this sweep
    for (Thread &t : threads) {
      if (t.state == State::MbarWait)
        t.state = State::Running; // tries again
      if (t.state == State::ClusterWait && least >= t.clusterArrivals) {
        t.state = State::Running;
        ++t.pc;
        ++executed;
      }
      while (t.state == State::Running) {
        const auto &code = t.fn->code;
        if (t.pc >= code.size() && t.frames.size() == 1) {
          t.state = State::Done;
          break;
        }
        const Inst &in = t.pc < code.size() ? code[t.pc] : code.back();
        if (in.pred >= 0 && (bool)(t.r[in.pred] & 1) == in.predNeg) {
          ++t.pc;
          continue;
        }
        switch (in.op) {
        case Op::Bra:
          t.pc = (uint32_t)in.ops[0].imm;
          continue;
        case Op::Call: {
          if (in.heapCall) {
            heapCall(t, in);
            ++t.pc;
            continue;
          }
          // A new frame: the arguments copied into the callee's .params.
          const Entry *fn = in.callee;
          Frame f{fn, t.pc + 1, std::vector<uint64_t>(std::max(1, fn->numRegs)),
                  std::vector<uint8_t>(fn->frameBytes), -1};
          auto &caller = t.frames.back().params;
          const auto &args = in.ops[1].elems;
          if (args.size() != fn->params.size())
            {
            fail(in, "a call with " + std::to_string(args.size()) + " arguments to " +
                                fn->name + ", which takes " + std::to_string(fn->params.size()));
            return Step::Failed;
          }
          for (size_t i = 0; i < args.size(); ++i)
            std::memcpy(f.params.data() + fn->params[i].offset, caller.data() + args[i].imm,
                        fn->params[i].size);
          if (!in.ops[0].elems.empty())
            f.retAt = in.ops[0].elems[0].imm;
          t.frames.push_back(std::move(f));
          t.r = t.frames.back().regs.data();
          t.fn = fn;
          t.pc = 0;
          continue;
        }
        case Op::Ret: case Op::Exit:
          if (in.op == Op::Ret && t.frames.size() > 1) { // back to the caller
            Frame &f = t.frames.back();
            Frame &caller = t.frames[t.frames.size() - 2];
            if (f.retAt >= 0 && f.fn->retOffset >= 0)
              std::memcpy(caller.params.data() + f.retAt, f.params.data() + f.fn->retOffset,
                          f.fn->retSize);
            t.pc = f.pc;
            t.frames.pop_back();
            t.r = t.frames.back().regs.data();
            t.fn = t.frames.back().fn;
            continue;
          }
          t.state = State::Done;
          continue;
        case Op::Bar:
          t.barId = in.ops.empty() ? 0 : (unsigned)val(t, in.ops[0]);
          t.barCount = in.ops.size() > 1 ? (unsigned)val(t, in.ops[1]) : 0;
          if (t.barId > 15 || t.barCount % 32 || t.barCount > n)
            {
            fail(in, "a barrier " + std::to_string(t.barId) + " for " +
                                std::to_string(t.barCount) + " threads");
            return Step::Failed;
          }
          t.state = State::Barrier;
          continue;
        case Op::MbarWait: { // blocks until the phase of that parity completed
          Mbar *mb = mbarrier(in, in.space, addr(t, in.ops[1]));
          if (!mb)
            return Step::Failed;
          if ((mb->phase & 1) == (val(t, in.ops[2]) & 1)) {
            t.state = State::MbarWait;
            continue;
          }
          if (races)
            races->acquire(gw(t.warp), mb->done);
          set(t, in.ops[0], 1, Ty::Pred);
          ++executed;
          ++t.pc;
          continue;
        }
        case Op::Shfl: case Op::Ldmatrix: case Op::Mma: case Op::Wgmma:
          t.state = State::Collective;
          continue;
        case Op::ClusterWait: // passes once every thread arrived as often
          if (!t.clusterArrivals) {
            fail(in, "barrier.cluster.wait before any barrier.cluster.arrive");
            return Step::Failed;
          }
          t.state = State::ClusterWait;
          continue;
        default:
          if (profile)
            profile->instruction();
          if (!exec(t, in))
            return Step::Failed;
          if (inFlightRead >= 0 || inFlightWrite >= 0 || fragWrite >= 0) {
            bool read = inFlightRead >= 0, frag = inFlightRead < 0 && inFlightWrite < 0;
            inFlightRead = inFlightWrite = fragWrite = -1;
            fail(in, std::string(read ? "reads" : "writes") +
                         (frag ? " a wgmma's A fragment" : " a wgmma accumulator") +
                         " before wgmma.wait_group retired its group (undefined on a GPU)");
            return Step::Failed;
          }
          ++executed;
          ++t.pc;
        }
      }
      if (t.state == State::Done) { // its copies land anyway
        if (!land(t.open))
          return Step::Failed;
        for (auto &g : t.groups)
          if (!land(g))
            return Step::Failed;
        t.groups.clear();
      }
    }
    bool progress = false, live = false;
    for (unsigned w = 0; w * 32 < n; ++w) {
      // Warp collectives: every live thread of the warp (of a shuffle's
      // member mask) at the same one.
      unsigned end = std::min(n, w * 32 + 32);
      for (unsigned i = w * 32; i < end; ++i) {
        Thread &t0 = threads[i];
        if (t0.state != State::Done)
          live = true;
        if (t0.state != State::Collective || !isWarpCollective(t0.fn->code[t0.pc].op))
          continue;
        const Inst &in = t0.fn->code[t0.pc];
        uint64_t members = in.op == Op::Shfl ? val(t0, in.ops[4]) & 0xffffffff : 0xffffffff;
        ts.clear();
        bool ready = true;
        for (unsigned j = w * 32; j < end && ready; ++j) {
          Thread &t = threads[j];
          if (t.state == State::Done || !((members >> t.lane) & 1))
            continue;
          if (t.state != State::Collective || t.pc != t0.pc || t.fn != t0.fn)
            ready = false;
          ts.push_back(&t);
        }
        if (!ready)
          continue;
        if (!collective(ts, in))
          return Step::Failed;
        for (Thread *t : ts)
          t->state = State::Running, ++t->pc;
        progress = true;
      }
    }
    for (unsigned g = 0; g * 128 < n; ++g) { // warpgroups
      ts.clear();
      bool ready = true;
      for (unsigned i = g * 128; i < std::min(n, g * 128 + 128); ++i) {
        Thread &t = threads[i];
        if (t.state == State::Done)
          continue;
        if (t.state != State::Collective || t.fn->code[t.pc].op != Op::Wgmma ||
            (!ts.empty() && (t.pc != ts[0]->pc || t.fn != ts[0]->fn)))
          ready = false;
        ts.push_back(&t);
      }
      if (ready && !ts.empty()) {
        if (!collective(ts, ts[0]->fn->code[ts[0]->pc]))
          return Step::Failed;
        for (Thread *t : ts)
          t->state = State::Running, ++t->pc;
        progress = true;
      }
    }
    if (progress || executed)
      return Step::Progress;
    if (!live)
      return Step::Done;
    // Barriers: a named one with a thread count completes when that many
    // threads wait at it, a whole-block one when every live thread does.
    std::map<unsigned, std::vector<Thread *>> waiting;
    unsigned alive = 0;
    for (Thread &t : threads) {
      alive += t.state != State::Done;
      if (t.state == State::Barrier)
        waiting[t.barId].push_back(&t);
    }
    for (auto &[id, ws] : waiting) {
      unsigned want = ws[0]->barCount ? ws[0]->barCount : alive;
      for (Thread *t : ws)
        if (t->barCount != ws[0]->barCount)
          {
            fail(t->fn->code[t->pc], "threads wait at barrier " + std::to_string(id) +
                                              " with different thread counts");
            return Step::Failed;
          }
      if (ws.size() > want)
        {
            fail(ws[0]->fn->code[ws[0]->pc],
                    std::to_string(ws.size()) + " threads at barrier " + std::to_string(id) +
                        ", which counts " + std::to_string(want));
            return Step::Failed;
          }
      if (ws.size() < want)
        continue;
      std::vector<unsigned> warps;
      for (Thread *t : ws) {
        t->state = State::Running, ++t->pc;
        if (warps.empty() || warps.back() != t->warp)
          warps.push_back(t->warp);
      }
      if (races) {
        if (want == alive && !cluster)
          races->barrier();
        else { // a named barrier, or the block's within a cluster
          for (unsigned &w : warps)
            w = gw(w);
          races->join(warps);
        }
      }
      progress = true;
    }
    return progress ? Step::Progress : Step::Stuck;
  }
}

} // namespace

bool runKernel(const Entry &entry, const Launch &launch, std::string &error) {
  if (launch.params.size() < entry.paramBytes) {
    error = entry.name + ": " + std::to_string(launch.params.size()) +
            " bytes of parameters, the kernel takes " + std::to_string(entry.paramBytes);
    return false;
  }
  const unsigned *cd = entry.cluster;
  const unsigned size = cd[0] * cd[1] * cd[2];
  for (unsigned d = 0; d < 3; ++d)
    if (launch.grid[d] % cd[d]) { // as the driver refuses it
      error = entry.name + ": a grid of " + std::to_string(launch.grid[0]) + "x" +
              std::to_string(launch.grid[1]) + "x" + std::to_string(launch.grid[2]) +
              " is no whole number of its " + std::to_string(cd[0]) + "x" +
              std::to_string(cd[1]) + "x" + std::to_string(cd[2]) + " clusters";
      return false;
    }
  static thread_local RaceCheck raceCheck;
  static const bool checkRaces = [] {
    const char *v = std::getenv("KILN_EMU_RACECHECK");
    return !(v && std::string(v) == "0");
  }();
  const unsigned warps = (launch.block[0] * launch.block[1] * launch.block[2] + 31) / 32;
  const uint64_t sharedBytes = entry.staticShared + launch.dynamicShared;
  // A cluster at a time, its blocks (ranks x fastest) run together.
  for (unsigned z = 0; z < launch.grid[2]; z += cd[2])
    for (unsigned y = 0; y < launch.grid[1]; y += cd[1])
      for (unsigned x = 0; x < launch.grid[0]; x += cd[0]) {
        Cluster cluster;
        std::vector<std::unique_ptr<Block>> blocks;
        if (checkRaces)
          raceCheck.beginBlock(sharedBytes * size, warps * size);
        std::unique_ptr<Profile> profile;
        for (unsigned r = 0; r < size; ++r) {
          auto b = std::make_unique<Block>(entry, launch, error);
          b->cta[0] = x + r % cd[0];
          b->cta[1] = y + r / cd[0] % cd[1];
          b->cta[2] = z + r / (cd[0] * cd[1]);
          b->rank = r;
          b->cluster = size > 1 ? &cluster : nullptr;
          b->warpBase = r * warps;
          b->sharedBase = r * sharedBytes;
          if (checkRaces)
            b->races = &raceCheck;
          if (!b->cta[0] && !b->cta[1] && !b->cta[2] && std::getenv("KILN_EMU_PROFILE")) {
            profile = std::make_unique<Profile>(
                entry, launch.block[0] * launch.block[1] * launch.block[2]);
            b->profile = profile.get();
          }
          // Shared memory starts as NaNs, not zeros: a kernel that reads
          // bytes it never wrote shows it.
          b->shared.assign(sharedBytes, 0xff);
          cluster.blocks.push_back(b.get());
          blocks.push_back(std::move(b));
        }
        if (size == 1) {
          if (!blocks[0]->run())
            return false;
        } else {
          for (auto &b : blocks)
            b->start();
          std::vector<bool> done(size, false);
          for (unsigned left = size; left;) {
            uint32_t least = UINT32_MAX;
            for (auto &b : blocks)
              least = std::min(least, b->leastArrivals());
            cluster.leastArrivals = least;
            bool moved = false;
            for (unsigned r = 0; r < size; ++r) {
              if (done[r])
                continue;
              switch (blocks[r]->step()) {
              case Block::Step::Failed: return false;
              case Block::Step::Done: done[r] = true, --left, moved = true; break;
              case Block::Step::Progress: moved = true; break;
              case Block::Step::Stuck: break;
              }
            }
            if (!moved) {
              std::string why = entry.name + ": deadlock in the cluster of block (" +
                                std::to_string(x) + ", " + std::to_string(y) + ", " +
                                std::to_string(z) + "): threads wait (at a barrier, an mbarrier, "
                                "a cluster barrier or a collective) at";
              for (unsigned r = 0; r < size; ++r)
                if (!done[r])
                  why += " [rank " + std::to_string(r) + ":" + blocks[r]->stuckAt() + "]";
              error = why;
              return false;
            }
          }
        }
        if (profile)
          profile->report(launch, stderr);
      }
  return true;
}

} // namespace kiln::emu

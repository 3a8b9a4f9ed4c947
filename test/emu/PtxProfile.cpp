//===- PtxProfile.cpp - bank conflicts and sectors of one block -----------===//

#include "PtxProfile.h"

#include <cstdlib>

#include <algorithm>
#include <set>

namespace kiln::emu {

Profile::Profile(const Entry &e, unsigned threads)
    : entry_(e), seen_((size_t)threads * std::max<size_t>(1, e.code.size()) * 2),
      threads_(threads) {}

void Profile::access(unsigned thread, uint32_t pc, bool shared, uint64_t addr, uint32_t bytes) {
  if (pc >= entry_.code.size()) // a callee's: not profiled
    return;
  uint32_t n = seen_[((size_t)thread * entry_.code.size() + pc) * 2 + shared]++;
  Request &r = requests_[{thread / 32, pc, shared, n}];
  r.shared = shared;
  r.bytes = bytes;
  r.lanes.push_back({thread % 32, addr});
}

namespace {
struct Totals {
  uint64_t requests = 0, cost = 0, ideal = 0;
};
} // namespace

void Profile::report(const Launch &l, std::FILE *out) const {
  std::map<uint32_t, Totals> shared, global; // by pc
  for (const auto &[key, r] : requests_) {
    uint32_t pc = std::get<1>(key);
    auto lanes = r.lanes;
    std::sort(lanes.begin(), lanes.end());
    if (r.shared) {
      // Threads per phase: 128 bytes of the 32 banks' 4-byte words.
      unsigned perPhase = r.bytes >= 16 ? 8 : r.bytes == 8 ? 16 : 32;
      Totals &t = shared[pc];
      ++t.requests;
      for (size_t p = 0; p < lanes.size(); p += perPhase) {
        std::map<unsigned, std::set<uint64_t>> banks; // bank -> words
        for (size_t i = p; i < std::min(lanes.size(), p + perPhase); ++i)
          for (uint64_t w = lanes[i].second / 4; w * 4 < lanes[i].second + r.bytes; ++w)
            banks[w % 32].insert(w);
        size_t worst = 1;
        for (auto &[bank, words] : banks)
          worst = std::max(worst, words.size());
        t.cost += worst;
        ++t.ideal;
      }
    } else {
      Totals &t = global[pc];
      ++t.requests;
      std::set<uint64_t> sectors, bytes;
      for (auto &[lane, a] : lanes) {
        for (uint64_t s = a / 32; s * 32 < a + r.bytes; ++s)
          sectors.insert(s);
        for (uint64_t b = a; b < a + r.bytes; ++b)
          bytes.insert(b);
      }
      t.cost += sectors.size();
      t.ideal += (bytes.size() + 31) / 32;
    }
  }
  auto sum = [](const std::map<uint32_t, Totals> &m) {
    Totals s;
    for (auto &[pc, t] : m)
      s.requests += t.requests, s.cost += t.cost, s.ideal += t.ideal;
    return s;
  };
  Totals sh = sum(shared), gl = sum(global);
  std::fprintf(out,
               "ptx-emu profile: %s, grid %ux%ux%u of %u threads; block 0: %.0f instructions "
               "a thread; shared: %llu requests, %llu wavefronts (conflict-free %llu, %.2fx); "
               "global: %llu requests, %llu sectors (%llu needed, %.2fx)\n",
               entry_.name.c_str(), l.grid[0], l.grid[1], l.grid[2], threads_,
               (double)instructions_ / threads_, (unsigned long long)sh.requests,
               (unsigned long long)sh.cost, (unsigned long long)sh.ideal,
               sh.ideal ? (double)sh.cost / sh.ideal : 1.0, (unsigned long long)gl.requests,
               (unsigned long long)gl.cost, (unsigned long long)gl.ideal,
               gl.ideal ? (double)gl.cost / gl.ideal : 1.0);
  // The instructions that waste most, by PTX line: three of each kind
  // (KILN_EMU_PROFILE=<n> above 1: n).
  const char *lines = std::getenv("KILN_EMU_PROFILE");
  const size_t show = lines && std::atoi(lines) > 1 ? (size_t)std::atoi(lines) : 3;
  for (auto *m : {&shared, &global}) {
    std::vector<std::tuple<uint64_t, uint32_t, Totals>> worst;
    for (auto &[pc, t] : *m)
      if (t.cost > t.ideal)
        worst.push_back({t.cost - t.ideal, pc, t});
    std::sort(worst.begin(), worst.end(),
              [](const auto &a, const auto &b) { return std::get<0>(a) > std::get<0>(b); });
    const char *kind = m == &shared ? "shared" : "global";
    for (size_t i = 0; i < std::min(show, worst.size()); ++i) {
      auto &[excess, pc, t] = worst[i];
      std::fprintf(out, "  %s at PTX line %d: %.2f %s a request where %.2f would do (%llu requests)\n",
                   kind, entry_.code[pc].line, (double)t.cost / t.requests,
                   kind[0] == 's' ? "wavefronts" : "sectors", (double)t.ideal / t.requests,
                   (unsigned long long)t.requests);
    }
  }
}

} // namespace kiln::emu

//===- DimRange.h - the range of a dynamic dimension ------------*- C++ -*-===//
//
// `--dim SYMBOL=MIN..MAX` and `--shape NAME=1..32x128`: a dimension is either
// pinned (MIN == MAX) or a range the artifact serves. Header-only: the
// command line, the importer and the runtime's signature share it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SUPPORT_DIMRANGE_H
#define KILN_SUPPORT_DIMRANGE_H

#include <cstdint>
#include <cstdlib>
#include <string>

namespace kiln {

struct DimRange {
  /// No declared maximum: the artifact serves any size the memory allows.
  static constexpr int64_t kUnbounded = -1;
  /// The largest dimension a flag may name (2^40).
  static constexpr int64_t kLimit = int64_t(1) << 40;
  int64_t min = 1;
  int64_t max = kUnbounded;

  bool pinned() const { return min == max; }
  bool contains(int64_t d) const { return d >= min && (max == kUnbounded || d <= max); }
  bool operator==(const DimRange &o) const { return min == o.min && max == o.max; }
  bool empty() const { return max != kUnbounded && max < min; }

  /// The sizes both ranges allow (empty() when none).
  DimRange intersect(const DimRange &o) const {
    int64_t hi = max == kUnbounded     ? o.max
                 : o.max == kUnbounded ? max
                                       : (max < o.max ? max : o.max);
    return DimRange{min > o.min ? min : o.min, hi};
  }

  /// "1..32", "8.." (no maximum) or "128".
  std::string text() const {
    if (pinned())
      return std::to_string(min);
    return std::to_string(min) + ".." + (max == kUnbounded ? "" : std::to_string(max));
  }

  /// Parses "N", "MIN..MAX" or "MIN.." (no maximum); false when malformed,
  /// negative, empty (MIN > MAX) or above kLimit.
  static bool parse(const std::string &s, DimRange &out) {
    auto number = [](const std::string &t, int64_t &v) {
      if (t.empty() || t.size() > 15 || t.find_first_not_of("0123456789") != std::string::npos)
        return false;
      v = std::strtoll(t.c_str(), nullptr, 10);
      return v <= kLimit;
    };
    auto dots = s.find("..");
    if (dots == std::string::npos) {
      int64_t v;
      if (!number(s, v))
        return false;
      out = DimRange{v, v};
      return true;
    }
    DimRange r;
    if (!number(s.substr(0, dots), r.min))
      return false;
    std::string hi = s.substr(dots + 2);
    if (!hi.empty() && (!number(hi, r.max) || r.max < r.min))
      return false;
    out = r;
    return true;
  }
};

} // namespace kiln

#endif // KILN_SUPPORT_DIMRANGE_H

//===- PtxAlu.cpp - PTX's arithmetic on one element -----------------------===//

#include "PtxAlu.h"
#include "PtxNumeric.h"

#include <algorithm>
#include <climits>
#include <cmath>

namespace kiln::emu {

bool isFloat(Ty t) {
  return t == Ty::F16 || t == Ty::BF16 || t == Ty::F32 || t == Ty::F64 || t == Ty::TF32 ||
         t == Ty::F16x2 || t == Ty::BF16x2;
}
bool isSigned(Ty t) { return t == Ty::S8 || t == Ty::S16 || t == Ty::S32 || t == Ty::S64; }
int bitsOf(Ty t) {
  switch (t) {
  case Ty::B8: case Ty::U8: case Ty::S8: return 8;
  case Ty::B16: case Ty::U16: case Ty::S16: case Ty::F16: case Ty::BF16: return 16;
  case Ty::B64: case Ty::U64: case Ty::S64: case Ty::F64: return 64;
  case Ty::Pred: return 1;
  default: return 32;
  }
}
uint64_t mask(int bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }
int64_t sext(uint64_t v, int bits) {
  if (bits >= 64)
    return (int64_t)v;
  uint64_t m = 1ull << (bits - 1);
  v &= mask(bits);
  return (int64_t)((v ^ m) - m);
}

double toDouble(Ty t, uint64_t v) {
  switch (t) {
  case Ty::F16: return halfToF32((uint16_t)v);
  case Ty::BF16: return bf16ToF32((uint16_t)v);
  case Ty::F64: return bitsToF64(v);
  default: return bitsToF32((uint32_t)v);
  }
}
uint64_t fromDouble(Ty t, double d, int rounding) {
  switch (t) {
  case Ty::F16: return f32ToHalf((float)d);
  case Ty::BF16: return f32ToBf16((float)d);
  case Ty::F64: return f64ToBits(d);
  default: return f32ToBits(roundF32(d, rounding));
  }
}

// Integer and float arithmetic on one element of type `ty`.
bool binary(Op op, Ty ty, uint64_t a, uint64_t b, uint64_t &d, int mode, int rounding) {
  int bits = bitsOf(ty);
  if (isFloat(ty)) {
    double x = toDouble(ty, a), y = toDouble(ty, b), r;
    switch (op) {
    case Op::Add: r = ty == Ty::F32 ? (double)((float)x + (float)y) : x + y; break;
    case Op::Sub: r = ty == Ty::F32 ? (double)((float)x - (float)y) : x - y; break;
    case Op::Mul: r = ty == Ty::F32 ? (double)((float)x * (float)y) : x * y; break;
    case Op::Div: r = ty == Ty::F32 ? (double)((float)x / (float)y) : x / y; break;
    case Op::Min: case Op::Max: {
      if (std::isnan(x) || std::isnan(y)) {
        r = mode == 1 ? NAN : std::isnan(x) ? y : x;
      } else if (x == 0 && y == 0) { // -0 < +0
        bool xn = std::signbit(x);
        r = (op == Op::Min) == xn ? x : y;
      } else {
        r = op == Op::Min ? std::min(x, y) : std::max(x, y);
      }
      break;
    }
    case Op::Copysign: r = std::copysign(y, x); break;
    default: return false;
    }
    if (rounding > 1 && ty == Ty::F32) { // directed: from the exact double
      switch (op) {
      case Op::Add: r = x + y; break;
      case Op::Sub: r = x - y; break;
      case Op::Mul: r = x * y; break;
      case Op::Div: r = x / y; break;
      default: break;
      }
    }
    d = fromDouble(ty, r, rounding);
    return true;
  }
  bool s = isSigned(ty);
  int64_t sa = sext(a, bits), sb = sext(b, bits);
  uint64_t ua = a & mask(bits), ub = b & mask(bits);
  switch (op) {
  case Op::Add: d = ua + ub; break;
  case Op::Sub: d = ua - ub; break;
  case Op::Mul:
    if (mode == 0) {
      d = ua * ub;
    } else if (mode == 1) { // hi
      if (s)
        d = (uint64_t)(((__int128)sa * sb) >> bits);
      else
        d = (uint64_t)(((unsigned __int128)ua * ub) >> bits);
    } else { // wide: handled by the caller's width
      d = s ? (uint64_t)(sa * sb) : ua * ub;
    }
    break;
  case Op::Div:
    if (ub == 0)
      d = ~0ull;
    else
      d = s ? (uint64_t)(sb == -1 ? -sa : sa / sb) : ua / ub;
    break;
  case Op::Rem:
    if (ub == 0)
      d = ua;
    else
      d = s ? (uint64_t)(sb == -1 ? 0 : sa % sb) : ua % ub;
    break;
  case Op::Min: d = s ? (uint64_t)std::min(sa, sb) : std::min(ua, ub); break;
  case Op::Max: d = s ? (uint64_t)std::max(sa, sb) : std::max(ua, ub); break;
  case Op::And: d = a & b; break;
  case Op::Or: d = a | b; break;
  case Op::Xor: d = a ^ b; break;
  case Op::Shl: d = ub >= (uint64_t)bits ? 0 : ua << (b & 0xffffffff); break;
  case Op::Shr: {
    uint64_t n = b & 0xffffffff;
    if (s)
      d = (uint64_t)(n >= (uint64_t)bits ? (sa < 0 ? -1 : 0) : sa >> n);
    else
      d = n >= (uint64_t)bits ? 0 : ua >> n;
    break;
  }
  default: return false;
  }
  return true;
}

bool compare(int cmp, Ty ty, uint64_t a, uint64_t b) {
  if (isFloat(ty)) {
    double x = toDouble(ty, a), y = toDouble(ty, b);
    bool nan = std::isnan(x) || std::isnan(y);
    switch (cmp) {
    case 1: return !nan && x == y;
    case 2: return !nan && x != y;
    case 3: return !nan && x < y;
    case 4: return !nan && x <= y;
    case 5: return !nan && x > y;
    case 6: return !nan && x >= y;
    case 7: return nan || x == y;
    case 8: return nan || x != y;
    case 9: return nan || x < y;
    case 10: return nan || x <= y;
    case 11: return nan || x > y;
    case 12: return nan || x >= y;
    case 13: return !nan;
    case 14: return nan;
    }
    return false;
  }
  int bits = bitsOf(ty);
  if (isSigned(ty)) {
    int64_t x = sext(a, bits), y = sext(b, bits);
    switch (cmp) {
    case 1: return x == y; case 2: return x != y; case 3: return x < y;
    case 4: return x <= y; case 5: return x > y;  case 6: return x >= y;
    }
    return false;
  }
  uint64_t x = a & mask(bits), y = b & mask(bits);
  switch (cmp) {
  case 1: return x == y; case 2: return x != y; case 3: return x < y;
  case 4: return x <= y; case 5: return x > y;  case 6: return x >= y;
  }
  return false;
}

/// cvt: `v` of type `from` to type `to`.
uint64_t convert(Ty to, Ty from, uint64_t v, int rounding, bool sat) {
  int fb = bitsOf(from), tb = bitsOf(to);
  if (to == Ty::TF32)
    return f32ToTf32(bitsToF32((uint32_t)v));
  if (!isFloat(from) && !isFloat(to)) {
    int64_t x = isSigned(from) ? sext(v, fb) : (int64_t)(v & mask(fb));
    if (sat) {
      bool neg = isSigned(from) && x < 0;
      if (isSigned(to)) {
        int64_t lo = -(int64_t)(1ull << (tb - 1)), hi = (int64_t)((1ull << (tb - 1)) - 1);
        if (!isSigned(from) && (uint64_t)x > (uint64_t)hi)
          x = hi;
        else
          x = std::clamp(x, lo, hi);
      } else {
        if (neg)
          x = 0;
        else if (tb < 64 && (uint64_t)x > mask(tb))
          x = (int64_t)mask(tb);
      }
    }
    return isSigned(to) && tb < 64 ? (uint64_t)x & mask(tb) : (uint64_t)x & mask(tb);
  }
  if (!isFloat(from)) { // int -> float
    double d;
    if (isSigned(from))
      d = (double)sext(v, fb);
    else
      d = (double)(v & mask(fb));
    if (to == Ty::F32 && fb == 64) { // a 64-bit integer rounds once, to f32
      float f = isSigned(from) ? (float)sext(v, 64) : (float)v;
      return f32ToBits(f);
    }
    return fromDouble(to, d, rounding & 7);
  }
  double x = toDouble(from, v);
  if (!isFloat(to)) { // float -> int: rounds (.rzi default), saturates
    if (std::isnan(x))
      return 0;
    double r;
    switch (rounding) {
    case 9: r = std::nearbyint(x); break;
    case 11: r = std::floor(x); break;
    case 12: r = std::ceil(x); break;
    default: r = std::trunc(x); break;
    }
    if (isSigned(to)) {
      double lo = -std::ldexp(1.0, tb - 1), hi = std::ldexp(1.0, tb - 1) - 1;
      r = std::clamp(r, lo, hi);
      if (tb == 64 && r >= 9.2233720368547758e18)
        return (uint64_t)LLONG_MAX;
      return (uint64_t)(int64_t)r & mask(tb);
    }
    r = std::clamp(r, 0.0, std::ldexp(1.0, tb) - 1);
    if (tb == 64 && r >= 1.8446744073709552e19)
      return ~0ull;
    return (uint64_t)r & mask(tb);
  }
  // float -> float
  if (rounding >= 9) { // to an integral value, same type
    switch (rounding) {
    case 9: x = std::nearbyint(x); break;
    case 10: x = std::trunc(x); break;
    case 11: x = std::floor(x); break;
    case 12: x = std::ceil(x); break;
    }
  }
  if (sat && !std::isnan(x))
    x = std::clamp(x, 0.0, 1.0);
  else if (sat)
    x = 0;
  if (to == Ty::F32 && from == Ty::F64)
    return f32ToBits(roundF32(x, rounding > 0 && rounding < 5 ? rounding : 1));
  return fromDouble(to, x);
}

} // namespace kiln::emu

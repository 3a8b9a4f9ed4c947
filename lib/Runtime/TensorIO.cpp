//===- TensorIO.cpp - .npy and ONNX TensorProto readers and writers -------===//

#include "kiln/tensor_io.hpp"
#include "Signature.h"
#include "kiln/Support/FormatBytes.h"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace kiln {

std::string formatBytes(uint64_t bytes) { return formatByteCount(bytes); }

size_t HostTensor::numElements() const {
  size_t n = 1;
  for (int64_t d : shape)
    n *= (size_t)d;
  return n;
}

kiln_tensor_t HostTensor::view(bool withName) {
  return {withName ? name.c_str() : nullptr, dtype, (int32_t)shape.size(), shape.data(),
          data.data(), data.size()};
}

namespace {

bool npyDescr(const std::string &descr, kiln_dtype_t &out) {
  static const std::pair<const char *, kiln_dtype_t> table[] = {
      {"<f4", KILN_DTYPE_F32}, {"<f8", KILN_DTYPE_F64}, {"<f2", KILN_DTYPE_F16},
      {"|i1", KILN_DTYPE_I8},  {"<i2", KILN_DTYPE_I16}, {"<i4", KILN_DTYPE_I32},
      {"<i8", KILN_DTYPE_I64}, {"|u1", KILN_DTYPE_U8},  {"|b1", KILN_DTYPE_BOOL},
      {"<u2", KILN_DTYPE_U16}, {"<u4", KILN_DTYPE_U32}, {"<u8", KILN_DTYPE_U64},
      // numpy has no bfloat16: Kiln (and ml_dtypes) write 2-byte voids.
      {"<V2", KILN_DTYPE_BF16}, {"|V2", KILN_DTYPE_BF16}};
  for (auto &[d, t] : table)
    if (descr == d) {
      out = t;
      return true;
    }
  return false;
}

const char *npyDescrOf(kiln_dtype_t t) {
  switch (t) {
  case KILN_DTYPE_F32: return "<f4";
  case KILN_DTYPE_F64: return "<f8";
  case KILN_DTYPE_F16: return "<f2";
  case KILN_DTYPE_BF16: return "<V2"; // numpy has no bfloat16
  case KILN_DTYPE_I8: return "|i1";
  case KILN_DTYPE_I16: return "<i2";
  case KILN_DTYPE_I32: return "<i4";
  case KILN_DTYPE_I64: return "<i8";
  case KILN_DTYPE_U8: return "|u1";
  case KILN_DTYPE_BOOL: return "|b1";
  case KILN_DTYPE_U16: return "<u2";
  case KILN_DTYPE_U32: return "<u4";
  case KILN_DTYPE_U64: return "<u8";
  }
  return "|u1";
}

/// The value of `key` in a numpy header dict: `'key': VALUE,`
bool headerField(const std::string &h, const std::string &key, std::string &out) {
  auto k = h.find("'" + key + "'");
  if (k == std::string::npos)
    return false;
  auto colon = h.find(':', k);
  if (colon == std::string::npos)
    return false;
  size_t i = colon + 1;
  while (i < h.size() && h[i] == ' ')
    ++i;
  if (i >= h.size())
    return false;
  size_t end;
  if (h[i] == '(') {
    end = h.find(')', i);
    if (end == std::string::npos)
      return false;
    ++end;
  } else if (h[i] == '\'') {
    end = h.find('\'', i + 1);
    if (end == std::string::npos)
      return false;
    ++end;
  } else {
    end = h.find_first_of(",}", i);
    if (end == std::string::npos)
      return false;
  }
  out = h.substr(i, end - i);
  return true;
}

bool setSize(HostTensor &t, std::string &error) {
  size_t n = 1;
  for (int64_t d : t.shape) {
    if (d < 0 || (d > 0 && n > (size_t(1) << 40) / (size_t)d)) {
      error = "tensor dimensions are negative or too large";
      return false;
    }
    n *= (size_t)d;
  }
  return true;
}

// Protobuf wire format ----------------------------------------------------
struct Wire {
  const uint8_t *p, *end;
  bool varint(uint64_t &v) {
    v = 0;
    for (int shift = 0; shift < 64 && p < end; shift += 7) {
      uint8_t b = *p++;
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80))
        return true;
    }
    return false;
  }
  bool bytes(const uint8_t *&data, size_t &len) {
    uint64_t n;
    if (!varint(n) || n > (uint64_t)(end - p))
      return false;
    data = p;
    len = n;
    p += n;
    return true;
  }
  bool skip(int wireType) {
    uint64_t v;
    const uint8_t *d;
    size_t n;
    switch (wireType) {
    case 0: return varint(v);
    case 1: if (end - p < 8) return false; p += 8; return true;
    case 2: return bytes(d, n);
    case 5: if (end - p < 4) return false; p += 4; return true;
    default: return false;
    }
  }
};

bool onnxDtype(uint64_t t, kiln_dtype_t &out) {
  switch (t) {
  case 1: out = KILN_DTYPE_F32; return true;
  case 2: out = KILN_DTYPE_U8; return true;
  case 4: out = KILN_DTYPE_U16; return true;
  case 12: out = KILN_DTYPE_U32; return true;
  case 13: out = KILN_DTYPE_U64; return true;
  case 3: out = KILN_DTYPE_I8; return true;
  case 5: out = KILN_DTYPE_I16; return true;
  case 6: out = KILN_DTYPE_I32; return true;
  case 7: out = KILN_DTYPE_I64; return true;
  case 9: out = KILN_DTYPE_BOOL; return true;
  case 10: out = KILN_DTYPE_F16; return true;
  case 11: out = KILN_DTYPE_F64; return true;
  case 16: out = KILN_DTYPE_BF16; return true;
  default: return false;
  }
}

} // namespace

bool parseNpy(const std::string &bytes, HostTensor &out, std::string &error) {
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) {
    error = "not a .npy file (bad magic)";
    return false;
  }
  uint8_t major = bytes[6];
  size_t headerLen, start;
  if (major == 1) {
    headerLen = (uint8_t)bytes[8] | ((uint8_t)bytes[9] << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) {
      error = "truncated .npy header";
      return false;
    }
    headerLen = 0;
    for (int i = 0; i < 4; ++i)
      headerLen |= (size_t)(uint8_t)bytes[8 + i] << (8 * i);
    start = 12;
  } else {
    error = "unsupported .npy version " + std::to_string(major);
    return false;
  }
  if (start + headerLen > bytes.size()) {
    error = "truncated .npy header";
    return false;
  }
  std::string h = bytes.substr(start, headerLen), descr, order, shape;
  if (!headerField(h, "descr", descr) || !headerField(h, "fortran_order", order) ||
      !headerField(h, "shape", shape)) {
    error = "malformed .npy header";
    return false;
  }
  if (descr.size() < 2 || !npyDescr(descr.substr(1, descr.size() - 2), out.dtype)) {
    error = "unsupported .npy dtype " + descr;
    return false;
  }
  if (order.rfind("False", 0) != 0) {
    error = "Fortran-order .npy files are not supported";
    return false;
  }
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')') {
    error = "malformed .npy shape '" + shape + "' (expected a tuple)";
    return false;
  }
  out.shape.clear();
  std::string dims = shape.substr(1, shape.size() - 2);
  std::stringstream ss(dims);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t a = item.find_first_not_of(' ');
    if (a == std::string::npos)
      continue;
    char *endp;
    long long d = std::strtoll(item.c_str() + a, &endp, 10);
    if (endp == item.c_str() + a) {
      error = "malformed .npy shape " + shape;
      return false;
    }
    out.shape.push_back(d);
  }
  if (!setSize(out, error))
    return false;
  size_t need = out.numElements() * kiln_dtype_size(out.dtype);
  size_t have = bytes.size() - start - headerLen;
  if (have != need) {
    error = ".npy data has " + std::to_string(have) + " bytes, its header needs " +
            std::to_string(need);
    return false;
  }
  out.data.assign(bytes.begin() + start + headerLen, bytes.end());
  return true;
}

std::string toNpy(const HostTensor &t) {
  std::string shape = "(";
  for (size_t i = 0; i < t.shape.size(); ++i)
    shape += std::to_string(t.shape[i]) + (t.shape.size() == 1 ? "," : (i + 1 < t.shape.size() ? ", " : ""));
  shape += ")";
  std::string header = "{'descr': '" + std::string(npyDescrOf(t.dtype)) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += (char)(header.size() & 0xff);
  out += (char)(header.size() >> 8);
  out += header;
  out.append((const char *)t.data.data(), t.data.size());
  return out;
}

bool parseTensorProto(const std::string &bytes, HostTensor &out, std::string &error) {
  Wire w{(const uint8_t *)bytes.data(), (const uint8_t *)bytes.data() + bytes.size()};
  uint64_t dataType = 0;
  std::vector<uint8_t> raw;
  // float_data / double_data values, or int32/int64/uint64_data bits (which
  // must not pass through a double: int64 ids above 2^53 would change).
  struct Typed {
    bool isInt;
    int64_t i;
    double d;
  };
  std::vector<Typed> typed;
  bool hasRaw = false;
  out.shape.clear();
  while (w.p < w.end) {
    uint64_t key;
    if (!w.varint(key))
      goto malformed;
    int field = key >> 3, wt = key & 7;
    auto packedOrSingle = [&](auto readOne) {
      if (wt == 2) {
        const uint8_t *d;
        size_t n;
        if (!w.bytes(d, n))
          return false;
        Wire sub{d, d + n};
        while (sub.p < sub.end)
          if (!readOne(sub))
            return false;
        return true;
      }
      return readOne(w);
    };
    auto varintValue = [&](Wire &s, bool sign32) {
      uint64_t v;
      if (!s.varint(v))
        return false;
      typed.push_back({true, sign32 ? (int64_t)(int32_t)v : (int64_t)v, 0});
      return true;
    };
    if (field == 1) { // dims
      if (!packedOrSingle([&](Wire &s) {
            uint64_t v;
            if (!s.varint(v))
              return false;
            out.shape.push_back((int64_t)v);
            return true;
          }))
        goto malformed;
    } else if (field == 2 && wt == 0) {
      if (!w.varint(dataType))
        goto malformed;
    } else if (field == 4) { // float_data
      if (!packedOrSingle([&](Wire &s) {
            if (s.end - s.p < 4)
              return false;
            float f;
            std::memcpy(&f, s.p, 4);
            s.p += 4;
            typed.push_back({false, 0, f});
            return true;
          }))
        goto malformed;
    } else if (field == 5 || field == 7 || field == 11) { // int32, int64, uint64_data
      bool is32 = field == 5;
      if (!packedOrSingle([&](Wire &s) { return varintValue(s, is32); }))
        goto malformed;
    } else if (field == 8 && wt == 2) { // name
      const uint8_t *d;
      size_t n;
      if (!w.bytes(d, n))
        goto malformed;
      out.name.assign((const char *)d, n);
    } else if (field == 9 && wt == 2) { // raw_data
      const uint8_t *d;
      size_t n;
      if (!w.bytes(d, n))
        goto malformed;
      raw.assign(d, d + n);
      hasRaw = true;
    } else if (field == 10) { // double_data
      if (!packedOrSingle([&](Wire &s) {
            if (s.end - s.p < 8)
              return false;
            double v;
            std::memcpy(&v, s.p, 8);
            s.p += 8;
            typed.push_back({false, 0, v});
            return true;
          }))
        goto malformed;
    } else if (!w.skip(wt)) {
      goto malformed;
    }
  }
  if (!onnxDtype(dataType, out.dtype)) {
    error = "TensorProto has unsupported data_type " + std::to_string(dataType);
    return false;
  }
  if (!setSize(out, error))
    return false;
  {
    size_t n = out.numElements(), es = kiln_dtype_size(out.dtype);
    if (hasRaw) {
      if (raw.size() != n * es) {
        error = "TensorProto raw_data has " + std::to_string(raw.size()) +
                " bytes, its dims need " + std::to_string(n * es);
        return false;
      }
      out.data = std::move(raw);
      return true;
    }
    if (typed.size() != n) {
      error = "TensorProto holds " + std::to_string(typed.size()) + " values, its dims need " +
              std::to_string(n);
      return false;
    }
    out.data.resize(n * es);
    bool isFloat = out.dtype == KILN_DTYPE_F32 || out.dtype == KILN_DTYPE_F64;
    for (size_t i = 0; i < n; ++i) {
      uint8_t *dst = out.data.data() + i * es;
      const Typed &v = typed[i];
      if (!v.isInt && !isFloat) {
        error = std::string("TensorProto of type ") + kiln_dtype_name(out.dtype) +
                " holds floating-point values (float_data or double_data)";
        return false;
      }
      if (out.dtype == KILN_DTYPE_F32) {
        // Doubles beyond float's range round to infinity, as IEEE says.
        float f = v.isInt                                     ? (float)v.i
                  : std::fabs(v.d) > FLT_MAX && !std::isinf(v.d) && !std::isnan(v.d)
                      ? std::copysign(INFINITY, (float)(v.d > 0 ? 1 : -1))
                      : (float)v.d;
        std::memcpy(dst, &f, 4);
      } else if (out.dtype == KILN_DTYPE_F64) {
        double d = v.isInt ? (double)v.i : v.d;
        std::memcpy(dst, &d, 8);
      } else {
        // Integers, bools and 16-bit floats: the low bytes of the value
        // (ONNX keeps float16 bits in int32_data).
        std::memcpy(dst, &v.i, es);
      }
    }
    return true;
  }
malformed:
  error = "malformed TensorProto (truncated or not a protobuf)";
  return false;
}

bool readTensorFile(const std::string &path, HostTensor &out, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot open file";
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string bytes = ss.str();
  bool npy = bytes.compare(0, 6, "\x93NUMPY") == 0;
  std::string why;
  bool ok = npy ? parseNpy(bytes, out, why) : parseTensorProto(bytes, out, why);
  if (!ok)
    error = path + ": " + why;
  return ok;
}

bool writeNpyFile(const std::string &path, const HostTensor &t, std::string &error) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    std::string bytes = toNpy(t);
    // Closing flushes: a full disk shows up there, not at write().
    if (!out || !out.write(bytes.data(), bytes.size()) || (out.close(), out.fail())) {
      error = path + ": cannot write file";
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = path + ": cannot move file into place";
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

double elementAsDouble(const HostTensor &t, size_t i) {
  const uint8_t *p = t.data.data() + i * kiln_dtype_size(t.dtype);
  switch (t.dtype) {
  case KILN_DTYPE_F32: { float v; std::memcpy(&v, p, 4); return v; }
  case KILN_DTYPE_F64: { double v; std::memcpy(&v, p, 8); return v; }
  case KILN_DTYPE_I64: { int64_t v; std::memcpy(&v, p, 8); return (double)v; }
  case KILN_DTYPE_I32: { int32_t v; std::memcpy(&v, p, 4); return v; }
  case KILN_DTYPE_I16: { int16_t v; std::memcpy(&v, p, 2); return v; }
  case KILN_DTYPE_I8: return (int8_t)*p;
  case KILN_DTYPE_U8: case KILN_DTYPE_BOOL: return *p;
  case KILN_DTYPE_U16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
  case KILN_DTYPE_U32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
  case KILN_DTYPE_U64: { uint64_t v; std::memcpy(&v, p, 8); return (double)v; }
  case KILN_DTYPE_F16: {
    uint16_t h; std::memcpy(&h, p, 2);
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY)
                                                     : std::ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
  }
  case KILN_DTYPE_BF16: {
    uint16_t h; std::memcpy(&h, p, 2);
    uint32_t bits = (uint32_t)h << 16; float f; std::memcpy(&f, &bits, 4); return f;
  }
  }
  return 0;
}

HostTensor randomTensor(const kiln_tensor_desc_t &d, uint64_t seed) {
  HostTensor t;
  t.name = d.name;
  t.dtype = d.dtype;
  t.shape.assign(d.shape, d.shape + d.rank);
  t.data.assign(d.size_bytes, 0);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&] { // xorshift64*
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    return x * 0x2545F4914F6CDD1Dull;
  };
  size_t n = t.numElements();
  for (size_t i = 0; i < n; ++i) {
    float f = (float)((next() >> 40) * (1.0 / (1ull << 24)) * 2.0 - 1.0);
    uint8_t *p = t.data.data() + i * kiln_dtype_size(d.dtype);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    switch (d.dtype) {
    case KILN_DTYPE_F32: std::memcpy(p, &f, 4); break;
    case KILN_DTYPE_F64: { double v = f; std::memcpy(p, &v, 8); break; }
    case KILN_DTYPE_BF16: { uint16_t h = bits >> 16; std::memcpy(p, &h, 2); break; }
    case KILN_DTYPE_F16: { // |f| < 1: exponent and 10 mantissa bits re-biased
      int e = (int)((bits >> 23) & 0xff) - 127 + 15;
      uint16_t h = e <= 0 ? 0 : (uint16_t)((bits >> 16 & 0x8000) | (e << 10) | (bits >> 13 & 0x3ff));
      std::memcpy(p, &h, 2);
      break;
    }
    case KILN_DTYPE_BOOL: *p = next() & 1; break;
    default: break; // integers stay zero
    }
  }
  return t;
}

} // namespace kiln

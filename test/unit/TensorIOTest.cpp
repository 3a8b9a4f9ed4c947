//===- TensorIOTest.cpp - .npy and TensorProto readers and writers --------===//

#include "kiln/tensor_io.hpp"

#include <catch2/catch.hpp>

#include <cstring>

using kiln::HostTensor;

namespace {
HostTensor makeF32(std::vector<int64_t> shape, std::vector<float> values) {
  HostTensor t;
  t.dtype = KILN_DTYPE_F32;
  t.shape = std::move(shape);
  t.data.resize(values.size() * 4);
  std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

/// A hand-encoded TensorProto: dims [2, 2] (packed), data_type FLOAT,
/// raw_data of four floats.
std::string tensorProtoBytes() {
  std::string b;
  b += "\x0a\x02\x02\x02";         // field 1 (dims), packed: 2, 2
  b += "\x10\x01";                 // field 2 (data_type) = 1 (FLOAT)
  b += "\x42\x01x";                // field 8 (name) = "x"
  b += "\x4a\x10";                 // field 9 (raw_data), 16 bytes
  float v[4] = {1, 2, 3, 4};
  b.append(reinterpret_cast<const char *>(v), 16);
  return b;
}
} // namespace

TEST_CASE("npy round trip keeps dtype, shape and bytes", "[tensor_io]") {
  HostTensor t = makeF32({2, 3}, {1, 2, 3, 4, 5, 6});
  std::string bytes = kiln::toNpy(t);
  REQUIRE((10 + (unsigned char)bytes[8]) % 64 == 0); // header padded to 64
  HostTensor back;
  std::string error;
  REQUIRE(kiln::parseNpy(bytes, back, error));
  CHECK(back.dtype == KILN_DTYPE_F32);
  CHECK(back.shape == std::vector<int64_t>{2, 3});
  CHECK(back.data == t.data);
}

TEST_CASE("npy handles rank 0 and rank 1 shapes", "[tensor_io]") {
  for (auto shape : {std::vector<int64_t>{}, std::vector<int64_t>{5}}) {
    HostTensor t = makeF32(shape, std::vector<float>(shape.empty() ? 1 : 5, 1.5f));
    HostTensor back;
    std::string error;
    REQUIRE(kiln::parseNpy(kiln::toNpy(t), back, error));
    CHECK(back.shape == shape);
    CHECK(kiln::elementAsDouble(back, 0) == 1.5);
  }
}

TEST_CASE("malformed npy files are errors, not crashes", "[tensor_io]") {
  HostTensor t = makeF32({4}, {1, 2, 3, 4});
  std::string good = kiln::toNpy(t), error;
  HostTensor out;
  CHECK_FALSE(kiln::parseNpy("", out, error));
  CHECK_FALSE(kiln::parseNpy("\x93NUMPY", out, error));
  CHECK_FALSE(kiln::parseNpy(good.substr(0, good.size() - 1), out, error));
  CHECK(error.find("header needs 16") != std::string::npos);
  CHECK_FALSE(kiln::parseNpy(good.substr(0, 20), out, error));
  std::string fortran = good;
  auto pos = fortran.find("False");
  fortran.replace(pos, 5, "True ");
  CHECK_FALSE(kiln::parseNpy(fortran, out, error));
  std::string badType = good;
  badType.replace(badType.find("<f4"), 3, "<c8");
  CHECK_FALSE(kiln::parseNpy(badType, out, error));
  CHECK(error.find("unsupported .npy dtype") != std::string::npos);
}

TEST_CASE("TensorProto raw_data is read", "[tensor_io]") {
  HostTensor t;
  std::string error;
  REQUIRE(kiln::parseTensorProto(tensorProtoBytes(), t, error));
  CHECK(t.name == "x");
  CHECK(t.dtype == KILN_DTYPE_F32);
  CHECK(t.shape == std::vector<int64_t>{2, 2});
  CHECK(kiln::elementAsDouble(t, 3) == 4.0);
}

TEST_CASE("TensorProto typed int64_data is read", "[tensor_io]") {
  std::string b = "\x08\x03";    // dims: 3 (unpacked)
  b += "\x10\x07";               // data_type INT64
  b += "\x3a\x03\x01\x7f\x05";   // int64_data packed: 1, 127, 5
  HostTensor t;
  std::string error;
  REQUIRE(kiln::parseTensorProto(b, t, error));
  CHECK(t.dtype == KILN_DTYPE_I64);
  CHECK(kiln::elementAsDouble(t, 1) == 127);
}

TEST_CASE("truncated or inconsistent TensorProtos are errors", "[tensor_io]") {
  std::string good = tensorProtoBytes(), error;
  HostTensor t;
  CHECK_FALSE(kiln::parseTensorProto(good.substr(0, good.size() - 3), t, error));
  std::string wrongDims = good;
  wrongDims[3] = '\x03'; // dims 2x3 but 4 values
  CHECK_FALSE(kiln::parseTensorProto(wrongDims, t, error));
  CHECK(error.find("raw_data has 16 bytes") != std::string::npos);
  CHECK_FALSE(kiln::parseTensorProto("\xff\xff\xff", t, error));
}

TEST_CASE("float16 and bfloat16 elements decode", "[tensor_io]") {
  HostTensor h;
  h.dtype = KILN_DTYPE_F16;
  h.shape = {2};
  h.data = {0x00, 0x3c, 0x00, 0xc0}; // 1.0, -2.0
  CHECK(kiln::elementAsDouble(h, 0) == 1.0);
  CHECK(kiln::elementAsDouble(h, 1) == -2.0);
  h.dtype = KILN_DTYPE_BF16;
  h.data = {0x80, 0x3f, 0x40, 0xc0}; // 1.0, -3.0
  CHECK(kiln::elementAsDouble(h, 0) == 1.0);
  CHECK(kiln::elementAsDouble(h, 1) == -3.0);
}

TEST_CASE("every dtype survives a .npy round trip (bfloat16 as 2-byte voids)", "[tensor_io]") {
  for (int d = 0; d <= KILN_DTYPE_U64; ++d) {
    HostTensor h;
    h.dtype = (kiln_dtype_t)d;
    h.shape = {2, 1};
    h.data.assign(2 * kiln_dtype_size(h.dtype), 0x01);
    HostTensor back;
    std::string error;
    INFO(kiln_dtype_name(h.dtype));
    REQUIRE(kiln::parseNpy(kiln::toNpy(h), back, error));
    CHECK(back.dtype == h.dtype);
    CHECK(back.shape == h.shape);
    CHECK(back.data == h.data);
  }
}

TEST_CASE("a .npy shape that is not a tuple is an error (found by fuzzing)", "[tensor_io]") {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape':     , }";
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + char(header.size()) + '\0' + header;
  HostTensor t;
  std::string error;
  CHECK_FALSE(kiln::parseNpy(bytes, t, error));
  CHECK(error.find("malformed .npy shape") != std::string::npos);
}

TEST_CASE("int64_data keeps every bit (no detour through double)", "[tensor_io]") {
  // dims: [1], data_type: INT64, int64_data: 2^53 + 1 (not a double).
  std::string pb = "\x08\x01\x10\x07\x38";
  for (uint64_t v = (uint64_t(1) << 53) + 1; v; v >>= 7)
    pb += char((v & 0x7f) | (v >> 7 ? 0x80 : 0));
  HostTensor t;
  std::string error;
  REQUIRE(kiln::parseTensorProto(pb, t, error));
  int64_t got;
  std::memcpy(&got, t.data.data(), 8);
  CHECK(got == (int64_t(1) << 53) + 1);
}

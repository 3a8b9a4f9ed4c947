//===- SignatureTest.cpp - parsing an artifact's signature ----------------===//

#include "Signature.h"

#include <catch2/catch.hpp>

using kiln::rt::Signature;

namespace {
bool parse(const std::string &text, Signature &sig, std::string &error) {
  return kiln::rt::parseSignature(text.c_str(), text.size() + 1, sig, error);
}
} // namespace

TEST_CASE("a well-formed signature parses", "[signature]") {
  Signature sig;
  std::string error;
  REQUIRE(parse("kiln-signature 1\ninput 5 x y:z f32 2 4 64\ninput 3 ids i64 1 7\n"
                "output 1 y bool 0\narena 4096\nweights 1024\ncpu znver4 avx2 fma\n",
                sig, error));
  CHECK(sig.cpuName == "znver4");
  CHECK(sig.cpuFeatures == std::vector<std::string>{"avx2", "fma"});
  CHECK(sig.arenaBytes == 4096);
  CHECK(sig.weightBytes == 1024);
  REQUIRE(sig.inputs.size() == 2);
  CHECK(sig.inputs[0].name == "x y:z"); // length-prefixed: any byte but newline
  CHECK(sig.inputs[0].shape == std::vector<int64_t>{4, 64});
  CHECK(sig.inputs[0].sizeBytes == 4 * 64 * 4);
  CHECK(sig.inputs[1].dtype == KILN_DTYPE_I64);
  REQUIRE(sig.outputs.size() == 1);
  CHECK(sig.outputs[0].shape.empty());
  CHECK(sig.outputs[0].sizeBytes == 1);
}

TEST_CASE("malformed signatures are rejected", "[signature]") {
  Signature sig;
  std::string error;
  CHECK_FALSE(parse("kiln-signature 2\n", sig, error));
  CHECK_FALSE(parse("kiln-signature 1\ninput 1 x q32 1 4\n", sig, error));
  CHECK_FALSE(parse("kiln-signature 1\ninput 1 x f32 1 -4\n", sig, error));
  CHECK_FALSE(parse("kiln-signature 1\ninput 99 x f32 1 4\n", sig, error));
  CHECK_FALSE(parse("kiln-signature 1\ninput 1 x f32 2 4\n", sig, error));
  CHECK_FALSE(parse("kiln-signature 1\nfrob 1 x f32 1 4\n", sig, error));
  CHECK_FALSE(parse("kiln-signature 1\ninput 1 x f32 3 4294967296 4294967296 4294967296\n",
                    sig, error));
  CHECK_FALSE(parse("kiln-signature 1\narena -1\n", sig, error));
  CHECK_FALSE(parse("kiln-signature 1\narena 12 13\n", sig, error));
  CHECK_FALSE(parse("kiln-signature 1\nweights 999999999999999999999\n", sig, error));
}

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

TEST_CASE("training lines parse and are checked against the tensors", "[signature]") {
  const std::string tensors = "kiln-signature 1\ninput 1 x f32 1 4\ninput 1 w f32 1 4\n"
                              "input 4 step f32 0\ninput 2 lr f32 0\noutput 4 loss f32 0\n"
                              "output 6 grad:w f32 1 4\noutput 1 w f32 1 4\noutput 4 step f32 0\n"
                              "output 2 lr f32 0\n";
  Signature sig;
  std::string error;
  REQUIRE(parse(tensors + "train 0\nparam 1 2 128\nhyper 3 4 192\nstate 2 3\ngrad 1 1\n", sig,
                error));
  REQUIRE(sig.hypers.size() == 1);
  CHECK(sig.hypers[0].initialOffset == 192);
  CHECK(sig.training);
  CHECK(sig.lossOutput == 0);
  REQUIRE(sig.params.size() == 1);
  CHECK(sig.params[0].input == 1);
  CHECK(sig.params[0].output == 2);
  CHECK(sig.params[0].initialOffset == 128);
  REQUIRE(sig.states.size() == 1);
  CHECK(sig.grads == std::vector<std::pair<size_t, size_t>>{{1, 1}});

  // Indices out of range, used twice, of another type, a gradient of a
  // non-parameter, a loss that is not a scalar: all refused.
  for (const char *bad : {"train 0\nparam 1 9 0\n", "train 0\nparam 1 2 0\nstate 1 3\n",
                          "train 0\nparam 1 3 0\n", "train 0\nparam 1 2 0\ngrad 1 0\n",
                          "train 2\nparam 1 1 0\n", "train 0\nparam 1 2\n",
                          "train 0\nstate 2 3 5\n", "train 0\nhyper 1 2 0\n"}) {
    Signature s;
    CAPTURE(bad);
    CHECK_FALSE(parse(tensors + bad, s, error));
  }
}

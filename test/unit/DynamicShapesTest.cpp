//===- DynamicShapesTest.cpp - dynamic dimensions in the runtime ----------===//
//
// The signature's `dim` lines and `$k` entries, the binding of symbols from
// the inputs' shapes (ranges, agreement), output shapes, and the session's
// cache of blocks for buffers sized at run time.
//
//===----------------------------------------------------------------------===//

#include "BlockCache.h"
#include "HostMemory.h"
#include "Signature.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>

using kiln::rt::Signature;

namespace {
bool parse(const std::string &text, Signature &sig, std::string &error) {
  return kiln::rt::parseSignature(text.c_str(), text.size() + 1, sig, error);
}

const char *kTwoInputs = "kiln-signature 1\ndim 5 batch 1 8\ndim 3 seq 2 -1\n"
                         "input 1 x f32 3 $0 $1 16\ninput 4 mask i64 2 $0 $1\n"
                         "output 1 y f32 2 $0 16\n";

kiln_tensor_t tensor(const char *name, kiln_dtype_t dtype, const std::vector<int64_t> &shape) {
  return {name, dtype, (int32_t)shape.size(), shape.data(), nullptr, 0};
}
} // namespace

TEST_CASE("dynamic dimensions parse as symbols", "[dynamic]") {
  Signature sig;
  std::string error;
  REQUIRE(parse(kTwoInputs, sig, error));
  REQUIRE(sig.dims.size() == 2);
  CHECK(sig.dims[0].name == "batch");
  CHECK(sig.dims[0].max == 8);
  CHECK(sig.dims[1].max == -1);
  CHECK(sig.inputs[0].shape == std::vector<int64_t>{-1, -1, 16});
  CHECK(sig.inputs[0].symbols == std::vector<int32_t>{0, 1, -1});
  CHECK(sig.inputs[0].sizeBytes == 0);
  CHECK_FALSE(sig.outputs[0].symbols.empty());
}

TEST_CASE("malformed dynamic signatures are rejected", "[dynamic]") {
  Signature sig;
  std::string error;
  CHECK_FALSE(parse("kiln-signature 1\ndim 1 b 4 2\n", sig, error)); // empty range
  CHECK_FALSE(parse("kiln-signature 1\ndim 1 b 1 -1\ninput 1 x f32 1 $1\n", sig, error));
  CHECK_FALSE(parse("kiln-signature 1\ndim 1 b 1 -1\ninput 1 x f32 1 $x\n", sig, error));
  CHECK_FALSE(parse("kiln-signature 1\ndim 1 b 1 -1\ninput 1 x f32 1 4\noutput 1 y f32 1 $0\n",
                    sig, error));
  CHECK(error.find("no input has") != std::string::npos);
  CHECK_FALSE(parse("kiln-signature 1\ndim 1 b 1 -1\ninput 1 x f32 1 $0\ntarget cuda sm_80\n",
                    sig, error));
}

TEST_CASE("inputs bind the symbols, checked against ranges and each other", "[dynamic]") {
  Signature sig;
  std::string error;
  REQUIRE(parse(kTwoInputs, sig, error));
  std::vector<size_t> slots;
  std::vector<int64_t> values;
  std::vector<int64_t> xs{3, 5, 16}, ms{3, 5};
  kiln_tensor_t ok[] = {tensor("mask", KILN_DTYPE_I64, ms), tensor("x", KILN_DTYPE_F32, xs)};
  REQUIRE(kiln::rt::bindInputs(sig, ok, 2, slots, values) == "");
  CHECK(slots == std::vector<size_t>{1, 0});
  CHECK(values == std::vector<int64_t>{3, 5});
  CHECK(kiln::rt::concreteShape(sig.outputs[0], values) == std::vector<int64_t>{3, 16});

  std::vector<int64_t> big{9, 5, 16}, other{3, 6};
  kiln_tensor_t tooBig[] = {tensor("x", KILN_DTYPE_F32, big), tensor("mask", KILN_DTYPE_I64, ms)};
  CHECK(kiln::rt::bindInputs(sig, tooBig, 2, slots, values).find("must be in 1..8, not 9") !=
        std::string::npos);
  kiln_tensor_t disagree[] = {tensor("x", KILN_DTYPE_F32, xs),
                              tensor("mask", KILN_DTYPE_I64, other)};
  CHECK(kiln::rt::bindInputs(sig, disagree, 2, slots, values)
            .find("('seq') is 6, but an earlier input set 'seq' to 5") != std::string::npos);
  std::vector<int64_t> shortSeq{3, 1, 16};
  kiln_tensor_t below[] = {tensor("x", KILN_DTYPE_F32, shortSeq),
                           tensor("mask", KILN_DTYPE_I64, ms)};
  CHECK(kiln::rt::bindInputs(sig, below, 2, slots, values).find("must be in 2..") !=
        std::string::npos);
}

TEST_CASE("an output's size cannot wrap around", "[dynamic]") {
  // Each input fits, but an output multiplying their symbols would not.
  Signature sig;
  std::string error;
  REQUIRE(parse("kiln-signature 1\ndim 1 n 1 -1\ninput 1 x f32 1 $0\n"
                "output 1 y f32 4 $0 $0 $0 $0\n",
                sig, error));
  std::vector<size_t> slots;
  std::vector<int64_t> values, xs{int64_t(1) << 20};
  kiln_tensor_t in[] = {tensor("x", KILN_DTYPE_F32, xs)};
  REQUIRE(kiln::rt::bindInputs(sig, in, 1, slots, values) == "");
  auto shape = kiln::rt::concreteShape(sig.outputs[0], values);
  CHECK(kiln::rt::denseBytes(KILN_DTYPE_F32, shape) == SIZE_MAX);
  CHECK(kiln::rt::denseBytes(KILN_DTYPE_F32, {0, int64_t(1) << 60, 4}) == 0);
  CHECK(kiln::rt::denseBytes(KILN_DTYPE_F32, {3, 5}) == 60);
}

TEST_CASE("derived symbols compute outputs' sizes from the inputs'", "[dynamic]") {
  // A KV cache: present = concat(past, new) along the sequence, and a
  // flattened batch * heads, less one.
  const char *text = "kiln-signature 1\ndim 4 past 0 16\ndim 3 new 1 4\ndim 5 heads 1 -1\n"
                     "dim 8 new+past 1 19\ndim 9 heads*new 0 -1\n"
                     "dimexpr 3 0 2 1 1 0 1 1 1\ndimexpr 4 -1 1 1 2 1 2\n"
                     "input 4 past f32 2 $0 8\ninput 1 x f32 3 $2 $1 8\n"
                     "output 7 present f32 2 $3 8\noutput 4 flat f32 1 $4\n";
  Signature sig;
  std::string error;
  REQUIRE(parse(text, sig, error));
  CHECK(sig.dims[3].derived);
  CHECK(sig.dims[3].terms.size() == 2);
  std::vector<size_t> slots;
  std::vector<int64_t> values, ps{5, 8}, xs{3, 2, 8};
  kiln_tensor_t in[] = {tensor("past", KILN_DTYPE_F32, ps), tensor("x", KILN_DTYPE_F32, xs)};
  REQUIRE(kiln::rt::bindInputs(sig, in, 2, slots, values) == "");
  CHECK(kiln::rt::concreteShape(sig.outputs[0], values) == std::vector<int64_t>{7, 8});
  CHECK(kiln::rt::concreteShape(sig.outputs[1], values) == std::vector<int64_t>{5});
  // An empty past is fine; a computed size outside its range is refused.
  std::vector<int64_t> empty{0, 8}, big{16, 8}, wide{3, 4, 8};
  kiln_tensor_t first[] = {tensor("past", KILN_DTYPE_F32, empty), tensor("x", KILN_DTYPE_F32, xs)};
  REQUIRE(kiln::rt::bindInputs(sig, first, 2, slots, values) == "");
  CHECK(values[3] == 2);
  kiln_tensor_t over[] = {tensor("past", KILN_DTYPE_F32, big), tensor("x", KILN_DTYPE_F32, wide)};
  CHECK(kiln::rt::bindInputs(sig, over, 2, slots, values) ==
        "output dimension 'new+past' computes to 20 from the inputs' shapes, outside 1..19");
}

TEST_CASE("malformed derived symbols are rejected", "[dynamic]") {
  const std::string head = "kiln-signature 1\ndim 1 n 1 -1\ndim 3 n+1 2 -1\n";
  const std::string tail = "input 1 x f32 1 $0\noutput 1 y f32 1 $1\n";
  std::string error;
  auto parses = [&](const std::string &text) {
    Signature sig;
    return parse(text, sig, error);
  };
  CHECK(parses(head + "dimexpr 1 1 1 1 1 0\n" + tail));
  CHECK_FALSE(parses(head + tail)); // no expression: no input has it
  CHECK_FALSE(parses(head + "dimexpr 1 1 1 1 1 1\n" + tail)); // itself
  CHECK_FALSE(parses(head + "dimexpr 0 1 0\n" + tail)); // an input's symbol
  CHECK_FALSE(parses(head + "dimexpr 1 1 1 1 1 0\ndimexpr 1 1 0\n" + tail));
  CHECK_FALSE(parses(head + "dimexpr 1 1 2 1 1 0\n" + tail)); // a term short
  CHECK_FALSE(parses(head + "dimexpr 1 1 1 1 1 0 7\n" + tail)); // trailing
  CHECK_FALSE(parses(head + "dimexpr 2 1 0\n" + tail)); // no symbol 2
}

TEST_CASE("a training step may take a dynamic batch, not dynamic parameters", "[dynamic]") {
  const std::string head = "kiln-signature 1\ndim 5 batch 1 -1\n";
  Signature ok, bad;
  std::string error;
  CHECK(parse(head + "input 1 x f32 2 $0 4\ninput 1 w f32 1 4\noutput 4 loss f32 0\n"
                     "output 1 w f32 1 4\ntrain 0\nparam 1 1 0\n",
              ok, error));
  CHECK_FALSE(parse(head + "input 1 x f32 2 $0 4\ninput 1 w f32 1 $0\noutput 4 loss f32 0\n"
                           "output 1 w f32 1 $0\ntrain 0\nparam 1 1 0\n",
                    bad, error));
}

TEST_CASE("the block cache keeps blocks between calls, by size", "[dynamic]") {
  kiln::rt::BlockCache cache;
  void *a = kiln::rt::BlockCache::allocThunk(&cache, 1000);
  void *b = kiln::rt::BlockCache::allocThunk(&cache, 4096);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(reinterpret_cast<uintptr_t>(a) % 64 == 0);
  kiln::rt::BlockCache::releaseThunk(&cache, a, 1000);
  kiln::rt::BlockCache::releaseThunk(&cache, b, 4096);
  cache.endRun();
  // The next call of the same sizes gets the same blocks back.
  CHECK(kiln::rt::BlockCache::allocThunk(&cache, 1000) == a);
  kiln::rt::BlockCache::releaseThunk(&cache, a, 1000);
  cache.endRun(); // 4096 went unused this call: freed
  void *c = kiln::rt::BlockCache::allocThunk(&cache, 1000);
  CHECK(c == a);
  kiln::rt::BlockCache::releaseThunk(&cache, c, 1000);
}

TEST_CASE("the block cache gives the block given back last to a request it fits", "[dynamic]") {
  kiln::rt::BlockCache cache;
  void *big = kiln::rt::BlockCache::allocThunk(&cache, 4096);
  void *small = kiln::rt::BlockCache::allocThunk(&cache, 1024);
  REQUIRE(big);
  REQUIRE(small);
  kiln::rt::BlockCache::releaseThunk(&cache, small, 1024);
  kiln::rt::BlockCache::releaseThunk(&cache, big, 4096);
  // Within the same call, another size: the last block given back that
  // holds it without wasting more than half of it.
  void *a = kiln::rt::BlockCache::allocThunk(&cache, 3000);
  CHECK(a == big);
  void *b = kiln::rt::BlockCache::allocThunk(&cache, 700);
  CHECK(b == small);
  // 100 bytes would waste most of any cached block: a new one.
  kiln::rt::BlockCache::releaseThunk(&cache, b, 700);
  void *c = kiln::rt::BlockCache::allocThunk(&cache, 100);
  CHECK(c != small);
  CHECK(kiln::rt::BlockCache::allocThunk(&cache, UINT64_MAX) == nullptr);
  kiln::rt::BlockCache::releaseThunk(&cache, a, 3000);
  kiln::rt::BlockCache::releaseThunk(&cache, c, 100);
}

TEST_CASE("large host buffers are 2 MiB aligned mappings, small ones heap blocks", "[dynamic]") {
  // Sizes around the huge page: each usable to its last byte, aligned as
  // promised, given back without complaint (ASan/valgrind builds check).
  for (uint64_t bytes : {uint64_t(1), uint64_t(4096), (uint64_t(2) << 20) - 1, uint64_t(2) << 20,
                         (uint64_t(2) << 20) + 1, uint64_t(5) << 20}) {
    void *p = kiln::rt::allocateHost(bytes);
    REQUIRE(p);
    auto at = reinterpret_cast<uintptr_t>(p);
    CHECK(at % 64 == 0);
    if (bytes >= (uint64_t(2) << 20))
      CHECK(at % (uint64_t(2) << 20) == 0);
    std::memset(p, 0x5a, bytes);
    CHECK(static_cast<unsigned char *>(p)[bytes - 1] == 0x5a);
    kiln::rt::releaseHost(p, bytes);
  }
  kiln::rt::releaseHost(nullptr, 0);
  CHECK(kiln::rt::allocateHost(UINT64_MAX) == nullptr);
  // The block cache takes its large blocks the same way.
  kiln::rt::BlockCache cache;
  void *big = kiln::rt::BlockCache::allocThunk(&cache, uint64_t(3) << 20);
  REQUIRE(big);
  CHECK(reinterpret_cast<uintptr_t>(big) % (uint64_t(2) << 20) == 0);
  kiln::rt::BlockCache::releaseThunk(&cache, big, uint64_t(3) << 20);
  cache.endRun();
  cache.endRun(); // not taken in the last call: unmapped
}

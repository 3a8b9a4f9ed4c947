// Tests of the PTX emulator itself (test/emu), on hand-written PTX: that
// kernels compute, and that what would be a GPU bug is reported rather than
// computed past: an out-of-bounds store, threads waiting on each other
// forever, a tile read before its cp.async was awaited, PTX the emulator
// doesn't know.

#include "Ptx.h"
#include "PtxProfile.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

using namespace kiln::emu;

namespace {

const char *kHeader = ".version 8.0\n.target sm_80\n.address_size 64\n";

/// Launch parameters: each pointer's 8 bytes in turn.
Launch launchOf(unsigned blocks, unsigned threads, std::vector<const void *> pointers) {
  Launch l{{blocks, 1, 1}, {threads, 1, 1}, 0, {}};
  for (const void *p : pointers) {
    uint64_t v = (uint64_t)(uintptr_t)p;
    l.params.insert(l.params.end(), (uint8_t *)&v, (uint8_t *)&v + 8);
  }
  return l;
}

/// Host vectors the kernels may touch, registered as device memory.
struct Device {
  std::vector<std::vector<float>> buffers;
  float *alloc(size_t n, float fill = 0) {
    buffers.emplace_back(n, fill);
    addDeviceMemory((uint64_t)(uintptr_t)buffers.back().data(), n * 4);
    return buffers.back().data();
  }
  ~Device() {
    for (auto &b : buffers)
      removeDeviceMemory((uint64_t)(uintptr_t)b.data());
  }
};

// y[i] = 2 * x[i] for i = ctaid.x * ntid.x + tid.x, then a warp's sum by
// butterfly shuffles into s[i].
const char *kScaleAndSum = R"(
.visible .entry k(
	.param .u64 .ptr .align 1 k_param_0,
	.param .u64 .ptr .align 1 k_param_1,
	.param .u64 .ptr .align 1 k_param_2
)
{
	.reg .b32 	%r<12>;
	.reg .b64 	%rd<8>;
	ld.param.b64 	%rd1, [k_param_0];
	ld.param.b64 	%rd2, [k_param_1];
	ld.param.b64 	%rd3, [k_param_2];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mad.lo.s32 	%r4, %r2, %r3, %r1;
	mul.wide.u32 	%rd4, %r4, 4;
	add.s64 	%rd5, %rd1, %rd4;
	ld.global.b32 	%r5, [%rd5];
	add.rn.f32 	%r6, %r5, %r5;
	add.s64 	%rd6, %rd2, %rd4;
	st.global.b32 	[%rd6], %r6;
	shfl.sync.bfly.b32 	%r7, %r5, 1, 31, -1;
	add.rn.f32 	%r8, %r5, %r7;
	shfl.sync.bfly.b32 	%r7, %r8, 2, 31, -1;
	add.rn.f32 	%r8, %r8, %r7;
	shfl.sync.bfly.b32 	%r7, %r8, 4, 31, -1;
	add.rn.f32 	%r8, %r8, %r7;
	shfl.sync.bfly.b32 	%r7, %r8, 8, 31, -1;
	add.rn.f32 	%r8, %r8, %r7;
	shfl.sync.bfly.b32 	%r7, %r8, 16, 31, -1;
	add.rn.f32 	%r8, %r8, %r7;
	add.s64 	%rd7, %rd3, %rd4;
	st.global.b32 	[%rd7], %r8;
	ret;
}
)";

/// The emulator's tensor map (as its cuTensorMapEncodeTiled writes one) of
/// a `cols` x `rows` f32 tensor at `src` with a `boxCols` x `boxRows` box,
/// into the device bytes at `at`.
void writeMap(float *at, const float *src, unsigned cols, unsigned rows, unsigned boxCols,
              unsigned boxRows, bool swizzle128) {
  TensorMap map{};
  map.magic = TensorMap::kMagic;
  map.global = (uint64_t)(uintptr_t)src;
  map.rank = 2;
  map.swizzle = swizzle128 ? 3 : 0;
  map.dims[0] = cols, map.dims[1] = rows;
  map.strides[0] = 4, map.strides[1] = 4 * cols;
  map.box[0] = boxCols, map.box[1] = boxRows;
  std::memcpy(at, &map, sizeof(map));
}

/// `text` with each placeholder (its first occurrence) replaced.
std::string withHoles(std::string text,
                      std::initializer_list<std::pair<std::string, std::string>> holes) {
  for (const auto &[hole, fill] : holes)
    text.replace(text.find(hole), hole.size(), fill);
  return text;
}

} // namespace

TEST_CASE("ptx-emu runs a kernel: loads, arithmetic, stores, shuffles", "[emu]") {
  std::string error;
  auto mod = parsePtx(std::string(kHeader) + kScaleAndSum, error);
  REQUIRE(mod);
  Device dev;
  float *x = dev.alloc(64), *y = dev.alloc(64), *s = dev.alloc(64);
  for (int i = 0; i < 64; ++i)
    x[i] = (float)i;
  REQUIRE(runKernel(mod->entries.at("k"), launchOf(2, 32, {x, y, s}), error));
  for (int i = 0; i < 64; ++i) {
    CHECK(y[i] == 2.0f * i);
    int w = i / 32; // each warp's sum: 32 consecutive integers
    CHECK(s[i] == (float)(32 * 32 * w + 31 * 32 / 2));
  }
}

TEST_CASE("ptx-emu sign-extends an s8 conversion into its wider register", "[emu]") {
  // LLVM's int8 -> f32 over a word of four bytes: byte 0 by cvt.s8.s32
  // into a 16-bit register, read back as s16. Zero-extended, -125 read as
  // 131 (an int8 model's weights on the GPU were wrong in the emulator).
  const char *ptx = R"(
.visible .entry k(
	.param .u64 .ptr .align 1 k_param_0,
	.param .u64 .ptr .align 1 k_param_1
)
{
	.reg .b16 	%rs<3>;
	.reg .b32 	%r<4>;
	.reg .b64 	%rd<5>;
	ld.param.b64 	%rd1, [k_param_0];
	ld.param.b64 	%rd2, [k_param_1];
	cvta.to.global.u64 	%rd3, %rd1;
	cvta.to.global.u64 	%rd4, %rd2;
	ld.global.b32 	%r1, [%rd3];
	cvt.s8.s32 	%rs1, %r1;
	cvt.rn.f32.s16 	%r2, %rs1;
	cvt.u8.u32 	%rs2, %r1;
	cvt.rn.f32.u16 	%r3, %rs2;
	st.global.v2.b32 	[%rd4], {%r2, %r3};
	ret;
}
)";
  std::string error;
  auto mod = parsePtx(std::string(kHeader) + ptx, error);
  REQUIRE(mod);
  Device dev;
  float *in = dev.alloc(1), *out = dev.alloc(2);
  uint32_t word = 0x11223383; // byte 0: 0x83, -125 as s8, 131 as u8
  std::memcpy(in, &word, sizeof word);
  REQUIRE(runKernel(mod->entries.at("k"), launchOf(1, 1, {in, out}), error));
  CHECK(out[0] == -125.0f);
  CHECK(out[1] == 131.0f);
}

TEST_CASE("ptx-emu reports an out-of-bounds store", "[emu]") {
  std::string error;
  auto mod = parsePtx(std::string(kHeader) + kScaleAndSum, error);
  REQUIRE(mod);
  Device dev;
  float *x = dev.alloc(64), *y = dev.alloc(32), *s = dev.alloc(64);
  // Two blocks write 64 floats of y, which has 32.
  CHECK_FALSE(runKernel(mod->entries.at("k"), launchOf(2, 32, {x, y, s}), error));
  CHECK(error.find("out of bounds") != std::string::npos);
  CHECK(error.find("PTX line") != std::string::npos);
}

TEST_CASE("ptx-emu releases a barrier once the other threads have exited", "[emu]") {
  const char *ptx = R"(
.visible .entry k(
	.param .u64 .ptr .align 1 k_param_0
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<3>;
	mov.u32 	%r1, %tid.x;
	setp.ne.b32 	%p1, %r1, 0;
	@%p1 bra 	$L__BB0_2;
	bar.sync 	0;
$L__BB0_2:
	ret;
}
)";
  std::string error;
  auto mod = parsePtx(std::string(kHeader) + ptx, error);
  REQUIRE(mod);
  Device dev;
  float *x = dev.alloc(1);
  // Thread 0 waits at the barrier; the others have exited, and exited
  // threads do not count (sm_70 and later), so it goes on.
  CHECK(runKernel(mod->entries.at("k"), launchOf(1, 64, {x}), error));
}

TEST_CASE("ptx-emu reports a deadlock between two barriers", "[emu]") {
  // Thread 0 waits at one barrier, the rest at a shuffle with thread 0 in
  // its member mask: neither can go on.
  const char *ptx = R"(
.visible .entry k(
	.param .u64 .ptr .align 1 k_param_0
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<4>;
	mov.u32 	%r1, %tid.x;
	setp.ne.b32 	%p1, %r1, 0;
	@%p1 bra 	$L__BB0_2;
	bar.sync 	0;
	ret;
$L__BB0_2:
	shfl.sync.bfly.b32 	%r2, %r1, 1, 31, -1;
	ret;
}
)";
  std::string error;
  auto mod = parsePtx(std::string(kHeader) + ptx, error);
  REQUIRE(mod);
  Device dev;
  float *x = dev.alloc(1);
  CHECK_FALSE(runKernel(mod->entries.at("k"), launchOf(1, 32, {x}), error));
  CHECK(error.find("deadlock") != std::string::npos);
}

TEST_CASE("ptx-emu lands cp.async copies only when their thread waits", "[emu]") {
  // Each thread copies 16 bytes into shared memory, reads its first word
  // (before the wait: shared memory's initial NaN bytes), waits, reads it
  // again (the copy's value).
  const char *ptx = R"(
.visible .entry k(
	.param .u64 .ptr .align 1 k_param_0,
	.param .u64 .ptr .align 1 k_param_1
)
{
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<10>;
	.shared .align 16 .b8 tile[512];
	ld.param.b64 	%rd1, [k_param_0];
	ld.param.b64 	%rd2, [k_param_1];
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd3, %r1, 16;
	add.s64 	%rd4, %rd1, %rd3;
	mov.b64 	%rd5, tile;
	add.s64 	%rd6, %rd5, %rd3;
	cp.async.cg.shared.global [%rd6], [%rd4], 16;
	cp.async.commit_group;
	ld.shared.b32 	%r2, [%rd6];
	cp.async.wait_group 	0;
	ld.shared.b32 	%r3, [%rd6];
	mul.wide.u32 	%rd7, %r1, 8;
	add.s64 	%rd8, %rd2, %rd7;
	st.global.v2.b32 	[%rd8], {%r2, %r3};
	ret;
}
)";
  std::string error;
  auto mod = parsePtx(std::string(kHeader) + ptx, error);
  REQUIRE(mod);
  Device dev;
  float *src = dev.alloc(128), *out = dev.alloc(64);
  for (int i = 0; i < 128; ++i)
    src[i] = (float)i;
  REQUIRE(runKernel(mod->entries.at("k"), launchOf(1, 32, {src, out}), error));
  for (int t = 0; t < 32; ++t) {
    CHECK(std::isnan(out[2 * t]));
    CHECK(out[2 * t + 1] == (float)(4 * t));
  }
}

TEST_CASE("ptx-emu refuses PTX it does not know, naming the line", "[emu]") {
  const char *ptx = R"(
.visible .entry k(
	.param .u64 .ptr .align 1 k_param_0
)
{
	.reg .b32 	%r<3>;
	vote.sync.ballot.b32 	%r1, 1, -1;
	ret;
}
)";
  std::string error;
  CHECK_FALSE(parsePtx(std::string(kHeader) + ptx, error));
  CHECK(error.find("line 10") != std::string::npos);
  CHECK(error.find("vote.sync.ballot.b32") != std::string::npos);
  // A malformed size or constant is an error too, not an exception.
  error.clear();
  CHECK_FALSE(parsePtx(std::string(kHeader) + ".shared .align 4 .b8 w[1x];\n", error));
  CHECK(error.find("malformed array size") != std::string::npos);
  error.clear();
  std::string badFloat = ptx;
  const std::string vote = "vote.sync.ballot.b32 \t%r1, 1, -1;";
  badFloat.replace(badFloat.find(vote), vote.size(), "mov.b32 %r1, 0fZZZZZZZZ;");
  CHECK_FALSE(parsePtx(std::string(kHeader) + badFloat, error));
  CHECK(error.find("malformed PTX") != std::string::npos);
  error.clear();
  CHECK_FALSE(parsePtx(std::string(kHeader) + ".visible .entry k(\n)\n", error));
  CHECK(error.find("no body") != std::string::npos);
}

TEST_CASE("ptx-emu reports a shared-memory race between warps, not one a barrier orders",
          "[emu]") {
  // Thread 32 (warp 1) writes a shared word that thread 0 (warp 0) reads;
  // with BARRIER replaced by bar.sync between them, the read follows.
  std::string ptx = R"(
.visible .entry k(
	.param .u64 .ptr .align 1 k_param_0
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<3>;
	.shared .align 4 .b8 word[4];
	ld.param.b64 	%rd1, [k_param_0];
	mov.u32 	%r1, %tid.x;
	setp.ne.b32 	%p1, %r1, 32;
	@%p1 bra 	$L__BB0_2;
	mov.b32 	%r2, 7;
	st.shared.b32 	[word], %r2;
$L__BB0_2:
	BARRIER
	setp.ne.b32 	%p2, %r1, 0;
	@%p2 bra 	$L__BB0_4;
	ld.shared.b32 	%r3, [word];
	st.global.b32 	[%rd1], %r3;
$L__BB0_4:
	ret;
}
)";
  auto withBarrier = [&](const char *barrier) {
    std::string text = ptx;
    text.replace(text.find("BARRIER"), 7, barrier);
    return std::string(kHeader) + text;
  };
  Device dev;
  float *out = dev.alloc(1);
  std::string error;
  auto racy = parsePtx(withBarrier("mov.b32 %r4, 0;"), error);
  REQUIRE(racy);
  CHECK_FALSE(runKernel(racy->entries.at("k"), launchOf(1, 64, {out}), error));
  CHECK(error.find("shared-memory race") != std::string::npos);
  CHECK(error.find("line") != std::string::npos);
  error.clear();
  auto ordered = parsePtx(withBarrier("bar.sync 0;"), error);
  REQUIRE(ordered);
  CHECK(runKernel(ordered->entries.at("k"), launchOf(1, 64, {out}), error));
  uint32_t bits;
  std::memcpy(&bits, out, 4);
  CHECK(bits == 7u);
}

TEST_CASE("ptx-emu runs an mbarrier ring: ordered, racy without the wait, stuck without the "
          "release",
          "[emu]") {
  // Thread 0 (warp 0) produces 1, 2, 3, 4 into one shared slot, thread 32
  // (warp 1) adds them up; `full` and `empty` mbarriers hand the slot back
  // and forth. The waits are LLVM's inline-asm loops, each with its own
  // LAB_WAIT and DONE labels.
  std::string ptx = R"(
.visible .entry k(
	.param .u64 .ptr .align 1 k_param_0
)
{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<12>;
	.reg .b64 	%rd<4>;
	.shared .align 8 .b8 bars[16];
	.shared .align 4 .b8 slot[4];
	ld.param.b64 	%rd1, [k_param_0];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r9, bars;
	add.s32 	%r10, %r9, 8;
	setp.ne.b32 	%p1, %r1, 0;
	@%p1 bra 	$L__init_done;
	mbarrier.init.shared.b64 	[bars], 1;
	mbarrier.init.shared.b64 	[bars+8], 1;
$L__init_done:
	bar.sync 	0;
	mov.b32 	%r2, 0;
	mov.b32 	%r3, 0;
$L__loop:
	and.b32 	%r4, %r2, 1;
	xor.b32 	%r5, %r4, 1;
	setp.ne.b32 	%p2, %r1, 0;
	@%p2 bra 	$L__consumer;
	// begin inline asm
	{
	.reg .pred       P1;
	LAB_WAIT:
	mbarrier.try_wait.parity.shared.b64 P1, [%r10], %r5, 1000000;
	@P1 bra.uni DONE;
	bra.uni     LAB_WAIT;
	DONE:
	}
	// end inline asm
	add.s32 	%r6, %r2, 1;
	st.shared.b32 	[slot], %r6;
	mbarrier.arrive.shared.b64 	%rd2, [bars];
	bra.uni 	$L__next;
$L__consumer:
	setp.ne.b32 	%p3, %r1, 32;
	@%p3 bra 	$L__next;
	WAIT
	ld.shared.b32 	%r7, [slot];
	add.s32 	%r3, %r3, %r7;
	RELEASE
$L__next:
	add.s32 	%r2, %r2, 1;
	setp.lt.u32 	%p2, %r2, 4;
	@%p2 bra 	$L__loop;
	setp.ne.b32 	%p3, %r1, 32;
	@%p3 bra 	$L__end;
	st.global.b32 	[%rd1], %r3;
$L__end:
	ret;
}
)";
  const std::string wait = R"(
	{
	.reg .pred       P1;
	LAB_WAIT:
	mbarrier.try_wait.parity.shared.b64 P1, [%r9], %r4, 1000000;
	@P1 bra.uni DONE;
	bra.uni     LAB_WAIT;
	DONE:
	})";
  const std::string release = "mbarrier.arrive.shared.b64 %rd3, [%r10];";
  auto variant = [&](const std::string &w, const std::string &r) {
    std::string text = std::string(kHeader) + ptx;
    text.replace(text.find("WAIT\n"), 4, w);
    text.replace(text.find("RELEASE"), 7, r);
    return text;
  };
  Device dev;
  float *out = dev.alloc(1);
  std::string error;
  auto ring = parsePtx(variant(wait, release), error);
  REQUIRE(ring);
  CHECK(runKernel(ring->entries.at("k"), launchOf(1, 64, {out}), error));
  CHECK(error.empty());
  uint32_t bits;
  std::memcpy(&bits, out, 4);
  CHECK(bits == 10u);

  auto racy = parsePtx(variant("", release), error);
  REQUIRE(racy);
  CHECK_FALSE(runKernel(racy->entries.at("k"), launchOf(1, 64, {out}), error));
  CHECK(error.find("shared-memory race") != std::string::npos);

  error.clear();
  auto stuck = parsePtx(variant(wait, ""), error);
  REQUIRE(stuck);
  CHECK_FALSE(runKernel(stuck->entries.at("k"), launchOf(1, 64, {out}), error));
  CHECK(error.find("deadlock") != std::string::npos);

  error.clear();
  auto unknown = parsePtx(variant(wait, "mbarrier.expect_tx.shared.b64 [%r10], 16;"), error);
  CHECK_FALSE(unknown);
  CHECK(error.find("unsupported mbarrier") != std::string::npos);
}

TEST_CASE("ptx-emu copies a tensor map's box by TMA: swizzled, zeros outside, through an "
          "mbarrier's bytes",
          "[emu]") {
  // Thread 0 expects the box's bytes on an mbarrier and copies a 32 x 16
  // box of f32 at (16, 0) from a 40 x 10 tensor (columns 40.., rows 10..
  // are outside: zeros) into shared memory with the 128-byte swizzle;
  // every thread waits for the phase, then stores 16 bytes of the tile as
  // they lie in shared memory.
  std::string ptx = std::string(kHeader) + R"(
.visible .entry t(
	.param .u64 .ptr .align 1 t_param_0,
	.param .u64 t_param_1
)
{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<16>;
	.reg .b64 	%rd<8>;
	.shared .align 1024 .b8 tile[2048];
	.shared .align 8 .b8 bar[8];
	ld.param.b64 	%rd1, [t_param_0];
	ld.param.b64 	%rd2, [t_param_1];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, tile;
	mov.u32 	%r3, bar;
	setp.ne.b32 	%p1, %r1, 0;
	@%p1 bra 	$L__a;
	mbarrier.init.shared.b64 	[%r3], 1;
$L__a:
	bar.sync 	0;
	@%p1 bra 	$L__b;
	mov.b32 	%r4, EXPECT;
	mbarrier.arrive.expect_tx.shared.b64 %rd3, [%r3], %r4;
	mov.b32 	%r5, 16;
	mov.b32 	%r6, 0;
	cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r2], [%rd2, {%r5, %r6}], [%r3];
$L__b:
	mov.b32 	%r7, 0;
WAIT
	shl.b32 	%r8, %r1, 4;
	add.s32 	%r9, %r2, %r8;
	ld.shared.v4.b32 	{%r10, %r11, %r12, %r13}, [%r9];
	mul.wide.u32 	%rd4, %r1, 16;
	add.s64 	%rd5, %rd1, %rd4;
	st.global.v4.b32 	[%rd5], {%r10, %r11, %r12, %r13};
	ret;
}
)";
  const std::string wait = R"(
	{
	.reg .pred       P1;
	LAB_WAIT:
	mbarrier.try_wait.parity.shared.b64 P1, [%r3], %r7, 1000000;
	@P1 bra.uni DONE;
	bra.uni     LAB_WAIT;
	DONE:
	})";
  auto variant = [&](const std::string &expect, const std::string &w) {
    std::string text = ptx;
    text.replace(text.find("EXPECT"), 6, expect);
    text.replace(text.find("WAIT\n"), 4, w);
    return text;
  };
  Device dev;
  float *src = dev.alloc(400), *out = dev.alloc(512), *mapBytes = dev.alloc(32);
  for (int i = 0; i < 400; ++i)
    src[i] = float(i + 1);
  writeMap(mapBytes, src, 40, 10, 32, 16, /*swizzle128=*/true);
  std::string error;
  auto good = parsePtx(variant("2048", wait), error);
  REQUIRE(good);
  REQUIRE(runKernel(good->entries.at("t"), launchOf(1, 128, {out, mapBytes}), error));
  CHECK(error.empty());
  int wrong = 0;
  for (int p = 0; p < 512; ++p) {
    // Shared byte 4p holds the box's byte l (the swizzle is its own inverse).
    int l = (4 * p) ^ ((((4 * p) >> 7) & 7) << 4);
    int row = l / 128, col = 16 + (l % 128) / 4;
    float want = row < 10 && col < 40 ? src[row * 40 + col] : 0.0f;
    wrong += out[p] != want;
  }
  CHECK(wrong == 0);

  // Reading before the phase completes races with the copy; expecting more
  // bytes than come never completes it.
  auto racy = parsePtx(variant("2048", ""), error);
  REQUIRE(racy);
  CHECK_FALSE(runKernel(racy->entries.at("t"), launchOf(1, 128, {out, mapBytes}), error));
  CHECK(error.find("shared-memory race") != std::string::npos);
  error.clear();
  auto short_ = parsePtx(variant("4096", wait), error);
  REQUIRE(short_);
  CHECK_FALSE(runKernel(short_->entries.at("t"), launchOf(1, 128, {out, mapBytes}), error));
  CHECK(error.find("deadlock") != std::string::npos);
}

TEST_CASE("ptx-emu runs a cluster's blocks together: multicast copies, remote arrivals, "
          "cluster barriers",
          "[emu]") {
  // Two blocks in a cluster (.reqnctapercluster 2, 1, 1). Each one's
  // thread 0 expects 1024 bytes on `full` and copies rows 4r..4r+3 of an
  // 8 x 32 f32 tensor (512 bytes) into shared byte 512r of both blocks
  // (multicast, mask MASK); every thread waits for the phase and stores 16
  // bytes of the 1024 to out[block][..]. Then thread 0 arrives on its
  // pair's `done` (mapa) and waits on its own; all meet at a cluster
  // barrier before leaving.
  std::string ptx = std::string(".version 8.3\n.target sm_90a\n.address_size 64\n") + R"(
.visible .entry c(
	.param .u64 .ptr .align 1 c_param_0,
	.param .u64 c_param_1
)
.explicitcluster
.reqnctapercluster 2, 1, 1
{
	.reg .pred 	%p<4>;
	.reg .b16 	%rs<2>;
	.reg .b32 	%r<20>;
	.reg .b64 	%rd<12>;
	.shared .align 1024 .b8 tile[1024];
	.shared .align 8 .b8 full[8];
	.shared .align 8 .b8 done[8];
	ld.param.b64 	%rd1, [c_param_0];
	ld.param.b64 	%rd2, [c_param_1];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, tile;
	mov.u32 	%r3, full;
	mov.u32 	%r14, done;
	mov.u32 	%r15, %cluster_ctarank;
	setp.ne.b32 	%p1, %r1, 0;
	@%p1 bra 	$L__a;
	mbarrier.init.shared.b64 	[%r3], 1;
	mbarrier.init.shared.b64 	[%r14], 1;
	fence.mbarrier_init.release.cluster;
$L__a:
	barrier.cluster.arrive;
	barrier.cluster.wait;
	@%p1 bra 	$L__b;
	mov.b32 	%r4, 1024;
	mbarrier.arrive.expect_tx.shared.b64 %rd3, [%r3], %r4;
	shl.b32 	%r5, %r15, 9;
	add.s32 	%r6, %r2, %r5;
	shl.b32 	%r7, %r15, 2;
	mov.b32 	%r8, 0;
	mov.b16 	%rs1, MASK;
	cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%r6], [%rd2, {%r8, %r7}], [%r3], %rs1;
$L__b:
	mov.b32 	%r9, 0;
	{
	.reg .pred       P1;
	LAB_WAIT:
	mbarrier.try_wait.parity.shared.b64 P1, [%r3], %r9, 1000000;
	@P1 bra.uni DONE;
	bra.uni     LAB_WAIT;
	DONE:
	}
	shl.b32 	%r10, %r1, 4;
	add.s32 	%r11, %r2, %r10;
	ld.shared.v4.b32 	{%r10, %r11, %r12, %r13}, [%r11];
	mov.u32 	%r16, %ctaid.x;
	shl.b32 	%r17, %r16, 6;
	add.s32 	%r17, %r17, %r1;
	mul.wide.u32 	%rd4, %r17, 16;
	add.s64 	%rd5, %rd1, %rd4;
	st.global.v4.b32 	[%rd5], {%r10, %r11, %r12, %r13};
	@%p1 bra 	$L__c;
	xor.b32 	%r18, %r15, 1;
	cvt.u64.u32 	%rd6, %r14;
	mapa.shared::cluster.u64 	%rd7, %rd6, %r18;
	mbarrier.arrive.shared::cluster.b64 _, [%rd7];
	{
	.reg .pred       P1;
	LAB_WAIT:
	mbarrier.try_wait.parity.shared.b64 P1, [%r14], %r9, 1000000;
	@P1 bra.uni DONE;
	bra.uni     LAB_WAIT;
	DONE:
	}
$L__c:
	END
	ret;
}
)";
  auto variant = [&](const std::string &mask, const std::string &end) {
    return withHoles(ptx, {{"MASK", mask}, {"END", end}});
  };
  const std::string meet = "barrier.cluster.arrive;\n\tbarrier.cluster.wait;";
  Device dev;
  float *src = dev.alloc(256), *out = dev.alloc(512), *mapBytes = dev.alloc(32);
  for (int i = 0; i < 256; ++i)
    src[i] = float(i + 1);
  writeMap(mapBytes, src, 32, 8, 32, 4, /*swizzle128=*/false);
  std::string error;
  auto good = parsePtx(variant("3", meet), error);
  REQUIRE(good);
  CHECK(good->entries.at("c").cluster[0] == 2);
  REQUIRE(runKernel(good->entries.at("c"), launchOf(2, 64, {out, mapBytes}), error));
  CHECK(error.empty());
  int wrong = 0; // both blocks hold both halves: the whole tensor
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 256; ++i)
      wrong += out[b * 256 + i] != src[i];
  CHECK(wrong == 0);

  // Multicast to rank 0 alone: rank 1 waits for bytes that never come.
  auto alone = parsePtx(variant("1", meet), error);
  REQUIRE(alone);
  CHECK_FALSE(runKernel(alone->entries.at("c"), launchOf(2, 64, {out, mapBytes}), error));
  CHECK(error.find("deadlock in the cluster") != std::string::npos);
  // A grid that is no whole number of clusters is refused, as by the driver.
  error.clear();
  CHECK_FALSE(runKernel(good->entries.at("c"), launchOf(3, 64, {out, mapBytes}), error));
  CHECK(error.find("clusters") != std::string::npos);
}

TEST_CASE("ptx-emu completes a named barrier for part of the block", "[emu]") {
  // Warps 1 and 2 meet at barrier 1 (64 threads) while warp 0 has exited;
  // warp 2 reads what warp 1 wrote before it.
  std::string ptx = std::string(kHeader) + R"(
.visible .entry k(
	.param .u64 .ptr .align 1 k_param_0
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<3>;
	.shared .align 4 .b8 word[4];
	ld.param.b64 	%rd1, [k_param_0];
	mov.u32 	%r1, %tid.x;
	setp.lt.u32 	%p1, %r1, 32;
	@%p1 bra 	$L__end;
	setp.ne.b32 	%p1, %r1, 32;
	@%p1 bra 	$L__meet;
	mov.b32 	%r2, 5;
	st.shared.b32 	[word], %r2;
$L__meet:
	bar.sync 	1, 64;
	setp.ne.b32 	%p2, %r1, 64;
	@%p2 bra 	$L__end;
	ld.shared.b32 	%r3, [word];
	st.global.b32 	[%rd1], %r3;
$L__end:
	ret;
}
)";
  Device dev;
  float *out = dev.alloc(1);
  std::string error;
  auto m = parsePtx(ptx, error);
  REQUIRE(m);
  CHECK(runKernel(m->entries.at("k"), launchOf(1, 96, {out}), error));
  CHECK(error.empty());
  uint32_t bits;
  std::memcpy(&bits, out, 4);
  CHECK(bits == 5u);
}

TEST_CASE("ptx-emu's profile pairs each lane's accesses of one kind, zero-filled copies too",
          "[emu]") {
  // A cp.async executed twice by a warp, each lane storing 4 bytes into
  // its own bank; lanes 0-3 copy nothing from global memory (source size
  // 0: no global access). Counted per kind, the stores are 2 requests of 1
  // wavefront; with one count per instruction, the zero-filled lanes'
  // second store fell in with the other lanes' first reads.
  std::string error;
  auto mod = parsePtx(std::string(kHeader) + kScaleAndSum, error);
  REQUIRE(mod);
  const Entry &e = mod->entries.at("k");
  Profile p(e, 32);
  for (int run = 0; run < 2; ++run)
    for (unsigned t = 0; t < 32; ++t) {
      p.access(t, 0, /*shared=*/true, 4 * t + 128 * run, 4);
      if (t >= 4)
        p.access(t, 0, /*shared=*/false, 4096 + 4 * t + 128 * run, 4);
    }
  std::FILE *f = std::tmpfile();
  REQUIRE(f);
  p.report(launchOf(1, 32, {}), f);
  std::rewind(f);
  char line[512] = {0};
  REQUIRE(std::fgets(line, sizeof line, f));
  std::fclose(f);
  CHECK(std::string(line).find("shared: 2 requests, 2 wavefronts (conflict-free 2, 1.00x)") !=
        std::string::npos);
  CHECK(std::string(line).find("global: 2 requests") != std::string::npos);
}

TEST_CASE("ptx-emu runs a register-A wgmma and reports its fragment or accumulator written "
          "before wait_group",
          "[emu]") {
  // One warpgroup: B (8 n x 8 k of tf32 ones) in a swizzled shared tile,
  // A's fragments ones in registers, so each accumulator ends at 8. A
  // fragment may be read while its wgmma is in flight, not written.
  std::string ptx = R"(.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(
	.param .u64 .ptr .align 1 k_param_0
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<16>;
	.reg .f32 	%f<5>;
	.reg .b64 	%rd<8>;
	.shared .align 1024 .b8 tile[1024];
	ld.param.b64 	%rd1, [k_param_0];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, tile;
	shl.b32 	%r3, %r1, 3;
	add.s32 	%r3, %r2, %r3;
	mov.b32 	%r4, 1065353216;
	st.shared.b32 	[%r3], %r4;
	st.shared.b32 	[%r3+4], %r4;
	bar.sync 	0;
	fence.proxy.async.shared::cta;
	cvt.u64.u32 	%rd2, %r2;
	shr.u64 	%rd3, %rd2, 4;
	or.b64 	%rd4, %rd3, 4611686018427387904;
	mov.b32 	%r5, 1065353216;
	mov.b32 	%r6, 1065353216;
	mov.b32 	%r7, 1065353216;
	mov.b32 	%r8, 1065353216;
	mov.f32 	%f1, 0f00000000;
	mov.f32 	%f2, 0f00000000;
	mov.f32 	%f3, 0f00000000;
	mov.f32 	%f4, 0f00000000;
	setp.ne.b32 	%p1, %r1, 1000;
	wgmma.fence.sync.aligned;
	wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%f1, %f2, %f3, %f4}, {%r5, %r6, %r7, %r8}, %rd4, %p1, 1, 1;
	wgmma.commit_group.sync.aligned;
	BEFORE
	wgmma.wait_group.sync.aligned 0;
	AFTER
	mul.wide.u32 	%rd5, %r1, 4;
	add.s64 	%rd6, %rd1, %rd5;
	st.global.f32 	[%rd6], %f4;
	ret;
}
)";
  auto variant = [&](const std::string &before, const std::string &after) {
    return withHoles(ptx, {{"BEFORE", before}, {"AFTER", after}});
  };
  Device dev;
  float *out = dev.alloc(128);
  std::string error;
  auto run = [&](const std::string &text) {
    error.clear();
    auto m = parsePtx(text, error);
    REQUIRE(m);
    return runKernel(m->entries.at("k"), launchOf(1, 128, {out}), error);
  };
  // Reading a fragment in flight, then overwriting it once retired.
  CHECK(run(variant("add.s32 %r9, %r5, 1;", "mov.b32 %r5, 0;")));
  CHECK(error.empty());
  for (int i = 0; i < 128; ++i)
    CHECK(out[i] == 8.0f);

  CHECK_FALSE(run(variant("mov.b32 %r6, 0;", "")));
  CHECK(error.find("writes a wgmma's A fragment before wgmma.wait_group") != std::string::npos);

  CHECK_FALSE(run(variant("mov.f32 %f2, 0f00000000;", "")));
  CHECK(error.find("writes a wgmma accumulator before wgmma.wait_group") != std::string::npos);
}

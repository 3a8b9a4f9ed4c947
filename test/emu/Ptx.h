//===- Ptx.h - a PTX module, decoded for the emulator ------------*- C++ -*-===//
//
// The PTX the NVPTX back end writes for Kiln's kernels, parsed once into
// instructions with typed operands, so the interpreter (PtxExec.cpp) runs
// them without string work. Only what LLVM emits is accepted: an
// instruction outside it fails the load with its line, so a gap in the
// emulator is never a silent wrong answer.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_EMU_PTX_H
#define KILN_TEST_EMU_PTX_H

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln::emu {

enum class Ty : uint8_t {
  None, B8, B16, B32, B64, U8, U16, U32, U64, S8, S16, S32, S64,
  F16, BF16, F32, F64, Pred, F16x2, BF16x2, TF32
};
enum class Space : uint8_t { Generic, Global, Shared, Param, Local, Const };

enum class Op : uint8_t {
  Abs, Add, And, Bar, Bfe, Bfi, Bra, Brev, Clz, Copysign, Cos, CpAsync, CpCommit, CpWait,
  Cvt, Cvta, Div, Ex2, Exit, Fma, Ld, Ldmatrix, Lg2, Mad, Max, Min, Mma, Mov, Mul, Neg, Nop,
  Not, Or, Popc, Prmt, Rcp, Rem, Ret, Rsqrt, Selp, Setp, Shfl, Shl, Shr, Sin, Sqrt, St, Sub,
  Tanh, Testp, Wgmma, WgWait, Xor, Call, Shf,
  MbarInit, MbarArrive, MbarWait, CpMbarArrive, // mbarrier.init/arrive/try_wait.parity
  WgCommit,
  CpBulkTensor, // cp.async.bulk.tensor (TMA): a box of a tensor map into shared memory
  Mapa,         // mapa.shared::cluster: a shared address in another block of the cluster
  ClusterArrive, ClusterWait // barrier.cluster.arrive / wait
};

/// The emulator's CUtensorMap (cuTensorMapEncodeTiled writes it into the
/// caller's 128 bytes; cp.async.bulk.tensor reads it from device memory).
struct TensorMap {
  static constexpr uint64_t kMagic = 0x6b696c6e746d6170ull; // "kilntmap"
  uint64_t magic;
  uint64_t global;     // the tensor's address
  uint64_t dims[5];    // innermost first
  uint64_t strides[5]; // bytes; strides[0] is the element's size
  uint32_t box[5];
  uint8_t rank, swizzle; // swizzle: CUtensorMapSwizzle (0 none, 3 128 bytes)
};
static_assert(sizeof(TensorMap) <= 128, "a CUtensorMap is 128 bytes");

/// Special registers.
enum class Sreg : uint8_t { TidX, TidY, TidZ, NtidX, NtidY, NtidZ, CtaX, CtaY, CtaZ,
                            NctaX, NctaY, NctaZ, Lane, Warp, ClusterRank, ClusterSize };

/// A shared::cluster address of block `rank` of the cluster (mapa's
/// result): the rank + 1 above the offset. Offsets alone are the block's
/// own (a shared::cta address is a shared::cluster one).
constexpr unsigned kClusterRankShift = 56;

struct Operand {
  enum Kind : uint8_t { None, Reg, Imm, Addr, Vec, Special, Label, Local };
  Kind kind = None;
  bool neg = false;   // !%p as a predicate source
  int32_t reg = -1;   // Reg; Addr's base register (-1: none)
  int32_t reg2 = -1;  // d|p: the predicate written beside d
  int64_t imm = 0;    // Imm; Addr's offset; Label's instruction index; Special's Sreg
  std::vector<Operand> elems; // Vec
};

struct Inst {
  Op op = Op::Nop;
  Ty ty = Ty::None;  // the instruction's type (destination type for cvt)
  Ty ty2 = Ty::None; // cvt's source type; mma/wgmma's A/B type
  Space space = Space::Generic;
  uint8_t vec = 1;   // ld/st .v2/.v4; ldmatrix .x1/.x2/.x4
  uint8_t mode = 0;  // setp comparison, shfl mode, mul lo/hi/wide, rounding...
  uint8_t mode2 = 0; // setp's .and/.or combining; bar/shfl variants
  bool sat = false, ftz = false, trans = false, approx = false;
  bool cc = false, carryIn = false; // .cc writes the carry; addc/subc/madc read it
  uint16_t m = 0, n = 0, k = 0; // mma/wgmma shape
  int32_t pred = -1;            // guard predicate register
  bool predNeg = false;
  std::vector<Operand> ops;
  int line = 0;
  const struct Entry *callee = nullptr; // call
  // A call of the device runtime's heap (no callee): 1 malloc, 2 free.
  uint8_t heapCall = 0;
};

struct Param {
  std::string name;
  uint32_t offset, size;
};

struct Entry {
  std::string name;
  std::vector<Param> params;
  uint32_t paramBytes = 0;   // the .param list (a kernel's launch arguments)
  int32_t retOffset = -1;    // a function's return value, after its parameters
  uint32_t retSize = 0;
  uint32_t frameBytes = 0;   // parameters, return value and call-site .params
  uint32_t staticShared = 0; // bytes of .shared variables
  uint32_t dynamicAlign = 16; // where dynamic shared memory starts
  uint32_t localBytes = 0;
  unsigned cluster[3] = {1, 1, 1}; // .reqnctapercluster: blocks a cluster
  int numRegs = 0;
  std::vector<Inst> code;
};

struct Module {
  std::map<std::string, Entry> entries;
  std::map<std::string, Entry> functions; // .func, reached by call
  // .global variables (constants the kernels read), owned here: their
  // addresses are host addresses, as device pointers are.
  std::vector<std::unique_ptr<std::vector<uint8_t>>> globals;
  std::vector<uint64_t> globalAddresses; // registered as device memory
};

/// Parses PTX text; null with `error` (line and text) when some part is
/// outside what the emulator runs.
std::unique_ptr<Module> parsePtx(const std::string &text, std::string &error);

struct Launch {
  unsigned grid[3], block[3];
  unsigned dynamicShared;
  std::vector<uint8_t> params; // laid out as the entry's .param list
};

/// Device memory the kernels may touch (the driver's allocations, the
/// modules' .global variables): any other global access is a fault.
void addDeviceMemory(uint64_t base, uint64_t bytes);
void removeDeviceMemory(uint64_t base);

/// Runs every block of the grid; false with `error` on a fault (an
/// unsupported operation, a deadlock at a barrier, an out-of-range shared
/// access).
bool runKernel(const Entry &entry, const Launch &launch, std::string &error);

} // namespace kiln::emu

#endif // KILN_TEST_EMU_PTX_H

//===- PtxAlu.h - PTX's arithmetic on one element ----------------*- C++ -*-===//
//
// Registers hold raw bits (up to 64); these read them as the instruction's
// type and compute as PTX defines: integer widths wrap, shifts clamp,
// float results round to the destination type (directed roundings from an
// exact-enough double), cvt saturates float-to-integer conversions.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_EMU_PTXALU_H
#define KILN_TEST_EMU_PTXALU_H

#include "Ptx.h"

#include <cstdint>

namespace kiln::emu {

bool isFloat(Ty t);
bool isSigned(Ty t);
int bitsOf(Ty t);
uint64_t mask(int bits);
int64_t sext(uint64_t v, int bits);
/// A float value of type t (f16, bf16, f32, f64; tf32 is f32 bits).
double toDouble(Ty t, uint64_t v);
uint64_t fromDouble(Ty t, double d, int rounding = 1);

/// add/sub/mul/div/rem/min/max/logic/shifts/copysign of one element;
/// `mode` is mul's lo/hi/wide or min/max's NaN propagation, `rounding`
/// the float rounding (1 nearest, 2 zero, 3 down, 4 up). False when the
/// operation is not one of these.
bool binary(Op op, Ty ty, uint64_t a, uint64_t b, uint64_t &d, int mode, int rounding);
/// setp's comparison `cmp` (PtxParse.cpp's codes: eq ne lt le gt ge, the
/// unordered forms, num, nan).
bool compare(int cmp, Ty ty, uint64_t a, uint64_t b);
/// cvt from `from` to `to` with cvt's rounding code and .sat.
uint64_t convert(Ty to, Ty from, uint64_t v, int rounding, bool sat);

} // namespace kiln::emu

#endif // KILN_TEST_EMU_PTXALU_H

//===- Int8Reductions.cpp - the 8-bit register tiles' reductions ----------===//
//
// See Int8Reductions.h. Both step k by 4 (A's 4 bytes of a row are one
// 32-bit word, broadcast to every lane once per row and step).
//
//===----------------------------------------------------------------------===//

#include "Int8Reductions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace kiln {
namespace {

Value index(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// The loop over groups of 4 k, the builder in its body (the caller's
/// guard restores it).
scf::ForOp loopOverGroupsOf4(OpBuilder &b, Location loc, const Int8Reduction &r,
                             ValueRange init) {
  Value kGroups = arith::DivUIOp::create(b, loc, r.kSize, index(b, loc, 4));
  auto kLoop = scf::ForOp::create(b, loc, index(b, loc, 0), kGroups, index(b, loc, 1), init);
  b.setInsertionPointToStart(kLoop.getBody());
  return kLoop;
}

/// Row i's 32 bits at k (4 bytes, or an i16 pair of A widened by
/// kiln-widen-int8-rows) as one word in every lane, viewed as elements of
/// A's type: vpdpbusd's bytes, vpmaddwd's pair as it is.
Value wordOfA(OpBuilder &b, Location loc, const Int8Reduction &r, int64_t i, Value k) {
  Type element = cast<ShapedType>(r.a.getType()).getElementType();
  int64_t perWord = 32 / element.getIntOrFloatBitWidth();
  Value w = vector::LoadOp::create(b, loc, VectorType::get({perWord}, element), r.a, r.aAt(i, k));
  Value lane = vector::ExtractOp::create(
      b, loc, vector::BitCastOp::create(b, loc, VectorType::get({1}, b.getI32Type()), w),
      ArrayRef<int64_t>{0});
  return vector::BitCastOp::create(b, loc, VectorType::get({perWord * r.width}, element),
                                   vector::BroadcastOp::create(b, loc, r.acc, lane));
}

Value intrinsic(OpBuilder &b, Location loc, Type type, StringRef name, ValueRange args) {
  return LLVM::CallIntrinsicOp::create(b, loc, type, b.getStringAttr(name), args).getResult(0);
}

} // namespace

// 64 multiply-adds an instruction on AVX-512, 4x the f32 FMA's. On AVX2
// (B in fours: 7-bit weights, exact; or --int8-arith=saturate) vpmaddubsw
// sums each lane's two byte products into an i16, saturated as
// onnxruntime's MLAS kernels do there, then
// vpmaddwd by ones adds the pairs into i32: 32 multiply-adds in 3 vector
// instructions, against 4 for vpmaddwd's exact pairs.
SmallVector<Value> emitVnniReduction(OpBuilder &b, Location loc, const Int8Reduction &r,
                                     int64_t rows, ArrayRef<Value> panels, ValueRange init) {
  int64_t NV = panels.size();
  auto bytes = VectorType::get({4 * r.width}, b.getI8Type());
  OpBuilder::InsertionGuard g(b);
  scf::ForOp kLoop = loopOverGroupsOf4(b, loc, r, init);
  Value kg = kLoop.getInductionVar();
  Value k = arith::MulIOp::create(b, loc, kg, index(b, loc, 4));
  SmallVector<Value> acc(kLoop.getRegionIterArgs()), bv;
  for (Value panel : panels)
    bv.push_back(
        vector::LoadOp::create(b, loc, bytes, r.panelRows, ValueRange{panel, kg, index(b, loc, 0)}));
  bool avx2 = r.width == 8;
  auto words = VectorType::get({2 * r.width}, b.getI16Type());
  Value ones;
  if (avx2)
    ones = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(words, b.getI16IntegerAttr(1)));
  for (int64_t i = 0; i < rows; ++i) {
    Value ai = wordOfA(b, loc, r, i, k);
    for (int64_t j = 0; j < NV; ++j) {
      if (avx2) {
        Value pairs = intrinsic(b, loc, words, "llvm.x86.avx2.pmadd.ub.sw", ValueRange{ai, bv[j]});
        Value sums = intrinsic(b, loc, r.acc, "llvm.x86.avx2.pmadd.wd", ValueRange{pairs, ones});
        acc[i * NV + j] = arith::AddIOp::create(b, loc, acc[i * NV + j], sums);
        continue;
      }
      acc[i * NV + j] = intrinsic(b, loc, r.acc, "llvm.x86.avx512.vpdpbusd.512",
                                  ValueRange{acc[i * NV + j], ai, bv[j]});
    }
  }
  scf::YieldOp::create(b, loc, acc);
  return SmallVector<Value>(kLoop.getResults());
}

// A's word split by vpshufb into two vectors of zero-extended i16 pairs
// (k, k+1 and k+2, k+3 in every 32-bit lane), or, A held as i16
// (kiln-widen-int8-rows), each pair broadcast as it is; B's pair rows sign-extended
// by vpmovsxbw. vpmaddwd's i32 sums are exact (at most 2 x 255 x 128 in
// magnitude; vpmaddubsw, onnxruntime's, saturates i16), 16 multiply-adds
// in two instructions, which run on all four of Zen's vector pipes where
// the f32 FMA has two: measured on a Zen 3 core in registers, 1.45x the
// FMA's multiply-adds a second.
SmallVector<Value> emitPairReduction(OpBuilder &b, Location loc, const Int8Reduction &r,
                                     int64_t rows, ArrayRef<Value> panels, ValueRange init) {
  int64_t NV = panels.size();
  Type i8 = b.getI8Type(), i16 = b.getI16Type();
  auto pairBytes = VectorType::get({2 * r.width}, i8);
  auto pairs = VectorType::get({2 * r.width}, i16);
  auto wordBytes = VectorType::get({4 * r.width}, i8);
  // vpshufb's selectors (per 128-bit half): bytes 0, 1 (or 2, 3) of each
  // word into the low bytes of two i16, 0x80 zeroing their high bytes.
  SmallVector<Value> selectors;
  for (int64_t p = 0; p < 2; ++p) {
    SmallVector<int8_t> sel;
    for (int64_t l = 0; l < 4 * r.width; l += 2)
      sel.append({int8_t(2 * p + (l / 2) % 2), int8_t(-128)});
    selectors.push_back(
        arith::ConstantOp::create(b, loc, DenseElementsAttr::get(wordBytes, ArrayRef(sel))));
  }
  OpBuilder::InsertionGuard g(b);
  scf::ForOp kLoop = loopOverGroupsOf4(b, loc, r, init);
  Value kg = kLoop.getInductionVar();
  Value k = arith::MulIOp::create(b, loc, kg, index(b, loc, 4));
  SmallVector<Value> acc(kLoop.getRegionIterArgs()), bv; // bv[j * 2 + pair]
  for (Value panel : panels) {
    for (int64_t p = 0; p < 2; ++p) {
      Value row = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, kg, index(b, loc, 2)), index(b, loc, p));
      Value raw = vector::LoadOp::create(b, loc, pairBytes, r.panelRows,
                                         ValueRange{panel, row, index(b, loc, 0)});
      bv.push_back(arith::ExtSIOp::create(b, loc, pairs, raw));
    }
  }
  bool wide = cast<ShapedType>(r.a.getType()).getElementType().isInteger(16);
  for (int64_t i = 0; i < rows; ++i) {
    Value words = wide ? Value() : wordOfA(b, loc, r, i, k);
    for (int64_t p = 0; p < 2; ++p) {
      Value ai =
          wide ? wordOfA(b, loc, r, i, p ? arith::AddIOp::create(b, loc, k, index(b, loc, 2)) : k)
               : vector::BitCastOp::create(b, loc, pairs,
                                           intrinsic(b, loc, wordBytes, "llvm.x86.avx2.pshuf.b",
                                                     ValueRange{words, selectors[p]}));
      for (int64_t j = 0; j < NV; ++j) {
        Value sums = intrinsic(b, loc, r.acc, "llvm.x86.avx2.pmadd.wd", ValueRange{ai, bv[j * 2 + p]});
        acc[i * NV + j] = arith::AddIOp::create(b, loc, acc[i * NV + j], sums);
      }
    }
  }
  scf::YieldOp::create(b, loc, acc);
  return SmallVector<Value>(kLoop.getResults());
}

} // namespace kiln

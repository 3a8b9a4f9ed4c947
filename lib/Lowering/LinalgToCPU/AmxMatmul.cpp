//===- AmxMatmul.cpp - 8-bit row matmul blocks on AMX tiles ---------------===//

#include "AmxMatmul.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;

namespace kiln {

void emitAmxBlock(OpBuilder &b, Location loc, const AmxOperands &ops, int64_t rows, int64_t columns,
                  llvm::function_ref<Value(int64_t)> panelOf,
                  llvm::function_ref<SmallVector<Value>(int64_t, Value)> aAt,
                  llvm::function_ref<void(int64_t, int64_t, Value)> finish) {
  Type i8 = b.getI8Type(), i32 = b.getI32Type();
  auto index = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
  // The buffer the tiles pass through, at the start of the innermost
  // loop's body (kiln-outline-kernels releases the stack of such bodies'
  // allocas each iteration) or of the function: not under a branch inside
  // a loop, whose alloca would grow the stack every time.
  Value buffer;
  {
    OpBuilder::InsertionGuard g(b);
    Block *block = b.getInsertionBlock();
    while (!isa<scf::ForOp, scf::ParallelOp, FunctionOpInterface>(block->getParentOp()))
      block = block->getParentOp()->getBlock();
    b.setInsertionPointToStart(block);
    buffer = memref::AllocaOp::create(b, loc, MemRefType::get({16, 16 * kAmxColumnTiles}, i32),
                                      b.getI64IntegerAttr(64));
  }
  Value stride = index(ops.aRowStride);
  int64_t fullK = ops.K / 64 * 64, restK = ops.K - fullK;
  auto vec = VectorType::get({16}, i32);
  for (int64_t r0 = 0; r0 < rows; r0 += 16)
    for (int64_t c0 = 0; c0 < columns; c0 += kAmxColumnTiles) {
      int64_t R = std::min<int64_t>(16, rows - r0), nc = std::min(kAmxColumnTiles, columns - c0);
      SmallVector<Value> acc;
      for (int64_t c = 0; c < nc; ++c)
        acc.push_back(amx::TileZeroOp::create(b, loc, amx::TileType::get({R, 16}, i32)));
      // One step of `kBytes` k from k: A's rows' bytes, B's k groups.
      auto step = [&](Value k, Value kg, int64_t kBytes, ValueRange in) {
        Value aTile = amx::TileLoadOp::create(b, loc, amx::TileType::get({R, kBytes}, i8), ops.a,
                                              aAt(r0, k), stride);
        SmallVector<Value> out;
        for (int64_t c = 0; c < nc; ++c) {
          Value bTile = amx::TileLoadOp::create(b, loc, amx::TileType::get({kBytes / 4, 64}, i8),
                                                ops.panelRows,
                                                ValueRange{panelOf(c0 + c), kg, index(0)});
          out.push_back(amx::TileMulIOp::create(b, loc, in[c].getType(), aTile, bTile, in[c],
                                                /*isZextLhs=*/true, /*isZextRhs=*/false));
        }
        return out;
      };
      if (fullK) {
        auto loop = scf::ForOp::create(b, loc, index(0), index(fullK), index(64), acc);
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPointToStart(loop.getBody());
        Value k = loop.getInductionVar();
        Value kg = arith::DivUIOp::create(b, loc, k, index(4));
        scf::YieldOp::create(b, loc, step(k, kg, 64, loop.getRegionIterArgs()));
        acc.assign(loop.getResults().begin(), loop.getResults().end());
      }
      if (restK)
        acc = step(index(fullK), index(fullK / 4), restK, acc);
      for (int64_t c = 0; c < nc; ++c)
        amx::TileStoreOp::create(b, loc, buffer, ValueRange{index(0), index(16 * c)}, acc[c]);
      for (int64_t i = 0; i < R; ++i)
        for (int64_t c = 0; c < nc; ++c)
          finish(r0 + i, c0 + c,
                 vector::LoadOp::create(b, loc, vec, buffer, ValueRange{index(i), index(16 * c)}));
    }
}

} // namespace kiln

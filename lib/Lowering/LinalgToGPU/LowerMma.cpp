//===- LowerMma.cpp - kiln-gpu-lower-mma pass -----------------------------===//

#include "kiln/Lowering/Passes.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"

#include "mlir/Conversion/VectorToGPU/VectorToGPU.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/NVGPU/Transforms/Transforms.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNGPULOWERMMA
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// nvgpu.mma.sync m16n8k16 on f16-typed fragments (A 4x2, B 2x2, C 2x2
/// f32) as PTX's bf16 mma.sync: each fragment row is one 32-bit register.
LogicalResult lowerBf16MmaSync(nvgpu::MmaSyncOp mma) {
  auto aType = cast<VectorType>(mma.getMatrixA().getType());
  auto bType = cast<VectorType>(mma.getMatrixB().getType());
  auto cType = cast<VectorType>(mma.getMatrixC().getType());
  auto shape = mma.getMmaShapeAsArray();
  if (ArrayRef<int64_t>(shape) != ArrayRef<int64_t>{16, 8, 16} || aType.getShape() != ArrayRef<int64_t>{4, 2} ||
      bType.getShape() != ArrayRef<int64_t>{2, 2} || cType.getShape() != ArrayRef<int64_t>{2, 2} ||
      !cType.getElementType().isF32())
    return mma.emitError("a bf16 tensor-core step other than m16n8k16 with f32 accumulators");
  OpBuilder b(mma);
  Location loc = mma.getLoc();
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  SmallVector<Value> operands;
  auto registers = [&](Value fragment, int64_t rows) {
    for (int64_t r = 0; r < rows; ++r) {
      Value row = vector::ExtractOp::create(b, loc, fragment, ArrayRef<int64_t>{r});
      Value word = vector::BitCastOp::create(b, loc, VectorType::get({1}, i32), row);
      operands.push_back(vector::ExtractOp::create(b, loc, word, ArrayRef<int64_t>{0}));
    }
  };
  registers(mma.getMatrixA(), 4);
  registers(mma.getMatrixB(), 2);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 2; ++c)
      operands.push_back(vector::ExtractOp::create(b, loc, mma.getMatrixC(), ArrayRef<int64_t>{r, c}));
  auto resultType = LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
  auto asm_ = LLVM::InlineAsmOp::create(
      b, loc, resultType, operands,
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {$0, $1, $2, $3}, "
      "{$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};",
      "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", /*has_side_effects=*/false,
      /*is_align_stack=*/false, LLVM::TailCallKind::None, LLVM::AsmDialectAttr(),
      /*operand_attrs=*/ArrayAttr());
  SmallVector<Value> results;
  for (int64_t i = 0; i < 4; ++i)
    results.push_back(LLVM::ExtractValueOp::create(b, loc, asm_.getResult(0), i));
  Value d = vector::FromElementsOp::create(b, loc, cType, results);
  mma.getResult().replaceAllUsesWith(d);
  mma.erase();
  return success();
}

/// The f32 operands of tf32 mma.syncs rounded to tf32 (cvt.rna), each
/// fragment once however many products read it: the tensor cores read
/// only an f32's top 19 bits, which truncates toward zero, and a sum of
/// truncated products drifts (a convolution feeding a training-mode
/// BatchNorm lost 7% on its weight gradient).
void roundTf32Operands(gpu::GPUFuncOp fn) {
  DenseMap<Value, Value> rounded;
  fn.walk([&](nvgpu::MmaSyncOp mma) {
    if (!mma.getTf32Enabled())
      return;
    for (OpOperand *operand : {&mma->getOpOperand(0), &mma->getOpOperand(1)}) {
      Value v = operand->get();
      Value &r = rounded[v];
      if (!r) {
        OpBuilder b(v.getContext());
        b.setInsertionPointAfterValue(v);
        Location loc = mma.getLoc();
        auto type = cast<VectorType>(v.getType());
        Value acc = v;
        for (int64_t i = 0; i < type.getNumElements(); ++i) {
          SmallVector<int64_t> at = delinearize(i, computeStrides(type.getShape()));
          Value x = vector::ExtractOp::create(b, loc, v, at);
          Value t = NVVM::ConvertFloatToTF32Op::create(b, loc, b.getI32Type(), x,
                                                       NVVM::FPRoundingMode::RNA,
                                                       NVVM::SaturationMode::NONE, false);
          Value f = LLVM::BitcastOp::create(b, loc, b.getF32Type(), t);
          acc = vector::InsertOp::create(b, loc, f, acc, at);
        }
        r = acc;
      }
      operand->set(r);
    }
  });
}

/// The kernel's index products (a dynamic buffer's strides, from
/// kiln-split-dynamic-args) as affine.apply: upstream's conversion counts
/// arith.muli among the elementwise ops of MMA matrices and fails on it
/// ("unhandled vector to mma type"), though it computes only addresses.
void indexProductsAsAffine(gpu::GPUFuncOp fn) {
  SmallVector<arith::MulIOp> products;
  fn.walk([&](arith::MulIOp mul) {
    if (mul.getType().isIndex())
      products.push_back(mul);
  });
  for (arith::MulIOp mul : products) {
    OpBuilder b(mul);
    AffineExpr s0, s1;
    bindSymbols(b.getContext(), s0, s1);
    Value product = affine::AffineApplyOp::create(b, mul.getLoc(), AffineMap::get(0, 2, s0 * s1),
                                                  ValueRange{mul.getLhs(), mul.getRhs()});
    mul.replaceAllUsesWith(product);
    mul.erase();
  }
}

struct KilnGpuLowerMmaPass final : impl::KilnGpuLowerMmaBase<KilnGpuLowerMmaPass> {
  void runOnOperation() override {
    SmallVector<gpu::GPUFuncOp> kernels;
    for (auto fn : getOperation().getOps<gpu::GPUFuncOp>())
      if (fn->hasAttr(KilnDialect::getMmaAttrName()))
        kernels.push_back(fn);
    for (gpu::GPUFuncOp fn : kernels) {
      indexProductsAsAffine(fn);
      RewritePatternSet prepare(&getContext());
      populatePrepareVectorToMMAPatterns(prepare, /*useNvGpu=*/true);
      if (failed(applyPatternsGreedily(fn, std::move(prepare))))
        return signalPassFailure();
      IRRewriter rewriter(&getContext());
      if (failed(convertVectorToNVVMCompatibleMMASync(rewriter, fn)))
        return signalPassFailure();
      // bf16 kernels were built on f16 views of their tiles (upstream's
      // fragment loads know no bf16, and neither does its mma.sync lowering):
      // the same registers go to a bf16 mma.sync (the fragment layouts of
      // m16n8k16 are the same for both types).
      if (fn->hasAttr(KilnDialect::getMmaBf16AttrName())) {
        SmallVector<nvgpu::MmaSyncOp> mmas;
        fn.walk([&](nvgpu::MmaSyncOp mma) { mmas.push_back(mma); });
        for (nvgpu::MmaSyncOp mma : mmas)
          if (failed(lowerBf16MmaSync(mma)))
            return signalPassFailure();
        fn->removeAttr(KilnDialect::getMmaBf16AttrName());
      }
      RewritePatternSet tf32(&getContext());
      nvgpu::populateMmaSyncF32ToTF32Patterns(tf32, nvgpu::MmaSyncF32Lowering::TF32);
      if (failed(applyPatternsGreedily(fn, std::move(tf32))))
        return signalPassFailure();
      roundTf32Operands(fn);
      // Each lane's accumulator fragments are 2 consecutive f32 at an even
      // column of a row whose length is a multiple of 8 (the tiles): 8-byte
      // aligned, so st.global.v2 rather than two scalar stores.
      fn.walk([](Operation *op) {
        auto setAlign = [](auto access) {
          if (access.getVectorType().getNumElements() == 2 &&
              access.getVectorType().getElementType().isF32() && !access.getAlignment())
            access.setAlignment(uint64_t(8));
        };
        if (auto load = dyn_cast<vector::LoadOp>(op))
          setAlign(load);
        else if (auto store = dyn_cast<vector::StoreOp>(op))
          setAlign(store);
      });
      fn->removeAttr(KilnDialect::getMmaAttrName());
    }
  }
};

} // namespace
} // namespace kiln

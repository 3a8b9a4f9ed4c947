//===- LowerMma.cpp - kiln-gpu-lower-mma pass -----------------------------===//

#include "kiln/Lowering/Passes.h"

#include "mlir/Conversion/VectorToGPU/VectorToGPU.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/NVGPU/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNGPULOWERMMA
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct KilnGpuLowerMmaPass final : impl::KilnGpuLowerMmaBase<KilnGpuLowerMmaPass> {
  void runOnOperation() override {
    SmallVector<gpu::GPUFuncOp> kernels;
    for (auto fn : getOperation().getOps<gpu::GPUFuncOp>())
      if (fn->hasAttr("kiln.mma"))
        kernels.push_back(fn);
    for (gpu::GPUFuncOp fn : kernels) {
      RewritePatternSet prepare(&getContext());
      populatePrepareVectorToMMAPatterns(prepare, /*useNvGpu=*/true);
      if (failed(applyPatternsGreedily(fn, std::move(prepare))))
        return signalPassFailure();
      IRRewriter rewriter(&getContext());
      if (failed(convertVectorToNVVMCompatibleMMASync(rewriter, fn)))
        return signalPassFailure();
      RewritePatternSet tf32(&getContext());
      nvgpu::populateMmaSyncF32ToTF32Patterns(tf32, nvgpu::MmaSyncF32Lowering::TF32);
      if (failed(applyPatternsGreedily(fn, std::move(tf32))))
        return signalPassFailure();
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
      fn->removeAttr("kiln.mma");
    }
  }
};

} // namespace
} // namespace kiln

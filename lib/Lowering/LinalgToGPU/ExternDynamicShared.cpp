//===- ExternDynamicShared.cpp - kiln-gpu-extern-dynamic-shared pass ------===//

#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace kiln {
#define GEN_PASS_DEF_KILNGPUEXTERNDYNAMICSHARED
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct KilnGpuExternDynamicSharedPass final
    : impl::KilnGpuExternDynamicSharedBase<KilnGpuExternDynamicSharedPass> {
  void runOnOperation() override {
    for (auto global : getOperation().getOps<LLVM::GlobalOp>()) {
      auto array = dyn_cast<LLVM::LLVMArrayType>(global.getGlobalType());
      if (!global.getSymName().starts_with("__dynamic_shmem__") || global.getAddrSpace() != 3 ||
          !array || array.getNumElements() != 0)
        continue;
      global.setLinkage(LLVM::Linkage::External);
      global.setAlignment(1024);
    }
  }
};

} // namespace
} // namespace kiln

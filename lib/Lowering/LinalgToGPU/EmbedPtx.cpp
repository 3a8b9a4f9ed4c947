//===- EmbedPtx.cpp - kiln-embed-ptx pass ---------------------------------===//

#include "kiln/Lowering/Passes.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace kiln {
#define GEN_PASS_DEF_KILNEMBEDPTX
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct KilnEmbedPtxPass final : impl::KilnEmbedPtxBase<KilnEmbedPtxPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::BinaryOp> binaries(module.getOps<gpu::BinaryOp>());
    if (binaries.size() > 1) {
      binaries[1].emitError("expected one gpu.binary (one module of kernels)");
      return signalPassFailure();
    }
    if (binaries.empty())
      return;
    gpu::BinaryOp binary = binaries.front();
    auto objects = binary.getObjects();
    auto object = objects.size() == 1 ? dyn_cast<gpu::ObjectAttr>(objects[0]) : nullptr;
    if (!object || object.getFormat() != gpu::CompilationTarget::Assembly) {
      binary.emitError("expected one PTX object (gpu-module-to-binary{format=isa})");
      return signalPassFailure();
    }
    module->setAttr(KilnDialect::getPtxAttrName(), object.getObject());
    binary.erase();
    module->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
  }
};

} // namespace
} // namespace kiln

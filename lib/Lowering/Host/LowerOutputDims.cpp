//===- LowerOutputDims.cpp - kiln-lower-output-dims: the sizes' slice as host code ===//
//
// On CUDA, @main becomes kernels and a launching host program, but
// @__kiln_output_dims runs on the host, on the inputs' data, before the
// run. This pass moves it into a module of its own nested in this one,
// lowers it there as plain host code (bufferized, linalg as loops, then
// the host's LLVM conversions), and moves the LLVM functions and globals
// back, renamed where they would clash; kiln-emit-entry exports it as the
// CPU's is.
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Host/HostToLLVM.h"
#include "kiln/Lowering/OutputDims.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"

namespace kiln {
#define GEN_PASS_DEF_KILNLOWEROUTPUTDIMS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Host code on buffers, then the LLVM dialect.
void buildSidePipeline(OpPassManager &pm) {
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion = bufferization::LayoutMapOption::IdentityLayoutMap;
  bufferize.allowReturnAllocsFromLoops = true;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  bufferization::buildBufferDeallocationPipeline(pm);
  // Copies as loops: memref.copy would call a runtime library the artifact
  // does not link.
  pm.addNestedPass<func::FuncOp>(createKilnCopyToLinalg());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  addHostToLLVM(pm);
}

struct KilnLowerOutputDimsPass final : impl::KilnLowerOutputDimsBase<KilnLowerOutputDimsPass> {
  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    OpPassManager pm(ModuleOp::getOperationName());
    buildSidePipeline(pm);
    pm.getDependentDialects(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fn = module.lookupSymbol<func::FuncOp>(kOutputDimsFunctionName);
    if (!fn)
      return;
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    auto side = ModuleOp::create(b, fn.getLoc());
    fn->moveBefore(side.getBody(), side.getBody()->end());

    OpPassManager pm(ModuleOp::getOperationName());
    buildSidePipeline(pm);
    if (failed(runPipeline(pm, side)))
      return signalPassFailure();

    // Back into this module: what it already declares (malloc, free) once,
    // the rest under names of their own.
    SymbolTable table(module);
    SmallVector<Operation *> ops;
    for (Operation &op : *side.getBody())
      ops.push_back(&op);
    for (Operation *op : ops) {
      auto symbol = dyn_cast<SymbolOpInterface>(op);
      if (symbol && symbol.getName() != kOutputDimsFunctionName &&
          table.lookup(symbol.getName())) {
        auto external = dyn_cast<LLVM::LLVMFuncOp>(op);
        if (external && external.isExternal())
          continue;
        std::string renamed = ("__kiln_od_" + symbol.getName()).str();
        if (failed(SymbolTable::replaceAllSymbolUses(op, StringAttr::get(&getContext(), renamed),
                                                     side)))
          return signalPassFailure();
        symbol.setName(renamed);
      }
    }
    for (Operation *op : ops) {
      auto external = dyn_cast<LLVM::LLVMFuncOp>(op);
      if (external && external.isExternal() && table.lookup(external.getName()))
        continue;
      op->moveBefore(module.getBody(), Block::iterator(side));
    }
    side.erase();
  }
};

} // namespace
} // namespace kiln

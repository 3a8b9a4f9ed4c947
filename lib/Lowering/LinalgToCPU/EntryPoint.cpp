//===- EntryPoint.cpp - the artifact's uniform C entry point --------------===//
//
// kiln-privatize-entry:  func.func @main  => func.func private @main
// kiln-emit-entry:       llvm.func @main(ptr x N) =>
//   llvm.func @kiln_model_run(%buffers: !llvm.ptr) -> i32 {
//     %p_i = load buffers[i] ...; llvm.call @main(%p_0, ...); return 0 }
//
//===----------------------------------------------------------------------===//

#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace kiln {
#define GEN_PASS_DEF_KILNPRIVATIZEENTRY
#define GEN_PASS_DEF_KILNEMITENTRY
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct KilnPrivatizeEntryPass final
    : impl::KilnPrivatizeEntryBase<KilnPrivatizeEntryPass> {
  void runOnOperation() override {
    auto f = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!f)
      return;
    f.setPrivate();
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      f.removeArgAttr(i, "kiln.name");
    for (unsigned i = 0; i < f.getNumResults(); ++i)
      f.removeResultAttr(i, StringAttr::get(&getContext(), "kiln.name"));
  }
};

struct KilnEmitEntryPass final : impl::KilnEmitEntryBase<KilnEmitEntryPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<LLVM::LLVMFuncOp>("main");
    if (!main) {
      module.emitError("no llvm.func @main to wrap (run after convert-func-to-llvm)");
      return signalPassFailure();
    }
    auto fnType = main.getFunctionType();
    if (!isa<LLVM::LLVMVoidType>(fnType.getReturnType()) ||
        llvm::any_of(fnType.getParams(), [](Type t) { return !isa<LLVM::LLVMPointerType>(t); })) {
      main.emitError("@main must take only buffer pointers and return nothing "
                     "(bare-pointer calling convention, outputs as out-params)");
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    Location loc = main.getLoc();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i32 = IntegerType::get(ctx, 32);
    auto entry = LLVM::LLVMFuncOp::create(b, loc, "kiln_model_run",
                                          LLVM::LLVMFunctionType::get(i32, {ptr}));
    Block *body = entry.addEntryBlock(b);
    b.setInsertionPointToStart(body);
    SmallVector<Value> args;
    for (unsigned i = 0; i < fnType.getNumParams(); ++i) {
      Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, body->getArgument(0),
                                       ArrayRef<LLVM::GEPArg>{(int32_t)i});
      args.push_back(LLVM::LoadOp::create(b, loc, ptr, slot));
    }
    LLVM::CallOp::create(b, loc, main, args);
    Value zero = LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(0));
    LLVM::ReturnOp::create(b, loc, zero);
    main.setLinkage(LLVM::Linkage::Internal);
  }
};

} // namespace
} // namespace kiln

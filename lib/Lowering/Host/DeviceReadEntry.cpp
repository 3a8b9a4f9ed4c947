//===- DeviceReadEntry.cpp - the body of @__kiln_device_read --------------===//
//
//   llvm.func @__kiln_device_read(%address: i64) -> i64 {
//     %bits = 0
//     if (__kiln_status == 0 && __kiln_host && host->read) {
//       status = host->read(host->device, &%bits, %address, 8)
//       if (status) __kiln_status = status
//     } else if (__kiln_status == 0) __kiln_status = 1
//     return %bits }
// A failed run reads 0: a Loop's condition is then false and the host
// program runs to its end, launching nothing (every launch checks the
// status), rather than looping on garbage.
//
//===----------------------------------------------------------------------===//

#include "EntrySlots.h"
#include "kiln/Lowering/OutputDims.h"

using namespace mlir;

namespace kiln {

// Fields of kiln_artifact_host_t (ArtifactFormat.h).
constexpr int32_t kDevice = 2, kRead = 15;

LogicalResult buildDeviceReadFunction(ModuleOp module) {
  FailureOr<LLVM::LLVMFuncOp> decl = i64Declaration(module, kDeviceReadFunctionName);
  if (failed(decl) || !*decl)
    return failure(failed(decl));
  LLVM::LLVMFuncOp fn = *decl;
  MLIRContext *ctx = module.getContext();
  Location loc = fn.getLoc();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i32 = IntegerType::get(ctx, 32), i64 = IntegerType::get(ctx, 64);
  OpBuilder b(ctx);
  Block *entry = fn.addEntryBlock(b);
  Block *check = new Block(), *fields = new Block(), *call = new Block(), *failed = new Block(),
        *done = new Block();
  for (Block *block : {check, fields, call, failed, done})
    fn.getBody().push_back(block);
  failed->addArgument(i32, loc);

  // The value read, 0 until (unless) the host reads it.
  OpBuilder e = OpBuilder::atBlockBegin(entry);
  Value one64 = LLVM::ConstantOp::create(e, loc, i64, e.getI64IntegerAttr(1));
  Value bits = LLVM::AllocaOp::create(e, loc, ptr, i64, one64);
  LLVM::StoreOp::create(e, loc, LLVM::ConstantOp::create(e, loc, i64, e.getI64IntegerAttr(0)),
                        bits);
  branchIfRunOk(e, loc, check, done);

  // No host, or no read function: the run cannot go on (status 1).
  OpBuilder c = OpBuilder::atBlockBegin(check);
  Value one = LLVM::ConstantOp::create(c, loc, i32, c.getI32IntegerAttr(1));
  Value host = LLVM::LoadOp::create(c, loc, ptr, threadLocalSlot(c, loc, "__kiln_host"));
  Value null = LLVM::ZeroOp::create(c, loc, ptr);
  Value hasHost = LLVM::ICmpOp::create(c, loc, LLVM::ICmpPredicate::ne, host, null);
  LLVM::CondBrOp::create(c, loc, hasHost, fields, ValueRange{}, failed, ValueRange{one});
  OpBuilder fb = OpBuilder::atBlockBegin(fields);
  auto field = [&](OpBuilder &ob, int32_t i) {
    Value at = LLVM::GEPOp::create(ob, loc, ptr, ptr, host, ArrayRef<LLVM::GEPArg>{i});
    return LLVM::LoadOp::create(ob, loc, ptr, at).getResult();
  };
  Value reader = field(fb, kRead);
  Value hasReader = LLVM::ICmpOp::create(fb, loc, LLVM::ICmpPredicate::ne, reader, null);
  LLVM::CondBrOp::create(fb, loc, hasReader, call, ValueRange{}, failed, ValueRange{one});

  // host->read(host->device, &bits, address, 8): nonzero fails the run.
  OpBuilder k = OpBuilder::atBlockBegin(call);
  Value src = LLVM::IntToPtrOp::create(k, loc, ptr, entry->getArgument(0));
  Value size = LLVM::ConstantOp::create(k, loc, i64, k.getI64IntegerAttr(8));
  auto type = LLVM::LLVMFunctionType::get(i32, {ptr, ptr, ptr, i64});
  Value result = LLVM::CallOp::create(k, loc, type,
                                      ValueRange{reader, field(k, kDevice), bits, src, size})
                     .getResult();
  Value zero = LLVM::ConstantOp::create(k, loc, i32, k.getI32IntegerAttr(0));
  Value fine = LLVM::ICmpOp::create(k, loc, LLVM::ICmpPredicate::eq, result, zero);
  LLVM::CondBrOp::create(k, loc, fine, done, ValueRange{}, failed, ValueRange{result});

  OpBuilder f = OpBuilder::atBlockBegin(failed);
  LLVM::StoreOp::create(f, loc, failed->getArgument(0), threadLocalSlot(f, loc, "__kiln_status"));
  LLVM::BrOp::create(f, loc, done);

  OpBuilder d = OpBuilder::atBlockBegin(done);
  LLVM::ReturnOp::create(d, loc, LLVM::LoadOp::create(d, loc, i64, bits).getResult());
  fn.setLinkage(LLVM::Linkage::Internal);
  return success();
}

} // namespace kiln

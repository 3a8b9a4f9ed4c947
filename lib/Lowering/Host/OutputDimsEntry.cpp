//===- OutputDimsEntry.cpp - kiln_model_output_dims -----------------------===//
//
// llvm.func @__kiln_output_dims(ptr x N, i64 sizes...) -> i64 | struct<(i64...)>
// =>
//   llvm.func @kiln_model_output_dims(%buffers, %host, %values: !llvm.ptr) -> i32 {
//     __kiln_host = %host; r = @__kiln_output_dims(buffers[0..N), host->dims[0..));
//     values[i] = r[i]; return 0 }
// The inputs' dynamic sizes come first in host->dims, in the order of the
// function's size arguments, as they do for @main.
//
//===----------------------------------------------------------------------===//

#include "EntrySlots.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Lowering/OutputDims.h"

using namespace mlir;

namespace kiln {

LogicalResult buildOutputDimsEntry(ModuleOp module) {
  auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(kOutputDimsFunctionName);
  if (!fn)
    return success();
  MLIRContext *ctx = module.getContext();
  Location loc = fn.getLoc();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i32 = IntegerType::get(ctx, 32), i64 = IntegerType::get(ctx, 64);
  auto sizesAttr = fn->getAttrOfType<ArrayAttr>(KilnDialect::getDynamicSizesAttrName());
  unsigned numSizes = sizesAttr ? sizesAttr.size() : 0;
  auto params = fn.getFunctionType().getParams();
  Type resultType = fn.getFunctionType().getReturnType();
  auto structType = dyn_cast<LLVM::LLVMStructType>(resultType);
  unsigned numResults = structType ? structType.getBody().size() : 1;
  if (params.size() < numSizes || (!structType && resultType != i64))
    return fn.emitError("@__kiln_output_dims must take buffer pointers and sizes and return "
                        "its sizes as i64");

  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto entry = LLVM::LLVMFuncOp::create(b, loc, kOutputDimsEntryName,
                                        LLVM::LLVMFunctionType::get(i32, {ptr, ptr, ptr}));
  Block *body = entry.addEntryBlock(b);
  OpBuilder eb = OpBuilder::atBlockBegin(body);
  Value slot = threadLocalSlot(eb, loc, "__kiln_host");
  Value previous = LLVM::LoadOp::create(eb, loc, ptr, slot);
  LLVM::StoreOp::create(eb, loc, body->getArgument(1), slot);
  auto args = loadEntryArguments(eb, loc, body->getArgument(0), body->getArgument(1),
                                 params.size() - numSizes, numSizes);
  Value r = LLVM::CallOp::create(eb, loc, fn, args).getResult();
  for (unsigned i = 0; i < numResults; ++i) {
    Value v = structType ? LLVM::ExtractValueOp::create(eb, loc, r, ArrayRef<int64_t>{i})
                         : r;
    Value at = LLVM::GEPOp::create(eb, loc, ptr, i64, body->getArgument(2),
                                   ArrayRef<LLVM::GEPArg>{(int32_t)i});
    LLVM::StoreOp::create(eb, loc, v, at);
  }
  LLVM::StoreOp::create(eb, loc, previous, threadLocalSlot(eb, loc, "__kiln_host"));
  LLVM::ReturnOp::create(eb, loc,
                         LLVM::ConstantOp::create(eb, loc, i32, eb.getI32IntegerAttr(0)));
  return success();
}

LogicalResult buildHostValueFunction(ModuleOp module, unsigned numSizes) {
  FailureOr<LLVM::LLVMFuncOp> decl = i64Declaration(module, kHostValueFunctionName);
  if (failed(decl) || !*decl)
    return failure(failed(decl));
  LLVM::LLVMFuncOp fn = *decl;
  MLIRContext *ctx = module.getContext();
  Location loc = fn.getLoc();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i64 = IntegerType::get(ctx, 64);
  OpBuilder b(ctx);
  Block *body = fn.addEntryBlock(b);
  b.setInsertionPointToStart(body);
  Value host = LLVM::LoadOp::create(b, loc, ptr, threadLocalSlot(b, loc, "__kiln_host"));
  Value field = LLVM::GEPOp::create(b, loc, ptr, ptr, host, ArrayRef<LLVM::GEPArg>{7});
  Value dims = LLVM::LoadOp::create(b, loc, ptr, field);
  Value offset = LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(numSizes));
  Value at = LLVM::AddOp::create(b, loc, body->getArgument(0), offset);
  Value slot = LLVM::GEPOp::create(b, loc, ptr, i64, dims, ValueRange{at});
  LLVM::ReturnOp::create(b, loc, LLVM::LoadOp::create(b, loc, i64, slot).getResult());
  fn.setLinkage(LLVM::Linkage::Internal);
  return success();
}

} // namespace kiln

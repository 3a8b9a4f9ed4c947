//===- EntrySlots.h - the entry's thread-locals, for host-call builders -*- C++ -*-===//
//
// kiln-emit-entry keeps the current call's host (`__kiln_host`) and its
// status (`__kiln_status`, the first failure) in thread-locals; the
// functions it defines (dispatchers, launchers, collectives) read them.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_HOST_ENTRYSLOTS_H
#define KILN_LIB_LOWERING_HOST_ENTRYSLOTS_H

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace kiln {

/// The address of the thread-local `name` (`__kiln_host`, `__kiln_status`).
inline mlir::Value threadLocalSlot(mlir::OpBuilder &b, mlir::Location loc, llvm::StringRef name) {
  auto ptr = mlir::LLVM::LLVMPointerType::get(b.getContext());
  mlir::Value addr = mlir::LLVM::AddressOfOp::create(b, loc, ptr, name);
  return mlir::LLVM::ThreadlocalAddressOp::create(b, loc, ptr, addr);
}

/// Ends `from` with a branch to `ok` while the current call has not failed
/// (`__kiln_status` is 0), else to `skip`: what every host call the entry
/// makes checks first.
inline void branchIfRunOk(mlir::OpBuilder &b, mlir::Location loc, mlir::Block *ok,
                          mlir::Block *skip) {
  using namespace mlir;
  auto i32 = b.getI32Type();
  Value zero = LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(0));
  Value status = LLVM::LoadOp::create(b, loc, i32, threadLocalSlot(b, loc, "__kiln_status"));
  Value ok0 = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, status, zero);
  LLVM::CondBrOp::create(b, loc, ok0, ok, skip);
}

/// The external `llvm.func @name(i64) -> i64` a pass declared for
/// kiln-emit-entry to define; null when there is none (or it has a body),
/// failure when it has another type.
inline mlir::FailureOr<mlir::LLVM::LLVMFuncOp> i64Declaration(mlir::ModuleOp module,
                                                            llvm::StringRef name) {
  using namespace mlir;
  auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
  if (!fn || !fn.isExternal())
    return LLVM::LLVMFuncOp();
  auto i64 = IntegerType::get(module.getContext(), 64);
  if (fn.getFunctionType().getParams() != ArrayRef<Type>{i64} ||
      fn.getFunctionType().getReturnType() != i64)
    return fn.emitError("@") << name << " must take and return i64";
  return fn;
}

/// The arguments of a function called from an entry (buffers, host):
/// `numPointers` pointers from `buffers`, then `numSizes` i64 from
/// host->dims (field 7 of kiln_artifact_host_t: the buffers' dynamic
/// dimensions in signature order, the order of the functions' sizes).
inline llvm::SmallVector<mlir::Value> loadEntryArguments(mlir::OpBuilder &b, mlir::Location loc,
                                                         mlir::Value buffers, mlir::Value host,
                                                         unsigned numPointers,
                                                         unsigned numSizes) {
  using namespace mlir;
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  auto i64 = b.getI64Type();
  llvm::SmallVector<Value> args;
  for (unsigned i = 0; i < numPointers; ++i) {
    Value at = LLVM::GEPOp::create(b, loc, ptr, ptr, buffers, ArrayRef<LLVM::GEPArg>{(int32_t)i});
    args.push_back(LLVM::LoadOp::create(b, loc, ptr, at));
  }
  if (!numSizes)
    return args;
  Value field = LLVM::GEPOp::create(b, loc, ptr, ptr, host, ArrayRef<LLVM::GEPArg>{7});
  Value dims = LLVM::LoadOp::create(b, loc, ptr, field);
  for (unsigned j = 0; j < numSizes; ++j) {
    Value at = LLVM::GEPOp::create(b, loc, ptr, i64, dims, ArrayRef<LLVM::GEPArg>{(int32_t)j});
    args.push_back(LLVM::LoadOp::create(b, loc, i64, at));
  }
  return args;
}

/// Gives each external `llvm.func` marked `kiln.collective` (by
/// kiln-lower-collectives) its body: a call of the host's all_reduce,
/// all_reduce_start or all_reduce_wait (CollectiveEntry.cpp).
mlir::LogicalResult buildCollectives(mlir::ModuleOp module);

/// Exports @__kiln_output_dims, when the module has it, as
/// kiln_model_output_dims(buffers, host, values) (OutputDimsEntry.cpp).
mlir::LogicalResult buildOutputDimsEntry(mlir::ModuleOp module);

/// Defines @__kiln_host_value(k), when kiln-host-values declared it, as
/// host->dims[numSizes + k]: the runtime appends the values it computed
/// before the run after the buffers' sizes (OutputDimsEntry.cpp).
mlir::LogicalResult buildHostValueFunction(mlir::ModuleOp module, unsigned numSizes);

/// Defines @__kiln_device_read(address), when the outliner declared it, as
/// host->read of 8 bytes at that device address; 0 once the run has failed
/// (DeviceReadEntry.cpp).
mlir::LogicalResult buildDeviceReadFunction(mlir::ModuleOp module);

} // namespace kiln

#endif // KILN_LIB_LOWERING_HOST_ENTRYSLOTS_H

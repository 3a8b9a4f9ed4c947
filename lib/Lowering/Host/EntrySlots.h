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

/// Gives each external `llvm.func` marked `kiln.collective` (by
/// kiln-lower-collectives) its body: a call of the host's all_reduce,
/// all_reduce_start or all_reduce_wait (CollectiveEntry.cpp).
mlir::LogicalResult buildCollectives(mlir::ModuleOp module);

/// Exports @__kiln_output_dims, when the module has it, as
/// kiln_model_output_dims(buffers, host, values) (OutputDimsEntry.cpp).
mlir::LogicalResult buildOutputDimsEntry(mlir::ModuleOp module);

} // namespace kiln

#endif // KILN_LIB_LOWERING_HOST_ENTRYSLOTS_H

//===- CollectiveEntry.cpp - bodies of the collectives' declarations ------===//
//
// kiln-lower-collectives declares one function per reduction call, marked
// with the reduction, element count and dtype, and `kiln.phase` for a
// split one:
//   __kiln_all_reduce_N(ptr)  no phase  host->all_reduce(comm, p, n, dtype, op)
//                             "start"   host->all_reduce_start(...), or
//                                       all_reduce when the host has no start
//                             "wait"    host->all_reduce_wait(comm, p), when
//                                       it has a start
// Each does nothing once the run has failed or without a host or function,
// and makes a nonzero result the run's status (ArtifactFormat.h, fields 11
// to 14 of kiln_artifact_host_t).
//
//===----------------------------------------------------------------------===//

#include "EntrySlots.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"

using namespace mlir;

namespace kiln {
namespace {

// Fields of kiln_artifact_host_t (ArtifactFormat.h).
constexpr int32_t kComm = 11, kAllReduce = 12, kStart = 13, kWait = 14;

/// Defines `fn(ptr data)`: tries the host's function fields `fields` in
/// order and calls the first that is set with (comm, data, extra...), where
/// `withCounts` adds (count, dtype, op).
void buildHostCall(LLVM::LLVMFuncOp fn, ArrayRef<int32_t> fields, bool withCounts,
                   int64_t count, int32_t dtype, int32_t op) {
  Location loc = fn.getLoc();
  MLIRContext *ctx = fn.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i32 = IntegerType::get(ctx, 32), i64 = IntegerType::get(ctx, 64);
  OpBuilder b(ctx);
  Block *entry = fn.addEntryBlock(b);
  Block *check = new Block(), *failed = new Block(), *done = new Block();
  fn.getBody().push_back(check);
  failed->addArgument(i32, loc);
  OpBuilder e = OpBuilder::atBlockBegin(entry);
  Value zero = LLVM::ConstantOp::create(e, loc, i32, e.getI32IntegerAttr(0));
  branchIfRunOk(e, loc, check, done);

  OpBuilder c = OpBuilder::atBlockBegin(check);
  Value host = LLVM::LoadOp::create(c, loc, ptr, threadLocalSlot(c, loc, "__kiln_host"));
  Value null = LLVM::ZeroOp::create(c, loc, ptr);
  Value hasHost = LLVM::ICmpOp::create(c, loc, LLVM::ICmpPredicate::ne, host, null);
  auto field = [&](OpBuilder &ob, int32_t i) {
    Value addr = LLVM::GEPOp::create(ob, loc, ptr, ptr, host, ArrayRef<LLVM::GEPArg>{i});
    return LLVM::LoadOp::create(ob, loc, ptr, addr).getResult();
  };
  // One block per field tried: its function, if set, is called; else the next.
  Block *prev = check;
  for (int32_t f : fields) {
    Block *get = new Block(), *call = new Block();
    fn.getBody().push_back(get);
    fn.getBody().push_back(call);
    OpBuilder pb = OpBuilder::atBlockEnd(prev);
    if (prev == check)
      LLVM::CondBrOp::create(pb, loc, hasHost, get, done);
    else
      LLVM::BrOp::create(pb, loc, get);
    OpBuilder g = OpBuilder::atBlockBegin(get);
    Value callee = field(g, f);
    Value has = LLVM::ICmpOp::create(g, loc, LLVM::ICmpPredicate::ne, callee, null);
    Block *next = new Block();
    fn.getBody().push_back(next);
    LLVM::CondBrOp::create(g, loc, has, call, next);
    OpBuilder cb = OpBuilder::atBlockBegin(call);
    SmallVector<Value> args{callee, field(cb, kComm), entry->getArgument(0)};
    SmallVector<Type> types{ptr, ptr};
    if (withCounts) {
      args.push_back(LLVM::ConstantOp::create(cb, loc, i64, cb.getI64IntegerAttr(count)));
      args.push_back(LLVM::ConstantOp::create(cb, loc, i32, cb.getI32IntegerAttr(dtype)));
      args.push_back(LLVM::ConstantOp::create(cb, loc, i32, cb.getI32IntegerAttr(op)));
      types.append({i64, i32, i32});
    }
    Value result =
        LLVM::CallOp::create(cb, loc, LLVM::LLVMFunctionType::get(i32, types), args).getResult();
    Value fine = LLVM::ICmpOp::create(cb, loc, LLVM::ICmpPredicate::eq, result, zero);
    LLVM::CondBrOp::create(cb, loc, fine, done, ValueRange{}, failed, ValueRange{result});
    prev = next;
  }
  // The last field unset: nothing to do.
  OpBuilder nb = OpBuilder::atBlockEnd(prev);
  LLVM::BrOp::create(nb, loc, done);
  fn.getBody().push_back(failed);
  fn.getBody().push_back(done);
  OpBuilder fl = OpBuilder::atBlockBegin(failed);
  LLVM::StoreOp::create(fl, loc, failed->getArgument(0),
                        threadLocalSlot(fl, loc, "__kiln_status"));
  LLVM::BrOp::create(fl, loc, done);
  OpBuilder d = OpBuilder::atBlockBegin(done);
  LLVM::ReturnOp::create(d, loc, ValueRange{});
}

} // namespace

LogicalResult buildCollectives(ModuleOp module) {
  SmallVector<LLVM::LLVMFuncOp> decls;
  for (auto fn : module.getOps<LLVM::LLVMFuncOp>())
    if (fn.isExternal() && (fn->hasAttr(KilnDialect::getCollectiveAttrName()) ||
                            fn->hasAttr(KilnDialect::getCollectivePhaseAttrName())))
      decls.push_back(fn);
  for (LLVM::LLVMFuncOp fn : decls) {
    auto reduction = fn->getAttrOfType<StringAttr>(KilnDialect::getCollectiveAttrName());
    auto elements = fn->getAttrOfType<IntegerAttr>(KilnDialect::getCollectiveElementsAttrName());
    auto dtype = fn->getAttrOfType<IntegerAttr>(KilnDialect::getCollectiveDtypeAttrName());
    auto phase = fn->getAttrOfType<StringAttr>(KilnDialect::getCollectivePhaseAttrName());
    auto params = fn.getFunctionType().getParams();
    bool wait = phase && phase.getValue() == "wait";
    if ((!wait && (!reduction || !elements || !dtype)) || params.size() != 1 ||
        !isa<LLVM::LLVMPointerType>(params[0]) ||
        (phase && phase.getValue() != "start" && !wait))
      return fn.emitError("collective declaration without its kiln.collective, kiln.elements "
                          "and kiln.dtype, or not taking one buffer (run kiln-lower-collectives)");
    int32_t op = reduction && reduction.getValue() == "mean";
    if (wait)
      buildHostCall(fn, {kWait}, /*withCounts=*/false, 0, 0, 0);
    else if (phase)
      buildHostCall(fn, {kStart, kAllReduce}, true, elements.getInt(), dtype.getInt(), op);
    else
      buildHostCall(fn, {kAllReduce}, true, elements.getInt(), dtype.getInt(), op);
    for (StringRef attr : {KilnDialect::getCollectiveAttrName(),
                           KilnDialect::getCollectiveElementsAttrName(),
                           KilnDialect::getCollectiveDtypeAttrName(),
                           KilnDialect::getCollectivePhaseAttrName()})
      fn->removeAttr(attr);
    fn.setLinkage(LLVM::Linkage::Internal);
  }
  return success();
}

} // namespace kiln

//===- HostReads.cpp - scalars the host program reads back from a kernel --===//
//
//   %more = arith.cmpf olt, %x, %limit      (in a one-thread kernel)
//   scf.yield %more                          (the host's while loop)
// =>
//   kernel:  memref.store (extui %more), %slot[0]
//   host:    launch; %b = call @__kiln_device_read(address of %slot)
//            scf.yield (trunci %b)
// The slot is one device buffer for the run, allocated at its start
// (host->alloc: a session that gives it out runs eagerly, never as a
// captured graph, whatever a run reads); @__kiln_device_read is host->read
// (ArtifactFormat.h), defined by kiln-emit-entry.
//
//===----------------------------------------------------------------------===//

#include "HostReads.h"

#include "kiln/Lowering/Host/ScalarBits.h"
#include "kiln/Lowering/OutputDims.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;

namespace kiln {

Value storeForHost(func::FuncOp fn, Value r, SmallVectorImpl<Operation *> &ops) {
  Location loc = r.getLoc();
  Block &entry = fn.getBody().front();
  OpBuilder eb = OpBuilder::atBlockBegin(&entry);
  auto type = MemRefType::get({1}, eb.getI64Type());
  Value slot = memref::AllocOp::create(eb, loc, type);
  eb.setInsertionPoint(entry.getTerminator());
  memref::DeallocOp::create(eb, loc, slot);
  Operation *last = ops.back();
  OpBuilder sb(last->getContext());
  sb.setInsertionPointAfter(last);
  Value bits = toBits(sb, loc, r);
  Value zero = arith::ConstantIndexOp::create(sb, loc, 0);
  auto store = memref::StoreOp::create(sb, loc, bits, slot, ValueRange{zero});
  for (Operation *op = last->getNextNode(); op != store->getNextNode(); op = op->getNextNode())
    ops.push_back(op);
  return slot;
}

void readBack(OpBuilder &hb, Value r, Value slot, ArrayRef<Operation *> ops) {
  Location loc = r.getLoc();
  auto module = slot.getParentRegion()->getParentOfType<ModuleOp>();
  auto i64 = hb.getI64Type();
  auto callee = module.lookupSymbol<func::FuncOp>(kDeviceReadFunctionName);
  if (!callee) {
    OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
    callee = func::FuncOp::create(mb, loc, kDeviceReadFunctionName,
                                  mb.getFunctionType({i64}, {i64}));
    callee.setPrivate();
  }
  Value address = memref::ExtractAlignedPointerAsIndexOp::create(hb, loc, slot);
  address = arith::IndexCastOp::create(hb, loc, i64, address);
  Value bits = func::CallOp::create(hb, loc, callee, ValueRange{address}).getResult(0);
  Value value = fromBits(hb, loc, bits, r.getType());
  Block *body = ops.front()->getBlock();
  r.replaceUsesWithIf(value, [&](OpOperand &use) {
    return !llvm::is_contained(ops, body->findAncestorOpInBlock(*use.getOwner()));
  });
}

} // namespace kiln

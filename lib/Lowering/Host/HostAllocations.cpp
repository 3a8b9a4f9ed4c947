//===- HostAllocations.cpp - dynamic buffers from the session's allocator -===//
//
// A model with dynamic dimensions allocates the buffers whose size it
// learns at run time (and the tiles sized by them): malloc for every one
// at every call mapped fresh pages each time (ResNet-18 at batch 1, 26 ms
// against 18 for the static artifact). Its malloc and free calls go to
//   __kiln_alloc(n):  p = host->alloc(host->allocator, n + 64), or malloc
//                     without one; header [release, allocator, n + 64]
//   __kiln_free(q):   release(allocator, q - 64, size), or free
// so the runtime hands out blocks it keeps between calls. The header makes
// every free find its allocator whichever thread frees it (pool threads
// have no host of their own).
//
//===----------------------------------------------------------------------===//

#include "HostAllocations.h"
#include "EntrySlots.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;

namespace kiln {

namespace {
// kiln_artifact_host_t fields (ArtifactFormat.h).
constexpr int32_t kAllocatorField = 8, kAllocField = 9, kReleaseField = 10;
constexpr int64_t kHeaderBytes = 64;

LLVM::LLVMFuncOp declare(OpBuilder &b, ModuleOp module, StringRef name,
                         LLVM::LLVMFunctionType type) {
  if (auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
    return fn;
  return LLVM::LLVMFuncOp::create(b, module.getLoc(), name, type);
}
} // namespace

void routeAllocationsToHost(ModuleOp module) {
  auto mallocFn = module.lookupSymbol<LLVM::LLVMFuncOp>("malloc");
  auto freeFn = module.lookupSymbol<LLVM::LLVMFuncOp>("free");
  if (!mallocFn && !freeFn)
    return;
  MLIRContext *ctx = module.getContext();
  Location loc = module.getLoc();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i64 = IntegerType::get(ctx, 64);
  auto voidType = LLVM::LLVMVoidType::get(ctx);
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  mallocFn = declare(b, module, "malloc", LLVM::LLVMFunctionType::get(ptr, {i64}));
  freeFn = declare(b, module, "free", LLVM::LLVMFunctionType::get(voidType, {ptr}));
  auto hostOf = [&](OpBuilder &ob) -> Value {
    Value addr = LLVM::AddressOfOp::create(ob, loc, ptr, "__kiln_host");
    return LLVM::LoadOp::create(ob, loc, ptr, LLVM::ThreadlocalAddressOp::create(ob, loc, ptr, addr));
  };
  auto slot = [&](OpBuilder &ob, Value base, int32_t i) -> Value {
    return LLVM::GEPOp::create(ob, loc, ptr, ptr, base, ArrayRef<LLVM::GEPArg>{i});
  };
  auto c64 = [&](OpBuilder &ob, int64_t v) -> Value {
    return LLVM::ConstantOp::create(ob, loc, i64, ob.getI64IntegerAttr(v));
  };

  // ptr __kiln_alloc(i64 n)
  auto alloc = LLVM::LLVMFuncOp::create(b, loc, "__kiln_alloc",
                                        LLVM::LLVMFunctionType::get(ptr, {i64}),
                                        LLVM::Linkage::Internal);
  {
    Block *entry = alloc.addEntryBlock(b);
    Block *pooled = new Block(), *plain = new Block(), *done = new Block();
    for (Block *blk : {pooled, plain, done})
      alloc.getBody().push_back(blk);
    done->addArgument(ptr, loc); // the block
    done->addArgument(ptr, loc); // its release function (null: libc)
    done->addArgument(ptr, loc); // its allocator
    OpBuilder e = OpBuilder::atBlockBegin(entry);
    Value bytes = LLVM::AddOp::create(e, loc, entry->getArgument(0), c64(e, kHeaderBytes));
    Value host = hostOf(e);
    Value null = LLVM::ZeroOp::create(e, loc, ptr);
    Value hasHost = LLVM::ICmpOp::create(e, loc, LLVM::ICmpPredicate::ne, host, null);
    Block *fields = new Block();
    alloc.getBody().getBlocks().insert(Region::iterator(pooled), fields);
    LLVM::CondBrOp::create(e, loc, hasHost, fields, plain);
    OpBuilder f = OpBuilder::atBlockBegin(fields);
    Value allocFn = LLVM::LoadOp::create(f, loc, ptr, slot(f, host, kAllocField));
    Value hasAlloc = LLVM::ICmpOp::create(f, loc, LLVM::ICmpPredicate::ne, allocFn, null);
    LLVM::CondBrOp::create(f, loc, hasAlloc, pooled, plain);
    OpBuilder p = OpBuilder::atBlockBegin(pooled);
    Value allocator = LLVM::LoadOp::create(p, loc, ptr, slot(p, host, kAllocatorField));
    Value release = LLVM::LoadOp::create(p, loc, ptr, slot(p, host, kReleaseField));
    Value block = LLVM::CallOp::create(p, loc, LLVM::LLVMFunctionType::get(ptr, {ptr, i64}),
                                       ValueRange{allocFn, allocator, bytes})
                      .getResult();
    // Refused (out of memory): malloc's turn.
    Value got = LLVM::ICmpOp::create(p, loc, LLVM::ICmpPredicate::ne, block, null);
    LLVM::CondBrOp::create(p, loc, got, done, ValueRange{block, release, allocator}, plain,
                           ValueRange{});
    OpBuilder q = OpBuilder::atBlockBegin(plain);
    Value mem = LLVM::CallOp::create(q, loc, mallocFn, ValueRange{bytes}).getResult();
    Value none = LLVM::ZeroOp::create(q, loc, ptr);
    LLVM::BrOp::create(q, loc, ValueRange{mem, none, none}, done);
    OpBuilder d = OpBuilder::atBlockBegin(done);
    Value base = done->getArgument(0);
    LLVM::StoreOp::create(d, loc, done->getArgument(1), base);
    LLVM::StoreOp::create(d, loc, done->getArgument(2), slot(d, base, 1));
    LLVM::StoreOp::create(d, loc, bytes, slot(d, base, 2));
    Value user = LLVM::GEPOp::create(d, loc, ptr, IntegerType::get(ctx, 8), base,
                                     ArrayRef<LLVM::GEPArg>{(int32_t)kHeaderBytes});
    LLVM::ReturnOp::create(d, loc, user);
  }

  // void __kiln_free(ptr q)
  auto release = LLVM::LLVMFuncOp::create(b, loc, "__kiln_free",
                                          LLVM::LLVMFunctionType::get(voidType, {ptr}),
                                          LLVM::Linkage::Internal);
  {
    Block *entry = release.addEntryBlock(b);
    Block *some = new Block(), *pooled = new Block(), *plain = new Block(), *done = new Block();
    for (Block *blk : {some, pooled, plain, done})
      release.getBody().push_back(blk);
    OpBuilder e = OpBuilder::atBlockBegin(entry);
    Value null = LLVM::ZeroOp::create(e, loc, ptr);
    Value given = LLVM::ICmpOp::create(e, loc, LLVM::ICmpPredicate::ne, entry->getArgument(0), null);
    LLVM::CondBrOp::create(e, loc, given, some, done);
    OpBuilder s = OpBuilder::atBlockBegin(some);
    Value base = LLVM::GEPOp::create(s, loc, ptr, IntegerType::get(ctx, 8), entry->getArgument(0),
                                     ArrayRef<LLVM::GEPArg>{(int32_t)-kHeaderBytes});
    Value fn = LLVM::LoadOp::create(s, loc, ptr, base);
    Value isPooled = LLVM::ICmpOp::create(s, loc, LLVM::ICmpPredicate::ne, fn,
                                          LLVM::ZeroOp::create(s, loc, ptr));
    LLVM::CondBrOp::create(s, loc, isPooled, pooled, plain);
    OpBuilder p = OpBuilder::atBlockBegin(pooled);
    Value allocator = LLVM::LoadOp::create(p, loc, ptr, slot(p, base, 1));
    Value bytes = LLVM::LoadOp::create(p, loc, i64, slot(p, base, 2));
    LLVM::CallOp::create(p, loc, LLVM::LLVMFunctionType::get(voidType, {ptr, ptr, i64}),
                         ValueRange{fn, allocator, base, bytes});
    LLVM::BrOp::create(p, loc, done);
    OpBuilder q = OpBuilder::atBlockBegin(plain);
    LLVM::CallOp::create(q, loc, freeFn, ValueRange{base});
    LLVM::BrOp::create(q, loc, done);
    OpBuilder d = OpBuilder::atBlockBegin(done);
    LLVM::ReturnOp::create(d, loc, ValueRange{});
  }

  // Every other call to malloc and free goes through them.
  module.walk([&](LLVM::CallOp call) {
    auto callee = call.getCallee();
    if (!callee || call->getParentOfType<LLVM::LLVMFuncOp>() == alloc ||
        call->getParentOfType<LLVM::LLVMFuncOp>() == release)
      return;
    if (*callee == "malloc")
      call.setCallee("__kiln_alloc");
    else if (*callee == "free")
      call.setCallee("__kiln_free");
  });
}

namespace {
/// Defines the external `fn` as a call of the host's function in field
/// `field` with (host->allocator, fn's arguments): alloc (`gives`: returns
/// the block; its last argument is the size) or release (the block, size 0:
/// the session knows its sizes). Without a host or that function, or when
/// an allocation gives null, an alloc marks the run failed (`__kiln_status`,
/// which stops the launches after) and returns null.
void defineHostCall(LLVM::LLVMFuncOp fn, int32_t field, bool gives) {
  MLIRContext *ctx = fn.getContext();
  Location loc = fn.getLoc();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i32 = IntegerType::get(ctx, 32), i64 = IntegerType::get(ctx, 64);
  OpBuilder b(ctx);
  Block *entry = fn.addEntryBlock(b);
  Block *fields = new Block(), *call = new Block(), *fail = new Block(), *done = new Block();
  for (Block *blk : {fields, call, fail, done})
    fn.getBody().push_back(blk);
  if (gives)
    done->addArgument(ptr, loc);
  auto slot = [&](OpBuilder &ob, Value base, int32_t i) -> Value {
    return LLVM::GEPOp::create(ob, loc, ptr, ptr, base, ArrayRef<LLVM::GEPArg>{i});
  };
  auto isSet = [&](OpBuilder &ob, Value p) -> Value {
    return LLVM::ICmpOp::create(ob, loc, LLVM::ICmpPredicate::ne, p,
                                LLVM::ZeroOp::create(ob, loc, ptr));
  };
  OpBuilder e = OpBuilder::atBlockBegin(entry);
  Value host = LLVM::LoadOp::create(e, loc, ptr, threadLocalSlot(e, loc, "__kiln_host"));
  LLVM::CondBrOp::create(e, loc, isSet(e, host), fields, fail);
  OpBuilder f = OpBuilder::atBlockBegin(fields);
  Value target = LLVM::LoadOp::create(f, loc, ptr, slot(f, host, field));
  LLVM::CondBrOp::create(f, loc, isSet(f, target), call, fail);

  OpBuilder c = OpBuilder::atBlockBegin(call);
  SmallVector<Value> args{target, LLVM::LoadOp::create(c, loc, ptr, slot(c, host, kAllocatorField))};
  if (gives) {
    args.push_back(fn.getArgument(fn.getNumArguments() - 1));
    auto type = LLVM::LLVMFunctionType::get(ptr, {ptr, i64});
    Value block = LLVM::CallOp::create(c, loc, type, args).getResult();
    LLVM::CondBrOp::create(c, loc, isSet(c, block), done, ValueRange{block}, fail, ValueRange{});
  } else {
    args.push_back(fn.getArgument(0));
    args.push_back(LLVM::ConstantOp::create(c, loc, i64, c.getI64IntegerAttr(0)));
    auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr, ptr, i64});
    LLVM::CallOp::create(c, loc, type, args);
    LLVM::BrOp::create(c, loc, done);
  }

  OpBuilder x = OpBuilder::atBlockBegin(fail);
  if (gives) {
    Value one = LLVM::ConstantOp::create(x, loc, i32, x.getI32IntegerAttr(1));
    LLVM::StoreOp::create(x, loc, one, threadLocalSlot(x, loc, "__kiln_status"));
    LLVM::BrOp::create(x, loc, ValueRange{LLVM::ZeroOp::create(x, loc, ptr)}, done);
  } else {
    LLVM::BrOp::create(x, loc, done);
  }
  OpBuilder d = OpBuilder::atBlockBegin(done);
  LLVM::ReturnOp::create(d, loc, gives ? ValueRange{done->getArgument(0)} : ValueRange{});
  fn.setLinkage(LLVM::Linkage::Internal);
}
} // namespace

void routeAllocationsToDevice(ModuleOp module) {
  // MLIR's generic allocation functions (finalize-memref-to-llvm's
  // use-generic-functions), declared by the host program's lowering.
  for (auto [name, field, gives] :
       {std::tuple{"_mlir_memref_to_llvm_alloc", kAllocField, true},
        std::tuple{"_mlir_memref_to_llvm_aligned_alloc", kAllocField, true},
        std::tuple{"_mlir_memref_to_llvm_free", kReleaseField, false}})
    if (auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(name); fn && fn.isExternal())
      defineHostCall(fn, field, gives);
}

} // namespace kiln

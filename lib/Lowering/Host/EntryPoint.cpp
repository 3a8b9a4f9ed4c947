//===- EntryPoint.cpp - the artifact's uniform C entry point --------------===//
//
// llvm.func @main(ptr x N) =>
//   llvm.func @kiln_model_run(%buffers: !llvm.ptr, %host: !llvm.ptr) -> i32 {
//     __kiln_host = %host; %p_i = load buffers[i] ...; llvm.call @main(...) }
//   llvm.func @__kiln_parallel_K(%n, bufs...) {          (declared before)
//     ctx = {bufs}; host->parallel_for(host->pool, %n, @trampoline_K, ctx) }
//   llvm.func @__kiln_launch_K(bufs...) {                 (CUDA, declared before)
//     params = {&bufs[i]...}; status = host->launch(host->device, k, grid, block, shared, params) }
// kiln_model_run returns the first nonzero launch status (0 on the CPU).
//
//===----------------------------------------------------------------------===//

#include "EntrySlots.h"
#include "HostAllocations.h"
#include "kiln/ArtifactFormat.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Lowering/OutputDims.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace kiln {
#define GEN_PASS_DEF_KILNEMITENTRY
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Builds the artifact's entry and the parallel-task plumbing in the LLVM
/// dialect; see ArtifactFormat.h for the host structure it reads.
class EntryBuilder {
public:
  EntryBuilder(ModuleOp module)
      : module(module), ctx(module.getContext()), ptr(LLVM::LLVMPointerType::get(ctx)),
        i64(IntegerType::get(ctx, 64)), i32(IntegerType::get(ctx, 32)) {}

  LogicalResult run() {
    auto main = module.lookupSymbol<LLVM::LLVMFuncOp>("main");
    if (!main)
      return module.emitError("no llvm.func @main to wrap (run after convert-func-to-llvm)");
    auto fnType = main.getFunctionType();
    unsigned numSizes = numDynamicSizes(main);
    auto params = fnType.getParams();
    if (!isa<LLVM::LLVMVoidType>(fnType.getReturnType()) || params.size() < numSizes ||
        !allPointers(params.drop_back(numSizes)) ||
        !llvm::all_of(params.take_back(numSizes), [&](Type t) { return t == i64; }))
      return main.emitError("@main must take buffer pointers (then the dynamic sizes, "
                            "kiln-split-dynamic-args) and return nothing (bare-pointer "
                            "calling convention, outputs as out-params)");
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    // The host of the current call, for the dispatchers below.
    auto global = LLVM::GlobalOp::create(b, main.getLoc(), ptr, /*isConstant=*/false,
                                         LLVM::Linkage::Internal, "__kiln_host",
                                         Attribute(), /*alignment=*/0, /*addrSpace=*/0,
                                         /*dsoLocal=*/true, /*threadLocal=*/true);
    Region &init = global.getInitializerRegion();
    OpBuilder ib = OpBuilder::atBlockBegin(b.createBlock(&init));
    LLVM::ReturnOp::create(ib, main.getLoc(), LLVM::ZeroOp::create(ib, main.getLoc(), ptr));
    b.setInsertionPointToEnd(module.getBody());
    // The first failed launch of the current call (CUDA artifacts).
    LLVM::GlobalOp::create(b, main.getLoc(), i32, /*isConstant=*/false,
                                         LLVM::Linkage::Internal, "__kiln_status",
                                         b.getI32IntegerAttr(0), /*alignment=*/0,
                                         /*addrSpace=*/0, /*dsoLocal=*/true,
                                         /*threadLocal=*/true);
    buildEntry(b, main);
    // Buffers sized at run time come from the session's allocator: device
    // memory for CUDA's host program (@__kiln_output_dims, host code there,
    // keeps libc's).
    if (module->hasAttr(KilnDialect::getPtxAttrName()))
      routeAllocationsToDevice(module);
    else if (module->hasAttr(KilnDialect::getDimRangesAttrName()) ||
             module->hasAttr(kDimValuesAttrName))
      routeAllocationsToHost(module);
    if (failed(buildHostValueFunction(module, numDynamicSizes(main))) ||
        failed(buildDeviceReadFunction(module)))
      return failure();
    // Line of each kernel in the kernel table (collectKernelTable's order:
    // the functions carrying kiln.ops, in module order).
    llvm::DenseMap<StringRef, uint32_t> kernelLine;
    for (auto fn : module.getOps<LLVM::LLVMFuncOp>())
      if (fn->hasAttr(KilnDialect::getOpsAttrName()))
        kernelLine.try_emplace(fn.getName(), kernelLine.size());
    instrumentKernels(b, main, kernelLine);
    SmallVector<LLVM::LLVMFuncOp> dispatchers;
    for (auto fn : module.getOps<LLVM::LLVMFuncOp>())
      if (fn.isExternal() && fn.getName().starts_with("__kiln_parallel_"))
        dispatchers.push_back(fn);
    for (auto d : dispatchers)
      if (failed(buildDispatcher(d)))
        return failure();
    SmallVector<LLVM::LLVMFuncOp> launches;
    for (auto fn : module.getOps<LLVM::LLVMFuncOp>())
      if (fn.isExternal() && fn->hasAttr(KilnDialect::getKernelNameAttrName()))
        launches.push_back(fn);
    for (auto fn : launches)
      if (failed(buildLauncher(fn, kernelLine.lookup(fn.getName()))))
        return failure();
    if (failed(buildCollectives(module)) || failed(buildOutputDimsEntry(module)))
      return failure();
    // Only the artifact's entry is exported. Kernels stay functions of
    // their own: inlined into @main they make one huge function whose
    // instruction selection is superlinear (GPT-2: 5 s -> 60 s).
    for (auto fn : module.getOps<LLVM::LLVMFuncOp>()) {
      if (fn.isExternal() || fn.getName() == "kiln_model_run" ||
          fn.getName() == kOutputDimsEntryName)
        continue;
      fn.setLinkage(LLVM::Linkage::Internal);
      if (fn->hasAttr(KilnDialect::getKernelAttrName())) // kiln-outline-kernels
        fn.setNoInline(true);
    }
    return success();
  }

private:
  static bool allPointers(ArrayRef<Type> types) {
    return llvm::all_of(types, [](Type t) { return isa<LLVM::LLVMPointerType>(t); });
  }

  /// The `index` arguments kiln-split-dynamic-args appended (after the
  /// buffers).
  static unsigned numDynamicSizes(LLVM::LLVMFuncOp fn) {
    auto sizes = fn->getAttrOfType<ArrayAttr>(KilnDialect::getDynamicSizesAttrName());
    return sizes ? sizes.size() : 0;
  }

  /// Loads one value per type from the 8-byte slots at `base` (buffer
  /// pointers, and sizes as i64).
  SmallVector<Value> loadSlots(OpBuilder &b, Location loc, Value base, TypeRange types) {
    SmallVector<Value> out;
    for (auto [i, t] : llvm::enumerate(types)) {
      Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, base, ArrayRef<LLVM::GEPArg>{(int32_t)i});
      out.push_back(LLVM::LoadOp::create(b, loc, t, slot));
    }
    return out;
  }

  Value statusSlot(OpBuilder &b, Location loc) { return threadLocalSlot(b, loc, "__kiln_status"); }

  Value hostSlot(OpBuilder &b, Location loc) { return threadLocalSlot(b, loc, "__kiln_host"); }

  // int32_t kiln_model_run(void **buffers, const kiln_artifact_host_t *host)
  void buildEntry(OpBuilder &b, LLVM::LLVMFuncOp main) {
    Location loc = main.getLoc();
    auto entry = LLVM::LLVMFuncOp::create(b, loc, "kiln_model_run",
                                          LLVM::LLVMFunctionType::get(i32, {ptr, ptr}));
    Block *body = entry.addEntryBlock(b);
    OpBuilder eb = OpBuilder::atBlockBegin(body);
    Value slot = hostSlot(eb, loc);
    Value previous = LLVM::LoadOp::create(eb, loc, ptr, slot);
    LLVM::StoreOp::create(eb, loc, body->getArgument(1), slot);
    Value zero = LLVM::ConstantOp::create(eb, loc, i32, eb.getI32IntegerAttr(0));
    LLVM::StoreOp::create(eb, loc, zero, statusSlot(eb, loc));
    unsigned numSizes = numDynamicSizes(main);
    auto args = loadEntryArguments(eb, loc, body->getArgument(0), body->getArgument(1),
                                   main.getFunctionType().getNumParams() - numSizes, numSizes);
    LLVM::CallOp::create(eb, loc, main, args);
    LLVM::StoreOp::create(eb, loc, previous, hostSlot(eb, loc));
    LLVM::ReturnOp::create(eb, loc, LLVM::LoadOp::create(eb, loc, i32, statusSlot(eb, loc)));
  }

  /// Brackets every kernel call of @main with __kiln_profile(k, 0/1), k the
  /// kernel's line in the kernel table (`index`; a parallel dispatcher
  /// stands for its task).
  void instrumentKernels(OpBuilder &b, LLVM::LLVMFuncOp main,
                         const llvm::DenseMap<StringRef, uint32_t> &index) {
    SmallVector<std::pair<LLVM::CallOp, uint32_t>> calls;
    main.walk([&](LLVM::CallOp call) {
      auto callee = call.getCallee();
      if (!callee)
        return;
      StringRef name = *callee;
      if (auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
        if (auto task = fn->getAttrOfType<FlatSymbolRefAttr>(KilnDialect::getTaskAttrName()))
          name = task.getValue();
      if (auto it = index.find(name); it != index.end())
        calls.push_back({call, it->second});
    });
    if (calls.empty())
      return;
    // void __kiln_profile(i32 kernel, i32 end): host->profile(host->profiler, ...)
    Location loc = main.getLoc();
    auto voidType = LLVM::LLVMVoidType::get(ctx);
    auto hook = LLVM::LLVMFuncOp::create(b, loc, "__kiln_profile",
                                         LLVM::LLVMFunctionType::get(voidType, {i32, i32}),
                                         LLVM::Linkage::Internal);
    Block *entry = hook.addEntryBlock(b);
    Block *call = new Block(), *done = new Block();
    hook.getBody().push_back(call);
    hook.getBody().push_back(done);
    OpBuilder hb = OpBuilder::atBlockBegin(entry);
    Value host = LLVM::LoadOp::create(hb, loc, ptr, hostSlot(hb, loc));
    Value null = LLVM::ZeroOp::create(hb, loc, ptr);
    Value hasHost = LLVM::ICmpOp::create(hb, loc, LLVM::ICmpPredicate::ne, host, null);
    // Fields 4 and 5 of kiln_artifact_host_t (ArtifactFormat.h).
    auto field = [&](OpBuilder &ob, int32_t i) {
      Value addr = LLVM::GEPOp::create(ob, loc, ptr, ptr, host, ArrayRef<LLVM::GEPArg>{i});
      return LLVM::LoadOp::create(ob, loc, ptr, addr).getResult();
    };
    Block *check = new Block();
    hook.getBody().getBlocks().insert(std::next(hook.getBody().begin()), check);
    LLVM::CondBrOp::create(hb, loc, hasHost, check, done);
    OpBuilder cb = OpBuilder::atBlockBegin(check);
    Value fn = field(cb, 5);
    Value hasFn = LLVM::ICmpOp::create(cb, loc, LLVM::ICmpPredicate::ne, fn, null);
    LLVM::CondBrOp::create(cb, loc, hasFn, call, done);
    OpBuilder kb = OpBuilder::atBlockBegin(call);
    Value profiler = field(kb, 4);
    auto fnType = LLVM::LLVMFunctionType::get(voidType, {ptr, i32, i32});
    LLVM::CallOp::create(kb, loc, fnType,
                         ValueRange{fn, profiler, entry->getArgument(0), entry->getArgument(1)});
    LLVM::BrOp::create(kb, loc, done);
    OpBuilder db = OpBuilder::atBlockBegin(done);
    LLVM::ReturnOp::create(db, loc, ValueRange{});
    for (auto [op, k] : calls) {
      OpBuilder ob(op);
      Value kv = LLVM::ConstantOp::create(ob, op.getLoc(), i32, ob.getI32IntegerAttr(k));
      LLVM::CallOp::create(ob, op.getLoc(), hook,
                           ValueRange{kv, LLVM::ConstantOp::create(ob, op.getLoc(), i32,
                                                                   ob.getI32IntegerAttr(0))});
      ob.setInsertionPointAfter(op);
      LLVM::CallOp::create(ob, op.getLoc(), hook,
                           ValueRange{kv, LLVM::ConstantOp::create(ob, op.getLoc(), i32,
                                                                   ob.getI32IntegerAttr(1))});
    }
  }

  // __kiln_parallel_N(i64 n, ptr bufs...): pack the buffers, run the task
  // through host->parallel_for(pool, n, trampoline, ctx), or inline.
  LogicalResult buildDispatcher(LLVM::LLVMFuncOp dispatcher) {
    Location loc = dispatcher.getLoc();
    auto taskRef = dispatcher->getAttrOfType<FlatSymbolRefAttr>(KilnDialect::getTaskAttrName());
    auto task = taskRef ? module.lookupSymbol<LLVM::LLVMFuncOp>(taskRef.getValue()) : nullptr;
    auto params = dispatcher.getFunctionType().getParams();
    unsigned numSizes = numDynamicSizes(dispatcher);
    if (!task || params.size() < 1 + numSizes || params[0] != i64 ||
        !allPointers(params.drop_front().drop_back(numSizes)))
      return dispatcher.emitError("parallel dispatcher without a matching task "
                                  "(run kiln-outline-kernels before lowering to LLVM)");
    unsigned numBuffers = params.size() - 1;
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());

    // void trampoline(void *ctx, int64_t begin, int64_t end)
    auto tramp = LLVM::LLVMFuncOp::create(
        b, loc, (dispatcher.getName() + "_trampoline").str(),
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr, i64, i64}),
        LLVM::Linkage::Internal);
    Block *tb = tramp.addEntryBlock(b);
    OpBuilder t = OpBuilder::atBlockBegin(tb);
    SmallVector<Value> taskArgs{tb->getArgument(1), tb->getArgument(2)};
    llvm::append_range(taskArgs, loadSlots(t, loc, tb->getArgument(0), params.drop_front()));
    LLVM::CallOp::create(t, loc, task, taskArgs);
    LLVM::ReturnOp::create(t, loc, ValueRange{});

    dispatcher->removeAttr(KilnDialect::getTaskAttrName());
    task.setLinkage(LLVM::Linkage::Internal);
    dispatcher.setLinkage(LLVM::Linkage::Internal);
    Block *entry = dispatcher.addEntryBlock(b);
    Block *pooled = new Block(), *inlined = new Block(), *done = new Block();
    dispatcher.getBody().push_back(pooled);
    dispatcher.getBody().push_back(inlined);
    dispatcher.getBody().push_back(done);
    OpBuilder d = OpBuilder::atBlockBegin(entry);
    Value count = LLVM::ConstantOp::create(d, loc, i64, d.getI64IntegerAttr(std::max(1u, numBuffers)));
    Value ctxArray = LLVM::AllocaOp::create(d, loc, ptr, ptr, count);
    for (unsigned i = 0; i < numBuffers; ++i) {
      Value slot = LLVM::GEPOp::create(d, loc, ptr, ptr, ctxArray, ArrayRef<LLVM::GEPArg>{(int32_t)i});
      LLVM::StoreOp::create(d, loc, entry->getArgument(i + 1), slot);
    }
    Value trampAddr = LLVM::AddressOfOp::create(d, loc, ptr, tramp.getName());
    Value host = LLVM::LoadOp::create(d, loc, ptr, hostSlot(d, loc));
    Value null = LLVM::ZeroOp::create(d, loc, ptr);
    Value hasHost = LLVM::ICmpOp::create(d, loc, LLVM::ICmpPredicate::ne, host, null);
    LLVM::CondBrOp::create(d, loc, hasHost, pooled, inlined);

    OpBuilder p = OpBuilder::atBlockBegin(pooled);
    Value pool = LLVM::LoadOp::create(p, loc, ptr, host);
    Value fnSlot = LLVM::GEPOp::create(p, loc, ptr, ptr, host, ArrayRef<LLVM::GEPArg>{1});
    Value fn = LLVM::LoadOp::create(p, loc, ptr, fnSlot);
    Value hasFn = LLVM::ICmpOp::create(p, loc, LLVM::ICmpPredicate::ne, fn, null);
    Block *call = new Block();
    dispatcher.getBody().push_back(call);
    LLVM::CondBrOp::create(p, loc, hasFn, call, inlined);
    OpBuilder c = OpBuilder::atBlockBegin(call);
    auto pfType = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr, i64, ptr, ptr});
    LLVM::CallOp::create(c, loc, pfType, ValueRange{fn, pool, entry->getArgument(0), trampAddr, ctxArray});
    LLVM::BrOp::create(c, loc, done);

    OpBuilder in = OpBuilder::atBlockBegin(inlined);
    Value zero = LLVM::ConstantOp::create(in, loc, i64, in.getI64IntegerAttr(0));
    LLVM::CallOp::create(in, loc, tramp, ValueRange{ctxArray, zero, entry->getArgument(0)});
    LLVM::BrOp::create(in, loc, done);
    OpBuilder fin = OpBuilder::atBlockBegin(done);
    LLVM::ReturnOp::create(fin, loc, ValueRange{});
    return success();
  }


  /// Each grid size of -1 in `grid` from the next of `params` (checked in
  /// range before), into `gridArray`.
  void storeGridOperands(OpBuilder &l, Location loc, DenseI32ArrayAttr grid, ValueRange params,
                         Value gridArray) {
    for (unsigned i = 0, d = 0; d < 3; ++d) {
      if (grid[d] != -1)
        continue;
      Value size = LLVM::TruncOp::create(l, loc, i32, params[i++]);
      Value slot = LLVM::GEPOp::create(l, loc, ptr, i32, gridArray,
                                       ArrayRef<LLVM::GEPArg>{(int32_t)d});
      LLVM::StoreOp::create(l, loc, size, slot);
    }
  }

  /// A block between `prev` and `launch` (returned): a grid size `x` in
  /// 1 .. 2^31-1 goes on, another fails the run with `one` (a size past what
  /// the signature's ranges allow would be the runtime's bug).
  Block *checkGridBlocks(LLVM::LLVMFuncOp fn, Value x, Block *prev, Block *launch, Block *failed,
                         Value one) {
    Location loc = fn.getLoc();
    Block *range = new Block();
    fn.getBody().getBlocks().insert(Region::iterator(launch), range);
    prev->getTerminator()->setSuccessor(range, 0);
    OpBuilder r = OpBuilder::atBlockBegin(range);
    Value low = LLVM::ICmpOp::create(r, loc, LLVM::ICmpPredicate::sge, x,
                                     LLVM::ConstantOp::create(r, loc, i64, r.getI64IntegerAttr(1)));
    Value high = LLVM::ICmpOp::create(
        r, loc, LLVM::ICmpPredicate::sle, x,
        LLVM::ConstantOp::create(r, loc, i64, r.getI64IntegerAttr(INT32_MAX)));
    Value fits = LLVM::AndOp::create(r, loc, low, high);
    LLVM::CondBrOp::create(r, loc, fits, launch, ValueRange{}, failed, ValueRange{one});
    return range;
  }

  // __kiln_launch_N([i64 grid sizes,] ptr bufs..., i64 sizes...): unless a launch already failed,
  // host->launch(host->device, k, grid, block, 0, {&bufs[0], ...}); a
  // missing host or launcher, or a nonzero result, is the call's status.
  LogicalResult buildLauncher(LLVM::LLVMFuncOp fn, uint32_t kernel) {
    Location loc = fn.getLoc();
    auto grid = fn->getAttrOfType<DenseI32ArrayAttr>(KilnDialect::getGridAttrName());
    auto block = fn->getAttrOfType<DenseI32ArrayAttr>(KilnDialect::getBlockAttrName());
    auto params = fn.getFunctionType().getParams();
    // A grid size of -1 is a leading parameter, in x, y, z order (a
    // dynamic model's, computed from its sizes).
    unsigned gridOperands = grid && grid.size() == 3 ? llvm::count(grid.asArrayRef(), -1) : 0;
    auto kernelParams = params.drop_front(gridOperands);
    // Buffers, then dynamic sizes (kiln-split-dynamic-args).
    bool pointersThenSizes =
        llvm::all_of(kernelParams, [&](Type t) { return isa<LLVM::LLVMPointerType>(t) || t == i64; });
    if (!grid || !block || grid.size() != 3 || block.size() != 3 || !pointersThenSizes ||
        params.size() < gridOperands ||
        !llvm::all_of(params.take_front(gridOperands), [&](Type t) { return t == i64; }))
      return fn.emitError("launch declaration without kiln.grid/kiln.block or with "
                          "parameters other than pointers and sizes (run "
                          "kiln-outline-gpu-kernels)");
    // Dynamic shared memory (bytes), when the kernel uses any.
    auto sharedAttr = fn->getAttrOfType<IntegerAttr>(KilnDialect::getSharedAttrName());
    int32_t sharedBytes = sharedAttr ? (int32_t)sharedAttr.getInt() : 0;
    // TMA tensor maps the kernel takes after its buffers (KernelFactory::
    // addTensorMap): [buffer index, KILN_TENSOR_MAP_WORDS words].
    SmallVector<ArrayRef<int64_t>> maps;
    if (auto attr = fn->getAttrOfType<ArrayAttr>(KilnDialect::getTensorMapsAttrName()))
      for (Attribute a : attr) {
        auto words = dyn_cast<DenseI64ArrayAttr>(a);
        if (!words || words.size() != 1 + KILN_TENSOR_MAP_WORDS || words[0] < 0 ||
            words[0] >= (int64_t)kernelParams.size())
          return fn.emitError("malformed kiln.tensor_maps entry");
        maps.push_back(words.asArrayRef());
      }
    for (StringRef attr : {KilnDialect::getGridAttrName(), KilnDialect::getBlockAttrName(),
                           KilnDialect::getSharedAttrName(), KilnDialect::getTensorMapsAttrName()})
      fn->removeAttr(attr);
    fn.setLinkage(LLVM::Linkage::Internal);
    OpBuilder b(ctx);
    Block *entry = fn.addEntryBlock(b);
    Block *check = new Block(), *launch = new Block(), *failed = new Block(), *done = new Block();
    for (Block *blk : {check, launch, failed, done})
      fn.getBody().push_back(blk);
    failed->addArgument(i32, loc);
    OpBuilder e = OpBuilder::atBlockBegin(entry);
    Value zero = LLVM::ConstantOp::create(e, loc, i32, e.getI32IntegerAttr(0));
    Value one = LLVM::ConstantOp::create(e, loc, i32, e.getI32IntegerAttr(1));
    branchIfRunOk(e, loc, check, done);

    OpBuilder c = OpBuilder::atBlockBegin(check);
    Value host = LLVM::LoadOp::create(c, loc, ptr, hostSlot(c, loc));
    Value null = LLVM::ZeroOp::create(c, loc, ptr);
    // Fields 2 and 3 of kiln_artifact_host_t (ArtifactFormat.h).
    Value hasHost = LLVM::ICmpOp::create(c, loc, LLVM::ICmpPredicate::ne, host, null);
    Block *fields = new Block();
    fn.getBody().getBlocks().insert(Region::iterator(launch), fields);
    LLVM::CondBrOp::create(c, loc, hasHost, fields, ValueRange{}, failed, ValueRange{one});
    OpBuilder f = OpBuilder::atBlockBegin(fields);
    auto field = [&](OpBuilder &ob, int32_t i) {
      Value addr = LLVM::GEPOp::create(ob, loc, ptr, ptr, host, ArrayRef<LLVM::GEPArg>{i});
      return LLVM::LoadOp::create(ob, loc, ptr, addr).getResult();
    };
    Value launchFn = field(f, 3);
    Value hasLaunch = LLVM::ICmpOp::create(f, loc, LLVM::ICmpPredicate::ne, launchFn, null);
    LLVM::CondBrOp::create(f, loc, hasLaunch, launch, ValueRange{}, failed, ValueRange{one});

    // Each tensor map from the runtime (field 6), in blocks of their own
    // between the host's fields and the launch: a null one fails the run.
    SmallVector<Value> mapAddrs;
    Block *prev = fields;
    for (ArrayRef<int64_t> map : maps) {
      Block *get = new Block();
      fn.getBody().getBlocks().insert(Region::iterator(launch), get);
      prev->getTerminator()->setSuccessor(get, 0); // was the launch
      OpBuilder g = OpBuilder::atBlockBegin(get);
      Value fnPtr = field(g, 6);
      Block *call = new Block();
      fn.getBody().getBlocks().insert(Region::iterator(launch), call);
      Value has = LLVM::ICmpOp::create(g, loc, LLVM::ICmpPredicate::ne, fnPtr, null);
      LLVM::CondBrOp::create(g, loc, has, call, ValueRange{}, failed, ValueRange{one});
      OpBuilder cl = OpBuilder::atBlockBegin(call);
      Value words = LLVM::ConstantOp::create(cl, loc, i64, cl.getI64IntegerAttr(KILN_TENSOR_MAP_WORDS));
      Value desc = LLVM::AllocaOp::create(cl, loc, ptr, i64, words);
      for (int32_t w = 0; w < (int32_t)KILN_TENSOR_MAP_WORDS; ++w) {
        Value slot = LLVM::GEPOp::create(cl, loc, ptr, i64, desc, ArrayRef<LLVM::GEPArg>{w});
        LLVM::StoreOp::create(cl, loc,
                              LLVM::ConstantOp::create(cl, loc, i64, cl.getI64IntegerAttr(map[1 + w])),
                              slot);
      }
      auto mapType = LLVM::LLVMFunctionType::get(ptr, {ptr, ptr, ptr});
      Value addr = LLVM::CallOp::create(cl, loc, mapType,
                                        ValueRange{fnPtr, field(cl, 2),
                                                   entry->getArgument(map[0] + gridOperands),
                                                   desc})
                       .getResult();
      mapAddrs.push_back(addr);
      Value got = LLVM::ICmpOp::create(cl, loc, LLVM::ICmpPredicate::ne, addr, null);
      LLVM::CondBrOp::create(cl, loc, got, launch, ValueRange{}, failed, ValueRange{one});
      prev = call;
    }

    for (unsigned i = 0; i < gridOperands; ++i)
      prev = checkGridBlocks(fn, entry->getArgument(i), prev, launch, failed, one);
    OpBuilder l = OpBuilder::atBlockBegin(launch);
    Value device = field(l, 2);
    SmallVector<Value> kernelArgs(entry->getArguments().drop_front(gridOperands));
    kernelArgs.append(mapAddrs);
    unsigned n = kernelArgs.size();
    Value count = LLVM::ConstantOp::create(l, loc, i64, l.getI64IntegerAttr(std::max(1u, n)));
    Value slots = LLVM::AllocaOp::create(l, loc, ptr, ptr, count);
    Value pointers = LLVM::AllocaOp::create(l, loc, ptr, ptr, count);
    for (unsigned i = 0; i < n; ++i) {
      Value slot = LLVM::GEPOp::create(l, loc, ptr, ptr, slots, ArrayRef<LLVM::GEPArg>{(int32_t)i});
      LLVM::StoreOp::create(l, loc, kernelArgs[i], slot);
      Value p = LLVM::GEPOp::create(l, loc, ptr, ptr, pointers, ArrayRef<LLVM::GEPArg>{(int32_t)i});
      LLVM::StoreOp::create(l, loc, slot, p);
    }
    auto dims = [&](DenseI32ArrayAttr attr) {
      Value three = LLVM::ConstantOp::create(l, loc, i64, l.getI64IntegerAttr(3));
      Value array = LLVM::AllocaOp::create(l, loc, ptr, i32, three);
      for (int32_t i = 0; i < 3; ++i) {
        Value slot = LLVM::GEPOp::create(l, loc, ptr, i32, array, ArrayRef<LLVM::GEPArg>{i});
        LLVM::StoreOp::create(
            l, loc, LLVM::ConstantOp::create(l, loc, i32, l.getI32IntegerAttr(attr[i])), slot);
      }
      return array;
    };
    Value gridArray = dims(grid), blockArray = dims(block);
    storeGridOperands(l, loc, grid, entry->getArguments(), gridArray);
    Value k = LLVM::ConstantOp::create(l, loc, i32, l.getI32IntegerAttr(kernel));
    Value shared = LLVM::ConstantOp::create(l, loc, i32, l.getI32IntegerAttr(sharedBytes));
    auto launchType = LLVM::LLVMFunctionType::get(i32, {ptr, i32, ptr, ptr, i32, ptr});
    Value result = LLVM::CallOp::create(l, loc, launchType,
                                        ValueRange{launchFn, device, k, gridArray, blockArray,
                                                   shared, pointers})
                       .getResult();
    Value launched = LLVM::ICmpOp::create(l, loc, LLVM::ICmpPredicate::eq, result, zero);
    LLVM::CondBrOp::create(l, loc, launched, done, ValueRange{}, failed, ValueRange{result});

    OpBuilder fl = OpBuilder::atBlockBegin(failed);
    LLVM::StoreOp::create(fl, loc, failed->getArgument(0), statusSlot(fl, loc));
    LLVM::BrOp::create(fl, loc, done);
    OpBuilder d = OpBuilder::atBlockBegin(done);
    LLVM::ReturnOp::create(d, loc, ValueRange{});
    return success();
  }

  ModuleOp module;
  MLIRContext *ctx;
  Type ptr, i64, i32;
};

struct KilnEmitEntryPass final : impl::KilnEmitEntryBase<KilnEmitEntryPass> {
  void runOnOperation() override {
    if (failed(EntryBuilder(getOperation()).run()))
      signalPassFailure();
  }
};

} // namespace
} // namespace kiln

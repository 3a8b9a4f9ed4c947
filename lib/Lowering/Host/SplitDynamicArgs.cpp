//===- SplitDynamicArgs.cpp - kiln-split-dynamic-args pass ----------------===//
//
// func.func @k(%a: memref<?x64xf32>, %b: memref<10xf32>)
//   => func.func @k(%p: memref<1xf32>, %b: memref<10xf32>, %n: index)
//        attributes {kiln.dynamic_sizes = [[0, 0]]} {
//        %a = memref.reinterpret_cast %p to offset: [0], sizes: [%n, 64],
//                                            strides: [64, 1]
// and every call passes the pointer and the sizes. Identity layouts only:
// their offset is 0, so the pointer is the data. CUDA kernels (gpu.func)
// split alike, for their launches (host functions of the same buffers)
// pass the same pointers and sizes; the kernels then take bare pointers.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPLITDYNAMICARGS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// A buffer passed as a pointer: one with dynamic sizes, or an empty one
/// of rank 2 or more (a cache of past length 0: MLIR's bare-pointer
/// convention refuses `memref<1x0x4xf32>`, whose strides it cannot use).
bool isDynamicBuffer(Type t) {
  auto m = dyn_cast<MemRefType>(t);
  return m && (!m.hasStaticShape() || (m.getRank() > 1 && m.getNumElements() == 0));
}

/// The pointer a dynamic memref is passed as.
MemRefType pointerType(MemRefType t) {
  return MemRefType::get({1}, t.getElementType(), MemRefLayoutAttrInterface(),
                         t.getMemorySpace());
}

/// (argument, dimension) of each size a split function takes, in order.
SmallVector<std::pair<unsigned, int64_t>> sizesOf(FunctionType type) {
  SmallVector<std::pair<unsigned, int64_t>> sizes;
  for (auto [i, t] : llvm::enumerate(type.getInputs()))
    if (isDynamicBuffer(t))
      for (int64_t d = 0, r = cast<MemRefType>(t).getRank(); d < r; ++d)
        if (cast<MemRefType>(t).isDynamicDim(d))
          sizes.push_back({(unsigned)i, d});
  return sizes;
}

/// Rebuilds argument `arg` (now a pointer) as `type` from its sizes.
Value rebuild(OpBuilder &b, Location loc, Value pointer, MemRefType type,
              ArrayRef<Value> dynSizes) {
  SmallVector<OpFoldResult> sizes, strides(type.getRank());
  unsigned next = 0;
  for (int64_t d = 0; d < type.getRank(); ++d)
    sizes.push_back(type.isDynamicDim(d) ? OpFoldResult(dynSizes[next++])
                                         : OpFoldResult(b.getIndexAttr(type.getDimSize(d))));
  // Row-major strides: a static suffix stays an attribute.
  OpFoldResult stride = b.getIndexAttr(1);
  for (int64_t d = type.getRank() - 1; d >= 0; --d) {
    strides[d] = stride;
    if (d == 0)
      break;
    auto known = getConstantIntValue(stride);
    if (known && !type.isDynamicDim(d)) {
      stride = b.getIndexAttr(*known * type.getDimSize(d));
    } else if (known == 1) {
      stride = sizes[d];
    } else {
      Value s = getValueOrCreateConstantIndexOp(b, loc, stride);
      Value n = getValueOrCreateConstantIndexOp(b, loc, sizes[d]);
      stride = arith::MulIOp::create(b, loc, s, n).getResult();
    }
  }
  return memref::ReinterpretCastOp::create(b, loc, type, pointer, b.getIndexAttr(0), sizes,
                                           strides);
}

LogicalResult checkLayouts(FunctionOpInterface fn) {
  for (auto [i, t] : llvm::enumerate(fn.getArgumentTypes()))
    if (isDynamicBuffer(t) && !cast<MemRefType>(t).getLayout().isIdentity())
      return fn.emitError() << "argument " << i << " of type " << t
                            << " has dynamic sizes and a non-identity layout; kernels "
                               "take root buffers (kiln-outline-kernels)";
  return success();
}

struct KilnSplitDynamicArgsPass final
    : impl::KilnSplitDynamicArgsBase<KilnSplitDynamicArgsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    // Host functions, and CUDA kernels (their launches are host functions
    // of the same types, or with a leading grid size: split alike).
    SmallVector<FunctionOpInterface> fns;
    for (auto fn : module.getOps<func::FuncOp>())
      fns.push_back(fn);
    for (auto gpuModule : module.getOps<gpu::GPUModuleOp>())
      for (auto kernel : gpuModule.getOps<gpu::GPUFuncOp>())
        fns.push_back(kernel);
    llvm::DenseMap<Operation *, FunctionType> split; // the functions' types before
    llvm::StringMap<FunctionType> called;
    for (FunctionOpInterface fn : fns) {
      auto type = cast<FunctionType>(fn.getFunctionType());
      if (!llvm::any_of(type.getInputs(), isDynamicBuffer))
        continue;
      if (failed(checkLayouts(fn)))
        return signalPassFailure();
      split[fn.getOperation()] = type;
      if (isa<func::FuncOp>(fn))
        called[fn.getName()] = type;
    }
    if (split.empty())
      return;
    // Calls first, while the callees' types are the old ones.
    WalkResult walk = module.walk([&](func::CallOp call) {
      auto it = called.find(call.getCallee());
      if (it == called.end())
        return WalkResult::advance();
      OpBuilder b(call);
      SmallVector<Value> operands(call.getOperands()), sizes;
      for (auto [i, d] : sizesOf(it->second))
        sizes.push_back(memref::DimOp::create(b, call.getLoc(), operands[i], d));
      for (auto [i, t] : llvm::enumerate(it->second.getInputs()))
        if (isDynamicBuffer(t)) {
          auto mt = cast<MemRefType>(t);
          operands[i] = memref::ReinterpretCastOp::create(
              b, call.getLoc(), pointerType(mt), operands[i], b.getIndexAttr(0),
              ArrayRef<OpFoldResult>{b.getIndexAttr(1)}, ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
        }
      llvm::append_range(operands, sizes);
      call->setOperands(operands);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    Builder attrs(ctx);
    for (FunctionOpInterface fn : fns) {
      auto it = split.find(fn.getOperation());
      if (it == split.end())
        continue;
      FunctionType old = it->second;
      auto sizes = sizesOf(old);
      SmallVector<Type> inputs;
      for (Type t : old.getInputs())
        inputs.push_back(isDynamicBuffer(t) ? pointerType(cast<MemRefType>(t)) : t);
      SmallVector<Attribute> record;
      for (auto [i, d] : sizes)
        record.push_back(attrs.getDenseI64ArrayAttr({(int64_t)i, d}));
      fn->setAttr(KilnDialect::getDynamicSizesAttrName(), attrs.getArrayAttr(record));
      unsigned numArgs = old.getNumInputs();
      fn.setType(FunctionType::get(ctx, inputs, old.getResults()));
      SmallVector<unsigned> at(sizes.size(), numArgs);
      SmallVector<Type> indexTypes(sizes.size(), IndexType::get(ctx));
      SmallVector<Location> locs(sizes.size(), fn.getLoc());
      if (fn.isExternal()) {
        if (failed(fn.insertArguments(at, indexTypes, {}, locs)))
          return signalPassFailure();
        continue;
      }
      Block &entry = fn.getFunctionBody().front();
      for (auto [i, t] : llvm::enumerate(inputs))
        entry.getArgument(i).setType(t);
      if (failed(fn.insertArguments(at, indexTypes, {}, locs)))
        return signalPassFailure();
      auto sizeArgs = llvm::to_vector(ValueRange(entry.getArguments().slice(numArgs, sizes.size())));
      OpBuilder b = OpBuilder::atBlockBegin(&entry);
      unsigned next = 0;
      for (auto [i, t] : llvm::enumerate(old.getInputs())) {
        if (!isDynamicBuffer(t))
          continue;
        auto mt = cast<MemRefType>(t);
        BlockArgument arg = entry.getArgument(i);
        unsigned count = mt.getNumDynamicDims();
        Value whole = rebuild(b, fn.getLoc(), arg, mt, ArrayRef(sizeArgs).slice(next, count));
        next += count;
        arg.replaceAllUsesExcept(whole, whole.getDefiningOp());
      }
    }
  }
};

} // namespace
} // namespace kiln

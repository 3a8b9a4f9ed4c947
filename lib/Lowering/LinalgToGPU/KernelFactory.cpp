//===- KernelFactory.cpp - CUDA kernels and their launches ----------------===//

#include "KernelFactory.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Lowering/Host/DimBounds.h"
#include "kiln/Lowering/Host/KernelCaptures.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <limits>

using namespace mlir;

namespace kiln {

/// A new kernel taking `args`, with `clones` recomputed at its start; the
/// builder is left there. Its launch replaces `ops` in the host program.
gpu::GPUFuncOp KernelFactory::create(func::FuncOp fn, Operation *at, const SetVector<Value> &args,
                                   const SetVector<Operation *> &clones,
                                   ArrayRef<int64_t> grid, int64_t block, IRMapping &map,
                                   OpBuilder &b, Value gridX) {
  MLIRContext *ctx = module.getContext();
  Location loc = at->getLoc();
  std::string name = (fn.getName() + "_kernel" + Twine(counter)).str();
  auto types = llvm::map_to_vector(args, [](Value v) { return v.getType(); });
  OpBuilder gb = OpBuilder::atBlockEnd(gpuModule_.getBody());
  auto kernel = gpu::GPUFuncOp::create(gb, loc, name, FunctionType::get(ctx, types, {}));
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), UnitAttr::get(ctx));
  kernel.setKnownBlockSizeAttr(gb.getDenseI32ArrayAttr({int32_t(block), 1, 1}));
  SmallVector<int32_t> grid3(3, 1);
  for (auto [d, g] : llvm::enumerate(grid))
    grid3[d] = int32_t(g);
  if (gridX)
    grid3[0] = -1; // the launch's first operand
  else
    kernel.setKnownGridSizeAttr(gb.getDenseI32ArrayAttr(grid3));
  Block &entry = kernel.getBody().front();
  b.setInsertionPointToStart(&entry);
  gpu::ReturnOp::create(b, loc);
  b.setInsertionPointToStart(&entry);
  materializeCaptures(b, args.getArrayRef(), entry.getArguments(), clones.getArrayRef(), map);

  // The host side: a declaration kiln-emit-entry defines, and its call.
  OpBuilder hb = OpBuilder::atBlockEnd(module.getBody());
  hb.setInsertionPoint(gpuModule_);
  SmallVector<Type> launchTypes;
  SmallVector<Value> operands;
  if (gridX) {
    launchTypes.push_back(gridX.getType());
    operands.push_back(gridX);
  }
  llvm::append_range(launchTypes, types);
  llvm::append_range(operands, args.getArrayRef());
  auto launch = func::FuncOp::create(hb, loc, ("__kiln_launch_" + Twine(counter)).str(),
                                     FunctionType::get(ctx, launchTypes, {}));
  launch.setPrivate();
  launch->setAttr(KilnDialect::getKernelNameAttrName(), hb.getStringAttr(name));
  launch->setAttr(KilnDialect::getGridAttrName(), hb.getDenseI32ArrayAttr(grid3));
  launch->setAttr(KilnDialect::getBlockAttrName(), hb.getDenseI32ArrayAttr({int32_t(block), 1, 1}));
  OpBuilder cb(at);
  func::CallOp::create(cb, loc, launch, operands);
  pendingNodes.push_back({launch, kernel});
  ++counter;
  return kernel;
}

LogicalResult KernelFactory::setRunGrid(func::CallOp call, ArrayRef<Value> sizes) {
  auto launch = module.lookupSymbol<func::FuncOp>(call.getCallee());
  auto grid = launch ? launch->getAttrOfType<DenseI32ArrayAttr>(KilnDialect::getGridAttrName())
                     : DenseI32ArrayAttr();
  if (!grid || grid.size() != 3 || llvm::is_contained(grid.asArrayRef(), -1) || sizes.size() > 3)
    return call.emitError("kiln internal error: no static launch to give a run-time grid");
  SmallVector<int32_t> runGrid(grid.asArrayRef());
  SmallVector<Type> params;
  SmallVector<Value> operands;
  for (auto [d, size] : llvm::enumerate(sizes))
    if (size) {
      runGrid[d] = -1;
      params.push_back(size.getType());
      operands.push_back(size);
    }
  OpBuilder b(call);
  launch->setAttr(KilnDialect::getGridAttrName(), b.getDenseI32ArrayAttr(runGrid));
  llvm::append_range(params, launch.getFunctionType().getInputs());
  launch.setFunctionType(FunctionType::get(call.getContext(), params, {}));
  llvm::append_range(operands, call.getOperands());
  call->setOperands(operands);
  if (auto name = launch->getAttrOfType<StringAttr>(KilnDialect::getKernelNameAttrName()))
    if (auto kernel = gpuModule_.lookupSymbol<gpu::GPUFuncOp>(name))
      kernel->removeAttr(kernel.getKnownGridSizeAttrName());
  return success();
}

void KernelFactory::setSharedBytes(gpu::GPUFuncOp kernel, int64_t bytes) {
  for (auto [launch, k] : pendingNodes)
    if (k == kernel)
      launch->setAttr(KilnDialect::getSharedAttrName(),
                      IntegerAttr::get(IntegerType::get(module.getContext(), 32), bytes));
}

Value KernelFactory::addTensorMap(gpu::GPUFuncOp kernel, unsigned arg, ArrayRef<int64_t> desc) {
  MLIRContext *ctx = module.getContext();
  unsigned index = kernel.getNumArguments();
  // Trailing arguments, after the launch's memrefs, in the order of the
  // launch's kiln.tensor_maps (kiln-emit-entry appends them so).
  if (failed(kernel.insertArgument(index, IntegerType::get(ctx, 64), DictionaryAttr(),
                                   kernel.getLoc())))
    return Value();
  SmallVector<int64_t> entry{int64_t(arg)};
  llvm::append_range(entry, desc);
  for (auto [launch, k] : pendingNodes)
    if (k == kernel) {
      SmallVector<Attribute> maps;
      if (auto old = launch->getAttrOfType<ArrayAttr>(KilnDialect::getTensorMapsAttrName()))
        llvm::append_range(maps, old.getValue());
      maps.push_back(DenseI64ArrayAttr::get(ctx, entry));
      launch->setAttr(KilnDialect::getTensorMapsAttrName(), ArrayAttr::get(ctx, maps));
    }
  return kernel.getArgument(index);
}

StringRef KernelFactory::chip() const {
  if (auto targets = gpu::GPUModuleOp(gpuModule_).getTargetsAttr())
    for (Attribute t : targets)
      if (auto nvvm = dyn_cast<NVVM::NVVMTargetAttr>(t))
        return nvvm.getChip();
  return "";
}

/// Constant globals the kernels read go into the gpu.module; the kiln.ops
/// of each kernel go onto its launch declaration.
void KernelFactory::finish() {
  OpBuilder gb = OpBuilder::atBlockBegin(gpuModule_.getBody());
  llvm::StringSet<> copied;
  gpuModule_.walk([&](memref::GetGlobalOp get) {
    StringRef name = get.getName();
    if (!copied.insert(name).second)
      return;
    if (auto global = module.lookupSymbol<memref::GlobalOp>(name))
      gb.clone(*global);
  });
  // Every launch needs a line in the kernel table, nodes or not.
  for (auto [launch, kernel] : pendingNodes) {
    recordNodes(launch, kernel);
    if (!launch->hasAttr(KilnDialect::getOpsAttrName()))
      launch->setAttr(KilnDialect::getOpsAttrName(), ArrayAttr::get(module.getContext(), {}));
  }
}


namespace {

/// True when `kernel` only computes per thread: one block, no barriers,
/// shared memory, cross-thread operations or calls.
bool isSimpleKernel(gpu::GPUFuncOp kernel) {
  if (!kernel.getBody().hasOneBlock() || kernel.getNumWorkgroupAttributions() ||
      kernel.getNumPrivateAttributions())
    return false;
  WalkResult r = kernel.walk([](Operation *op) {
    if (isa<gpu::BarrierOp, gpu::AllReduceOp, gpu::SubgroupReduceOp, gpu::ShuffleOp,
            gpu::DynamicSharedMemoryOp, func::CallOp>(op) ||
        op->getDialect()->getNamespace() == "nvgpu" ||
        (isa<gpu::ReturnOp>(op) && op != op->getBlock()->getTerminator()))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return !r.wasInterrupted();
}

/// The kernel arguments `kernel` writes through (any view of them); all of
/// them when some write names no buffer.
llvm::SmallBitVector writtenArguments(gpu::GPUFuncOp kernel) {
  unsigned n = kernel.getNumArguments();
  llvm::SmallBitVector written(n);
  kernel.walk([&](Operation *op) {
    auto iface = dyn_cast<MemoryEffectOpInterface>(op);
    if (!iface) {
      if (!isPure(op) && op->getNumRegions() == 0)
        written.set();
      return;
    }
    SmallVector<MemoryEffects::EffectInstance> effects;
    iface.getEffects(effects);
    for (auto &e : effects) {
      if (!isa<MemoryEffects::Write>(e.getEffect()))
        continue;
      Value v = e.getValue();
      while (v && v.getDefiningOp<ViewLikeOpInterface>())
        v = v.getDefiningOp<ViewLikeOpInterface>().getViewSource();
      auto arg = dyn_cast_or_null<BlockArgument>(v);
      if (arg && arg.getOwner() == &kernel.getBody().front())
        written.set(arg.getArgNumber());
      else if (!v || !isa_and_nonnull<memref::AllocaOp>(v.getDefiningOp()))
        written.set();
    }
  });
  return written;
}

/// True when no byte one launch writes is touched by the other (each
/// call's operands past its grid, `skipA`/`skipB`, are its kernel's).
bool independent(func::CallOp a, gpu::GPUFuncOp ka, unsigned skipA, func::CallOp b,
                 gpu::GPUFuncOp kb, unsigned skipB) {
  llvm::SmallBitVector wa = writtenArguments(ka), wb = writtenArguments(kb);
  for (auto [i, x] : llvm::enumerate(a.getOperands().drop_front(skipA)))
    for (auto [j, y] : llvm::enumerate(b.getOperands().drop_front(skipB))) {
      if (!wa.test(i) && !wb.test(j))
        continue; // both only read
      std::optional<Bytes> bx = bytesOf(x), by = bytesOf(y);
      if (!bx || !by || bx->overlaps(*by))
        return false;
    }
  return true;
}

} // namespace

void KernelFactory::mergeLaunches(func::FuncOp fn) {
  llvm::StringMap<std::pair<func::FuncOp, gpu::GPUFuncOp>> byLaunch;
  for (auto [launch, kernel] : pendingNodes)
    byLaunch[launch.getName()] = {launch, kernel};
  auto kernelOf = [&](func::CallOp call) -> std::pair<func::FuncOp, gpu::GPUFuncOp> {
    return byLaunch.lookup(call.getCallee());
  };
  func::CallOp previous;
  for (Operation &op : llvm::make_early_inc_range(fn.getBody().front())) {
    auto call = dyn_cast<func::CallOp>(op);
    auto [launch, kernel] = call ? kernelOf(call) : std::pair<func::FuncOp, gpu::GPUFuncOp>();
    if (!kernel) {
      // Views and constants may sit between the launches; anything else
      // (memory, a host loop) ends the run.
      if (!isMemoryEffectFree(&op) && !isa<ViewLikeOpInterface>(op))
        previous = {};
      continue;
    }
    auto [prevLaunch, prevKernel] = previous ? kernelOf(previous)
                                             : std::pair<func::FuncOp, gpu::GPUFuncOp>();
    // A grid sized at run time (x only, its size the call's first operand)
    // matches one computed alike from the same sizes.
    auto dynamicGrid = [](func::FuncOp l) {
      auto grid = l->getAttrOfType<DenseI32ArrayAttr>(KilnDialect::getGridAttrName());
      return !grid || llvm::is_contained(grid.asArrayRef(), -1);
    };
    auto gridX = [&](func::FuncOp l) {
      auto grid = l->getAttrOfType<DenseI32ArrayAttr>(KilnDialect::getGridAttrName());
      return grid && grid.size() == 3 && grid[0] == -1 && grid[1] > 0 && grid[2] > 0;
    };
    bool sameGrid = prevKernel && (dynamicGrid(prevLaunch) || dynamicGrid(launch)
                                       ? gridX(prevLaunch) && gridX(launch) &&
                                             sameIndex(previous.getOperand(0), call.getOperand(0))
                                       : true);
    unsigned skip = prevKernel && dynamicGrid(launch) ? 1 : 0;
    bool merge = prevKernel && isSimpleKernel(prevKernel) && isSimpleKernel(kernel) && sameGrid &&
                 prevLaunch->getAttr(KilnDialect::getGridAttrName()) ==
                     launch->getAttr(KilnDialect::getGridAttrName()) &&
                 prevLaunch->getAttr(KilnDialect::getBlockAttrName()) ==
                     launch->getAttr(KilnDialect::getBlockAttrName()) &&
                 !prevLaunch->hasAttr(KilnDialect::getSharedAttrName()) &&
                 !launch->hasAttr(KilnDialect::getSharedAttrName()) &&
                 independent(previous, prevKernel, skip, call, kernel, skip);
    if (!merge) {
      previous = call;
      continue;
    }
    // The previous kernel's body, then this one's, in the previous kernel
    // (its arguments first, then this call's others), launched here.
    // (A grid sized at run time: the previous call's first operand, which
    // is no kernel argument; this call's equal one goes.)
    SmallVector<Value> operands(previous.getOperands());
    IRMapping map;
    Block &into = prevKernel.getBody().front();
    for (auto [i, v] : llvm::enumerate(call.getOperands().drop_front(skip))) {
      auto args = ArrayRef(operands).drop_front(skip);
      auto it = llvm::find(args, v);
      if (it != args.end()) {
        map.map(kernel.getArgument(i), into.getArgument(it - args.begin()));
        continue;
      }
      operands.push_back(v);
      map.map(kernel.getArgument(i), into.addArgument(v.getType(), v.getLoc()));
    }
    auto types = llvm::map_to_vector(operands, [](Value v) { return v.getType(); });
    prevKernel.setFunctionType(
        FunctionType::get(module.getContext(), ArrayRef(types).drop_front(skip), {}));
    prevLaunch.setFunctionType(FunctionType::get(module.getContext(), types, {}));
    OpBuilder kb(into.getTerminator());
    for (Operation &inner : kernel.getBody().front().without_terminator())
      kb.clone(inner, map);
    OpBuilder cb(call);
    auto merged = func::CallOp::create(cb, call.getLoc(), prevLaunch, operands);
    merged->setLoc(FusedLoc::get(module.getContext(), {previous.getLoc(), call.getLoc()}));
    byLaunch.erase(launch.getName());
    previous.erase();
    call.erase();
    gpu::GPUFuncOp gone = kernel;
    llvm::erase_if(pendingNodes, [&](auto &p) { return p.second == gone; });
    kernel.erase();
    launch.erase();
    previous = merged;
  }
}

bool captureFused(Operation *op, ArrayRef<linalg::GenericOp> epilogue, ArrayRef<Operation *> also,
                  SmallVectorImpl<Operation *> &fused, SetVector<Value> &args,
                  SetVector<Operation *> &clones) {
  fused.assign({op});
  for (linalg::GenericOp e : epilogue)
    fused.push_back(e);
  SmallVector<Operation *> captured(fused.begin(), fused.end());
  llvm::append_range(captured, also);
  return collectCaptures(captured, args, clones);
}

bool eraseFused(Operation *op, ArrayRef<linalg::GenericOp> epilogue, const ImplicitPad *pad) {
  for (linalg::GenericOp e : llvm::reverse(epilogue))
    e->erase();
  op->erase();
  if (pad) {
    pad->copy->erase();
    pad->fill->erase();
  }
  return !epilogue.empty();
}

/// Row-major delinearization of `linear` over `sizes`.
std::pair<int64_t, int64_t> launchShape(int64_t threads, int64_t maxBlock) {
  int64_t block = threads >= maxBlock ? maxBlock : (threads + 31) / 32 * 32;
  return {block, (threads + block - 1) / block};
}

Value linearThreadIndex(OpBuilder &b, Location loc, int64_t threads, int64_t block,
                        int64_t grid) {
  auto cst = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value lin = arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, bid, cst(block)), tid);
  if (grid * block != threads) {
    Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, lin, cst(threads));
    auto guard = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
    b.setInsertionPointToStart(guard.thenBlock());
  }
  return lin;
}

Value linearThreadIndex(OpBuilder &b, Location loc, Value threads, int64_t block) {
  Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value size = arith::ConstantIndexOp::create(b, loc, block);
  Value lin = arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, bid, size), tid);
  Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, lin, threads);
  auto guard = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
  b.setInsertionPointToStart(guard.thenBlock());
  return lin;
}

SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value linear, ArrayRef<int64_t> sizes) {
  // (Size 0 only bounds the outermost index: no constant for it.)
  SmallVector<Value> values(sizes.size());
  for (size_t d = 1; d < sizes.size(); ++d)
    values[d] = arith::ConstantIndexOp::create(b, loc, sizes[d]);
  return delinearize(b, loc, linear, ArrayRef<Value>(values));
}

SmallVector<Value> indicesAt(OpBuilder &b, Location loc, linalg::LinalgOp op,
                             OpOperand &operand, ArrayRef<Value> ivs) {
  AffineMap m = op.getMatchingIndexingMap(&operand);
  SmallVector<Value> idx;
  for (AffineExpr e : m.getResults()) {
    if (auto dim = dyn_cast<AffineDimExpr>(e)) { // the common case, no apply
      idx.push_back(ivs[dim.getPosition()]);
      continue;
    }
    idx.push_back(
        affine::AffineApplyOp::create(b, loc, AffineMap::get(m.getNumDims(), 0, e), ivs));
  }
  return idx;
}

Value loadAt(OpBuilder &b, Location loc, linalg::LinalgOp op, OpOperand &operand,
             ArrayRef<Value> ivs, IRMapping &map) {
  Value v = map.lookupOrDefault(operand.get());
  if (!isa<MemRefType>(v.getType()))
    return v;
  return memref::LoadOp::create(b, loc, v, indicesAt(b, loc, op, operand, ivs));
}

void cloneBody(OpBuilder &b, linalg::LinalgOp op, ArrayRef<Value> ivs, IRMapping &bodyMap) {
  for (Operation &inner : op.getBlock()->without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
      bodyMap.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    b.clone(inner, bodyMap);
  }
}

void emitElementwiseAt(OpBuilder &b, Location loc, linalg::LinalgOp op, ArrayRef<Value> ivs,
                       IRMapping &map, llvm::function_ref<Value(OpOperand &)> given) {
  Block &body = *op.getBlock();
  IRMapping bodyMap = map;
  for (OpOperand &operand : op->getOpOperands()) {
    BlockArgument arg = op.getMatchingBlockArgument(&operand);
    if (arg.use_empty())
      continue;
    Value v = given ? given(operand) : Value();
    bodyMap.map(arg, v ? v : loadAt(b, loc, op, operand, ivs, map));
  }
  cloneBody(b, op, ivs, bodyMap);
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable()))
    memref::StoreOp::create(b, loc, bodyMap.lookupOrDefault(yield.getOperand(i)),
                            map.lookupOrDefault(init.get()), indicesAt(b, loc, op, init, ivs));
}

std::optional<Bytes> bytesOf(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type || !type.getElementType().isIntOrFloat())
    return std::nullopt;
  // Dynamic sizes at their largest (the inputs' declared maxima): the
  // bytes a buffer may take, which is where the CUDA arena places it.
  auto *parent = v.getParentBlock() ? v.getParentBlock()->getParentOp() : nullptr;
  auto module = parent ? parent->getParentOfType<ModuleOp>() : ModuleOp();
  auto inputMax = module ? module->getAttrOfType<ArrayAttr>(KilnDialect::getInputDimMaxAttrName())
                         : ArrayAttr();
  std::optional<int64_t> size = (type.getElementTypeBitWidth() + 7) / 8;
  for (int64_t d = 0; d < type.getRank() && size; ++d) {
    int64_t n = type.getDimSize(d);
    if (ShapedType::isDynamic(n)) {
      auto range = dimRange(v, d, inputMax);
      n = range ? range->second : -1;
    }
    if (n < 0 || __builtin_mul_overflow(*size, n, &*size))
      size = std::nullopt;
  }
  Operation *def = v.getDefiningOp();
  if (!def) // a function argument: an input, an output, the arena, the weights
    return Bytes{v, 0, size.value_or(std::numeric_limits<int64_t>::max())};
  if (isa<memref::CollapseShapeOp, memref::ExpandShapeOp, memref::CastOp, memref::SubViewOp,
          memref::ReinterpretCastOp, memref::TransposeOp>(def))
    return bytesOf(def->getOperand(0)); // the source's bytes (a subview: at most those)
  if (!size)
    return std::nullopt;
  if (auto view = dyn_cast<memref::ViewOp>(def)) {
    auto shift = getConstantIntValue(view.getByteShift());
    auto src = bytesOf(view.getSource());
    if (!shift || !src)
      return std::nullopt;
    return Bytes{src->root, src->begin + *shift, src->begin + *shift + *size};
  }
  if (isa<memref::GetGlobalOp>(def))
    return Bytes{v, 0, *size}; // constants: never written
  if (isa<memref::AllocOp>(def))
    return Bytes{v, 0, *size}; // before the memory plan: its own bytes
  return std::nullopt;
}

} // namespace kiln

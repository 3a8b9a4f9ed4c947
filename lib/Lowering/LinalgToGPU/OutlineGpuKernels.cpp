//===- OutlineGpuKernels.cpp - kiln-outline-gpu-kernels pass --------------===//
//
// scf.parallel (%i, %j) = (0, 0) to (64, 100) { body(%i, %j, %buf) }
//   =>
// func.call @__kiln_launch_0(%buf)   {kiln.grid = [25,1,1], kiln.block = [256,1,1]}
// gpu.module @kiln_kernels [#nvvm.target<chip = "sm_80", ...>] {
//   gpu.func @main_kernel0(%buf) kernel {
//     %lin = block_id.x * 256 + thread_id.x
//     scf.if %lin < 6400 { %i = %lin / 100; %j = %lin % 100; body(%i, %j, %buf) }
//   }
// }
//
//===----------------------------------------------------------------------===//

#include "HostReads.h"
#include "KernelFactory.h"
#include "TensorCorePlan.h"
#include "kiln/Dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Dialects/Kiln/IR/KilnOps.h"
#include "kiln/Lowering/Host/KernelCaptures.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringSet.h"

namespace kiln {
#define GEN_PASS_DEF_KILNOUTLINEGPUKERNELS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {

bool staysOnHost(Operation &op) {
  // A branch of host work only: a buffer allocated on a condition, or
  // freed on one (the ownership flags of buffer deallocation).
  if (isa<scf::IfOp>(op))
    return llvm::all_of(op.getRegions(), [](Region &r) {
      return llvm::all_of(r.getOps(), [](Operation &inner) { return staysOnHost(inner); });
    });
  // A collective is a call of the runtime's (kiln-lower-collectives).
  return isRecomputable(&op) || op.hasTrait<OpTrait::IsTerminator>() ||
         isa<memref::ViewOp, memref::AllocOp, memref::AllocaOp, memref::DeallocOp, func::CallOp,
             memref::ExtractStridedMetadataOp, AllReduceInPlaceOp, AllReduceStartOp,
             AllReduceWaitOp>(op);
}

/// A loop or branch the host program runs, launching its body's kernels:
/// an scf.for, scf.if or scf.while with linalg work inside, bounds or
/// condition the host computed, and only buffers for results
/// (kiln-gpu-carry-in-place keeps its state in place). A while loop may
/// carry scalars too (a Loop's counter); a condition or scalar its regions
/// compute from device memory is the nested outliner's error ("computes a
/// value the host program uses").
bool isHostControl(Operation *op) {
  auto loop = dyn_cast<scf::WhileOp>(op);
  if (!isa<scf::ForOp, scf::IfOp>(op) && !loop)
    return false;
  auto hostType = [&](Type t) { return isa<MemRefType>(t) || (loop && t.isIntOrIndexOrFloat()); };
  if (!llvm::all_of(op->getResultTypes(), hostType))
    return false;
  for (Value v : op->getOperands()) {
    Operation *def = v.getDefiningOp();
    if (!isa<MemRefType>(v.getType()) && def && !staysOnHost(*def))
      return false;
  }
  return op->walk([](linalg::LinalgOp) { return WalkResult::interrupt(); }).wasInterrupted();
}

namespace {

struct KilnOutlineGpuKernelsPass final
    : impl::KilnOutlineGpuKernelsBase<KilnOutlineGpuKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    if (blockSize < 32 || blockSize > 1024 || blockSize % 32) {
      module.emitError("block-size must be a multiple of 32 in [32, 1024]");
      return signalPassFailure();
    }
    // GpuPasses.td's GpuTuningOptions, in GpuTuning's order.
    GpuTuning tuning{mma, tileN, loads, tf32Drain, cluster};
    if (std::string problem = tuning.problem(); !problem.empty()) {
      module.emitError("gpu tuning ") << problem;
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> funcs;
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal() && !fn->hasAttr(KilnDialect::getLaunchAttrName()))
        funcs.push_back(fn);
    if (funcs.empty())
      return;
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), UnitAttr::get(ctx));
    OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
    // PTX ISA 8.0 (CUDA 12.0 drivers) unless TMA kernels need 8.3's
    // fence.proxy.tensormap.
    bool tma = chip == "sm_90a" && tuning.loads == "tma";
    auto target = NVVM::NVVMTargetAttr::get(ctx, /*optLevel=*/3, "nvptx64-nvidia-cuda", chip,
                                            tma ? "+ptx83" : "+ptx80");
    auto gpuModule =
        gpu::GPUModuleOp::create(mb, module.getLoc(), "kiln_kernels", mb.getArrayAttr({target}));
    kernels.emplace(module, gpuModule, tuning);
    for (func::FuncOp fn : funcs)
      if (failed(FunctionOutliner(*this, fn).run()))
        return signalPassFailure();
    kernels->finish();
  }

  /// The kernels of one function, in program order, so kernels are
  /// numbered (and listed) as they run. Reductions with few, long outputs
  /// get threads that cooperate, elementwise ops 16 bytes per thread; every
  /// other linalg op becomes loops, each parallel nest a kernel, other work
  /// a one-thread kernel.
  class FunctionOutliner {
  public:
    /// The outliner of `block`: fn's body, or a block of a loop or branch
    /// the host program runs (isHostControl).
    FunctionOutliner(KilnOutlineGpuKernelsPass &pass, func::FuncOp fn, Block *block = nullptr)
        : pass(pass), kernels(*pass.kernels), fn(fn), block(block ? block : &fn.getBody().front()),
          rewriter(fn.getContext()) {}
    LogicalResult run();

  private:
    LogicalResult lowerNested();
    void findImplicitPads();
    /// The serial segment being formed as one kernel.
    LogicalResult flush() {
      LogicalResult r = segment.empty() ? success() : pass.outlineSerial(fn, *block, segment);
      segment.clear();
      return r;
    }
    LogicalResult place(Operation &op);
    size_t nextLinalgIndex(size_t i);
    linalg::LinalgOp nextLinalg(size_t i) {
      size_t j = nextLinalgIndex(i);
      return j < ops.size() ? cast<linalg::LinalgOp>(ops[j]) : linalg::LinalgOp();
    }
    RowGroup rowGroupFrom(size_t i);
    /// `group` as one kernel, its ops done.
    void takeRowGroup(const RowGroup &group) {
      for (linalg::LinalgOp g : group.ops)
        done.insert(g);
      outlineRowGroup(kernels, fn, group);
    }
    LogicalResult visit(size_t i, Operation *op);
    bool foldTransposesIntoGroup(size_t i, Operation *op);
    FailureOr<bool> outlineContractionGroup(size_t i, Operation *op);
    bool dropFill(size_t i, Operation *op);
    EpilogueChain epilogueAfter(size_t i, linalg::LinalgOp linalgOp, const ImplicitPad *pad);
    FailureOr<bool> outlineWithEpilogue(size_t i, linalg::LinalgOp linalgOp);
    bool outlineTranspose(size_t i, Operation *op);
    LogicalResult lowerToLoops(Operation *op, linalg::LinalgOp linalgOp, bool scalar);

    KilnOutlineGpuKernelsPass &pass;
    KernelFactory &kernels;
    func::FuncOp fn;
    Block *block;
    IRRewriter rewriter;
    SmallVector<Operation *> ops, segment;
    llvm::DenseSet<Operation *> done;              // erased with an earlier kernel
    llvm::DenseSet<Operation *> zeroInit;          // matmuls whose zero fill is gone
    llvm::DenseMap<Operation *, double> initValue; // direct ones: their fill's value
    // Convolutions that read their image unpadded: the pad's zero fill
    // and copy never launch.
    llvm::DenseMap<Operation *, ImplicitPad> pads;
    bool dynamic = false; // some buffer of fn has sizes known at run time
  };

private:
  /// Work of `body` that is not a parallel loop: one thread runs it. A
  /// scalar it computes that the host program uses (a Loop's condition
  /// computed in its body) goes back through device memory (readBack).
  LogicalResult outlineSerial(func::FuncOp fn, Block &body, ArrayRef<Operation *> segment) {
    SmallVector<Operation *> ops(segment);
    SmallVector<Value> hostUsed;
    for (Operation *op : segment)
      for (Value r : op->getResults()) {
        if (llvm::all_of(r.getUsers(), [&](Operation *user) {
              return llvm::is_contained(ops, body.findAncestorOpInBlock(*user));
            }))
          continue;
        Type t = r.getType();
        if (!t.isIntOrIndexOrFloat() || (!t.isIndex() && t.getIntOrFloatBitWidth() > 64))
          return op->emitError("computes a value the host program uses, but on the CUDA "
                               "target only kernels may read device memory");
        hostUsed.push_back(r);
      }
    SmallVector<std::pair<Value, Value>> slots; // value, its device slot
    for (Value r : hostUsed)
      slots.push_back({r, storeForHost(fn, r, ops)});
    SetVector<Value> args;
    SetVector<Operation *> clones;
    if (!collectCaptures(ops, args, clones, /*scalars=*/true))
      return ops.front()->emitError("uses a value that cannot be passed to a CUDA kernel "
                                    "(only identity-layout static buffers can)");
    IRMapping map;
    OpBuilder b(&getContext());
    Operation *first = ops.front();
    kernels->create(fn, first, args, clones, 1, 1, map, b);
    Operation *launch = first->getPrevNode();
    for (Operation *op : ops)
      b.clone(*op, map);
    OpBuilder hb(launch->getContext());
    hb.setInsertionPointAfter(launch);
    for (auto [r, slot] : slots)
      readBack(hb, r, slot, ops);
    for (Operation *op : llvm::reverse(ops))
      op->erase();
    return success();
  }

  std::optional<KernelFactory> kernels;
};

using FunctionOutliner = KilnOutlineGpuKernelsPass::FunctionOutliner;

LogicalResult FunctionOutliner::run() {
  bool root = block == &fn.getBody().front();
  if (root && !llvm::hasSingleElement(fn.getBody()))
    return fn.emitError("the CUDA target needs a single-block function");
  // Kernels reach device memory only. The buffers of @main the memory plan
  // did not place in the arena (sized by values read before the run) are
  // device memory the host program asks the session's allocator for at
  // run time.
  if (root && failed(lowerNested()))
    return failure();
  ops = llvm::map_to_vector(*block, [](Operation &op) { return &op; });
  // Sizes known at run time: only the generic kernels (a thread per
  // iteration) take them so far.
  dynamic = llvm::any_of(fn.getArgumentTypes(), [](Type t) {
    auto m = dyn_cast<MemRefType>(t);
    return m && !m.hasStaticShape();
  });
  if (!dynamic)
    findImplicitPads();
  for (auto [i, op] : llvm::enumerate(ops))
    if (!done.contains(op) && failed(visit(i, op)))
      return failure();
  if (failed(flush()))
    return failure();
  if (root)
    kernels.mergeLaunches(fn);
  return success();
}

/// Linalg ops nested in other top-level work (an scf.for on buffers) run
/// inside that work's kernel, as loops; those in the host program's loops
/// and branches are kernels of their own (outlined by the nested outliner).
LogicalResult FunctionOutliner::lowerNested() {
  SmallVector<linalg::LinalgOp> nested;
  fn.walk([&](linalg::LinalgOp op) {
    for (Operation *p = op->getParentOp(); p != fn.getOperation(); p = p->getParentOp())
      if (!isHostControl(p)) {
        nested.push_back(op);
        return;
      }
  });
  for (linalg::LinalgOp op : nested) {
    rewriter.setInsertionPoint(op);
    if (failed(linalg::linalgOpToParallelLoops(rewriter, op)))
      return op.emitError("cannot lower to loops for the CUDA target");
    rewriter.eraseOp(op);
  }
  return success();
}

void FunctionOutliner::findImplicitPads() {
  for (size_t i = 0; i < ops.size(); ++i)
    if (auto pad = matchImplicitPad(ops, i)) {
      done.insert(pad->fill);
      done.insert(pad->copy);
      pads[ops[i]] = *pad;
    }
}

LogicalResult FunctionOutliner::place(Operation &op) {
  auto par = dyn_cast<scf::ParallelOp>(op);
  // Scalar math on what the segment loaded belongs to the segment.
  bool fedBySegment =
      !op.hasTrait<OpTrait::IsTerminator>() && llvm::any_of(op.getOperands(), [&](Value v) {
        return llvm::is_contained(segment, v.getDefiningOp());
      });
  // A reshape or constant between serial ops stays on the host without
  // ending the segment (the kernel recomputes it where it needs it).
  if (!par && !segment.empty() && !fedBySegment && isRecomputable(&op))
    return success();
  if ((par && par.getNumResults() == 0) || (staysOnHost(op) && !fedBySegment))
    return failure(flush().failed() || (par && outlineParallelLoop(kernels, fn, par, pass.blockSize).failed()));
  segment.push_back(&op);
  return success();
}

/// The index of the next linalg op after ops[i] with only host work in
/// between (ops.size() when there is none).
size_t FunctionOutliner::nextLinalgIndex(size_t i) {
  for (size_t j = i + 1; j < ops.size(); ++j) {
    if (done.contains(ops[j]))
      continue;
    if (isa<linalg::LinalgOp>(ops[j]))
      return j;
    if (!staysOnHost(*ops[j]))
      return ops.size();
  }
  return ops.size();
}

/// The row group the live ops from ops[i] start, if any.
RowGroup FunctionOutliner::rowGroupFrom(size_t i) {
  SmallVector<Operation *> rest;
  for (size_t j = i; j < ops.size(); ++j)
    if (!done.contains(ops[j]))
      rest.push_back(ops[j]);
  return formRowGroup(rest, 0, [](Operation &o) { return staysOnHost(o); });
}

LogicalResult FunctionOutliner::visit(size_t i, Operation *op) {
  if (isHostControl(op)) {
    // The host runs the loop or branch; its blocks' work becomes kernels
    // launched from inside it.
    if (failed(flush()))
      return failure();
    for (Region &region : op->getRegions())
      for (Block &inner : region)
        if (failed(FunctionOutliner(pass, fn, &inner).run()))
          return failure();
    return success();
  }
  if (dynamic) {
    auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
    if (!linalgOp)
      return place(*op);
    if (failed(flush()))
      return failure();
    // Ops over the same rows with a reduction among them (a softmax over
    // a sequence known at run time, a LayerNorm over [batch, seq] rows):
    // one kernel, a block per row, the rows' count from the host.
    if (RowGroup group = rowGroupFrom(i); !group.ops.empty()) {
      takeRowGroup(group);
      return success();
    }
    bool outlined;
    auto next = [&](size_t k) { return nextLinalgIndex(k); }; // (outlives the run)
    DynamicRun run{ops, done, next};
    if (failed(outlineDynamicOp(kernels, fn, run, i, linalgOp, outlined)))
      return failure();
    // (The op may have been replaced by its rows collapsed.)
    return outlined ? success() : lowerToLoops(linalgOp, linalgOp, /*scalar=*/false);
  }
  if (foldTransposesIntoGroup(i, op))
    return success();
  FailureOr<bool> grouped = outlineContractionGroup(i, op);
  if (failed(grouped) || *grouped)
    return failure(failed(grouped));
  if (dropFill(i, op))
    return success();
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  // One element (a loss's tail: a scalar fill, its scale, its copy out):
  // serial work that joins the one-thread kernel being formed rather than
  // one launch each.
  SmallVector<int64_t> ranges = linalgOp ? linalgOp.getStaticLoopRanges() : SmallVector<int64_t>();
  bool scalar = linalgOp && llvm::all_of(ranges, [](int64_t r) { return r == 1; });
  if (linalgOp && !scalar) {
    FailureOr<bool> outlined = outlineWithEpilogue(i, linalgOp);
    if (failed(outlined) || *outlined)
      return failure(failed(outlined));
  }
  if (outlineTranspose(i, op))
    return success();
  if (auto generic = dyn_cast<linalg::GenericOp>(op); generic && !scalar)
    if (succeeded(outlineTiledTranspose(kernels, fn, generic)) ||
        succeeded(outlineCooperativeReduction(kernels, fn, generic)) ||
        succeeded(outlineVectorizedElementwise(kernels, fn, generic)))
      return success();
  if (!linalgOp)
    return place(*op);
  return lowerToLoops(op, linalgOp, scalar);
}

/// Transposes just before a row group with a contraction that only it
/// reads (the heads split out of one projection: Q, K^T, V) fold into it:
/// the group's ops read the projection through the permutations.
bool FunctionOutliner::foldTransposesIntoGroup(size_t i, Operation *op) {
  if (!isa<linalg::TransposeOp>(op))
    return false;
  SmallVector<linalg::TransposeOp> run;
  size_t j = i;
  for (; j < ops.size(); ++j) {
    if (done.contains(ops[j]))
      continue;
    if (auto t = dyn_cast<linalg::TransposeOp>(ops[j]))
      run.push_back(t);
    else if (isa<linalg::LinalgOp>(ops[j]) || !staysOnHost(*ops[j]))
      break;
  }
  if (j == ops.size() || !isa<linalg::LinalgOp>(ops[j]))
    return false;
  RowGroup group = rowGroupFrom(j);
  if (!group.ops.empty() && group.hasContraction())
    for (linalg::TransposeOp t : run)
      if (readThroughTransposeIn(t, group.ops))
        done.insert(t);
  return done.contains(op);
}

/// A small contraction a row group from here takes (attention's Q K^T,
/// then its softmax, then P V): one kernel, before a matmul kernel takes
/// the contraction alone.
FailureOr<bool> FunctionOutliner::outlineContractionGroup(size_t i, Operation *op) {
  if (!isa<linalg::LinalgOp>(op))
    return false;
  RowGroup group = rowGroupFrom(i);
  if (group.ops.empty() || !group.hasContraction())
    return false;
  if (failed(flush()))
    return failure();
  takeRowGroup(group);
  return true;
}

/// A zero fill of a tensor-core matmul's C: the accumulators start at zero
/// instead (one kernel and one read of C fewer); a direct convolution or
/// pool starts from the fill's value (a max pool's -inf).
bool FunctionOutliner::dropFill(size_t i, Operation *op) {
  auto fill = dyn_cast<linalg::FillOp>(op);
  if (!fill)
    return false;
  linalg::LinalgOp next = nextLinalg(i);
  FloatAttr value;
  bool fills = next && next.getDpsInitOperand(0)->get() == fill.getOutputs()[0] &&
               matchPattern(fill.getInputs()[0], m_Constant(&value));
  if (fills && value.getValue().isZero() && (isTensorCoreMatmul(next) || isMatvec(next))) {
    zeroInit.insert(next);
  } else if (fills &&
             (isDirectConv(next) || (isColumnReduction(next) && isa<FloatType>(value.getType())))) {
    initValue[next] = value.getValueAsDouble();
  } else {
    return false;
  }
  done.insert(op);
  op->erase();
  return true;
}

/// The elementwise ops after a product that its kernel can take as its
/// epilogue; a transpose joins as the generic it is (attention's heads
/// back in place), generalized from a copy: the op stays itself when the
/// chain does not take it.
EpilogueChain FunctionOutliner::epilogueAfter(size_t i, linalg::LinalgOp linalgOp,
                                              const ImplicitPad *implicitPad) {
  EpilogueChain chain(linalgOp);
  if (implicitPad)
    if (auto image = bytesOf(implicitPad->image))
      chain.addExternal(*image); // other blocks read it to the end
  if (!isTensorCoreMatmul(linalgOp) && !isMatvec(linalgOp) && !isDirectConv(linalgOp))
    return chain;
  for (size_t j = nextLinalgIndex(i); j < ops.size(); j = nextLinalgIndex(j)) {
    auto next = dyn_cast<linalg::GenericOp>(ops[j]);
    if (auto transpose = dyn_cast<linalg::TransposeOp>(ops[j])) {
      IRRewriter rewriter(transpose);
      rewriter.setInsertionPoint(transpose);
      auto generic =
          linalg::generalizeNamedOp(rewriter, cast<linalg::LinalgOp>(rewriter.clone(*transpose)));
      if (failed(generic))
        break;
      if (!chain.add(*generic)) {
        rewriter.eraseOp(*generic);
        break;
      }
      rewriter.eraseOp(transpose);
      replaceOutlinedOp(ops, done, j, *generic);
      continue;
    }
    if (!next || !chain.add(next))
      break;
  }
  return chain;
}

/// The kernels that take an epilogue, in turn; with the chain, and when
/// its captures cannot be passed too, without it. Then a reduction keeping
/// its rows' innermost dimension, then a row group.
FailureOr<bool> FunctionOutliner::outlineWithEpilogue(size_t i, linalg::LinalgOp linalgOp) {
  if (failed(flush()))
    return failure();
  Operation *op = linalgOp;
  auto pad = pads.find(op);
  const ImplicitPad *implicitPad = pad != pads.end() ? &pad->second : nullptr;
  EpilogueChain chain = epilogueAfter(i, linalgOp, implicitPad);
  auto start = initValue.find(op);
  std::optional<double> startValue =
      start != initValue.end() ? std::optional<double>(start->second) : std::nullopt;
  bool fromZero = zeroInit.contains(op);
  auto attempt = [&](ArrayRef<linalg::GenericOp> epilogue) -> FailureOr<bool> {
    FailureOr<bool> r =
        outlineTensorCoreMatmul(kernels, fn, linalgOp, fromZero, epilogue, implicitPad);
    if (failed(r) && !implicitPad)
      r = outlineMatvec(kernels, fn, linalgOp, fromZero, epilogue);
    if (failed(r))
      r = outlineDirectConv(kernels, fn, linalgOp, startValue, epilogue, implicitPad);
    return r;
  };
  FailureOr<bool> fused = attempt(chain.getOps());
  if (failed(fused) && !chain.getOps().empty() && succeeded(attempt({})))
    fused = false; // the matmul alone; the chain's ops stay
  if (succeeded(fused)) {
    if (*fused) // erased with the matmul; else they stay ops of their own
      for (linalg::GenericOp e : chain.getOps())
        done.insert(e);
    return true;
  }
  // A reduction keeping its rows' innermost dimension (whose fill may be
  // gone: it must take it).
  if (auto generic = dyn_cast<linalg::GenericOp>(op);
      generic && succeeded(outlineColumnReduction(kernels, fn, generic, startValue)))
    return true;
  RowGroup group = rowGroupFrom(i);
  if (group.ops.empty())
    return false;
  takeRowGroup(group);
  return true;
}

/// A transpose of the inner dimensions goes by tiles, as the generic it
/// is; a thread per element otherwise.
bool FunctionOutliner::outlineTranspose(size_t i, Operation *op) {
  auto transpose = dyn_cast<linalg::TransposeOp>(op);
  if (!transpose)
    return false;
  if (linalg::LinalgOp next = nextLinalg(i); next && readThroughTranspose(transpose, next)) {
    done.insert(op);
    return true;
  }
  IRRewriter rewriter(transpose);
  rewriter.setInsertionPoint(transpose);
  auto generic =
      linalg::generalizeNamedOp(rewriter, cast<linalg::LinalgOp>(rewriter.clone(*transpose)));
  if (succeeded(generic) && succeeded(outlineTiledTranspose(kernels, fn, *generic))) {
    rewriter.eraseOp(transpose);
    return true;
  }
  if (succeeded(generic))
    rewriter.eraseOp(*generic);
  return false;
}

/// Any other linalg op as loops: each parallel nest a kernel, a scalar
/// one's loops joining the serial segment.
LogicalResult FunctionOutliner::lowerToLoops(Operation *op, linalg::LinalgOp linalgOp,
                                             bool scalar) {
  Operation *before = op->getPrevNode();
  rewriter.setInsertionPoint(op);
  if (scalar ? failed(linalg::linalgOpToLoops(rewriter, linalgOp))
             : failed(linalg::linalgOpToParallelLoops(rewriter, linalgOp)))
    return op->emitError("cannot lower to loops for the CUDA target");
  Operation *first = before ? before->getNextNode() : &block->front();
  SmallVector<Operation *> lowered;
  for (Operation *o = first; o != op; o = o->getNextNode())
    lowered.push_back(o);
  rewriter.eraseOp(op);
  for (Operation *o : lowered)
    if (failed(place(*o)))
      return failure();
  return success();
}

} // namespace
} // namespace kiln

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

#include "KernelFactory.h"
#include "TensorCorePlan.h"
#include "kiln/Lowering/KernelCaptures.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/StringSet.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace kiln {
#define GEN_PASS_DEF_KILNOUTLINEGPUKERNELS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {

bool staysOnHost(Operation &op) {
  return isRecomputable(&op) || op.hasTrait<OpTrait::IsTerminator>() ||
         isa<memref::ViewOp, memref::AllocOp, memref::AllocaOp, memref::DeallocOp,
             func::CallOp>(op);
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
    SmallVector<func::FuncOp> funcs;
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal() && !fn->hasAttr("kiln.launch"))
        funcs.push_back(fn);
    if (funcs.empty())
      return;
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), UnitAttr::get(ctx));
    OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
    // PTX ISA 8.0 (CUDA 12.0 drivers) unless TMA kernels need 8.3's
    // fence.proxy.tensormap.
    bool tma = chip == "sm_90a" && tmaRequested();
    auto target = NVVM::NVVMTargetAttr::get(ctx, /*optLevel=*/3, "nvptx64-nvidia-cuda", chip,
                                            tma ? "+ptx83" : "+ptx80");
    auto gpuModule = gpu::GPUModuleOp::create(mb, module.getLoc(), "kiln_kernels",
                                              mb.getArrayAttr({target}));
    kernels.emplace(module, gpuModule);
    for (func::FuncOp fn : funcs) {
      if (!llvm::hasSingleElement(fn.getBody())) {
        fn.emitError("the CUDA target needs a single-block function");
        return signalPassFailure();
      }
      // Kernels reach device memory only: every buffer of @main must sit
      // in the arena by now (one the memory plan could not place would be
      // host memory).
      for (auto alloc : fn.getBody().front().getOps<memref::AllocOp>()) {
        alloc.emitError("kiln internal error: a buffer the memory plan did not place in the "
                        "device arena");
        return signalPassFailure();
      }
      // In program order, so kernels are numbered (and listed) as they run.
      // Reductions with few, long outputs get threads that cooperate,
      // elementwise ops 16 bytes per thread; every other linalg op becomes
      // loops, each parallel nest a kernel, other work a one-thread kernel.
      Block &block = fn.getBody().front();
      SmallVector<Operation *> segment;
      auto flush = [&]() {
        LogicalResult r = segment.empty() ? success() : outlineSerial(fn, segment);
        segment.clear();
        return r;
      };
      auto place = [&](Operation &op) -> LogicalResult {
        auto par = dyn_cast<scf::ParallelOp>(op);
        // Scalar math on what the segment loaded belongs to the segment.
        bool fedBySegment = !op.hasTrait<OpTrait::IsTerminator>() &&
                            llvm::any_of(op.getOperands(), [&](Value v) {
                              return llvm::is_contained(segment, v.getDefiningOp());
                            });
        // A reshape or constant between serial ops stays on the host without
        // ending the segment (the kernel recomputes it where it needs it).
        if (!par && !segment.empty() && !fedBySegment && isRecomputable(&op))
          return success();
        if ((par && par.getNumResults() == 0) || (staysOnHost(op) && !fedBySegment))
          return failure(flush().failed() || (par && outlineParallel(fn, par).failed()));
        segment.push_back(&op);
        return success();
      };
      IRRewriter rewriter(ctx);
      // Linalg ops nested in other top-level work (an scf.for on buffers)
      // run inside that work's kernel, as loops.
      SmallVector<linalg::LinalgOp> nested;
      fn.walk([&](linalg::LinalgOp op) {
        if (op->getBlock() != &block)
          nested.push_back(op);
      });
      for (linalg::LinalgOp op : nested) {
        rewriter.setInsertionPoint(op);
        if (failed(linalg::linalgOpToParallelLoops(rewriter, op))) {
          op.emitError("cannot lower to loops for the CUDA target");
          return signalPassFailure();
        }
        rewriter.eraseOp(op);
      }
      SmallVector<Operation *> ops = llvm::map_to_vector(block, [](Operation &op) { return &op; });
      llvm::DenseSet<Operation *> done;     // erased with an earlier kernel
      llvm::DenseSet<Operation *> zeroInit; // matmuls whose zero fill is gone
      llvm::DenseMap<Operation *, double> initValue; // direct ones: their fill's value
      // The index of the next linalg op after ops[i] with only host work in
      // between (ops.size() when there is none).
      auto nextLinalgIndex = [&](size_t i) -> size_t {
        for (size_t j = i + 1; j < ops.size(); ++j) {
          if (done.contains(ops[j]))
            continue;
          if (isa<linalg::LinalgOp>(ops[j]))
            return j;
          if (!staysOnHost(*ops[j]))
            return ops.size();
        }
        return ops.size();
      };
      auto nextLinalg = [&](size_t i) -> linalg::LinalgOp {
        size_t j = nextLinalgIndex(i);
        return j < ops.size() ? cast<linalg::LinalgOp>(ops[j]) : linalg::LinalgOp();
      };
      // The row group the live ops from ops[i] start, if any.
      auto rowGroupFrom = [&](size_t i) {
        SmallVector<Operation *> rest;
        for (size_t j = i; j < ops.size(); ++j)
          if (!done.contains(ops[j]))
            rest.push_back(ops[j]);
        return formRowGroup(rest, 0, [](Operation &o) { return staysOnHost(o); });
      };
      // Convolutions that read their image unpadded: the pad's zero fill
      // and copy never launch.
      llvm::DenseMap<Operation *, ImplicitPad> pads;
      for (size_t i = 0; i < ops.size(); ++i)
        if (auto pad = matchImplicitPad(ops, i)) {
          done.insert(pad->fill);
          done.insert(pad->copy);
          pads[ops[i]] = *pad;
        }
      for (auto [i, op] : llvm::enumerate(ops)) {
        if (done.contains(op))
          continue;
        // Transposes just before such a group that only it reads (the heads
        // split out of one projection: Q, K^T, V) fold into it: the group's
        // ops read the projection through the permutations.
        if (auto transpose = dyn_cast<linalg::TransposeOp>(op)) {
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
          if (j < ops.size() && isa<linalg::LinalgOp>(ops[j])) {
            RowGroup group = rowGroupFrom(j);
            if (!group.ops.empty() && group.hasContraction())
              for (linalg::TransposeOp t : run)
                if (readThroughTransposeIn(t, group.ops))
                  done.insert(t);
            if (done.contains(op))
              continue;
          }
        }
        // A small contraction a row group from here takes (attention's
        // Q K^T, then its softmax, then P V): one kernel, before a matmul
        // kernel takes the contraction alone.
        if (isa<linalg::LinalgOp>(op)) {
          RowGroup group = rowGroupFrom(i);
          if (!group.ops.empty() && group.hasContraction()) {
            if (failed(flush()))
              return signalPassFailure();
            for (linalg::LinalgOp g : group.ops)
              done.insert(g);
            outlineRowGroup(*kernels, fn, group);
            continue;
          }
        }
        // A zero fill of a tensor-core matmul's C: the accumulators start at
        // zero instead (one kernel and one read of C fewer).
        if (auto fill = dyn_cast<linalg::FillOp>(op)) {
          linalg::LinalgOp next = nextLinalg(i);
          FloatAttr value;
          bool fills = next && next.getDpsInitOperand(0)->get() == fill.getOutputs()[0] &&
                       matchPattern(fill.getInputs()[0], m_Constant(&value));
          if (fills && value.getValue().isZero() &&
              (isTensorCoreMatmul(next) || isMatvec(next))) {
            zeroInit.insert(next);
            done.insert(op);
            op->erase();
            continue;
          }
          // A direct convolution or pool starts from the fill's value (a max
          // pool's -inf).
          if (fills && (isDirectConv(next) || (isColumnReduction(next) &&
                                               isa<FloatType>(value.getType())))) {
            initValue[next] = value.getValueAsDouble();
            done.insert(op);
            op->erase();
            continue;
          }
        }
        auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
        // One element (a loss's tail: a scalar fill, its scale, its copy
        // out): serial work that joins the one-thread kernel being formed
        // rather than one launch each.
        SmallVector<int64_t> ranges =
            linalgOp ? linalgOp.getStaticLoopRanges() : SmallVector<int64_t>();
        bool scalar = linalgOp && llvm::all_of(ranges, [](int64_t r) { return r == 1; });
        if (linalgOp && !scalar) {
          if (failed(flush()))
            return signalPassFailure();
          EpilogueChain chain(linalgOp);
          auto pad = pads.find(op);
          const ImplicitPad *implicitPad = pad != pads.end() ? &pad->second : nullptr;
          if (implicitPad)
            if (auto image = bytesOf(implicitPad->image))
              chain.addExternal(*image); // other blocks read it to the end
          if (isTensorCoreMatmul(linalgOp) || isMatvec(linalgOp) || isDirectConv(linalgOp))
            for (size_t j = nextLinalgIndex(i); j < ops.size(); j = nextLinalgIndex(j)) {
              auto next = dyn_cast<linalg::GenericOp>(ops[j]);
              if (auto transpose = dyn_cast<linalg::TransposeOp>(ops[j])) {
                // A transpose joins as the generic it is (attention's heads
                // back in place), generalized from a copy: the op stays
                // itself when the chain does not take it.
                IRRewriter rewriter(transpose);
                rewriter.setInsertionPoint(transpose);
                auto generic = linalg::generalizeNamedOp(
                    rewriter, cast<linalg::LinalgOp>(rewriter.clone(*transpose)));
                if (failed(generic))
                  break;
                if (!chain.add(*generic)) {
                  rewriter.eraseOp(*generic);
                  break;
                }
                rewriter.eraseOp(transpose);
                ops[j] = *generic;
                continue;
              }
              if (!next || !chain.add(next))
                break;
            }
          // The kernels that take an epilogue, in turn; with the chain, and
          // when its captures cannot be passed too, without it.
          auto start = initValue.find(op);
          bool fromZero = zeroInit.contains(op);
          auto attempt = [&](ArrayRef<linalg::GenericOp> epilogue) -> FailureOr<bool> {
            FailureOr<bool> r = outlineTensorCoreMatmul(*kernels, fn, linalgOp, fromZero,
                                                        epilogue, implicitPad);
            if (failed(r) && !implicitPad)
              r = outlineMatvec(*kernels, fn, linalgOp, fromZero, epilogue);
            if (failed(r))
              r = outlineDirectConv(
                  *kernels, fn, linalgOp,
                  start != initValue.end() ? std::optional<double>(start->second) : std::nullopt,
                  epilogue, implicitPad);
            return r;
          };
          FailureOr<bool> fused = attempt(chain.getOps());
          if (failed(fused) && !chain.getOps().empty() && succeeded(attempt({})))
            fused = false; // the matmul alone; the chain's ops stay
          if (succeeded(fused)) {
            if (*fused) // erased with the matmul; else they stay ops of their own
              for (linalg::GenericOp e : chain.getOps())
                done.insert(e);
            continue;
          }
          // A reduction keeping its rows' innermost dimension (whose fill
          // may be gone: it must take it).
          if (auto generic = dyn_cast<linalg::GenericOp>(op);
              generic && succeeded(outlineColumnReduction(
                             *kernels, fn, generic,
                             start != initValue.end() ? std::optional<double>(start->second)
                                                      : std::nullopt)))
            continue;
          RowGroup group = rowGroupFrom(i);
          if (!group.ops.empty()) {
            for (linalg::LinalgOp g : group.ops)
              done.insert(g);
            outlineRowGroup(*kernels, fn, group);
            continue;
          }
        }
        // A transpose of the inner dimensions goes by tiles, as the generic
        // it is; a thread per element otherwise.
        if (auto transpose = dyn_cast<linalg::TransposeOp>(op)) {
          if (linalg::LinalgOp next = nextLinalg(i); next && readThroughTranspose(transpose, next)) {
            done.insert(op);
            continue;
          }
          IRRewriter rewriter(transpose);
          rewriter.setInsertionPoint(transpose);
          auto generic = linalg::generalizeNamedOp(
              rewriter, cast<linalg::LinalgOp>(rewriter.clone(*transpose)));
          if (succeeded(generic) && succeeded(outlineTiledTranspose(*kernels, fn, *generic))) {
            rewriter.eraseOp(transpose);
            continue;
          }
          if (succeeded(generic))
            rewriter.eraseOp(*generic);
        }
        if (auto generic = dyn_cast<linalg::GenericOp>(op); generic && !scalar)
          if (succeeded(outlineTiledTranspose(*kernels, fn, generic)) ||

              succeeded(outlineCooperativeReduction(*kernels, fn, generic)) ||
              succeeded(outlineVectorizedElementwise(*kernels, fn, generic)))
            continue;
        if (!linalgOp) {
          if (failed(place(*op)))
            return signalPassFailure();
          continue;
        }
        Operation *before = op->getPrevNode();
        rewriter.setInsertionPoint(op);
        if (scalar ? failed(linalg::linalgOpToLoops(rewriter, linalgOp))
                   : failed(linalg::linalgOpToParallelLoops(rewriter, linalgOp))) {
          op->emitError("cannot lower to loops for the CUDA target");
          return signalPassFailure();
        }
        Operation *first = before ? before->getNextNode() : &block.front();
        SmallVector<Operation *> lowered;
        for (Operation *o = first; o != op; o = o->getNextNode())
          lowered.push_back(o);
        rewriter.eraseOp(op);
        for (Operation *o : lowered)
          if (failed(place(*o)))
            return signalPassFailure();
      }
      if (failed(flush()))
        return signalPassFailure();
      kernels->mergeLaunches(fn);
    }
    kernels->finish();
  }

private:
  /// Top-level work that is not a parallel loop: one thread runs it.
  LogicalResult outlineSerial(func::FuncOp fn, ArrayRef<Operation *> ops) {
    Block &body = fn.getBody().front();
    for (Operation *op : ops)
      for (Operation *user : op->getUsers())
        if (!llvm::is_contained(ops, body.findAncestorOpInBlock(*user)))
          return op->emitError("computes a value the host program uses, but on the CUDA "
                               "target only kernels may read device memory");
    SetVector<Value> args;
    SetVector<Operation *> clones;
    if (!collectCaptures(ops, args, clones))
      return ops.front()->emitError("uses a value that cannot be passed to a CUDA kernel "
                                    "(only identity-layout static buffers can)");
    IRMapping map;
    OpBuilder b(&getContext());
    kernels->create(fn, ops.front(), args, clones, 1, 1, map, b);
    for (Operation *op : ops)
      b.clone(*op, map);
    for (Operation *op : llvm::reverse(ops))
      op->erase();
    return success();
  }

  /// One thread per iteration of the whole parallel nest, linearized.
  LogicalResult outlineParallel(func::FuncOp fn, scf::ParallelOp par) {
    SmallVector<int64_t> lbs, steps, trips;
    int64_t total = 1;
    for (auto [l, u, s] : llvm::zip(par.getLowerBound(), par.getUpperBound(), par.getStep())) {
      auto lb = constIndex(l), ub = constIndex(u), st = constIndex(s);
      if (!lb || !ub || !st || *st <= 0)
        return par.emitError("a parallel loop without constant bounds cannot be mapped to "
                             "CUDA threads yet");
      int64_t trip = *ub > *lb ? (*ub - *lb + *st - 1) / *st : 0;
      lbs.push_back(*lb);
      steps.push_back(*st);
      trips.push_back(trip);
      if (__builtin_mul_overflow(total, trip, &total))
        return par.emitError("too many iterations for one CUDA launch");
    }
    if (total == 0) {
      par.erase();
      return success();
    }
    auto [block, grid] = launchShape(total, blockSize);
    if (grid > std::numeric_limits<int32_t>::max())
      return par.emitError("too many iterations for one CUDA launch (")
             << total << ", at most " << int64_t(std::numeric_limits<int32_t>::max()) * block
             << ")";
    SetVector<Value> args;
    SetVector<Operation *> clones;
    Operation *op = par;
    if (!collectCaptures({op}, args, clones))
      return par.emitError("uses a value that cannot be passed to a CUDA kernel "
                           "(only identity-layout static buffers can)");
    IRMapping map;
    OpBuilder b(&getContext());
    kernels->create(fn, op, args, clones, grid, block, map, b);
    Location loc = par.getLoc();
    auto cst = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
    Value lin = linearThreadIndex(b, loc, total, block, grid);
    // Innermost dimension fastest: consecutive threads, consecutive addresses.
    Value rest = lin;
    SmallVector<Value> ivs(trips.size());
    for (int64_t d = trips.size() - 1; d >= 0; --d) {
      Value idx = rest;
      if (d > 0) {
        idx = arith::RemUIOp::create(b, loc, rest, cst(trips[d]));
        rest = arith::DivUIOp::create(b, loc, rest, cst(trips[d]));
      }
      if (steps[d] != 1)
        idx = arith::MulIOp::create(b, loc, idx, cst(steps[d]));
      if (lbs[d] != 0)
        idx = arith::AddIOp::create(b, loc, idx, cst(lbs[d]));
      ivs[d] = idx;
    }
    for (auto [from, to] : llvm::zip(par.getInductionVars(), ivs))
      map.map(from, to);
    for (Operation &inner : par.getBody()->without_terminator())
      b.clone(inner, map);
    par.erase();
    return success();
  }

  std::optional<KernelFactory> kernels;
};

} // namespace
} // namespace kiln

//===- Passes.td - Kiln's lowering passes ------------------*- tablegen -*-===//

#ifndef KILN_LOWERING_PASSES_TD
#define KILN_LOWERING_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnToLinalg : Pass<"kiln-to-linalg", "::mlir::func::FuncOp"> {
  let summary = "lowers kiln ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Elementwise ops become `linalg.generic` with broadcasting indexing maps,
    contractions and windows become linalg named ops or generics, composite
    ops (softmax, layer-norm, batch-norm) decompose into a few generics that
    elementwise fusion can merge. Any kiln op left is an error naming it.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect"];
}

def KilnApproximateMath : Pass<"kiln-approximate-math", "::mlir::func::FuncOp"> {
  let summary = "replaces f32 transcendental math ops by polynomial approximations";
  let description = [{
    `math.erf`, `math.tanh`, `math.exp`, `math.log`... on f32 become
    polynomials in arith ops (a few ulp), so they vectorize and the artifact
    needs no libm vector routines. Other types keep their math ops for
    math-to-llvm / math-to-libm.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def KilnPrivatizeEntry : Pass<"kiln-privatize-entry", "::mlir::ModuleOp"> {
  let summary = "makes the model function private before bufferization";
  let description = [{
    buffer-results-to-out-params leaves public functions alone; the model
    function is reached only through the `kiln_model_run` entry that
    kiln-emit-entry adds, so it can be private and get caller-owned outputs.
    The `kiln.name` argument/result attributes (already recorded in the
    artifact signature) are dropped, since LLVM has no use for them.
  }];
}

def KilnEmitEntry : Pass<"kiln-emit-entry", "::mlir::ModuleOp"> {
  let summary = "adds the artifact's `kiln_model_run` entry and task trampolines";
  let description = [{
    After lowering to the LLVM dialect with bare pointers, `@main` takes one
    pointer per input then one per output. `kiln_model_run(buffers, host)`
    unpacks an array of buffer pointers in that order and calls it, giving
    the runtime one C signature for every model (ArtifactFormat.h). It keeps
    `host` in a thread-local for the `@__kiln_parallel_<N>` dispatchers
    (declared by kiln-outline-parallel), which it defines here: pack the
    buffers, then call `host->parallel_for`, or run the task inline when the
    host has no thread pool.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def KilnCopyToLinalg : Pass<"kiln-copy-to-linalg", "::mlir::func::FuncOp"> {
  let summary = "rewrites memref.copy as linalg.copy so it lowers to loops";
  let description = [{
    Bufferization copies into strided views (e.g. tensor.pad); upstream lowers
    those to a call to `memrefCopy` in libmlir_c_runner_utils, which an
    artifact must not depend on. As linalg.copy they become plain loops.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def KilnOutlineParallel : Pass<"kiln-outline-parallel", "::mlir::ModuleOp"> {
  let summary = "moves outermost parallel loops into tasks for the runtime's thread pool";
  let description = [{
    Each outermost `scf.parallel` with enough work is split along its first
    dimension: the body goes into `func.func private @<fn>_task<N>(%begin,
    %end, memrefs...)` and the loop becomes a call to the declaration
    `@__kiln_parallel_<N>(%trip_count, memrefs...)`, which kiln-emit-entry
    defines on top of the runtime's `parallel_for`. Memref views and
    constants used by the body are recomputed inside the task, so only
    identity-layout buffers cross the boundary (bare pointers).
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"32768",
           "loops with fewer scalar iterations stay serial">
  ];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::scf::SCFDialect"];
}

def KilnFuseElementwise : Pass<"kiln-fuse-elementwise"> {
  let summary = "fuses elementwise producers into consumers without recomputation";
  let description = [{
    Upstream linalg elementwise fusion, with Kiln's rule for when it may
    apply: the producer has one use and the consumer reads it through a
    permutation of all its loops. A producer that a consumer reads through a
    broadcast (a matmul operand, a bias) would be recomputed for every value
    of the missing loops, so it stays a kernel of its own. Reshapes are
    folded by expansion under the same rule. Constants are never folded
    (weights stay resource blobs).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::affine::AffineDialect"];
}

#endif // KILN_LOWERING_PASSES_TD

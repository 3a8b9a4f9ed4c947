//===- Passes.td - Kiln's lowering passes ------------------*- tablegen -*-===//
//
// The target-free passes (kiln to linalg, fusion, the memory plan); the
// host program's, the CPU's and the CUDA pipeline's are in the files
// included at the end.
//
//===----------------------------------------------------------------------===//

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

def KilnFuseElementwise : Pass<"kiln-fuse-elementwise"> {
  let summary = "fuses elementwise producers into consumers without recomputation";
  let description = [{
    Upstream linalg elementwise fusion, with Kiln's rule for when it may
    apply: the producer has one use and the consumer reads it through a
    permutation of all its loops. A producer that a consumer reads through a
    broadcast (a matmul operand, a bias) would be recomputed for every value
    of the missing loops, so it stays a kernel of its own. Reshapes are
    folded by expansion under the same rule. Constants are never folded
    (weights stay resource blobs). Casts (a generic that only widens or
    narrows its input: a 16-bit model's arithmetic in f32) are the
    exception: each generic consumer reads the cast's input and converts it
    in its own body, so no converted copy is written (an f16 layer norm
    was four CUDA kernels, one now). So are index patterns (a few integer
    and select steps on the indices and constants: Trilu's causal mask),
    recomputed through whatever map the consumer reads them (one copy per
    reader when several read one).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::affine::AffineDialect", "::mlir::arith::ArithDialect"];
}

def KilnSplitSharedFills : Pass<"kiln-split-shared-fills"> {
  let summary = "gives each op that accumulates into a filled tensor a fill of its own";
  let description = [{
    CSE merges identical `linalg.fill`s, so the zero tensor that several
    convolutions or matmuls accumulate into is one value; bufferization then
    fills one buffer and copies it into each op's result. Before
    bufferization, each destination use of a fill after the first gets its
    own fill (and `tensor.empty`) right before its op: the fill is written
    in place, and the CUDA outliner starts a tensor-core kernel's
    accumulators at zero instead of launching it.

    With `empties`, the same for a `tensor.empty` several ops write into
    (CSE merges those too): bufferization gives one buffer to all of them
    where their values don't overlap, so an epilogue could be written over
    the image a convolution still reads (ResNet's residual add into the
    buffer its conv2 reads through the implicit padding), which keeps it
    out of the convolution's kernel. With an empty each, the memory plan
    places them, and keeps a contraction's inputs from its epilogue's
    output.
  }];
  let options = [
    Option<"empties", "empties", "bool", /*default=*/"false",
           "also give each destination use of a tensor.empty one of its own">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"];
}

def KilnResultsInPlace : Pass<"kiln-results-in-place", "::mlir::func::FuncOp"> {
  let summary = "computes a result reached through reshapes in its out-parameter";
  let description = [{
    After `buffer-results-to-out-params`: a result that is a reshape of a
    buffer the function allocated (a batch-1 model's output, computed with
    its unit dimension folded away) ends in a `memref.copy` into the
    out-parameter, a kernel of its own on CUDA. When that copy is the
    out-parameter's only use and the allocation's last, the allocation
    becomes a view of the out-parameter (reshapes keep row-major order) and
    the copy goes.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def KilnPlanMemory : Pass<"kiln-plan-memory", "::mlir::ModuleOp"> {
  let summary = "places every intermediate buffer of @main in one arena by liveness";
  let description = [{
    After bufferization and buffer deallocation, each static `memref.alloc`
    in the body of `@main` gets a live interval: the first and last step
    that reads or writes it or a view of it (making a view or reading a
    size is no use). A step is a top-level op, or an op of an `scf.if`'s
    branch, numbered after the If in program order: one branch runs, once,
    so buffers used in one branch only share bytes with the other's (a
    dynamic batch's choice of image chains). Buffers are placed greedily by size
    (largest first, lowest offset that no time-overlapping buffer occupies,
    64-byte aligned), so buffers that are never live together share bytes.
    The allocs become `memref.view`s of a new last argument of `@main`, the
    arena `memref<Nxi8>`, and their deallocs go away; the runtime allocates
    the arena once per session. Buffers whose aliasing it cannot follow
    (yielded, passed to calls, deallocated through a view) keep their alloc.
    The module gets `kiln.arena_bytes` and `kiln.weight_bytes` (constant
    globals) for the artifact signature.

    With `epilogue-reach=N` (the CUDA pipeline), the inputs of a contraction
    (a linalg op with a reduction loop) stay live through the next N
    top-level linalg ops that only run parallel loops: a GPU kernel may run
    those as the contraction's epilogue, block by block, while other blocks
    still read the inputs, so their outputs must not take the inputs' bytes.

    Top-level ops marked `kiln.fused_span = id` (kiln-gpu-mark-row-groups)
    run as one kernel: every buffer the ops from the first to the last of an
    id use stays live to the last (the marks are then removed).

    With `dynamic-at-max` (the CUDA pipeline: kernels reach device memory
    only), a buffer with dynamic sizes is placed too, at the bytes its
    largest size takes: each size bounded from the inputs' maxima
    (`kiln.input_dim_max`) through `memref.dim` and index arithmetic. Its
    view keeps the run-time sizes. A size it cannot bound is an error, or,
    without `require-bounds` (the CPU pipeline), stays a run-time
    allocation (from the session's allocator); so does, with
    `dynamic-max-bytes`, a buffer whose largest size is past it (a wide
    declared range must not make every session reserve gigabytes). A
    run-time allocation in @main's block is given back right after its
    last use (through any view), where bufferization had left its
    deallocation at the end: the allocator then reuses its memory, still
    in cache, for the buffers allocated after.
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"64",
           "byte alignment of every placed buffer">,
    Option<"epilogueReach", "epilogue-reach", "unsigned", /*default=*/"0",
           "elementwise ops after a contraction that keep its inputs live">,
    Option<"dynamicAtMax", "dynamic-at-max", "bool", /*default=*/"false",
           "place buffers with dynamic sizes at their largest size">,
    Option<"requireBounds", "require-bounds", "bool", /*default=*/"true",
           "with dynamic-at-max: a dynamic size without a bound is an error">,
    Option<"dynamicMaxBytes", "dynamic-max-bytes", "int64_t", /*default=*/"0",
           "without require-bounds: a dynamic buffer larger than this at its largest "
           "stays a run-time allocation (0: no limit)">,
    Option<"inLoops", "in-loops", "bool", /*default=*/"false",
           "also place the buffers made inside loops and branches of @main (not "
           "inside a parallel loop), live for the whole loop: a GPU's host "
           "program runs them one after another">
  ];
  let dependentDialects = ["::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect"];
}

def KilnExternalizeWeights : Pass<"kiln-externalize-weights", "::mlir::ModuleOp"> {
  let summary = "moves the weights of @main into one buffer read from a side file";
  let description = [{
    For `--weights=external`: every constant `memref.global` holding a
    resource blob of at least `min-bytes` gets a 64-byte aligned offset in
    one weights buffer; its `memref.get_global`s become `memref.view`s of a
    new last argument of `@main` (after kiln-plan-memory's arena), the
    buffer `memref<Nxi8>`, and the global goes away. The blobs and their offsets are left on the module as
    `kiln.external_weights = [[offset, value], ...]` for the driver, which
    writes them to `<artifact>.weights`; the runtime maps that file.
  }];
  let options = [
    Option<"minBytes", "min-bytes", "int64_t", /*default=*/"1",
           "smaller constants stay in the artifact">
  ];
  let dependentDialects = ["::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect"];
}

def KilnStackTemporaries : Pass<"kiln-stack-temporaries", "::mlir::func::FuncOp"> {
  let summary = "turns small temporaries inside loop bodies into scoped stack allocations";
  let description = [{
    Kernels formed by tiling allocate per-tile temporaries inside loop
    bodies, which the memory plan can't place (iterations may run in
    parallel). Each such `memref.alloc` of at most `max-bytes` with its
    dealloc in the same body becomes a `memref.alloca`, and the body is
    wrapped in a `memref.alloca_scope` so every iteration releases its stack.
    Sizes known at run time count at their constant upper bound (a partial
    tile's `affine.min`) or at the maximum the module's inputs declare
    (`kiln.input_dim_max`, through `memref.dim` and index arithmetic: a
    row of a dynamic sequence); the alloca keeps them.
  }];
  let options = [
    Option<"maxBytes", "max-bytes", "int64_t", /*default=*/"65536",
           "larger temporaries keep their heap allocation">
  ];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

include "kiln/Lowering/HostPasses.td"
include "kiln/Lowering/CpuPasses.td"
include "kiln/Lowering/GpuPasses.td"

#endif // KILN_LOWERING_PASSES_TD

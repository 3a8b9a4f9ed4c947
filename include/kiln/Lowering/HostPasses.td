//===- HostPasses.td - the host program's passes ----------*- tablegen -*-===//
//
// Passes both targets run on the host program: the model function made
// private for bufferization, copies as loops, and the artifact's C entry
// point. Included by Passes.td: one generated Passes.h.inc for all passes.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_HOSTPASSES_TD
#define KILN_LOWERING_HOSTPASSES_TD

include "mlir/Pass/PassBase.td"

def KilnPrivatizeEntry : Pass<"kiln-privatize-entry", "::mlir::ModuleOp"> {
  let summary = "makes the model function private before bufferization";
  let description = [{
    buffer-results-to-out-params leaves public functions alone; the model
    function is reached only through the `kiln_model_run` entry that
    kiln-emit-entry adds, so it can be private and get caller-owned outputs.
    The `kiln.name` argument/result attributes (already recorded in the
    artifact signature) are dropped, since LLVM has no use for them.
    A value returned twice gets a copy for each repeat, in its own
    allocation.
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect"];
}

def KilnScheduleCollectives : Pass<"kiln-schedule-collectives", "::mlir::func::FuncOp"> {
  let summary = "splits each in-place reduction into a start and a wait";
  let description = [{
    After bufferization, before the memory plan: each
    `kiln.all_reduce_in_place` becomes `kiln.all_reduce_start` where it is,
    and `kiln.all_reduce_wait` right before the next op of its block that
    touches the buffer (or a view of it, or what it is a view of), else
    before the terminator. The runtime reduces the gradient meanwhile, as
    the backward pass computes the next ones (PyTorch DDP's overlap); the
    memory plan sees both as uses, so nothing else lives in the buffer
    between them.
  }];
}

def KilnLowerCollectives : Pass<"kiln-lower-collectives", "::mlir::ModuleOp"> {
  let summary = "turns kiln.all_reduce_in_place into calls of the runtime's all_reduce";
  let description = [{
    After the memory plan (which sees the reduction as a use of its buffer):
    each `kiln.all_reduce_in_place` becomes a call of a private declaration
    `@__kiln_all_reduce_<N>(memref)` marked `kiln.collective` (the reduction),
    `kiln.elements` and `kiln.dtype` (the runtime's dtype code), whose body
    kiln-emit-entry builds: `host->all_reduce(host->comm, ptr, elements,
    dtype, op)`, nothing when the run has no communicator, and a failure
    fails the run.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def KilnEmitEntry : Pass<"kiln-emit-entry", "::mlir::ModuleOp"> {
  let summary = "adds the artifact's `kiln_model_run` entry and task trampolines";
  let description = [{
    After lowering to the LLVM dialect with bare pointers, `@main` takes one
    pointer per input then one per output. `kiln_model_run(buffers, host)`
    unpacks an array of buffer pointers in that order and calls it, giving
    the runtime one C signature for every model (ArtifactFormat.h). It keeps
    `host` in a thread-local for the `@__kiln_parallel_<N>` dispatchers
    (declared by kiln-outline-kernels), which it defines here: pack the
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

def KilnUnifyDims : Pass<"kiln-unify-dims", "::mlir::ModuleOp"> {
  let summary = "makes dimensions the model requires equal one symbol";
  let description = [{
    At the end of the linalg stage, every loop of every linalg op of @main
    reads its operands' dimensions: those that trace back to arguments'
    dynamic dimensions must be equal (two inputs' batch, even under
    different exporter names, added together). Their symbols are unified:
    one name (the first in the arguments' order) replaces the others in
    every argument's `kiln.dims`, and its range is the intersection
    (`kiln.dim_ranges`), so the runtime binds them once and refuses inputs
    that disagree. A dynamic dimension a loop also reads as a static size N
    must be N: its symbol's range is pinned to N (an input of another size
    is then a clear error, not an out-of-bounds read). Ranges that no size
    satisfies are an error naming the symbols.
  }];
}

def KilnBindResultDims : Pass<"kiln-bind-result-dims", "::mlir::ModuleOp"> {
  let summary = "binds each dynamic dimension of @main's results to a symbol";
  let description = [{
    At the end of the linalg stage, every dynamic dimension of a result of
    @main is traced back (through destination operands, tensor.empty sizes,
    tensor.dim and casts) to a dimension of an argument, and so to the
    symbol the importer bound it to (`kiln.dims`). The symbols go on the
    result as its `kiln.dims`, which the signature records, so the runtime
    knows every output's shape from the inputs' before it runs. A dimension
    the IR computes from argument dimensions by constants, additions,
    subtractions and products (a KV cache's past + new length) gets a
    derived symbol, named by its expression, whose polynomial goes in the
    module's `kiln.dim_exprs`. An output dimension computed otherwise (a
    size read from data, a division) is a value symbol, `<output>[<axis>]`
    in the module's `kiln.dim_values`, computed by @__kiln_output_dims, the
    slice of @main that gives it (kiln/Lowering/OutputDims.h).
  }];
}

def KilnHostValues : Pass<"kiln-host-values", "::mlir::ModuleOp"> {
  let summary = "computes the scalars the host program reads from tensors before the run";
  let description = [{
    For CUDA, whose host program reads no device memory: every
    `tensor.extract` at the top level of @main (a shape, a count or a
    condition given as data) becomes a result of @__kiln_output_dims, as
    i64 bits, computed on the host from the inputs before the run, and in
    @main a call of `@__kiln_host_value(k)`, which kiln-emit-entry defines
    as the k-th value the runtime appends to `host->dims`. The module's
    `kiln.host_values` is [first such result, count].
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::func::FuncDialect"];
}

def KilnLowerOutputDims : Pass<"kiln-lower-output-dims", "::mlir::ModuleOp"> {
  let summary = "lowers @__kiln_output_dims to host code in the LLVM dialect, apart from @main";
  let description = [{
    For CUDA, where @main becomes kernels: @__kiln_output_dims is lowered
    in a module of its own (one-shot bufferization, linalg as loops, the
    host's LLVM conversions), and its LLVM functions and globals join this
    module, renamed where they would clash.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect", "::mlir::bufferization::BufferizationDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect"];
}

def KilnSplitDynamicArgs : Pass<"kiln-split-dynamic-args", "::mlir::ModuleOp"> {
  let summary = "passes each dynamic memref as a bare pointer and its sizes";
  let description = [{
    The host program is lowered with bare pointers, which needs static
    shapes. Before that, every function taking a memref with dynamic
    dimensions (identity layout, so offset 0) gets, in its place, a pointer
    (`memref<1xT>`) and one `index` argument per dynamic dimension
    (appended after all its other arguments, in argument then dimension
    order); the body rebuilds the memref with `memref.reinterpret_cast`,
    and every call passes the sizes (`memref.dim`). The function records
    which argument and dimension each size is (`kiln.dynamic_sizes`), so
    kiln-emit-entry feeds @main's from the host's `dims`.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect"];
}

def KilnExpandDynamicGroups : Pass<"kiln-expand-dynamic-groups"> {
  let summary = "memref.expand_shape with two dynamic sizes in a group as a reinterpret_cast";
  let description = [{
    MLIR 22's expand-strided-metadata takes a group of an expand_shape to
    have at most one dynamic size (the others' product divides the source
    dimension) and crashes on more: `[?] into [?, ?, 16]`, which a
    reshape to sizes computed at run time (B*S rows into B, S) gives. Such
    an expansion becomes `memref.reinterpret_cast` of the source's base
    buffer, with the source dimension's stride times the sizes after each
    dimension in its group as strides, before that pass runs. On host
    functions and on CUDA kernels (a gpu.module) alike.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect"];
}

#endif // KILN_LOWERING_HOSTPASSES_TD

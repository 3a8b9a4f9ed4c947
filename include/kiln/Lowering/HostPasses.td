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

#endif // KILN_LOWERING_HOSTPASSES_TD

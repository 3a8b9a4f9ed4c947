//===- GpuPasses.td - Kiln's CUDA lowering passes -------*- tablegen -*-===//
//
// The passes only the CUDA pipeline runs (loop order for GPU mapping,
// operand layouts for tensor cores, kernel outlining, PTX embedding),
// included by Passes.td: one generated Passes.h.inc for all of them.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_GPUPASSES_TD
#define KILN_LOWERING_GPUPASSES_TD

include "mlir/Pass/PassBase.td"

// The tensor-core kernels' settings (kiln/Lowering/GpuTuning.h), taken by
// every pass that asks the planner which matmuls go to tensor cores.
defvar GpuTuningOptions = [
  Option<"mma", "mma", "std::string", /*default=*/"\"\"",
         "mma.sync kernels of big products: <k>x<stages> (32x4, 64x3)">,
  Option<"tileN", "tile-n", "int64_t", /*default=*/"0",
         "sm_90a wgmma tiles' columns: 128 or 256 (0: chosen per matmul)">,
  Option<"loads", "loads", "std::string", /*default=*/"\"async\"",
         "how wgmma tiles are loaded: async, tma or ring">,
  Option<"tf32Drain", "tf32-drain", "bool", /*default=*/"false",
         "the specialized f32 wgmma kernel drains each k tile">,
  Option<"cluster", "cluster", "int64_t", /*default=*/"1",
         "blocks a cluster along M (2 needs loads=tma)">
];

def KilnGpuParallelFirst : Pass<"kiln-gpu-parallel-first", "::mlir::func::FuncOp"> {
  let summary = "puts every linalg op's parallel loops outside its reductions";
  let description = [{
    On the GPU every parallel iteration is a thread, so a linalg op whose
    loops start with a reduction (`(k, n)` of a column sum) would lower to a
    sequential outer loop around the parallel ones and run on one thread.
    Named ops are generalized and the loops permuted so all parallel loops
    come first, in their order, then the reductions in theirs; each output
    element still sums its terms in the same order.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def KilnGpuTransposeOperands : Pass<"kiln-gpu-transpose-operands", "::mlir::func::FuncOp"> {
  let summary = "transposed matmul operands copied into the layout the tensor cores read";
  let description = [{
    On linalg on buffers: a mul-add contraction reading A as `(k, m)` or B
    as `(n, k)` (a Gemm's transA or transB, batched or not, B possibly
    shared by the batch) gets each such operand copied by a
    `linalg.transpose` into a new buffer `[.., m, k]` or `[.., k, n]`, and
    reads those, when the tensor-core planner (mma.sync or wgmma) then takes
    the product. Operands known only at run time need it: a training step's
    weight gradients (X^T dY) and its forward products through parameters.
    Products the planner turns down keep their layout.
  }];
  let options = GpuTuningOptions;
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::memref::MemRefDialect"];
}

def KilnGpuCarryInPlace : Pass<"kiln-gpu-carry-in-place", "::mlir::func::FuncOp"> {
  let summary = "makes loops and branches write their tensors into one buffer";
  let description = [{
    On linalg on tensors, before bufferization, for the CUDA target, whose
    host program runs loops and branches and launches their bodies'
    kernels: each `scf.for` yields a copy (`linalg.copy`) of each carried
    tensor into its iteration argument, and each `scf.if` with static
    result shapes yields copies into one destination made before it, so
    bufferization keeps the state in one buffer (in place) rather than a
    new buffer per iteration or branch with ownership to track, and the
    memory plan can place it. A loop's temporaries then live within one
    iteration.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"];
}

def KilnGpuDropTransposeUnitDims
    : Pass<"kiln-gpu-drop-transpose-unit-dims", "::mlir::func::FuncOp"> {
  let summary = "transposes into the collapsed view their readers read, without unit dims";
  let description = [{
    On linalg on buffers, before kiln-gpu-mark-row-groups: a
    `linalg.transpose` whose result is read only through one
    `memref.collapse_shape` that drops unit dimensions (each group of the
    collapse holds one dimension longer than 1) writes that collapsed view
    instead, from its input collapsed the same way (unit dimensions joined
    to a neighbour), with the permutation of the dimensions left. At batch
    1 the heads' split transposes with a unit batch and attention reads the
    results collapsed; rewritten, the transposes are the ones the attention
    row group reads, which it folds in (reading the projection through the
    permutation) as at larger batches.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::memref::MemRefDialect"];
}

def KilnGpuMarkRowGroups : Pass<"kiln-gpu-mark-row-groups", "::mlir::func::FuncOp"> {
  let summary = "marks the row groups with a contraction for the memory plan";
  let description = [{
    Before the memory plan, on linalg on buffers (after
    kiln-gpu-parallel-first): each run of top-level ops the CUDA outliner
    would make one row-group kernel that takes a small contraction
    (attention's Q K^T, softmax and P V, a block per query row) gets
    `kiln.fused_span = id` on its linalg ops. The memory plan then keeps
    every buffer of the run live to its end: in program order K^T is dead
    after Q K^T, and the softmax's exponentials could take its bytes while
    other rows' blocks still read it, which splits the group in three.
    The transposes just before (the heads' split) are marked too; a
    transpose just after (the heads back in place) whose input only the
    group's last ops write is taken into them: they write its result
    through a `memref.transpose` view, and it is erased.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def KilnOutlineGpuKernels : Pass<"kiln-outline-gpu-kernels", "::mlir::ModuleOp"> {
  let summary = "makes every top-level loop nest of @main a CUDA kernel and a launch";
  let description = [{
    After bufferization and the memory plan, on linalg on buffers. A
    reduction with few outputs and a long reduced extent (softmax's row max,
    a layer-norm's mean, a loss) becomes a kernel with a block (or a warp)
    per output element whose threads combine through `gpu.all_reduce`. An
    elementwise op whose innermost extent allows it gets 16 bytes per thread
    (vector loads and stores, aligned). Every other linalg op is lowered to
    loops, and every top-level `scf.parallel`
    of a function becomes a `gpu.func` kernel in one
    `gpu.module @kiln_kernels` (with an `#nvvm.target`): its iterations,
    linearized, are threads of `block-size`-thread blocks (each thread
    checks it is in range and delinearizes its indices), and the rest of the
    nest runs inside the thread. Any other top-level work that touches
    memory (a loop over a sequential dimension, a 0-d computation) runs as a
    one-thread kernel, since the host must never dereference device
    pointers. Views and constants are recomputed inside the kernel, so only
    identity-layout root buffers are parameters (bare pointers), and
    constant globals are copied into the gpu.module.

    Launches in a row (only views and constants between them) whose
    kernels only compute per thread (no barriers, shared memory, shuffles
    or calls), with the same grid and block and no common byte that one of
    them writes, become one kernel running both bodies.

    Each kernel is replaced by a call to a declaration
    `@__kiln_launch_<N>(buffers...)` carrying `kiln.kernel_name`,
    `kiln.grid` and `kiln.block`; kiln-emit-entry defines it on top of the
    runtime's `host->launch`. Kernels record the ONNX nodes they compute in
    `kiln.ops` (on the declaration, for the kernel table).
  }];
  let options = !listconcat([
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_80\"", "the GPU architecture">,
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "threads per block of elementwise kernels">
  ], GpuTuningOptions);
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::NVVM::NVVMDialect",
                           "::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect", "::mlir::affine::AffineDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::vector::VectorDialect",
                           "::mlir::nvgpu::NVGPUDialect"];
}

def KilnEmbedPtx : Pass<"kiln-embed-ptx", "::mlir::ModuleOp"> {
  let summary = "moves the PTX of the serialized gpu.binary onto the module";
  let description = [{
    After `gpu-module-to-binary{format=isa}`, the PTX text of the one
    `gpu.binary` becomes the module attribute `kiln.ptx` (the artifact
    exports it as `kiln_artifact_ptx`, `--emit=ptx` writes it) and the
    binary is erased, leaving host code only.
  }];
}

def KilnGpuLowerMma : Pass<"kiln-gpu-lower-mma", "::mlir::gpu::GPUModuleOp"> {
  let summary = "lowers the tensor-core kernels' vector.contract to mma.sync (tf32, f16, bf16)";
  let description = [{
    In each `gpu.func` marked `kiln.mma` (kiln-outline-gpu-kernels' matmuls):
    upstream's vector-to-nvgpu conversion turns the 16x8x8 (f32) or
    16x8x16 (f16) `vector.contract`s and the `vector.transfer_read`s feeding
    them into `nvgpu.ldmatrix` and `nvgpu.mma.sync` with its fragment
    layouts, and f32 products become tf32 (f32 storage and accumulation, a
    10-bit mantissa in the products, as PyTorch with `allow_tf32`), each
    operand fragment rounded to nearest (`cvt.rna.tf32.f32`) rather than
    truncated by the tensor core, as CUTLASS does. A kernel
    also marked `kiln.mma_bf16` read its bf16 tiles through f16 views
    (upstream knows no bf16 fragments): its mma.sync steps become PTX's
    bf16 mma.sync as inline assembly on the same registers. Other kernels are
    left alone: the conversion would take their index arithmetic for matrix
    arithmetic.
  }];
  let dependentDialects = ["::mlir::nvgpu::NVGPUDialect", "::mlir::gpu::GPUDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::affine::AffineDialect",
                           "::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect"];
}

def KilnGpuExternDynamicShared
    : Pass<"kiln-gpu-extern-dynamic-shared", "::mlir::gpu::GPUModuleOp"> {
  let summary = "declares the kernels' dynamic shared memory as PTX's .extern array, 1024-byte aligned";
  let description = [{
    After `convert-gpu-to-nvvm`: the `__dynamic_shmem__*` globals it made
    for `gpu.dynamic_shared_memory` are internal, which PTX prints as a
    1-byte static `.shared` variable that the kernels then index far past.
    They become external (`.extern .shared .align 1024 .b8 name[]`, what
    nvcc writes for `extern __shared__`), aligned for the 128-byte swizzle
    of the wgmma kernels' tiles.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // KILN_LOWERING_GPUPASSES_TD

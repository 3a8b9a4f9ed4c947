//===- KernelFactory.h - CUDA kernels and their launches --------*- C++ -*-===//
//
// What every CUDA kernel of kiln-outline-gpu-kernels gets: a `gpu.func` in
// the one gpu.module, and in the host program a call to a launch
// declaration `@__kiln_launch_<N>` carrying the kernel's name, grid and
// block (kiln-emit-entry defines it).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_LOWERING_LINALGTOGPU_KERNELFACTORY_H
#define KILN_LIB_LOWERING_LINALGTOGPU_KERNELFACTORY_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "kiln/Lowering/GpuTuning.h"

namespace kiln {

class KernelFactory {
public:
  KernelFactory(mlir::ModuleOp module, mlir::gpu::GPUModuleOp gpuModule,
                const GpuTuning &tuning = {})
      : module(module), gpuModule_(gpuModule), tuning_(tuning) {}

  /// A new kernel `<fn>_kernel<N>` of `block` threads x `grid` blocks (x,
  /// y, z; missing ones are 1) taking `args` (mapped in `map`), with
  /// `clones` recomputed at its start; `b` is left there, before the
  /// gpu.return. Its launch is inserted before `at`. With `gridX` (an
  /// index the host computes: a dynamic model's), the grid is that many
  /// blocks along x instead: the launch takes it as its first operand and
  /// records grid x as -1.
  mlir::gpu::GPUFuncOp create(mlir::func::FuncOp fn, mlir::Operation *at,
                              const llvm::SetVector<mlir::Value> &args,
                              const llvm::SetVector<mlir::Operation *> &clones,
                              llvm::ArrayRef<int64_t> grid, int64_t block, mlir::IRMapping &map,
                              mlir::OpBuilder &b, mlir::Value gridX = {});

  mlir::gpu::GPUModuleOp gpuModule() const { return gpuModule_; }

  /// Makes `call` (the launch of a kernel just created) take its grid's
  /// sizes along the dimensions `sizes` gives (x, y, z; a null one keeps
  /// its static size) from the host at run time: leading operands of the
  /// launch, -1 in its kiln.grid, and the kernel's known grid dropped.
  mlir::LogicalResult setRunGrid(mlir::func::CallOp call, llvm::ArrayRef<mlir::Value> sizes);

  /// Launches `kernel` with `bytes` of dynamic shared memory
  /// (`gpu.dynamic_shared_memory`); the runtime opts in above 48 KiB.
  void setSharedBytes(mlir::gpu::GPUFuncOp kernel, int64_t bytes);
  /// Gives `kernel` one more argument: the device address (i64) of a TMA
  /// tensor map of its argument `arg` (a memref with the identity layout),
  /// described by `desc` (KILN_TENSOR_MAP_WORDS words, ArtifactFormat.h),
  /// which the launch asks the runtime for. The new argument.
  mlir::Value addTensorMap(mlir::gpu::GPUFuncOp kernel, unsigned arg,
                           llvm::ArrayRef<int64_t> desc);
  /// The chip the kernels are compiled for ("sm_80", "sm_90a").
  llvm::StringRef chip() const;
  /// The tensor-core kernels' settings (the pass's options).
  const GpuTuning &tuning() const { return tuning_; }

  /// Launches in a row of `fn` (only host work between them) whose kernels
  /// are simple (no barriers, shared memory or cross-thread operations),
  /// share a grid and block and touch no common bytes one of them writes
  /// become one kernel doing both bodies (a transformer's Q, K and V
  /// transposes: one launch). Call before finish().
  void mergeLaunches(mlir::func::FuncOp fn);

  /// Copies the constant globals kernels read into the gpu.module and
  /// records each kernel's ONNX nodes on its launch (`kiln.ops`).
  void finish();

private:
  mlir::ModuleOp module;
  mlir::gpu::GPUModuleOp gpuModule_;
  GpuTuning tuning_;
  unsigned counter = 0;
  llvm::SmallVector<std::pair<mlir::func::FuncOp, mlir::gpu::GPUFuncOp>> pendingNodes;
};

/// The bytes a buffer covers: its root (a function argument: an input, an
/// output, the arena, the weights; or a constant) and [begin, end). Two
/// buffers that may share bytes overlap.
struct Bytes {
  mlir::Value root;
  int64_t begin = 0, end = 0;
  bool overlaps(const Bytes &o) const { return root == o.root && begin < o.end && o.begin < end; }
  bool operator==(const Bytes &o) const {
    return root == o.root && begin == o.begin && end == o.end;
  }
};
/// Follows views back to the root; nullopt when it can't tell.
std::optional<Bytes> bytesOf(mlir::Value buffer);

/// Parallel loop nest `par` of `fn` (no results) as a kernel of one thread
/// per iteration, in blocks of up to `blockSize` threads; its upper bounds
/// may be known only at run time (ParallelLoops.cpp).
mlir::LogicalResult outlineParallelLoop(KernelFactory &kernels, mlir::func::FuncOp fn,
                                        mlir::scf::ParallelOp par, int64_t blockSize);

/// A linalg op of a dynamic model whose only dynamic loop is its operands'
/// outermost rows (or whose dynamic loops are their leading dimensions:
/// collapsed into one first, `op` then the collapsed op) as the
/// tensor-core kernel for its largest rows, launched for the run's
/// (LargestRows.cpp). `outlined` is false when that does not apply;
/// failure is an error (reported). `zeroInit`: only as a tensor-core
/// product whose accumulators start at zero (its C's zero fill dropped).
/// `epilogue`: the ops after it (only host work between), which a
/// tensor-core product takes into its kernel where they qualify: on
/// return the first `fused` are gone, and others may have been replaced
/// by their rows collapsed (the vector holds the replacements).
mlir::LogicalResult
outlineAtLargestRows(KernelFactory &kernels, mlir::func::FuncOp fn, mlir::linalg::LinalgOp &op,
                     bool &outlined, bool zeroInit = false,
                     llvm::SmallVectorImpl<mlir::linalg::GenericOp> *epilogue = nullptr,
                     unsigned *fused = nullptr);

/// The top-level ops of a dynamic function as the CUDA outliner walks
/// them: those `done` (erased with an earlier kernel) are skipped; `next`
/// gives the index of the next linalg op after one (only host work
/// between), or ops.size().
struct DynamicRun {
  llvm::SmallVectorImpl<mlir::Operation *> &ops;
  llvm::DenseSet<mlir::Operation *> &done;
  llvm::function_ref<size_t(size_t)> next;
};
/// Puts `now` at ops[k] in place of the op there (a transpose
/// generalized, a product's rows collapsed): a new op may sit where an
/// erased one recorded in `done` was, so it leaves `done`.
inline void replaceOutlinedOp(llvm::SmallVectorImpl<mlir::Operation *> &ops,
                              llvm::DenseSet<mlir::Operation *> &done, size_t k,
                              mlir::Operation *now) {
  ops[k] = now;
  done.erase(now);
}
/// A linalg op ops[i] (`op`) of a dynamic function as outlineAtLargestRows
/// takes it, with a zero fill folded into the product after it and the
/// elementwise ops after a product as its epilogue; `outlined` false when
/// neither applied (`op` then maybe its rows collapsed). Failure is an
/// error (reported).
mlir::LogicalResult outlineDynamicOp(KernelFactory &kernels, mlir::func::FuncOp fn,
                                     DynamicRun &run, size_t i, mlir::linalg::LinalgOp &op,
                                     bool &outlined);

/// Blocks of up to `maxBlock` threads (whole warps) for `threads` threads:
/// {block, grid}.
std::pair<int64_t, int64_t> launchShape(int64_t threads, int64_t maxBlock);

/// The thread's linear index block_id.x * block + thread_id.x; when the grid
/// overshoots `threads`, `b` is left inside an `scf.if` of the threads in range.
mlir::Value linearThreadIndex(mlir::OpBuilder &b, mlir::Location loc, int64_t threads,
                              int64_t block, int64_t grid);
/// The same for a number of threads known at run time (a kernel value):
/// always guarded.
mlir::Value linearThreadIndex(mlir::OpBuilder &b, mlir::Location loc, mlir::Value threads,
                              int64_t block);

/// Row-major delinearization of `linear` over `sizes`.
llvm::SmallVector<mlir::Value> delinearize(mlir::OpBuilder &b, mlir::Location loc,
                                           mlir::Value linear, llvm::ArrayRef<int64_t> sizes);
/// The same over sizes known at run time (`sizes[0]` is not read).
llvm::SmallVector<mlir::Value> delinearize(mlir::OpBuilder &b, mlir::Location loc,
                                           mlir::Value linear, llvm::ArrayRef<mlir::Value> sizes);
/// The product of `sizes` (1 for none).
mlir::Value productOf(mlir::OpBuilder &b, mlir::Location loc, llvm::ArrayRef<mlir::Value> sizes);

/// A size: static, or known at run time and named by what measures it (a
/// buffer's dimension, or an index value) after casts, views and reshapes
/// that keep it (LoopExtents.cpp). Equal extents are equal at run time;
/// unequal dynamic ones may still be.
struct Extent {
  int64_t size = 0; // or ShapedType::kDynamic
  mlir::Value source = {};
  int64_t dim = -1; // source's dimension; -1: source is the index itself
  bool dynamic() const { return mlir::ShapedType::isDynamic(size); }
  bool operator==(const Extent &o) const {
    return size == o.size && source == o.source && dim == o.dim;
  }
  bool operator!=(const Extent &o) const { return !(*this == o); }
};
Extent dimExtent(mlir::Value memref, int64_t dim);
Extent valueExtent(mlir::Value index);
/// The extent of loop `loop` of `op` (an operand's dimension it indexes).
Extent loopExtent(mlir::linalg::LinalgOp op, unsigned loop);
/// Whether host indices `a` and `b` are surely equal: the same extent, or
/// the same pure ops over such (two launches' grids computed alike from
/// views of the same sizes), looking `depth` ops up.
bool sameIndex(mlir::Value a, mlir::Value b, int depth = 8);
/// Which extents are equal at run time because ops require them so: an op's
/// operands' dimensions that one loop indexes (x[r, c] and max[r] of a
/// softmax's reduction have the same rows).
class SameExtents {
public:
  /// Adds what `op` requires.
  void add(mlir::linalg::LinalgOp op);
  bool equal(const Extent &a, const Extent &b) const;
  /// The largest `e` can be: the tightest bound (the inputs' declared
  /// maxima, `inputMax`) of the extents equal to it.
  std::optional<int64_t> bound(const Extent &e, mlir::ArrayAttr inputMax) const;

private:
  using Key = std::pair<const void *, int64_t>;
  Key find(Key k) const;
  void unite(const Extent &a, const Extent &b);
  llvm::DenseMap<Key, Key> parent;
};
/// The largest loop `loop` of `op` can be: the tightest bound (the
/// inputs' declared maxima, `inputMax`) of the buffers it indexes.
std::optional<int64_t> largestLoop(mlir::linalg::LinalgOp op, unsigned loop,
                                   mlir::ArrayAttr inputMax);
/// Every loop's size inside a kernel: a constant, or the dimension of an
/// operand it indexes, read from the kernel's buffer (`map`).
llvm::SmallVector<mlir::Value> loopSizesIn(mlir::OpBuilder &b, mlir::Location loc,
                                           mlir::linalg::LinalgOp op, mlir::IRMapping &map);

/// The indices of `operand` of `op` at the iteration `ivs` (its indexing map).
llvm::SmallVector<mlir::Value> indicesAt(mlir::OpBuilder &b, mlir::Location loc,
                                         mlir::linalg::LinalgOp op, mlir::OpOperand &operand,
                                         llvm::ArrayRef<mlir::Value> ivs);

/// Loads `operand` of `op` at the iteration `ivs` (scalars as they are),
/// through `map` (the kernel's view of the host values).
mlir::Value loadAt(mlir::OpBuilder &b, mlir::Location loc, mlir::linalg::LinalgOp op,
                   mlir::OpOperand &operand, llvm::ArrayRef<mlir::Value> ivs,
                   mlir::IRMapping &map);

/// Clones the ops of linalg `op`'s body (not its yield) at `b` through
/// `bodyMap` (its block arguments mapped by the caller), each linalg.index
/// as its loop's entry of `ivs`.
void cloneBody(mlir::OpBuilder &b, mlir::linalg::LinalgOp op, llvm::ArrayRef<mlir::Value> ivs,
               mlir::IRMapping &bodyMap);

/// The body of elementwise (all-parallel) `op` at the iteration `ivs`: its
/// operands loaded (those `given` returns a value for taken as that), its
/// ops cloned (linalg.index as `ivs`), each yielded value stored into its
/// output.
void emitElementwiseAt(mlir::OpBuilder &b, mlir::Location loc, mlir::linalg::LinalgOp op,
                       llvm::ArrayRef<mlir::Value> ivs, mlir::IRMapping &map,
                       llvm::function_ref<mlir::Value(mlir::OpOperand &)> given = nullptr);

/// An elementwise op (all loops parallel) whose innermost extent is a
/// multiple of 16 bytes' worth of elements, as one kernel where each thread
/// computes that many consecutive elements: 16-byte vector loads and stores
/// for operands contiguous along the innermost loop, one scalar load for
/// those that don't vary along it. Fails, leaving `op` alone, when it does
/// not apply.
/// One thread's `width` consecutive iterations of an op (innermost loop):
/// per lane, its indices and a mapping of the block arguments to values.
struct LaneValues {
  llvm::SmallVector<llvm::SmallVector<mlir::Value>> ivs;
  llvm::SmallVector<mlir::IRMapping> maps;
};
/// Loads the operands of `op` read at iterations `ivs` .. + `width` - 1
/// (innermost): a contiguous one as one 16-byte access, an invariant one
/// once, others per lane; outputs too unless `inputsOnly`.
LaneValues loadLanes(mlir::OpBuilder &b, mlir::Location loc, mlir::linalg::LinalgOp op,
                     llvm::ArrayRef<mlir::Value> ivs, int64_t width, mlir::IRMapping &map,
                     bool inputsOnly);
/// The iterations of a reduction `op` one thread loads at once: its inputs
/// contiguous or invariant along the innermost loop, 16 bytes of the widest,
/// the loop a multiple; 0 when not.
int64_t reductionVectorWidth(mlir::linalg::LinalgOp op);
/// The iterations of elementwise `op` one thread takes with 16-byte
/// accesses (16 bytes of each output, its innermost loop a multiple), or 0
/// when its accesses can't be vectorized.
int64_t elementwiseVectorWidth(mlir::linalg::LinalgOp op);
/// Iterations `ivs` .. `ivs` + `width` - 1 (innermost) of `op`: contiguous
/// operands as one vector access each, the body cloned per lane.
void emitVectorizedElementwiseAt(mlir::OpBuilder &b, mlir::Location loc,
                                 mlir::linalg::LinalgOp op, llvm::ArrayRef<mlir::Value> ivs,
                                 int64_t width, mlir::IRMapping &map);
mlir::LogicalResult outlineVectorizedElementwise(KernelFactory &kernels, mlir::func::FuncOp fn,
                                                 mlir::linalg::GenericOp op);

/// An elementwise op that reads an input through a permutation moving
/// another loop than the innermost one innermost (a transpose of the two
/// inner dimensions, attention's K^T) as 32x32 tiles: the block reads each
/// such input's tile along its own contiguous dimension into shared
/// memory, then computes and writes along the output's (Transpose.cpp).
/// Both sides coalesced, where a thread per element reads one of them 4
/// bytes per 32-byte sector. Fails, leaving `op` alone, when it does not
/// apply (no such input, either tiled extent under 32).
mlir::LogicalResult outlineTiledTranspose(KernelFactory &kernels, mlir::func::FuncOp fn,
                                          mlir::linalg::GenericOp op);
/// Folds `transpose` into `next`, the elementwise op after it, when that is
/// the only reader of its result (an arena intermediate) and writes none
/// of its input's bytes: `next` reads the input through the permutation
/// and the transpose goes (no launch, no buffer written and read back).
bool readThroughTranspose(mlir::linalg::TransposeOp transpose, mlir::linalg::LinalgOp next);
/// `reader` reads the transpose's input through its permutation wherever it
/// read the transpose's result (its location fused with the transpose's).
void readInputThrough(mlir::linalg::TransposeOp transpose, mlir::linalg::GenericOp reader);
/// Folds `transpose` into the ops of a row group after it (attention's
/// Q, K^T and V, the heads split out of one projection) when only generics
/// of the group read its result, an arena intermediate, as an input, and
/// nothing the group writes takes its input's bytes; erases it.
bool readThroughTransposeIn(mlir::linalg::TransposeOp transpose,
                            llvm::ArrayRef<mlir::linalg::LinalgOp> group);

/// A convolution's zero padding as bufferization left it just before: a
/// zero fill of the padded buffer, then a copy of the image into its
/// interior. The tensor-core kernel reads the image itself instead,
/// zero-filling what falls outside (cp.async with no source bytes), and the
/// two ops go.
struct ImplicitPad {
  mlir::Operation *fill = nullptr, *copy = nullptr;
  mlir::Value image; // the copy's source: [n, C, H, W], or [C, H, W] for n = 1
  int64_t top = 0, left = 0, height = 0, width = 0;
  double value = 0; // what the padding holds (-inf before a max pool)
};
/// The implicit padding of tensor-core convolution `ops[at]` when the
/// padded buffer is only filled, copied into and read by it, and nothing
/// from the copy up to the convolution writes the image's bytes.
std::optional<ImplicitPad> matchImplicitPad(llvm::ArrayRef<mlir::Operation *> ops, size_t at);

/// The ops a fused kernel computes, `op` then `epilogue` (into `fused`),
/// and what it needs passed in (`also`: ops it reads the operands of as
/// well, an implicit pad's copy); false when some of it cannot be (the
/// caller then tries again without the epilogue).
bool captureFused(mlir::Operation *op, llvm::ArrayRef<mlir::linalg::GenericOp> epilogue,
                  llvm::ArrayRef<mlir::Operation *> also,
                  llvm::SmallVectorImpl<mlir::Operation *> &fused,
                  llvm::SetVector<mlir::Value> &args,
                  llvm::SetVector<mlir::Operation *> &clones);

/// Erases what a fused kernel now computes (the epilogue, `op`, and the
/// implicit pad's fill and copy); true when there was an epilogue.
bool eraseFused(mlir::Operation *op, llvm::ArrayRef<mlir::linalg::GenericOp> epilogue,
                const ImplicitPad *pad);

/// A matmul or convolution (f32, f16, bf16) on tensor cores (tiles in
/// TensorCoreMatmul.cpp). Fails, leaving `op` alone, when it does not apply.
/// `zeroInit`: C was just zero-filled (that fill is gone): the accumulators
/// start at zero. `epilogue` (an EpilogueChain's ops): applied per block
/// tile once the tile is computed, then erased. `pad`: a convolution reads
/// its unpadded image (the pad's fill and copy are erased). True when the
/// epilogue went in; fails when the epilogue's captures cannot be passed
/// too (see captureFused).
mlir::FailureOr<bool> outlineTensorCoreMatmul(KernelFactory &kernels, mlir::func::FuncOp fn,
                                            mlir::linalg::LinalgOp op, bool zeroInit = false,
                                            llvm::ArrayRef<mlir::linalg::GenericOp> epilogue = {},
                                            const ImplicitPad *pad = nullptr);
bool isTensorCoreMatmul(mlir::linalg::LinalgOp op);

struct Plan;
/// `op` as the mma.sync kernel of `plan`, a plan over run-time sizes
/// (planDynamicMatmul; C zero-filled just before with `zeroInit`), the
/// launch's grid from the run's sizes.
mlir::FailureOr<bool> outlineDynamicTensorCoreMatmul(KernelFactory &kernels, mlir::func::FuncOp fn,
                                                     mlir::linalg::LinalgOp op, const Plan &plan,
                                                     bool zeroInit);

/// A matrix-vector product (a batch-1 linear layer: x read without n, W
/// contiguous along n) as one kernel where a block's warps split the
/// reduction and add their sums through shared memory (Matvec.cpp);
/// `zeroInit` and `epilogue` as for outlineTensorCoreMatmul. Fails, leaving
/// `op` alone, when it does not apply; isMatvec says whether it will.
mlir::FailureOr<bool> outlineMatvec(KernelFactory &kernels, mlir::func::FuncOp fn,
                                    mlir::linalg::LinalgOp op, bool zeroInit,
                                    llvm::ArrayRef<mlir::linalg::GenericOp> epilogue);
bool isMatvec(mlir::linalg::LinalgOp op);

/// A convolution the tensor cores do not take (NCHW, plain or grouped: a
/// 3-channel stem, a depthwise layer) or a pool (max, sum) as a thread per
/// output element starting from `init` (the dropped fill's value) or the
/// output, its padding read implicitly (`pad`) and its epilogue applied in
/// the same kernel (DirectConv.cpp); the rest as for
/// outlineTensorCoreMatmul. isDirectConv says whether it will succeed.
mlir::FailureOr<bool> outlineDirectConv(KernelFactory &kernels, mlir::func::FuncOp fn,
                                        mlir::linalg::LinalgOp op, std::optional<double> init,
                                        llvm::ArrayRef<mlir::linalg::GenericOp> epilogue,
                                        const ImplicitPad *pad);
bool isDirectConv(mlir::linalg::LinalgOp op);

/// Elementwise ops after a matmul that can run in its kernel, per block tile
/// (bias, activation, residual, GELU's steps): each over C's shape, reading
/// the tile's values (C, earlier outputs of the chain) only where it writes,
/// and writing nothing other blocks still read (A, B, the chain's other
/// inputs) -- the memory plan may have put those bytes anywhere. The last
/// may be a transpose of the tile (attention's heads back in place): each
/// element written where the permutation puts it.
class EpilogueChain {
public:
  explicit EpilogueChain(mlir::linalg::LinalgOp matmul);
  /// Appends `e` when it qualifies.
  bool add(mlir::linalg::GenericOp e);
  llvm::ArrayRef<mlir::linalg::GenericOp> getOps() const { return ops; }
  /// Bytes other blocks still read (an implicitly padded image): no op of
  /// the chain may write them.
  void addExternal(const Bytes &bytes) { external.push_back(bytes); }

private:
  bool valid = false;
  bool closed = false; // after a transpose: its output is not in C's order
  llvm::SmallVector<int64_t> shape;
  llvm::SmallVector<Bytes> tile, external;
  llvm::SmallVector<mlir::linalg::GenericOp> ops;
};

/// C's dimensions that an epilogue op's loops run over: C's own permuted
/// (a transpose of the tile), all of them, or, for an op over a view with
/// C's unit dimensions folded away, the others; nullopt when none fits.
std::optional<llvm::SmallVector<unsigned>> epilogueDims(mlir::linalg::GenericOp e,
                                                        llvm::ArrayRef<int64_t> cShape);

/// A reduction over trailing loops into an output indexed by the leading
/// (parallel) ones, its body `combine(f(inputs), out)` with a combine that
/// gpu.all_reduce has (add, mul, max, min, and, or, xor).
struct RowReduction {
  unsigned numParallel;
  mlir::Operation *combiner;
  mlir::gpu::AllReduceOperation kind;
  mlir::TypedAttr identity;
};
std::optional<RowReduction> matchRowReduction(mlir::linalg::LinalgOp op);
/// The body of a reduction `op` as `combine(f(inputs), out)` (one init,
/// pure ops) with a combine gpu.all_reduce has; nullopt otherwise.
struct Combiner {
  mlir::Operation *combiner;
  mlir::gpu::AllReduceOperation kind;
  mlir::TypedAttr identity;
};
std::optional<Combiner> matchCombiner(mlir::linalg::LinalgOp op);

/// A reduction whose innermost loop is kept (an output row, as a bias
/// gradient sums a batch's rows: x[r, n] into out[n]) as one kernel where a
/// warp's lanes take 32 consecutive outputs, reading each reduced row of
/// them as one 128-byte access, and the block's warps split the reduced
/// rows, adding their partial results through shared memory
/// (ColumnReduction.cpp). A thread per output had looped over every row
/// alone: 1024 outputs of 8192 rows were 4 blocks for the whole GPU. Fails,
/// leaving `op` alone, when it does not apply.
/// `init`: the output was just filled with this (that fill is gone).
mlir::LogicalResult outlineColumnReduction(KernelFactory &kernels, mlir::func::FuncOp fn,
                                           mlir::linalg::GenericOp op,
                                           std::optional<double> init = std::nullopt);
/// Whether outlineColumnReduction takes `op`.
bool isColumnReduction(mlir::linalg::LinalgOp op);

/// Lanes stride over the innermost reduced loop: true when every input it
/// indexes runs along it contiguously (a softmax row, not a matmul's B).
bool readsRowsContiguously(mlir::linalg::LinalgOp op);

/// Emits the reduction of output element `pivs` by the threads of a block
/// of `block` threads (`tid` the thread): a strided loop, gpu.all_reduce,
/// then thread 0 folds the result into the output.
void emitRowReduction(mlir::OpBuilder &b, mlir::Location loc, mlir::linalg::LinalgOp op,
                      const RowReduction &r, llvm::ArrayRef<mlir::Value> pivs, mlir::Value tid,
                      int64_t block, mlir::IRMapping &map);

/// Runs of linalg ops over the same rows (softmax, layer-norm: reductions
/// and the elementwise steps around them) as ONE kernel with a block per row,
/// the ops one after another separated by barriers. `ops` is the function's
/// top-level ops from `start`; `isHostOnly` says which may be skipped over.
/// Small contractions over the rows join (attention's Q K^T and P V around
/// its softmax). Returns the group's linalg ops (empty when none forms).
struct RowGroup {
  llvm::SmallVector<mlir::linalg::LinalgOp> ops;
  unsigned rows = 0; // the leading loops a block's row is
  int64_t widest = 0; // the most iterations one op takes in a row (at most)
  /// Whether a contraction joined (a matmul kernel would have taken it).
  bool hasContraction() const;
};
RowGroup formRowGroup(llvm::ArrayRef<mlir::Operation *> ops, size_t start,
                      llvm::function_ref<bool(mlir::Operation &)> isHostOnly);
/// Top-level ops that stay in the host program: they only compute
/// addresses or manage memory, never touch it.
bool staysOnHost(mlir::Operation &op);
/// Before the memory plan: when a transpose right after `group` (views
/// between) only moves what the group's last ops write (attention's heads
/// back in place), those ops write the transpose's result instead, through
/// a permuted view of it (memref.transpose), and the transpose is returned
/// for the caller to erase; else null, nothing changed.
mlir::linalg::TransposeOp
writeThroughTransposeOut(llvm::ArrayRef<mlir::linalg::LinalgOp> group,
                         llvm::function_ref<bool(mlir::Operation &)> isHostOnly);
/// Outlines a group formed by formRowGroup and erases its ops.
void outlineRowGroup(KernelFactory &kernels, mlir::func::FuncOp fn, const RowGroup &group);

/// A reduction whose outputs are few and whose reduced extent is long
/// (softmax's row max and sum, a layer-norm's mean, a loss's mean, a global
/// pool) as one kernel with a block (or a warp) per output element: threads
/// stride over the reduced indices, then combine through `gpu.all_reduce`
/// (shuffles and shared memory). Fails, leaving `op` alone, when it does not
/// apply.
mlir::LogicalResult outlineCooperativeReduction(KernelFactory &kernels, mlir::func::FuncOp fn,
                                                mlir::linalg::GenericOp op);

} // namespace kiln

#endif // KILN_LIB_LOWERING_LINALGTOGPU_KERNELFACTORY_H

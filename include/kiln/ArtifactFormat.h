/*===- ArtifactFormat.h - what a Kiln artifact exports -----------*- C -*-===*
 *
 * The contract between the compiler (lib/Lowering/Artifact) and the runtime
 * (lib/Runtime). A CPU artifact is a shared library exporting:
 *
 *   const uint32_t kiln_artifact_abi_version;   // == KILN_ARTIFACT_ABI_VERSION
 *   const char     kiln_artifact_signature[];   // text, see below
 *   int32_t        kiln_model_run(void **buffers, const kiln_artifact_host_t *host);
 *   const uint8_t  kiln_artifact_weights[];     // the weights, 64-byte aligned
 *   const char     kiln_artifact_kernels[];     // optional: one line per kernel,
 *                  // its name then the ONNX nodes it computes, tab-separated
 *   int32_t        kiln_model_output_dims(void **buffers,
 *                      const kiln_artifact_host_t *host, int64_t *values);
 *                  // only with `dimvalue` lines: reads the inputs (buffers
 *                  // and host->dims as for kiln_model_run; outputs, arena
 *                  // and weights are not read) and writes the value
 *                  // symbols' sizes to values[0..)
 *
 * Linked statically (`kiln compile --emit=obj|static --name NAME`), the
 * same three symbols are named NAME_kiln_artifact_abi_version,
 * NAME_kiln_artifact_signature and NAME_kiln_model_run, so several models
 * link into one program; kiln_model_load_static takes them as a
 * kiln_artifact_static_t (the generated header fills it in).
 *
 * `buffers` holds one pointer per input, then one per output, in signature
 * order, then the arena; each points to dense row-major data. Outputs are
 * written in place. The arena (`arena` bytes, 64-byte aligned, owned by the
 * caller and not shared by concurrent calls) holds every intermediate of a
 * static size, placed at compile time by liveness; the generated code
 * allocates nothing else at the top level but the buffers whose size a
 * dynamic dimension sets (from host->alloc, see below).
 * `host` (may be NULL: everything runs on the calling thread) lends the
 * artifact a thread pool: the generated code splits its outermost parallel
 * loops into [begin, end) ranges and hands them to `parallel_for`, which
 * must run task(ctx, b, e) over a partition of [0, n) and return when all
 * are done.
 *
 * Signature text, one item per line:
 *   kiln-signature 1
 *   dim <name-bytes> <name> <min> <max>   a dynamic dimension's symbol (the
 *                          k-th dim line is symbol k); max -1: no maximum
 *   dimexpr <k> <c> <n> [<coef> <m> <j1>...<jm>]*n   symbol k is no
 *                          input's but computed from earlier ones:
 *                          c + sum of coef * $j1 * ... * $jm (an output
 *                          whose size is past + new, say)
 *   dimvalue <k> <i>       symbol k is an output size computed from the
 *                          inputs' values (a Reshape to a shape that is an
 *                          input): values[i] of kiln_model_output_dims
 *   input <name-bytes> <name> <dtype> <rank> <d0> ... <dN-1>
 *   output <name-bytes> <name> <dtype> <rank> <d0> ...
 *                          each d a size, or $k: the size symbol k has in
 *                          this call (host->dims lists them, see below)
 *   arena <bytes>          scratch memory one call needs
 *   weights <bytes>        constants inside the artifact
 *   external_weights <bytes> <fnv1a-64 hex>   (only with --weights=external)
 *   cpu <name> <feature>...  the CPU the code was compiled for and the x86
 *                            features it needs; the runtime refuses to load
 *                            it on a CPU that lacks one
 *   target cuda <arch>       a CUDA artifact (absent: the CPU). It also exports
 *                            kiln_artifact_ptx (NUL-terminated PTX, every
 *                            kernel of the model); `buffers` then holds device
 *                            pointers, and the host program launches kernels
 *                            through host->launch (kiln_artifact_launch_fn).
 *                            When ptxas was there at compile time it also
 *                            exports kiln_artifact_cubin (uint8_t[]) and
 *                            kiln_artifact_cubin_size (uint64_t): machine
 *                            code for <arch>, loaded first; the PTX is the
 *                            fallback for other GPUs.
 *   hostvalues <first> <count>  the host program reads <count> scalars of
 *                            the inputs' data: values[first..) of
 *                            kiln_model_output_dims, as 64 bits each
 *                            (integers sign-extended, floats' bits), passed
 *                            after the sizes in host->dims; on CUDA its
 *                            buffers sized by them come from host->alloc,
 *                            which then gives device memory
 * A training step (`kiln compile --train`) adds, by input/output index:
 *   train <out>                   output <out> is the loss (f32/f64 scalar)
 *   param <in> <out> <offset>     a parameter: input <in>, its updated value
 *                                 output <out>, its initial value at <offset>
 *                                 in the weights
 *   state <in> <out>              optimizer state (zeros at first), likewise
 *   hyper <in> <out> <offset>     a hyperparameter (the f32 learning rate):
 *                                 initial value from the weights, settable
 *   grad <out> <in>               output <out> is the gradient of param <in>
 *   labels <in> <classes>         input <in> holds class labels in [0, classes)
 *   distributed                   the loss and gradients are averaged over the
 *                                 ranks of host->comm (--distributed)
 * `buffers` ends with one more pointer: the weights, `kiln_artifact_weights`
 * or, with external weights, the weights file mapped read-only (NAME.weights
 * beside the shared library; for the static form, the `name` given to
 * kiln_model_load_static + ".weights"), checked against that size and
 * checksum.
 * Names are length-prefixed, so they may hold any byte but a newline.
 * dtypes: f16 bf16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64 bool.
 *
 *===----------------------------------------------------------------------===*/

#ifndef KILN_ARTIFACTFORMAT_H
#define KILN_ARTIFACTFORMAT_H

#include <stddef.h>
#include <stdint.h>

#define KILN_ARTIFACT_ABI_VERSION 12u
#define KILN_ARTIFACT_SIGNATURE_MAGIC "kiln-signature 1"
#define KILN_ARTIFACT_ARENA_ALIGNMENT 64u

typedef void (*kiln_artifact_task_fn)(void *ctx, int64_t begin, int64_t end);

/* CUDA artifacts: launches kernel `kernel` (the line of kiln_artifact_kernels
 * naming its PTX entry point) on the session's stream; `params` as
 * cuLaunchKernel's kernelParams. Nonzero on failure (the run then fails). */
typedef int32_t (*kiln_artifact_launch_fn)(void *device, uint32_t kernel, const uint32_t grid[3],
                                           const uint32_t block[3], uint32_t shared_bytes,
                                           void **params);

/* CUDA artifacts: a TMA tensor map (the driver's 128-byte CUtensorMap,
 * cuTensorMapEncodeTiled) of the tensor at device address `global`, in
 * device memory, for kernels that copy tiles with cp.async.bulk.tensor:
 * its device address, or NULL on failure (the run then fails). `desc` is
 * KILN_TENSOR_MAP_WORDS words:
 *   [0] CUtensorMapDataType   [1] rank r (1..5)
 *   [2..6] the sizes, innermost first (r used)
 *   [7..10] the byte strides of dimensions 1.. (r - 1 used)
 *   [11..15] the box (the tile one copy moves), innermost first
 *   [16] CUtensorMapSwizzle
 * The runtime encodes each distinct (global, desc) once per session. */
#define KILN_TENSOR_MAP_WORDS 17
typedef void *(*kiln_artifact_tensor_map_fn)(void *device, void *global, const uint64_t *desc);

typedef struct kiln_artifact_host {
  void *pool;
  void (*parallel_for)(void *pool, int64_t n, kiln_artifact_task_fn task, void *ctx);
  /* CUDA artifacts only. */
  void *device;
  kiln_artifact_launch_fn launch;
  /* When non-NULL, called before (end = 0) and after (end = 1) every kernel
   * of the model, `kernel` being its line in kiln_artifact_kernels: the
   * runtime's per-kernel timings (`kiln bench --per-kernel`). */
  void *profiler;
  void (*profile)(void *profiler, uint32_t kernel, int32_t end);
  /* CUDA artifacts whose kernels take TMA tensor maps (sm_90a). */
  kiln_artifact_tensor_map_fn tensor_map;
  /* Artifacts with dynamic dimensions (`dim` lines): the size of every
   * dynamic dimension of the buffers, inputs then outputs, each tensor's
   * in order (the `$k` entries of the signature's shapes). */
  const int64_t *dims;
  /* Artifacts with dynamic dimensions: where the buffers sized at run time
   * come from (NULL alloc: malloc). alloc returns `bytes` 64-byte aligned
   * bytes, or NULL; release gets the block back with its size. Called from
   * any thread of the run. */
  void *allocator;
  void *(*alloc)(void *allocator, uint64_t bytes);
  void (*release)(void *allocator, void *block, uint64_t bytes);
  /* Training steps compiled with --distributed (kiln-data-parallel): combines
   * `count` elements of `dtype` (a kiln_dtype_t code) at `data`, in place,
   * over the ranks of `comm` (op 0: sum, 1: mean); device memory for a CUDA
   * artifact. Nonzero on failure (the run then fails). A NULL all_reduce is
   * a single rank: the data stays as it is. */
  void *comm;
  int32_t (*all_reduce)(void *comm, void *data, uint64_t count, int32_t dtype, int32_t op);
  /* Optional, both or neither (NULL: all_reduce, synchronously): the same
   * reduction started and left running; all_reduce_wait(comm, data) returns
   * once the one started on `data` is complete (nonzero on failure). The
   * code starts a gradient's reduction when it is computed and waits right
   * before the buffer is touched again, so the reductions run while the
   * backward pass goes on; every start is waited for before the run
   * returns, in the order the code chose, the same on every rank. */
  int32_t (*all_reduce_start)(void *comm, void *data, uint64_t count, int32_t dtype, int32_t op);
  int32_t (*all_reduce_wait)(void *comm, void *data);
  /* CUDA artifacts whose host program branches on a value a kernel computed
   * (a Loop's condition computed in its body): copies `bytes` from device
   * memory `src` to `dst` once the work queued so far is done. Nonzero on
   * failure (the run then fails). */
  int32_t (*read)(void *device, void *dst, const void *src, uint64_t bytes);
} kiln_artifact_host_t;

/* FNV-1a 64: the external weights file's checksum. */
#define KILN_FNV1A64_INIT 0xcbf29ce484222325ull
static inline uint64_t kiln_fnv1a64(uint64_t hash, const void *data, size_t size) {
  const unsigned char *p = (const unsigned char *)data;
  for (size_t i = 0; i < size; ++i)
    hash = (hash ^ p[i]) * 0x100000001b3ull;
  return hash;
}

typedef int32_t (*kiln_artifact_run_fn)(void **buffers, const kiln_artifact_host_t *host);
typedef int32_t (*kiln_artifact_output_dims_fn)(void **buffers, const kiln_artifact_host_t *host,
                                                int64_t *values);

/* A statically linked artifact's exports. */
typedef struct kiln_artifact_static {
  uint32_t abi_version;
  const char *signature;
  kiln_artifact_run_fn run;
  const void *weights; /* NAME_kiln_artifact_weights */
  const char *ptx;     /* CUDA: NAME_kiln_artifact_ptx (NULL for CPU artifacts) */
  const char *kernels; /* NAME_kiln_artifact_kernels, or NULL */
  const void *cubin;   /* CUDA: NAME_kiln_artifact_cubin, or NULL */
  uint64_t cubin_size; /* NAME_kiln_artifact_cubin_size */
  kiln_artifact_output_dims_fn output_dims; /* NAME_kiln_model_output_dims, or NULL */
} kiln_artifact_static_t;

#endif /* KILN_ARTIFACTFORMAT_H */

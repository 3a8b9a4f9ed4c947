/*===- runtime.h - Kiln runtime C API ----------------------------*- C -*-===*
 *
 * Loads a compiled Kiln artifact and runs it. No MLIR or LLVM inside.
 *
 * Conventions (IREE-shaped): opaque handles; every fallible call returns a
 * kiln_status_t, NULL on success, else an object to inspect with
 * kiln_status_code/kiln_status_message and free with kiln_status_free.
 * Results come back through out_ parameters. Nothing aborts on a caller's
 * mistake.
 *
 * Thread safety: a kiln_model_t is immutable after loading and may be shared
 * by threads; a kiln_session_t must be used by one thread at a time.
 *
 *===----------------------------------------------------------------------===*/

#ifndef KILN_RUNTIME_H
#define KILN_RUNTIME_H

#include "kiln/ArtifactFormat.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kiln_status_code_e {
  KILN_OK = 0,
  KILN_INVALID_ARGUMENT = 1, /* wrong shape, dtype, name, count, bad file */
  KILN_NOT_FOUND = 2,        /* missing file or symbol */
  KILN_FAILED_PRECONDITION = 3, /* artifact from another ABI version */
  KILN_RESOURCE_EXHAUSTED = 4,
  KILN_INTERNAL = 5,
} kiln_status_code_t;

typedef struct kiln_status_s *kiln_status_t;

/* The code of `status` (KILN_OK for NULL). */
kiln_status_code_t kiln_status_code(kiln_status_t status);
/* Its message, valid until kiln_status_free ("" for NULL). */
const char *kiln_status_message(kiln_status_t status);
/* Frees a status; NULL is fine. */
void kiln_status_free(kiln_status_t status);

typedef enum kiln_dtype_e {
  KILN_DTYPE_F32 = 0, KILN_DTYPE_F64, KILN_DTYPE_F16, KILN_DTYPE_BF16,
  KILN_DTYPE_I8, KILN_DTYPE_I16, KILN_DTYPE_I32, KILN_DTYPE_I64,
  KILN_DTYPE_U8, KILN_DTYPE_BOOL, KILN_DTYPE_U16, KILN_DTYPE_U32, KILN_DTYPE_U64,
} kiln_dtype_t;

/* Bytes per element of `dtype`. */
size_t kiln_dtype_size(kiln_dtype_t dtype);
/* "f32", "i64", ... */
const char *kiln_dtype_name(kiln_dtype_t dtype);

/* A tensor description: the signature of one input or output. The pointers
 * stay valid while the model is loaded. */
typedef struct kiln_tensor_desc_s {
  const char *name;
  kiln_dtype_t dtype;
  int32_t rank;
  const int64_t *shape;
  size_t size_bytes;
} kiln_tensor_desc_t;

/* A caller's tensor: dense row-major data the caller owns. `name` may be NULL
 * (then tensors are matched by position). */
typedef struct kiln_tensor_s {
  const char *name;
  kiln_dtype_t dtype;
  int32_t rank;
  const int64_t *shape;
  void *data;
  size_t size_bytes;
} kiln_tensor_t;

typedef struct kiln_model_s kiln_model_t;
typedef struct kiln_session_s kiln_session_t;

/* Loads the artifact at `path` and checks its ABI version and signature. */
kiln_status_t kiln_model_load(const char *path, kiln_model_t **out_model);
/* Wraps an artifact linked into the program (the static form); `name`
 * appears in messages and, for a model compiled with --weights=external,
 * is where its weights are: `name`.weights. Same checks as kiln_model_load.
 * (A shared library's external weights are NAME.weights beside NAME.so;
 * they are mapped read-only and checked against the artifact's size and
 * checksum.) */
kiln_status_t kiln_model_load_static(const kiln_artifact_static_t *artifact, const char *name,
                                     kiln_model_t **out_model);
/* Releases a model; every session of it must be released first. */
void kiln_model_release(kiln_model_t *model);

size_t kiln_model_num_inputs(const kiln_model_t *model);
size_t kiln_model_num_outputs(const kiln_model_t *model);
/* Describes input/output `index`. */
kiln_status_t kiln_model_input(const kiln_model_t *model, size_t index,
                               kiln_tensor_desc_t *out_desc);
kiln_status_t kiln_model_output(const kiln_model_t *model, size_t index,
                                kiln_tensor_desc_t *out_desc);

/* Dynamic dimensions (a model compiled without pinning them, docs/
 * dynamic-shapes.md). Descriptions of inputs and outputs give -1 for a
 * dynamic dimension (and size_bytes 0); each is bound to a symbol, whose
 * size the inputs' shapes give at every run. kiln_model_dim names symbol
 * `k` and its range (max -1: none); kiln_model_dim_symbols fills `symbols`
 * (the tensor's rank) with each dimension's symbol, -1 where static;
 * `index` counts inputs then outputs. */
size_t kiln_model_num_dims(const kiln_model_t *model);
kiln_status_t kiln_model_dim(const kiln_model_t *model, size_t k, const char **name,
                             int64_t *min, int64_t *max);
kiln_status_t kiln_model_dim_symbols(const kiln_model_t *model, size_t index, int32_t *symbols);
/* The shape output `output` has when the model runs on `inputs` (checked as
 * kiln_session_run checks them): allocate outputs with it. `shape` holds the
 * output's rank. The inputs' data is read only by a model whose output
 * sizes depend on its inputs' values (a Reshape to a shape that is an
 * input: `dimvalue` symbols), which then needs it on the host. */
kiln_status_t kiln_model_output_shape(const kiln_model_t *model, const kiln_tensor_t *inputs,
                                      size_t num_inputs, size_t output, int64_t *shape);

/* Bytes of scratch memory each session allocates once for the model's
 * intermediates (placed at compile time by liveness), and bytes of weights
 * the artifact holds. */
size_t kiln_model_arena_bytes(const kiln_model_t *model);
size_t kiln_model_weight_bytes(const kiln_model_t *model);
/* The artifact's kernels, one line each: the kernel's name, then the ONNX
 * nodes whose code it holds ("node 'fc1' (Gemm)"), tab-separated; "" when
 * the artifact does not say. Valid while the model is loaded. */
const char *kiln_model_kernels(const kiln_model_t *model);
/* "cpu" or "cuda": where the artifact's code runs. */
const char *kiln_model_target(const kiln_model_t *model);
/* A CUDA artifact's machine code: the GPUs it is for ("sm_80 sm_90"), ""
 * when it has none and the driver compiles its PTX at load. */
const char *kiln_model_machine_code(const kiln_model_t *model);
/* Bytes of weights in its external weights file (--weights=external), 0 if none. */
size_t kiln_model_external_weight_bytes(const kiln_model_t *model);

/* Options of a session; zero-initialize, then set what you need. */
typedef struct kiln_session_options_s {
  /* Threads that run the model's parallel loops, counting the caller;
   * 0 = one per hardware thread, 1 = run everything on the calling thread. */
  int32_t num_threads;
  /* CUDA artifacts: nonzero turns off capturing the launch sequence into a
   * CUDA graph (replayed from the second run on). */
  int32_t disable_cuda_graphs;
} kiln_session_options_t;

/* A session runs a model with its own thread pool and its own arena (fails
 * with KILN_RESOURCE_EXHAUSTED when that memory can't be had); use it from
 * one thread at a time (create one per thread for concurrency). `options`
 * may be NULL. */
kiln_status_t kiln_session_create(kiln_model_t *model, const kiln_session_options_t *options,
                                  kiln_session_t **out_session);
void kiln_session_release(kiln_session_t *session);
/* Threads the session runs parallel loops on, counting the caller. */
int32_t kiln_session_num_threads(const kiln_session_t *session);

/* Per-kernel profiling: when enabled (which also clears the totals), every
 * run adds each kernel's wall time and call count, kernel i being line i of
 * kiln_model_kernels. kiln_session_profile copies up to `capacity` totals
 * (either array may be NULL) and returns how many kernels have one. */
kiln_status_t kiln_session_enable_profiling(kiln_session_t *session, int enable);
size_t kiln_session_profile(const kiln_session_t *session, double *total_ms, int64_t *calls,
                            size_t capacity);

/* Runs the model. Every input's count, name (when given), dtype, shape and
 * size are checked first (a dynamic dimension against its range and the
 * other inputs bound to the same symbol); outputs are written into the
 * caller's buffers, which must have the shapes kiln_model_output_shape
 * gives and may not overlap an input or each other. */
kiln_status_t kiln_session_run(kiln_session_t *session, const kiln_tensor_t *inputs,
                               size_t num_inputs, kiln_tensor_t *outputs,
                               size_t num_outputs);

/* The same for a CUDA session whose inputs and outputs are already in GPU
 * memory: each tensor's `data` is a device address (CUdeviceptr, or a
 * pointer from cudaMalloc) on device 0, in its primary context. Inputs and
 * outputs are copied device to device, nothing crosses PCIe (but for a
 * model whose sizes or scalars depend on its inputs' values: those inputs
 * are copied to the host first, to compute them); the outputs are complete
 * when it returns. KILN_FAILED_PRECONDITION for a CPU session. */
kiln_status_t kiln_session_run_device(kiln_session_t *session, const kiln_tensor_t *inputs,
                                      size_t num_inputs, kiln_tensor_t *outputs,
                                      size_t num_outputs);

/*===----------------------------------------------------------------------===*
 * Training: artifacts compiled with `kiln compile --train`.
 *
 * A trainer owns a session, the parameters (initialized from the artifact's
 * weights), the optimizer state and the last step's gradients. Its inputs
 * are the model's data inputs then the label (the model inputs that are not
 * parameters or optimizer state); kiln_trainer_step runs the forward pass,
 * the backward pass and the optimizer update, and returns the loss (computed
 * with the parameters before the update). A trainer is used by one thread at
 * a time.
 *===----------------------------------------------------------------------===*/

typedef struct kiln_trainer_s kiln_trainer_t;

/* Non-zero when `model` was compiled with --train. */
int kiln_model_is_training(const kiln_model_t *model);
/* Non-zero when its step averages over ranks (--train --distributed). */
int kiln_model_is_distributed(const kiln_model_t *model);

/* Fails with KILN_INVALID_ARGUMENT for an inference artifact. */
kiln_status_t kiln_trainer_create(kiln_model_t *model, const kiln_session_options_t *options,
                                  kiln_trainer_t **out_trainer);
void kiln_trainer_release(kiln_trainer_t *trainer);

/* The inputs each step takes (data inputs, then the label). */
size_t kiln_trainer_num_inputs(const kiln_trainer_t *trainer);
kiln_status_t kiln_trainer_input(const kiln_trainer_t *trainer, size_t index,
                                 kiln_tensor_desc_t *out_desc);

/* One training step; inputs are checked like kiln_session_run's. */
kiln_status_t kiln_trainer_step(kiln_trainer_t *trainer, const kiln_tensor_t *inputs,
                                size_t num_inputs, double *out_loss);
/* Steps taken so far. */
int64_t kiln_trainer_steps(const kiln_trainer_t *trainer);

/* The parameters (named as the model's initializers; batch-norm running
 * statistics are among them, without gradients): description and current
 * value, valid until the next step or set_param. */
size_t kiln_trainer_num_params(const kiln_trainer_t *trainer);
kiln_status_t kiln_trainer_param(const kiln_trainer_t *trainer, size_t index,
                                 kiln_tensor_desc_t *out_desc, const void **out_data);
/* The gradient of parameter `index` at the last step (zeros before one);
 * KILN_NOT_FOUND for running statistics. */
kiln_status_t kiln_trainer_grad(const kiln_trainer_t *trainer, size_t index,
                                kiln_tensor_desc_t *out_desc, const void **out_data);
/* Replaces the parameter named `value->name` (dtype and shape checked). */
kiln_status_t kiln_trainer_set_param(kiln_trainer_t *trainer, const kiln_tensor_t *value);
/* The learning rate the next step uses (compiled in as --lr; a schedule
 * sets it between steps). */
double kiln_trainer_learning_rate(const kiln_trainer_t *trainer);
kiln_status_t kiln_trainer_set_learning_rate(kiln_trainer_t *trainer, double lr);

/* Inference with the trainer's current parameters (a training library
 * carries the model's forward pass beside the step; not the static forms).
 * Its inputs are the model's data inputs (no label), its outputs the
 * model's outputs; they are checked like kiln_session_run's. */
int kiln_trainer_can_infer(const kiln_trainer_t *trainer);
size_t kiln_trainer_num_infer_inputs(const kiln_trainer_t *trainer);
kiln_status_t kiln_trainer_infer_input(const kiln_trainer_t *trainer, size_t index,
                                       kiln_tensor_desc_t *out_desc);
size_t kiln_trainer_num_infer_outputs(const kiln_trainer_t *trainer);
kiln_status_t kiln_trainer_infer_output(const kiln_trainer_t *trainer, size_t index,
                                        kiln_tensor_desc_t *out_desc);
kiln_status_t kiln_trainer_infer(kiln_trainer_t *trainer, const kiln_tensor_t *inputs,
                                 size_t num_inputs, kiln_tensor_t *outputs, size_t num_outputs);
/* The shape inference output `output` has for these inputs (a model
 * trained with a dynamic batch), as kiln_model_output_shape gives it. */
kiln_status_t kiln_trainer_infer_output_shape(const kiln_trainer_t *trainer,
                                              const kiln_tensor_t *inputs, size_t num_inputs,
                                              size_t output, int64_t *shape);

/*===----------------------------------------------------------------------===*
 * Data-parallel training: a trainer of an artifact compiled with
 * `--train --distributed` on each rank, each step on the rank's shard of the
 * batch; the step averages the loss and the gradients over the ranks, so
 * every rank takes the same optimizer step. The communicator is the
 * engine's (MPI: kiln/mpi.h, libkiln_mpi); the runtime only calls it.
 *===----------------------------------------------------------------------===*/

typedef enum kiln_reduce_op_e {
  KILN_REDUCE_SUM = 0, KILN_REDUCE_MEAN = 1, KILN_REDUCE_MAX = 2, KILN_REDUCE_MIN = 3,
} kiln_reduce_op_t;

typedef struct kiln_communicator_s {
  void *impl;
  int32_t rank, size;
  /* In place over all ranks: `count` elements of `dtype` (a kiln_dtype_t)
   * at `data`, combined by `op` (a kiln_reduce_op_t; mean for floating
   * point only). Host memory, or device memory for a communicator of CUDA
   * artifacts. Every rank calls it in the same order. 0 on success; a
   * failure (including no answer from another rank in time) is nonzero,
   * with last_error saying why. Its layout is the artifact's (host->comm,
   * host->all_reduce). */
  int32_t (*all_reduce)(void *impl, void *data, uint64_t count, int32_t dtype, int32_t op);
  /* The last failure's message ("" if none). */
  const char *(*last_error)(void *impl);
  /* Ends every rank with `code`: a rank that fails must not leave the others
   * waiting in a collective. */
  void (*abort)(void *impl, int32_t code);
  /* Optional, both or neither: all_reduce started and left running (so a
   * step's gradients are reduced while its backward pass goes on, and a
   * communicator may gather consecutive ones into one bucket), and the
   * wait for the one started on `data`. Starts and waits come in the same
   * order on every rank. */
  int32_t (*all_reduce_start)(void *impl, void *data, uint64_t count, int32_t dtype, int32_t op);
  int32_t (*all_reduce_wait)(void *impl, void *data);
  /* Communicators of GPU memory (NCCL, kiln/nccl.h): the same reduction of
   * device memory, enqueued on `stream` (a CUstream) and done in stream
   * order; NULL for a communicator of host memory. A CUDA trainer needs
   * it; all_reduce above then still reduces host memory (joining). */
  int32_t (*all_reduce_device)(void *impl, void *data, uint64_t count, int32_t dtype, int32_t op,
                               void *stream);
} kiln_communicator_t;

/* Makes `trainer` one rank of `comm` (which must outlive it; NULL: a single
 * process again). Fails unless the artifact was compiled with
 * --distributed, and on every rank unless all ranks run the same artifact
 * (its signature and weights size compared); then every rank's parameters
 * and optimizer state become rank 0's, as PyTorch's DistributedDataParallel
 * starts. Collective: every rank calls it. */
kiln_status_t kiln_trainer_set_communicator(kiln_trainer_t *trainer,
                                            const kiln_communicator_t *comm);

/* Optimizer state (Adam's moments, momentum buffers, the step counter, the
 * dropout counter), named `<param>.exp_avg`, `step`, ...: for checkpoints
 * that resume exactly. Valid until the next step or set_state. */
size_t kiln_trainer_num_states(const kiln_trainer_t *trainer);
kiln_status_t kiln_trainer_state(const kiln_trainer_t *trainer, size_t index,
                                 kiln_tensor_desc_t *out_desc, const void **out_data);
/* Replaces the state tensor named `value->name` (dtype and shape checked). */
kiln_status_t kiln_trainer_set_state(kiln_trainer_t *trainer, const kiln_tensor_t *value);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_RUNTIME_H */

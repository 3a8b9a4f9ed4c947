//===- Passes.td - passes over the kiln dialect ------------*- tablegen -*-===//

#ifndef KILN_DIALECTS_KILN_TRANSFORMS_PASSES_TD
#define KILN_DIALECTS_KILN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnSignless : Pass<"kiln-signless", "::mlir::ModuleOp"> {
  let summary = "replaces unsigned integer types by signless ones, marking the ops";
  let description = [{
    The importer keeps ONNX's unsigned types (`ui8`...) so that the ops'
    semantics are visible; arith and linalg want signless integers. This
    pass retypes every value, constant and function signature to signless
    and marks the ops whose meaning depends on signedness with the unit
    attribute `kiln.unsigned` (div, mod, max/min, comparisons, reductions,
    argmax/argmin, bitshift), and casts with `kiln.unsigned_in` /
    `kiln.unsigned_out`, which the lowering reads.
  }];
}

def KilnSinkTransposes : Pass<"kiln-sink-transposes", "::mlir::ModuleOp"> {
  let summary = "moves transposes below the elementwise ops they feed, where they cancel";
  let description = [{
    An elementwise op whose every operand is either the only use of a
    `kiln.transpose` by one permutation (of the result's shape, so nothing
    broadcasts) or a single value runs on the untransposed tensors, and one
    transpose follows it: `add(T(a), T(b))` -> `T(add(a, b))`. A transpose
    so moved meets the next one, and the two compose away (the
    canonicalization of `kiln.transpose`). Channels-last integer
    convolutions (the importer's, for VNNI) end and begin with such
    transposes; the requantization and residual adds between them kept each
    pair apart. Only where that pays: two operands' transposes become one,
    or down the chain of elementwise users the moved transpose meets
    another, or reaches a reduction keeping its dimensions that it would
    only reshape, or a cast to a narrower type (fewer bytes to copy);
    elsewhere it would only move the copy. An operand broadcast along the
    permuted dimensions (a per-channel [C, 1, 1] layer scale) moves too,
    reshaped, and so does one whose inverse transpose exists already (the
    copy another op reads): both then read that copy. Gathers of a
    transpose by constant scalar indices, when they are all that read it,
    become slices of the untransposed tensor.

    With `channels-last-convs` (the CPU's pipeline) f32 depthwise
    convolutions join in: `conv(T(y))` with T the NHWC -> NCHW permute runs
    channels last on `y`, and `T'(conv(x))` with T' NCHW -> NHWC on `T'(x)`.
    ConvNeXt's blocks permute around each depthwise 7x7 and back before the
    layer scale and residual add; so moved, the permutes meet and cancel,
    and the residual stream stays channels last.
  }];
  let options = [
    Option<"channelsLastConvs", "channels-last-convs", "bool", /*default=*/"false",
           "run f32 depthwise convolutions channels last where the permutes then cancel">,
  ];
}

def KilnFoldBatchNorm : Pass<"kiln-fold-batch-norm", "::mlir::ModuleOp"> {
  let summary = "folds an inference batch-norm into the convolution before it";
  let description = [{
    `batch_norm(conv(x, W, b), g, beta, m, v)` with every parameter constant
    and the convolution used only there becomes `conv(x, W', b')` with
    `s = g / sqrt(v + eps)`, `W'[f] = W[f] * s[f]`, `b' = (b - m) * s + beta`
    computed at compile time: the per-element square root, division and
    memory pass of the normalization disappear. Exact up to rounding.
    Training keeps its batch-norms (their parameters are arguments).
  }];
}

//===----------------------------------------------------------------------===//
// Training (`kiln compile --train`): lift, loss, autograd, optimizer
//===----------------------------------------------------------------------===//

def KilnLiftParameters : Pass<"kiln-lift-parameters", "::mlir::ModuleOp"> {
  let summary = "turns trainable initializers into arguments of @main";
  let description = [{
    Every floating-point constant the importer made from an initializer
    (`kiln.initializer = "name"`) becomes a new argument of @main, marked
    `kiln.param` and carrying its initial value (`kiln.initial`), unless it
    is frozen. A batch_norm's running mean and variance are buffers, not
    parameters (as in PyTorch): lifted as `kiln.buffer` arguments (their
    initial value too) for kiln-batch-norm-training, or left constant with
    `batch-norm-stats=false`.
    ```mlir
    %w = kiln.constant dense_resource<fc.weight> {kiln.initializer = "fc.weight"} : tensor<4x8xf32>
    // =>
    func.func @main(%x: ..., %w: tensor<4x8xf32> {kiln.name = "fc.weight", kiln.param,
                                                 kiln.initial = dense_resource<fc.weight>})
    ```
  }];
  let options = [
    ListOption<"freeze", "freeze", "std::string",
               "initializers that stay constants (not trained)">,
    Option<"batchNormStats", "batch-norm-stats", "bool", "true",
           "also lift batch_norm running statistics, as `kiln.buffer` arguments "
           "(kiln-batch-norm-training updates them); false keeps them constant">,
  ];
}

def KilnAddLoss : Pass<"kiln-add-loss", "::mlir::ModuleOp"> {
  let summary = "replaces @main's outputs by a scalar loss";
  let description = [{
    `mse`: mean over all elements of (output - label)^2, label shaped like
    the output. `cross_entropy`: logits [N, C, d...] and integer class labels
    [N, d...], mean over the batch of -log softmax(logits)[label].
    `output`: the model's single one-element output is the loss. The label
    is a new argument of @main, placed after the model's own inputs.
  }];
  let options = [
    Option<"loss", "loss", "std::string", "\"mse\"", "mse, cross_entropy or output">,
    Option<"labelName", "label-name", "std::string", "\"label\"", "name of the label input">,
    Option<"classAxis", "class-axis", "int64_t", "1",
           "cross_entropy: the logits' class axis (1 as PyTorch's; -1 for [B, T, V])">,
  ];
}

def KilnBatchNormTraining : Pass<"kiln-batch-norm-training", "::mlir::ModuleOp"> {
  let summary = "batch_norm with batch statistics, and running-statistics updates";
  let description = [{
    PyTorch's training mode: every batch_norm whose mean and variance are
    `kiln.buffer` arguments normalizes with the batch's mean and (biased)
    variance over all dimensions but 1, computed from kiln ops so autograd
    differentiates through them; the new running statistics (the unbiased
    variance, ONNX's `momentum`) become results of @main that replace the
    buffers on the next step (`kiln.update`), as AOTAutograd returns mutated
    inputs. With `sync`, the statistics are those of the global batch of a
    data-parallel run (PyTorch's SyncBatchNorm): the mean and the biased
    variance are each the mean over ranks (`kiln.all_reduce`) of the rank's
    own, and the running variance's n is the global count.
  }];
  let options = [
    Option<"sync", "sync", "bool", "false",
           "statistics of the global batch over the ranks (--sync-batch-norm)">,
  ];
}

def KilnDecomposeDropout : Pass<"kiln-decompose-dropout", "::mlir::ModuleOp"> {
  let summary = "dropout as a counter-based random mask";
  let description = [{
    `kiln.dropout` becomes `u = kiln.random_uniform(counter)`, mask = u >=
    ratio, output = mask ? x / (1 - ratio) : 0. With `step-counter` (the
    training pipeline) the counter is a new i64 state argument of @main,
    `rng_counter`, incremented by each step (`kiln.update`), so every step
    draws new masks and a recomputed mask equals the original; without it
    (a model that asks for training-mode dropout at inference) it is 0.
  }];
  let options = [
    Option<"stepCounter", "step-counter", "bool", "false",
           "thread a step counter through @main as training state">,
    Option<"seed", "seed", "int64_t", "0",
           "mixed into every dropout's seed (kiln compile --seed)">,
  ];
}

def KilnAutograd : Pass<"kiln-autograd", "::mlir::ModuleOp"> {
  let summary = "appends the gradient of the loss with respect to every parameter";
  let description = [{
    Reverse-mode differentiation of @main, whose first result is a scalar
    loss, with respect to its `kiln.param` arguments: the ops between the
    parameters and the loss are visited last to first and each builds its
    operands' gradients through GradientOpInterface; gradients reaching a
    value along several uses are summed. The joint function returns the
    loss, then one gradient per parameter (`kiln.grad_of = <arg index>`,
    named `grad:<param>`). An op on the path without a rule is an error
    naming it.
  }];
}

def KilnDataParallel : Pass<"kiln-data-parallel", "::mlir::ModuleOp"> {
  let summary = "averages the loss and the gradients over the ranks of a data-parallel run";
  let description = [{
    After kiln-autograd: the loss (@main's first result) and every gradient
    (`kiln.grad_of`) become the mean over ranks of each rank's value
    (`kiln.all_reduce "mean"`, marked `kiln.backward`), as PyTorch's
    DistributedDataParallel averages gradients. Each rank computes the mean
    loss of an equal shard of the global batch, so the averages are the
    loss and the gradients of the whole batch, and the optimizer, which
    runs after this on every rank, takes the same step everywhere. Each
    reduction is placed right after its gradient is computed, so the
    runtime can start it while the backward pass goes on.
  }];
}

def KilnPartition : Pass<"kiln-partition", "::mlir::ModuleOp"> {
  let summary = "splits the joint graph into a forward and a backward function";
  let description = [{
    AOTAutograd's partitioner. The forward values the backward pass reads
    (ops kiln-autograd marked `kiln.backward` read them) are either saved --
    returned by `@kiln_forward` and passed to `@kiln_backward` -- or
    recomputed inside `@kiln_backward` from saved values, arguments and
    constants. The choice is a minimum cut over the forward graph, each
    value costing its size in bytes to save; matmul, gemm, convolution,
    reductions, normalizations, softmax, pooling and gathers are never
    recomputed (their outputs or something after them is saved), cheap
    elementwise and shape ops are. `recompute=false` saves everything the
    backward reads. @main becomes two calls; the module gets
    `kiln.partition = {saved_bytes, save_all_bytes, recomputed_ops}`.
    Recomputed ops carry `kiln.recompute` (so CSE keeps them apart once
    the two functions are inlined back).
  }];
  let options = [
    Option<"recompute", "recompute", "bool", "true",
           "choose save vs recompute by min-cut (false: save everything)">,
  ];
}

def KilnOptimizer : Pass<"kiln-optimizer", "::mlir::ModuleOp"> {
  let summary = "appends the optimizer update of every parameter";
  let description = [{
    PyTorch's update rules and defaults. Each parameter's new value is a
    result of @main; optimizer state (SGD momentum buffers, Adam's exp_avg
    and exp_avg_sq) and a step counter are new zero-initialized arguments
    whose new values are results too. Each argument updated this way is
    marked `kiln.update = <result index>`; the runtime feeds the results
    back as the next step's arguments.
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string", "\"sgd\"", "sgd, adam or adamw">,
    Option<"lr", "lr", "double", "1e-3", "learning rate">,
    Option<"momentum", "momentum", "double", "0.0", "SGD momentum">,
    Option<"dampening", "dampening", "double", "0.0", "SGD dampening">,
    Option<"nesterov", "nesterov", "bool", "false", "SGD Nesterov momentum">,
    Option<"weightDecay", "weight-decay", "double", "-1.0",
           "weight decay (default: 0 for sgd and adam, 0.01 for adamw)">,
    Option<"beta1", "beta1", "double", "0.9", "Adam beta1">,
    Option<"beta2", "beta2", "double", "0.999", "Adam beta2">,
    Option<"eps", "eps", "double", "1e-8", "Adam epsilon">,
  ];
}

#endif // KILN_DIALECTS_KILN_TRANSFORMS_PASSES_TD

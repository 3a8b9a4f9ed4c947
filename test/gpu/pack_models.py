#!/usr/bin/env python3
"""scripts/gpu-check.sh pack, the models: each example model exported to ONNX
at batch 1 and 32 (the way bench/run_cpu.py does) and compiled by `kiln
compile --target=cuda`, plus kernel-level models: a 4096x4096 matmul (f32,
f16, bf16), smaller matmuls (batched, linear layers with bias and ReLU) and
a bandwidth-bound elementwise chain over 64 Mi floats. Every matmul is also
compiled for Hopper (--gpu-arch=sm_90a, warpgroup MMA) as <name>_sm90a.so
(and with TMA loads, <name>_sm90a_tma.so, and in clusters of two sharing B's
tiles, <name>_sm90a_tma_c2.so; the 4096^3 ones also with 128-wide
tiles, <name>_sm90a_n128.so, f32's also with each k tile's wgmmas
drained, matmul4096_sm90a_drain.so, and for sm_80
with another k step and ring depth, <name>__k32s4.so / <name>__k64s3.so).
Writes
PACK/models/<name>_b<batch>.{onnx,so} (and <name>_f16_b32 for the
attention models and the CNNs in half precision) and PACK/models/manifest.txt. No inputs
travel: the GPU side draws them (fixed seed).

  python3 test/gpu/pack_models.py --kiln build/bin/kiln --pack .gpu-pack
"""
import argparse, os, subprocess, sys

import onnx
from onnx import TensorProto, helper
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from run_cpu import load_example  # noqa: E402  (one copy of the helper)
MODELS = ["mlp", "cnn", "transformer", "gpt", "encoder", "resnet", "mobilenetv2"]
# Models also packed in f16 at batch 32 (the CNNs: f16 implicit-GEMM
# convolutions), the attention ones also for sm_90a (wgmma).
HALF_MODELS = ["transformer", "gpt", "resnet", "mobilenetv2"]
HOPPER_MODELS = ["transformer", "gpt", "encoder"]


def export(name, batch, path, dtype="f32"):
    ex = load_example(name)
    model = ex.make_model()
    inputs = ex.make_input(batch)
    if dtype == "f16":  # weights and float inputs in half precision
        model = model.half()
        inputs = tuple(t.half() if t.is_floating_point() else t for t in inputs)
    fold = getattr(ex, "EXPORT_ARGS", {}).get("fold_constants", True)
    with torch.no_grad():
        torch.onnx.export(model, inputs, path, input_names=["input"], output_names=["output"],
                          opset_version=17, do_constant_folding=fold, dynamo=False)


def kernel_models(folder):
    """(name, path): square matmuls (f32, f16, bf16), an elementwise chain, a transpose,
    column sums."""
    n = 4096
    mm = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["output"])], "matmul",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [n, n]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [n, n])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [n, n])])
    m = 64 * 1024 * 1024
    ew = helper.make_graph(
        [helper.make_node("Add", ["x", "y"], ["s"]), helper.make_node("Relu", ["s"], ["r"]),
         helper.make_node("Mul", ["r", "y"], ["output"])], "elementwise",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [m])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [m])])
    def matmul(dtype):
        return helper.make_graph(
            [helper.make_node("MatMul", ["a", "b"], ["output"])], "matmul",
            [helper.make_tensor_value_info("a", dtype, [n, n]),
             helper.make_tensor_value_info("b", dtype, [n, n])],
            [helper.make_tensor_value_info("output", dtype, [n, n])])
    def linear(dtype, batch, m, k, n):
        """A linear layer with bias and ReLU: the epilogue in the matmul kernel."""
        return helper.make_graph(
            [helper.make_node("MatMul", ["a", "b"], ["ab"]),
             helper.make_node("Add", ["ab", "c"], ["abc"]),
             helper.make_node("Relu", ["abc"], ["output"])], "linear",
            [helper.make_tensor_value_info("a", dtype, [batch, m, k]),
             helper.make_tensor_value_info("b", dtype, [k, n]),
             helper.make_tensor_value_info("c", dtype, [n])],
            [helper.make_tensor_value_info("output", dtype, [batch, m, n])])
    batched = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["output"])], "batched",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT16, [4, 256, 320]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT16, [4, 320, 384])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT16, [4, 256, 384])])
    def tile(dtype, k):
        """One 128x128 block, one k step: the wgmma layouts without the pipeline."""
        return helper.make_graph(
            [helper.make_node("MatMul", ["a", "b"], ["output"])], "tile",
            [helper.make_tensor_value_info("a", dtype, [128, k]),
             helper.make_tensor_value_info("b", dtype, [k, 128])],
            [helper.make_tensor_value_info("output", dtype, [128, 128])])
    side = 8 * 1024
    transpose = helper.make_graph(
        [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
         helper.make_node("Add", ["t", "y"], ["output"])], "transpose",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [side, side]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [side, side])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [side, side])])
    rows = 64 * 1024
    colsum = helper.make_graph(
        [helper.make_node("Constant", [], ["axes"],
                          value=helper.make_tensor("axes", TensorProto.INT64, [1], [0])),
         helper.make_node("ReduceSum", ["x", "axes"], ["output"], keepdims=0)], "colsum",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, 1024])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1024])])
    out = []
    for name, graph in (("matmul4096", mm), ("matmul4096_f16", matmul(TensorProto.FLOAT16)),
                        ("matmul4096_bf16", matmul(TensorProto.BFLOAT16)),
                        # Shapes for Hopper's wgmma kernel (compiled for sm_90a too).
                        ("matmul_tile_f16", tile(TensorProto.FLOAT16, 64)),
                        ("matmul_tile_f32", tile(TensorProto.FLOAT, 32)),
                        ("matmul_batched_f16", batched),
                        ("matmul_linear_f32", linear(TensorProto.FLOAT, 8, 128, 224, 384)),
                        ("matmul_linear_bf16", linear(TensorProto.BFLOAT16, 2, 256, 192, 256)),
                        # 32 sequences of 77 tokens into a 2304-wide layer:
                        # 2464 rows, tiles overhanging M (timed only: too
                        # big for the emulator's preflight).
                        ("matmul_tokens_bf16", linear(TensorProto.BFLOAT16, 32, 77, 768, 2304)),
                        ("elementwise64M", ew),
                        # x^T + y over 64 Mi floats: the tiled transpose,
                        # bandwidth-bound as the chain is (three 256 MB
                        # streams), timed against copy.
                        ("transpose64M", transpose),
                        # 1024 column sums of 65536 rows (a bias gradient's
                        # shape, large): 256 MB read once.
                        ("colsum64M", colsum)):
        path = os.path.join(folder, f"{name}.onnx")
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.save(model, path)
        out.append((name, path))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--pack", required=True)
    ap.add_argument("--batches", default="1,32")
    args = ap.parse_args()
    folder = os.path.join(args.pack, "models")
    os.makedirs(folder, exist_ok=True)
    entries = []
    # The kernel-level models first (a run out of time loses examples, not
    # these). Matmuls also for Hopper (sm_90a: warpgroup MMA), as <name>_sm90a.so
    # from the same ONNX file; the 4096^3 ones also with 128-wide tiles
    # (<name>_sm90a_n128), to measure the tile widths against each other, and
    # with the shared ring instead of the warp-specialized kernel
    # (<name>_sm90a_ring: --gpu-loads=ring). The attention models at batch 32
    # are also compiled for Hopper (<stem>_sm90a), to see the kernels in a
    # model.
    # The 4096^3 ones for sm_80 (mma.sync) also with another k step and ring
    # depth (<name>__k32s4: --gpu-mma=32x4 for tf32; __k64s3 for 16-bit
    # data), to measure them against the default (k 16 for tf32, 32 for
    # f16/bf16; 3 stages).
    hopper = {}  # stem -> (ONNX stem, kiln compile flags)
    mma = {}  # stem -> (ONNX stem, --gpu-mma)
    for name, _ in kernel_models(folder):
        entries.append((name, "-", 0, "f32"))
        if name.startswith("matmul4096"):
            k_stages = "64x3" if ("f16" in name or "bf16" in name) else "32x4"
            stem = f"{name}__k{k_stages.replace('x', 's')}"
            mma[stem] = (name, k_stages)
            entries.append((stem, "-", 0, "f32"))
        if name.startswith("matmul"):
            # With TMA loads too (<name>_sm90a_tma: --gpu-loads=tma), the
            # small ones checking the maps and the swizzle on the GPU; and
            # in clusters of two sharing B by multicast (<name>_sm90a_tma_c2:
            # --gpu-cluster=2, where the M tiles pair up).
            variants = [("_sm90a", []), ("_sm90a_tma", ["--gpu-loads=tma"]),
                        ("_sm90a_tma_c2", ["--gpu-loads=tma", "--gpu-cluster=2"])]
            if "4096" in name:
                variants += [("_sm90a_n128", ["--gpu-tile-n=128"]),
                             ("_sm90a_ring", ["--gpu-loads=ring"])]
            if name == "matmul4096":
                # f32 with each k tile's wgmmas completed before the next
                # tile's fragments load (no group in flight), against the
                # default that keeps one in flight.
                variants += [("_sm90a_drain", ["--gpu-tf32-drain"])]
            for suffix, flags in variants:
                hopper[name + suffix] = (name, flags)
                entries.append((name + suffix, "-", 0, "f32"))
    for name in MODELS:
        for batch in [int(b) for b in args.batches.split(",")]:
            stem = f"{name}_b{batch}"
            onnx_path = os.path.join(folder, stem + ".onnx")
            export(name, batch, onnx_path)
            entries.append((stem, name, batch, "f32"))
            if batch == 32 and name in HOPPER_MODELS:
                hopper[stem + "_sm90a"] = (stem, [])
                entries.append((stem + "_sm90a", name, batch, "f32"))
    # Half-precision forms: f16 tensor cores end to end.
    for name in HALF_MODELS:
        stem = f"{name}_f16_b32"
        export(name, 32, os.path.join(folder, stem + ".onnx"), "f16")
        entries.append((stem, name, 32, "f16"))
        if name in HOPPER_MODELS:
            hopper[stem + "_sm90a"] = (stem, [])
            entries.append((stem + "_sm90a", name, 32, "f16"))
    for stem, _, _, _ in entries:
        flags = []
        onnx_stem = stem
        if stem in hopper:
            onnx_stem, extra = hopper[stem]
            flags = ["--gpu-arch=sm_90a"] + extra
        if stem in mma:
            onnx_stem, k_stages = mma[stem]
            flags = [f"--gpu-mma={k_stages}"]
        onnx_path = os.path.join(folder, onnx_stem + ".onnx")
        so = os.path.join(folder, stem + ".so")
        subprocess.run([args.kiln, "compile", onnx_path, "--target=cuda", "-o", so] + flags,
                       check=True)
        print(f"compiled {so} ({os.path.getsize(so)} bytes)", flush=True)
    with open(os.path.join(folder, "manifest.txt"), "w") as f:
        for stem, name, batch, dtype in entries:
            f.write(f"{stem} {name} {batch} {dtype}\n")
    pack_training(args.kiln, os.path.join(args.pack, "train"))


def pack_training(kiln, folder):
    """Training steps of two examples (SGD with momentum, Adam), each compiled
    for the CPU and for CUDA, with one fixed batch: the GPU side runs both
    from the same initial parameters and compares the losses."""
    import numpy as np
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(20261130)
    runs = [("mlp", "cross_entropy", "sgd", ["--momentum=0.9", "--lr=0.05"]),
            ("transformer", "mse", "adam", ["--lr=0.001"])]
    with open(os.path.join(folder, "manifest.txt"), "w") as f:
        for name, loss, opt, extra in runs:
            onnx_path = os.path.join(ROOT, "examples", name, "model.onnx")
            x = np.load(os.path.join(ROOT, "examples", name, "input.npy"))
            y = np.load(os.path.join(ROOT, "examples", name, "expected_output.npy"))
            np.save(os.path.join(folder, f"{name}_input.npy"), x)
            if loss == "cross_entropy":
                label = rng.integers(0, y.shape[1], size=y.shape[0]).astype(np.int64)
            else:
                label = rng.standard_normal(y.shape).astype(np.float32)
            np.save(os.path.join(folder, f"{name}_label.npy"), label)
            for target in ("cpu", "cuda"):
                so = os.path.join(folder, f"{name}_{target}.so")
                subprocess.run([kiln, "compile", onnx_path, "--train", f"--loss={loss}",
                                f"--optimizer={opt}", f"--target={target}", "-o", so] + extra,
                               check=True)
            f.write(f"{name}\n")


if __name__ == "__main__":
    main()

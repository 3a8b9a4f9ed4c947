#!/usr/bin/env python3
"""scripts/gpu-check.sh run, the models (GPU machine: CUDA, PyTorch,
onnxruntime, no MLIR). For each artifact of PACK/models/manifest.txt:
  correctness  Kiln's output (kiln-gpu-check run) against onnxruntime's CPU
               provider on the same ONNX file and inputs: ||got-ref|| / ||ref||
  speed        kiln-gpu-check bench (median; a run copies inputs in and
               outputs out), PyTorch eager and torch.compile on the GPU with
               the inputs already there (CUDA events, warm-up, median)
and, as ceilings, the device-to-device copy bandwidth and cuBLAS's f32 (tf32)
4096^3 GEMM. Prints one table; ratios > 1 mean Kiln is faster.

  python3 test/gpu/bench_gpu.py --pack .gpu-pack --tool .gpu-pack/bin/kiln-gpu-check
"""
import argparse, os, re, statistics, subprocess, sys, tempfile, time

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from run_cpu import load_example  # noqa: E402  (one copy of the helper)


def cuda_ms(fn, warmup=20, runs=100):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def onnx_inputs(path, seed, example=None, batch=0):
    """The example's own inputs (token ids for a language model) when there
    is one, else standard normal data of each input's shape and dtype."""
    import onnx
    model = onnx.load(path, load_external_data=False)
    init = {i.name for i in model.graph.initializer}
    names = [vi.name for vi in model.graph.input if vi.name not in init]
    if example is not None:
        torch.manual_seed(seed)
        return {n: t.numpy() for n, t in zip(names, example.make_input(batch))}
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in model.graph.input:
        if vi.name in init:
            continue
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        x = rng.standard_normal(shape).astype(np.float32)
        elem = vi.type.tensor_type.elem_type
        if elem == onnx.TensorProto.FLOAT16:
            x = x.astype(np.float16)
        elif elem == onnx.TensorProto.BFLOAT16:
            x = to_bf16(x)
        feeds[vi.name] = x
    return feeds


def to_bf16(x):
    """f32 -> bf16 (round to nearest even) as numpy's 2-byte void, the .npy
    form Kiln reads and writes for bf16."""
    u = x.astype(np.float32).view(np.uint32)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return u.view("V2")


def as_f32(x):
    if x.dtype.kind == "V" and x.dtype.itemsize == 2:  # bf16
        return (x.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    return x.astype(np.float32)


def run_tool(cmd, seconds=60):
    """The GPU tool under a time limit: a hanging kernel (a wrong barrier in
    a new kernel) costs its row, not the rest of the table."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=seconds)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(cmd, 124, "", f"timed out after {seconds} s")


def rel_err(got, ref):
    got, ref = as_f32(got).astype(np.float64), as_f32(ref).astype(np.float64)
    if not np.all(np.isfinite(got)):
        return float("inf")
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pack", required=True)
    ap.add_argument("--tool", required=True)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--compile-budget", type=float, default=120,
                    help="seconds of torch.compile in all; later models skip it")
    ap.add_argument("--no-torch", action="store_true",
                    help="correctness and Kiln's times only (no eager, no torch.compile)")
    args = ap.parse_args()
    import onnxruntime as ort
    folder = os.path.join(args.pack, "models")
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = True
    print(f"device: {torch.cuda.get_device_name()}", flush=True)
    x = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
    y = torch.empty_like(x)
    copy_ms = cuda_ms(lambda: y.copy_(x), 5, 20)
    bw = 2 * x.numel() / copy_ms / 1e6  # GB/s, bytes read + written
    del x, y
    a = torch.randn(4096, 4096, device=dev)
    b = torch.randn(4096, 4096, device=dev)
    gemm_ms = cuda_ms(lambda: a @ b, 5, 20)
    half_ms = {}
    for name, dtype in (("f16", torch.float16), ("bf16", torch.bfloat16)):
        ah, bh = a.to(dtype), b.to(dtype)
        half_ms[name] = cuda_ms(lambda: ah @ bh, 5, 20)
    tflops = lambda ms: 2 * 4096**3 / ms / 1e9
    print(f"ceilings: copy {bw:.0f} GB/s; cuBLAS 4096^3 tf32 {tflops(gemm_ms):.1f} TFLOP/s "
          f"({gemm_ms:.3f} ms), f16 {tflops(half_ms['f16']):.1f}, "
          f"bf16 {tflops(half_ms['bf16']):.1f}", flush=True)

    rows = []
    shared = {}  # (ONNX file, example, batch, half) -> (feeds, --input flags, reference): the last
    compile_seconds = 0.0
    with open(os.path.join(folder, "manifest.txt")) as f:
        entries = [line.split() for line in f if line.strip()]
    for entry in entries:
        stem, name, batch = entry[:3]
        half = len(entry) > 3 and entry[3] == "f16"
        onnx_path = os.path.join(folder, stem + ".onnx")
        so = os.path.join(folder, stem + ".so")
        if "_sm90a" in stem:  # the same model, compiled for Hopper
            onnx_path = os.path.join(folder, stem[: stem.index("_sm90a")] + ".onnx")
        if "__" in stem:  # the same model, another tiling (--gpu-mma)
            onnx_path = os.path.join(folder, stem[: stem.index("__")] + ".onnx")
        ex = load_example(name) if name != "-" else None
        # The variants of one model (_sm90a, _tma, ...) share its inputs and
        # its reference: drawn, written and computed once.
        key = (onnx_path, name, batch, half)
        if key in shared:
            feeds, flags, ref = shared[key]
        else:
            feeds = onnx_inputs(onnx_path, 20261130, ex, int(batch))
            if half:
                feeds = {k: v.astype(np.float16) if v.dtype == np.float32 else v
                         for k, v in feeds.items()}
            inputs_dir = tempfile.mkdtemp()
            flags = []
            for k, v in feeds.items():
                p = os.path.join(inputs_dir, f"{k}.npy")
                np.save(p, v)
                flags += ["--input", f"{k}={p}"]
            ref = None
        tmp = tempfile.mkdtemp()
        row = {"model": stem}
        r = run_tool([args.tool, "run", so, "--out", tmp] + flags)
        if r.returncode != 0:
            row["error"] = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "failed"
            rows.append(row)
            print(f"{stem}: {row['error']}", flush=True)
            continue
        got = np.load(os.path.join(tmp, "output.npy"))
        if ref is not None:
            pass
        elif half:
            # PyTorch in f32 on the same (rounded) inputs and weights:
            # onnxruntime's CPU provider lacks f16 kernels for some ops.
            with torch.no_grad():
                ref_model = ex.make_model().half().float().eval()
                ref = ref_model(*[torch.from_numpy(v).float() if v.dtype == np.float16
                                  else torch.from_numpy(v) for v in feeds.values()]).numpy()
        elif stem.startswith("matmul"):
            # numpy on the same (rounded) inputs: onnxruntime's CPU provider
            # has no bf16 MatMul.
            ref = as_f32(feeds["a"]) @ as_f32(feeds["b"])
            if "c" in feeds:  # the linear layers: bias and ReLU
                ref = np.maximum(ref + as_f32(feeds["c"]), 0)
        else:
            opts = ort.SessionOptions()
            sess = ort.InferenceSession(onnx_path, opts, providers=["CPUExecutionProvider"])
            ref = sess.run(["output"], feeds)[0]
        shared = {key: (feeds, flags, ref)}  # the variants come in a row: keep one
        row["err"] = rel_err(got, ref)
        runs = args.runs if "4096" not in stem and "64M" not in stem else 10
        out = run_tool([args.tool, "bench", so, "--runs", str(runs)] + flags)
        m = re.search(r"median_ms=([0-9.]+)", out.stdout)
        row["kiln"] = float(m.group(1)) if m else float("nan")
        out = run_tool([args.tool, "bench", so, "--per-kernel", "--runs", "10"] + flags)
        m = re.search(r"kernels: ([0-9.]+) ms", out.stdout)
        row["kernels"] = float(m.group(1)) if m else float("nan")
        if ex is not None and args.no_torch:
            pass
        elif ex is not None and "_sm90a" in stem:
            row["note"] = "sm_90a build: PyTorch as in the row without _sm90a"
        elif ex is not None:
            model = ex.make_model().to(dev).eval()
            if half:
                model = model.half()
            inputs = tuple(torch.from_numpy(v).to(dev) for v in feeds.values())
            # A failure on PyTorch's side costs its columns, not the table.
            try:
                with torch.no_grad():
                    row["eager"] = cuda_ms(lambda: model(*inputs), 20, args.runs)
                    if compile_seconds < args.compile_budget:
                        t0 = time.time()
                        compiled = torch.compile(model)
                        row["compile"] = cuda_ms(lambda: compiled(*inputs), 20, args.runs)
                        compile_seconds += time.time() - t0
                    else:
                        row["note"] = "torch.compile skipped (time budget)"
            except Exception as e:  # noqa: BLE001
                row["note"] = f"PyTorch failed: {str(e).splitlines()[0][:80]}"
        elif stem.startswith("matmul4096"):
            kind = "bf16" if "bf16" in stem else "f16" if "f16" in stem else "tf32"
            row["eager"] = half_ms.get(kind, gemm_ms)
            tf = tflops(row["kernels"])
            row["note"] = (f"kernels {tf:.1f} TFLOP/s = {tf / tflops(row['eager']):.2f} "
                           f"of cuBLAS {kind}; {tflops(row['kiln']):.2f} incl. copies")
        elif stem.startswith("matmul"):
            flops = 2 * feeds["a"].size * feeds["b"].shape[-1]
            row["note"] = f"kernels {flops / row['kernels'] / 1e9:.1f} TFLOP/s"
        else:
            # Bandwidth-bound: every input read once, the output written once.
            moved = sum(v.nbytes for v in feeds.values()) + got.nbytes
            gbs = moved / row["kernels"] / 1e6
            row["note"] = (f"kernels {gbs:.0f} GB/s = {gbs / bw:.2f} of copy; "
                           f"{moved / row['kiln'] / 1e6:.0f} incl. copies")
        rows.append(row)
        print(f"{stem}: {row}", flush=True)

    train_rows = compare_training(args)

    print("\nkiln ms: a run, copies of inputs and outputs (pageable host memory) included;"
          " kernels ms: its kernels alone (CUDA events around each), inputs already on the"
          " device as for eager and compile")
    print("\n| model | rel err vs ORT | kiln ms | kernels ms | eager ms | compile ms |"
          " eager/kernels | compile/kernels | eager/kiln | note |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['model']} | {r['error']} | | | | | | | | |")
            continue
        k = r["kiln"]
        e, c = r.get("eager"), r.get("compile")
        fmt = lambda v: f"{v:.3f}" if v is not None else ""
        ratio = lambda v: f"{v / k:.2f}" if v is not None and k > 0 else ""
        kk = r.get("kernels", float("nan"))
        kratio = lambda v: f"{v / kk:.2f}" if v is not None and kk > 0 else ""
        print(f"| {r['model']} | {r['err']:.1e} | {k:.3f} | {kk:.3f} | {fmt(e)} | {fmt(c)} | "
              f"{kratio(e)} | {kratio(c)} | {ratio(e)} | {r.get('note', '')} |")


    if train_rows:
        print("\n| training step | steps | CPU loss first -> last | CUDA loss first -> last | max rel diff |")
        print("|---|---|---|---|---|")
        for name, steps, cpu, cuda, diff in train_rows:
            print(f"| {name} | {steps} | {cpu[0]:.5f} -> {cpu[-1]:.5f} | "
                  f"{cuda[0]:.5f} -> {cuda[-1]:.5f} | {diff:.1e} |")


def compare_training(args, steps=20):
    """The same training step compiled for the CPU and for CUDA, run from the
    same initial parameters on one fixed batch: their losses should agree
    to tf32's precision."""
    folder = os.path.join(args.pack, "train")
    if not os.path.exists(os.path.join(folder, "manifest.txt")):
        return []
    rows = []
    for name in open(os.path.join(folder, "manifest.txt")).read().split():
        flags = ["--input", f"input={folder}/{name}_input.npy",
                 "--input", f"label={folder}/{name}_label.npy", "--steps", str(steps)]
        losses = {}
        for target in ("cpu", "cuda"):
            r = subprocess.run([args.tool, "train", f"{folder}/{name}_{target}.so"] + flags,
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"train {name} {target}: {r.stderr.strip()}", flush=True)
                break
            losses[target] = [float(v) for v in re.findall(r"loss=([-0-9.eE+naif]+)", r.stdout)]
        if len(losses) != 2:
            continue
        cpu, cuda = losses["cpu"], losses["cuda"]
        diff = max(abs(a - b) / max(abs(a), 1e-12) for a, b in zip(cpu, cuda))
        rows.append((name, steps, cpu, cuda, diff))
        print(f"train {name}: max rel loss diff {diff:.1e}", flush=True)
    return rows


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""scripts/gpu-check.sh, the dynamic shapes (issue 29): ONE CUDA artifact of
a transformer encoder (PyTorch's, 2 layers, d 64, 4 heads, FFN 256,
exported by dynamo with a dynamic batch and sequence) run at several
shapes, against a static artifact per shape and PyTorch eager on the GPU,
its outputs checked against onnxruntime's CPU provider.

  build machine:  python3 test/gpu/dynamic_gpu.py pack --kiln build/bin/kiln --pack .gpu-pack
  GPU machine:    python3 test/gpu/dynamic_gpu.py run --pack .gpu-pack \\
                      --tool .gpu-pack/bin/kiln-gpu-check

pack writes PACK/dynamic/ (about 5 MB: the device tool carries 64 MiB
with the working tree): encoder.onnx, encoder.pt (the weights, for
PyTorch on the GPU machine), dyn.so (--dim batch=1..8 --dim seq=2..256)
and static_BxS.so for the shapes past 1x8. run draws the inputs (seeded)
and prints, per shape, Kiln's dynamic and static medians (kiln-gpu-check bench: a run copies inputs in
and outputs out), PyTorch eager's (CUDA events, inputs on the GPU), the
ratios static/dynamic (goal >= 1/1.15) and eager/dynamic, and the
dynamic artifact's error against onnxruntime (||got - ref|| / ||ref||).
"""
import argparse, os, re, subprocess, sys, tempfile

import numpy as np
import torch

from bench_gpu import cuda_ms, rel_err, run_tool  # noqa: E402  (the models' helpers)

SHAPES = [(1, 8), (2, 64), (4, 128), (8, 256)]
STATIC = SHAPES[1:]  # (1x8's static artifact left out for the pack's size)
D_MODEL = 64


def encoder():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(D_MODEL, 4, 4 * D_MODEL, dropout=0.0, batch_first=True)
    return torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()


def pack(a):
    out = os.path.join(a.pack, "dynamic")
    os.makedirs(out, exist_ok=True)
    model = encoder()
    torch.save(model.state_dict(), os.path.join(out, "encoder.pt"))
    onnx_path = os.path.join(out, "encoder.onnx")
    dims = ({0: torch.export.Dim("batch", min=1, max=8), 1: torch.export.Dim("seq", min=2, max=256)},)
    with torch.no_grad():
        torch.onnx.export(model, (torch.randn(2, 16, D_MODEL),), onnx_path, dynamo=True,
                          verbose=False, dynamic_shapes=dims, external_data=False)
    def compile_so(so, dims):
        cmd = [a.kiln, "compile", onnx_path, "--target=cuda", "--gpu-arch=sm_80", "-o",
               os.path.join(out, so)] + [f for d in dims for f in ("--dim", d)]
        subprocess.run(cmd, check=True)
    compile_so("dyn.so", ["batch=1..8", "seq=2..256"])
    for b, s in STATIC:
        compile_so(f"static_{b}x{s}.so", [f"batch={b}", f"seq={s}"])
    print(f"dynamic_gpu pack: {out}")


def bench_ms(a, so, x, name):
    r = run_tool([a.tool, "bench", so, "--input", f"{name}={x}", "--runs", str(a.runs),
              "--warmup", str(min(a.runs, 10))])
    m = re.search(r"median_ms=([0-9.]+)", r.stdout)
    return float(m.group(1)) if m else float("nan")


def run(a):
    import onnxruntime as ort
    d = os.path.join(a.pack, "dynamic")
    onnx_path = os.path.join(d, "encoder.onnx")
    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    in_name = sess.get_inputs()[0].name
    model = encoder()
    model.load_state_dict(torch.load(os.path.join(d, "encoder.pt")))
    model = model.cuda() if torch.cuda.is_available() else None
    dyn = os.path.join(d, "dyn.so")
    inputs = tempfile.mkdtemp()
    rng = np.random.default_rng(0)
    print(f"{'B x S':>7} {'dyn ms':>9} {'static ms':>9} {'eager ms':>9} "
          f"{'stat/dyn':>8} {'eager/dyn':>9}  err")
    for b, s in SHAPES[:a.shapes]:
        x = os.path.join(inputs, f"x_{b}x{s}.npy")
        np.save(x, rng.standard_normal((b, s, D_MODEL), np.float32))
        with tempfile.TemporaryDirectory() as tmp:
            r = run_tool([a.tool, "run", dyn, "--input", f"{in_name}={x}", "--out", tmp])
            outs = [f for f in os.listdir(tmp) if f.endswith(".npy")]
            ref = sess.run(None, {in_name: np.load(x)})[0]
            if r.returncode or not outs:
                err = float("nan")
                print(r.stderr.strip()[-300:], file=sys.stderr)
            else:
                err = rel_err(np.load(os.path.join(tmp, outs[0])), ref)
        t_dyn = bench_ms(a, dyn, x, in_name)
        static = os.path.join(d, f"static_{b}x{s}.so")
        t_static = bench_ms(a, static, x, in_name) if os.path.exists(static) else float("nan")
        t_eager = float("nan")
        if model is not None:
            xt = torch.from_numpy(np.load(x)).cuda()
            with torch.no_grad():
                t_eager = cuda_ms(lambda: model(xt), warmup=10, runs=a.runs)
        print(f"{b:>3} x {s:<3} {t_dyn:9.3f} {t_static:9.3f} {t_eager:9.3f} "
              f"{t_static / t_dyn:8.2f} {t_eager / t_dyn:9.2f}  {err:.1e}")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack")
    p.add_argument("--kiln", required=True)
    p.add_argument("--pack", required=True)
    r = sub.add_parser("run")
    r.add_argument("--pack", required=True)
    r.add_argument("--tool", required=True)
    r.add_argument("--runs", type=int, default=50)
    r.add_argument("--shapes", type=int, default=len(SHAPES), help="the first N shapes only")
    a = ap.parse_args()
    pack(a) if a.cmd == "pack" else run(a)


if __name__ == "__main__":
    main()

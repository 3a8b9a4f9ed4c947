#!/usr/bin/env python3
"""Kiln's kernels against this machine's ceilings, in ONE run.

Compute-bound kernels (matmuls as linear layers, the matmul kernels of the
example transformer and GPT) are reported in GFLOP/s against this machine's
f32 FMA peak with the same threads (measured by bench/peak_fma.c, compiled
here with cc -march=native: the machines differ, a Zen 4 peaks at about 230
GFLOP/s on 2 cores, a Xeon with two 512-bit FMA units at about 350), and
against PyTorch's own matmul (oneDNN/MKL) on the same shape. Bandwidth-bound kernels
(layer-norm, softmax, GELU over [rows, 1024]) are reported in GB/s of the
distinct bytes they read and write, against a 2-thread copy of the same
bytes (torch's parallel copy_, the memcpy ceiling). The kernel figures
come from `kiln bench --per-kernel` (the artifact's recorded FLOP and byte
counts over CUDA-event-free wall time per kernel).

  python3 bench/run_kernels.py [--threads 2] [--runs 200] [--peak GFLOPS]
"""
import argparse, os, re, statistics, subprocess, sys, tempfile, time

import torch
import torch.nn as nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from run_cpu import export_onnx, load_example, median_ms  # noqa: E402


def kernel_profile(kiln, so, threads, runs):
    """(us/run, GFLOP/s, GB/s, name) per kernel, heaviest first."""
    out = subprocess.run([kiln, "bench", so, "--threads", str(threads), "--runs", str(runs),
                          "--warmup", "20", "--per-kernel"],
                         check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        m = re.match(r"\s+[0-9.]+%\s+([0-9.]+)\s+\d+\s+(\S+)\s+(\S+)\s+(\S+):", line)
        if m:
            f = lambda s: float(s) if s != "-" else float("nan")
            rows.append((float(m.group(1)), f(m.group(2)), f(m.group(3)), m.group(4)))
    return rows


def median_s(fn, warmup=5, runs=30):
    return median_ms(fn, warmup, runs) / 1e3


def measure_peak(threads):
    """GFLOP/s of independent FMA chains on all `threads` (best of 3)."""
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "peak")
        subprocess.run(["cc", "-O2", "-march=native", "-o", exe,
                        os.path.join(ROOT, "bench", "peak_fma.c"), "-lpthread"], check=True)
        return max(float(subprocess.run([exe, str(threads)], check=True, capture_output=True,
                                        text=True).stdout) for _ in range(3))


def compile_model(kiln, model, x, tmp, name):
    onnx_path = os.path.join(tmp, name + ".onnx")
    so = os.path.join(tmp, name + ".so")
    export_onnx(model.eval(), (x,), onnx_path)
    subprocess.run([kiln, "compile", onnx_path, "-o", so], check=True)
    return so


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "bin", "kiln"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--peak", type=float, default=0.0,
                    help="f32 GFLOP/s ceiling (default: measured with bench/peak_fma.c)")
    a = ap.parse_args()
    if not a.peak:
        a.peak = measure_peak(a.threads)
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        # Compute-bound: linear layers (M x K) @ (K x N), and the example
        # transformer's and GPT's matmul kernels.
        for m, k, n in [(256, 512, 512), (64, 1024, 1024), (512, 256, 1024)]:
            lin = nn.Linear(k, n, bias=False)
            x = torch.randn(m, k)
            so = compile_model(a.kiln, lin, x, tmp, f"linear{m}x{k}x{n}")
            us, gflops, _, name = max(kernel_profile(a.kiln, so, a.threads, a.runs))
            w = lin.weight.detach().t().contiguous()
            ref = 2 * m * k * n / median_s(lambda: torch.mm(x, w)) / 1e9
            lines.append((f"linear {m}x{k}x{n}", "GFLOP/s", gflops, a.peak, ref, "torch.mm"))
        for ex in ["transformer", "gpt"]:
            mod = load_example(ex)
            model = mod.make_model()
            x = mod.make_input(8)[0]
            so = compile_model(a.kiln, model, x, tmp, ex)
            prof = kernel_profile(a.kiln, so, a.threads, a.runs)
            heavy = max((r for r in prof if r[1] == r[1] and r[1] > 0), key=lambda r: r[0])
            lines.append((f"{ex} b8 {heavy[3]}", "GFLOP/s", heavy[1], a.peak, float("nan"), ""))

        # Bandwidth-bound: one kernel each over [rows, 1024].
        rows = 4096
        x = torch.randn(rows, 1024)

        class Gelu(nn.Module):
            def forward(self, t):
                return nn.functional.gelu(t)

        class Softmax(nn.Module):
            def forward(self, t):
                return torch.softmax(t, dim=-1)

        src, dst = torch.randn(rows, 1024), torch.empty(rows, 1024)
        copy_gbs = 2 * src.numel() * 4 / median_s(lambda: dst.copy_(src)) / 1e9
        for name, model in [("layer-norm", nn.LayerNorm(1024)), ("softmax", Softmax()),
                            ("gelu", Gelu())]:
            so = compile_model(a.kiln, model, x, tmp, name)
            us, _, gbs, kname = max(kernel_profile(a.kiln, so, a.threads, a.runs))
            lines.append((f"{name} [{rows}x1024]", "GB/s", gbs, copy_gbs, float("nan"), "copy"))

    print(f"\nthreads={a.threads} runs={a.runs}; ceilings: {a.peak:.0f} GFLOP/s FMA peak, "
          f"copy of 2x16 MiB {copy_gbs:.1f} GB/s")
    print("| kernel | unit | kiln | ceiling | kiln/ceiling | reference | kiln/reference |")
    print("|---|---|---|---|---|---|---|")
    for name, unit, v, ceil, ref, refname in lines:
        refcol = f"{ref:.1f} ({refname})" if ref == ref else "-"
        refratio = f"{v / ref:.2f}" if ref == ref else "-"
        print(f"| {name} | {unit} | {v:.1f} | {ceil:.1f} | {v / ceil:.2f} | {refcol} | {refratio} |")


if __name__ == "__main__":
    main()

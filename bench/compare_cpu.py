#!/usr/bin/env python3
"""Kiln vs onnxruntime on the CPU, side by side in one run, same threads.

Compiles each example with the built `kiln`, times it with `kiln bench`
(median of N runs after warm-up, in-process, no startup), times onnxruntime's
CPU provider the same way, and prints the ratio (>1 means Kiln is faster).
Needs onnxruntime and numpy (scripts/setup.sh --python)."""
import argparse, os, re, statistics, subprocess, sys, tempfile, time

import numpy as np
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def kiln_ms(kiln, model, inputs, threads, iters):
    with tempfile.TemporaryDirectory() as tmp:
        so = os.path.join(tmp, "model.so")
        subprocess.run([kiln, "compile", model, "-o", so], check=True)
        args = [kiln, "bench", so, "--threads", str(threads), "--runs", str(iters)]
        for name, path in inputs.items():
            args += ["--input", f"{name}={path}"]
        out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
        return float(re.search(r"median_ms=([0-9.]+)", out.strip().splitlines()[-1]).group(1))


def ort_ms(model, inputs, threads, iters):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    feed = {n: np.load(p) for n, p in inputs.items()}
    for _ in range(10):
        sess.run(None, feed)
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        sess.run(None, feed)
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "bin", "kiln"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--iterations", type=int, default=200)
    a = ap.parse_args()
    print(f"threads={a.threads}  (median ms; ratio = onnxruntime / kiln, >1: kiln faster)")
    print(f"{'model':<14}{'kiln':>10}{'onnxruntime':>13}{'ratio':>8}")
    for ex in ("mlp", "cnn", "transformer"):
        d = os.path.join(ROOT, "examples", ex)
        model, inputs = os.path.join(d, "model.onnx"), {"input": os.path.join(d, "input.npy")}
        k = kiln_ms(a.kiln, model, inputs, a.threads, a.iterations)
        o = ort_ms(model, inputs, a.threads, a.iterations)
        print(f"{ex:<14}{k:>10.4f}{o:>13.4f}{o / k:>8.2f}")


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""One training step, Kiln against PyTorch, on the CPU, in ONE run.

For the MLP, the CNN (BatchNorm in training mode) and the transformer block
of examples/ at their committed batch: a full step -- forward, loss,
backward, optimizer update -- timed as
  kiln     `kiln compile --train` + `kiln bench` on the step artifact
  eager    PyTorch: model(x), the loss, backward(), optimizer.step()
  compile  the same step with the model under torch.compile (inductor)
with the same threads, warmed up, median of --runs. Prints the medians and
the ratios (other / kiln: > 1 means Kiln's step is faster).

  python3 bench/run_train.py [--threads 2] [--runs 50] [--optimizer sgd|adam]
"""
import argparse, math, os, subprocess, sys, tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_cpu import load_example, median_ms  # noqa: E402  (one copy of the helpers)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOSS = {"mlp": "cross_entropy", "cnn": "cross_entropy", "transformer": "mse"}


def kiln_ms(kiln, name, optimizer, tmp, threads, warmup, runs):
    so = os.path.join(tmp, f"{name}-train.so")
    subprocess.run([kiln, "compile", os.path.join(ROOT, "examples", name, "model.onnx"), "--train",
                    f"--loss={LOSS[name]}", f"--optimizer={optimizer}", "--lr=0.01", "-o", so],
                   check=True)
    # Random inputs for everything (parameters too): the step's cost does not
    # depend on the values; labels get zeros, a valid class.
    out = subprocess.run([kiln, "bench", so, "--threads", str(threads), "--warmup", str(warmup),
                          "--runs", str(runs)], check=True, capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1].split()[0].split("=")[1])


def torch_step(name, optimizer, compiled):
    ex = load_example(name)
    model = ex.make_model().train()
    x = torch.from_numpy(np.load(os.path.join(ROOT, "examples", name, "input.npy")))
    out = model(x)
    if LOSS[name] == "cross_entropy":
        label = torch.zeros(out.shape[0], dtype=torch.long)
        loss_fn = torch.nn.functional.cross_entropy
    else:
        label = torch.zeros_like(out)
        loss_fn = torch.nn.functional.mse_loss
    opt = (torch.optim.SGD if optimizer == "sgd" else torch.optim.Adam)(model.parameters(), lr=0.01)
    fwd = torch.compile(model) if compiled else model

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(fwd(x), label).backward()
        opt.step()
    return step


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--optimizer", default="sgd", choices=["sgd", "adam"])
    ap.add_argument("--models", default="mlp,cnn,transformer")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "bin", "kiln"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            k = kiln_ms(args.kiln, name, args.optimizer, tmp, args.threads, args.warmup, args.runs)
            e = median_ms(torch_step(name, args.optimizer, False), args.warmup, args.runs)
            c = (float("nan") if args.no_compile else
                 median_ms(torch_step(name, args.optimizer, True), args.warmup, args.runs))
            rows.append((name, k, e, c))
            print(f"{name}: kiln {k:.3f} ms, eager {e:.3f} ms, compile {c:.3f} ms", flush=True)
    print(f"\none {args.optimizer} training step, {args.threads} threads, median of {args.runs} (ms)")
    print(f"{'model':<12} {'kiln':>9} {'eager':>9} {'compile':>9} {'eager/kiln':>11} {'compile/kiln':>13}")
    for name, k, e, c in rows:
        print(f"{name:<12} {k:9.3f} {e:9.3f} {c:9.3f} {e / k:11.2f} {c / k:13.2f}")
    geo = lambda xs: math.exp(sum(math.log(v) for v in xs) / len(xs))
    print(f"{'geomean':<12} {'':>9} {'':>9} {'':>9} {geo([e / k for _, k, e, _ in rows]):11.2f} "
          f"{geo([c / k for _, k, _, c in rows]):13.2f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Data-parallel training on the CPU, Kiln against PyTorch DDP, in ONE run.

A model is trained with Adam on a global batch that N ranks share (each
its contiguous 1/N of the rows), for N in --ranks:
  kiln       `kiln compile --train --distributed` once, then
             `mpirun -np N kiln train --distributed --threads T` (OpenMPI):
             gradients reduced in buckets while the backward pass goes on
  kiln-sync  the same with KILN_ALLREDUCE_ASYNC=0: each gradient reduced
             when computed, on the step's thread
  ddp        torch.nn.parallel.DistributedDataParallel over gloo, N processes
with T = max(1, --threads / N) compute threads per rank, so every row uses
the machine's --threads cores (N > cores oversubscribes them). A step's
time is the difference of two runs (--steps and 5 steps) over the steps
between, so start-up (MPI, loading, compiling) is left out. Prints ms per
step, samples per second and the speedup over one rank, per engine.

Models (random weights; exported by the dynamo exporter, dynamic batch):
  mlp          1024 -> 4096 -> 1024, ReLU, cross-entropy over 1024 classes
  transformer  examples/transformer's block widened to 256 (4 heads), 64
               tokens, mse

  python3 bench/run_distributed.py [--models mlp,transformer] [--ranks 1,2,4]
                                   [--batch 32] [--steps 25] [--threads 2]
"""
import argparse, os, subprocess, sys, tempfile, time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_cpu import ROOT, load_example  # noqa: E402

MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(1024, 4096), torch.nn.Linear(4096, 1024)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


def make(name, batch):
    """(model, input, label, kiln loss) with fixed seeds."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    if name == "mlp":
        x = rng.standard_normal((batch, 1024)).astype(np.float32)
        return Mlp(), x, rng.integers(0, 1024, batch).astype(np.int64), "cross_entropy"
    block = load_example("transformer").Block(dim=256, heads=4)
    x = rng.standard_normal((batch, 64, 256)).astype(np.float32)
    return block, x, rng.standard_normal((batch, 64, 256)).astype(np.float32), "mse"


def kiln_step_ms(kiln, so, x, y, ranks, threads, steps, tmp, overlap=True):
    xf, yf = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
    np.save(xf, x), np.save(yf, y)

    def run(n):
        cmd = ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none",
               "-x", f"KILN_ALLREDUCE_ASYNC={int(overlap)}", kiln, "train",
               so, "--distributed", "--threads", str(threads), "--input", f"input={xf}",
               "--label", yf, "--steps", str(n)]
        t = time.perf_counter()
        subprocess.run(cmd, check=True, env=MPI_ENV, stdout=subprocess.DEVNULL)
        return time.perf_counter() - t

    run(2)  # page cache warm
    return (run(steps) - run(5)) * 1000 / (steps - 5)


DDP_WORKER = r'''
import os, sys, time, torch, numpy as np
import torch.distributed as dist
sys.path.insert(0, sys.argv[1])
from run_distributed import make
name, batch, steps, threads = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
dist.init_process_group("gloo")
rank, size = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(threads)
model, x, y, loss = make(name, batch)
rows = batch // size
x = torch.from_numpy(x[rank * rows:(rank + 1) * rows])
y = torch.from_numpy(y[rank * rows:(rank + 1) * rows])
ddp = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.Adam(ddp.parameters(), lr=1e-3)
fn = torch.nn.functional.cross_entropy if loss == "cross_entropy" else torch.nn.functional.mse_loss
def step():
    opt.zero_grad()
    fn(ddp(x), y).backward()
    opt.step()
for _ in range(5):
    step()
dist.barrier()
t = time.perf_counter()
for _ in range(steps - 5):
    step()
dist.barrier()
if rank == 0:
    print((time.perf_counter() - t) * 1000 / (steps - 5))
dist.destroy_process_group()
'''


def ddp_step_ms(name, batch, ranks, threads, steps, tmp):
    worker = os.path.join(tmp, "ddp_worker.py")
    with open(worker, "w") as f:
        f.write(DDP_WORKER)
    out = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(ranks),
         "--master-port", "29517", worker, os.path.dirname(os.path.abspath(__file__)), name,
         str(batch), str(steps), str(threads)],
        check=True, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
    return float(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="mlp,transformer")
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=25)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "bin", "kiln"))
    args = ap.parse_args()
    ranks = [int(r) for r in args.ranks.split(",")]
    print(f"global batch {args.batch}, {args.threads} cores, Adam; ms per step "
          f"(samples/s, speedup over 1 rank)")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            model, x, y, loss = make(name, args.batch)
            onnx = os.path.join(tmp, f"{name}.onnx")
            batch = torch.export.Dim("batch", min=1, max=4096)
            torch.onnx.export(model.eval(), (torch.from_numpy(x[:2]),), onnx, dynamo=True,
                              input_names=["input"], dynamic_shapes=({0: batch},),
                              external_data=False)
            so = os.path.join(tmp, f"{name}.so")
            subprocess.run([args.kiln, "compile", onnx, "--train", f"--loss={loss}",
                            "--optimizer=adam", "--lr=1e-3", "--distributed", "-o", so], check=True)
            base = {}
            for n in ranks:
                threads = max(1, args.threads // n)
                row = [f"{name:11s} ranks={n} threads/rank={threads}"]
                for engine in ("kiln", "kiln-sync", "ddp"):
                    if engine == "ddp":
                        ms = ddp_step_ms(name, args.batch, n, threads, args.steps, tmp)
                    else:
                        ms = kiln_step_ms(args.kiln, so, x, y, n, threads, args.steps, tmp,
                                          overlap=engine == "kiln")
                    base.setdefault(engine, ms)
                    row.append(f"{engine} {ms:7.1f} ms ({args.batch * 1000 / ms:5.0f}/s, "
                               f"{base[engine] / ms:4.2f}x)")
                print("  ".join(row), flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""One Kiln artifact for many shapes against static artifacts and
onnxruntime, on the CPU, in ONE run (issue 29's measure).

Each model is exported by torch.onnx.export(dynamo=True) with dynamic axes
(`dynamic_shapes`), then compiled twice over: once with no `--shape` (one
artifact serving every shape) and once per shape with `--dim` pinning it (a
static artifact for exactly that shape). Per shape it prints the dynamic
artifact's median, the static artifact's, onnxruntime's on the same
dynamic file, the ratios dynamic/static (the goal: <= 1.15) and ort/dynamic
(> 1: Kiln faster), and the dynamic artifact's largest error against
onnxruntime over its largest value.

Models (torchvision / small MLP / transformers from a Config; random
weights, nothing downloaded):
  resnet50   dynamic batch, 224x224 images (sizes: 1,3,8,16)
  resnet18, mobilenet_v2, mobilenet_v3_large, efficientnet_b0   likewise
  mlp        768 -> 3072 -> 768 with ReLU, dynamic rows
  bert       transformers.BertModel (hidden 256, 4 layers, 4 heads, FFN
             1024), input_ids with dynamic batch and sequence (sizes
             BxS: 1x8,2x64,4x128,8x256)

  pip install -r bench/requirements.txt
  python3 bench/run_dynamic.py [--models resnet50,mlp,bert] [--shapes 1,3,8,16]
                               [--threads 2] [--runs 10] [--rounds 4]
"""
import argparse, math, os, subprocess, sys, tempfile, time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_cpu import ROOT, geomean, median_ms  # noqa: E402
from run_models import kiln_bench, ort_session  # noqa: E402


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(768, 3072), torch.nn.Linear(3072, 768)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


class Bert(torch.nn.Module):
    def __init__(self):
        super().__init__()
        import transformers
        cfg = transformers.BertConfig(hidden_size=256, num_hidden_layers=4,
                                      num_attention_heads=4, intermediate_size=1024,
                                      vocab_size=30522, max_position_embeddings=512)
        self.m = transformers.BertModel(cfg, add_pooling_layer=False).eval()

    def forward(self, ids):
        return self.m(input_ids=ids).last_hidden_state


def make(name):
    """The model, its input of a given shape (a tuple of the dynamic axes'
    sizes), the dynamic axes' names, and the default sizes."""
    torch.manual_seed(0)
    if name.startswith(("resnet", "mobilenet", "efficientnet")):
        import torchvision.models as tvm
        model = getattr(tvm, name)(weights=None).eval()
        return model, lambda s: torch.randn(s[0], 3, 224, 224), ["batch"], "1,3,8,16"
    if name == "mlp":
        return Mlp().eval(), lambda s: torch.randn(s[0], 768), ["batch"], "1,3,8,16"
    if name == "bert":
        ids = lambda s: torch.randint(0, 30522, s, generator=torch.Generator().manual_seed(1))
        return Bert().eval(), ids, ["batch", "seq"], "1x8,2x64,4x128,8x256"
    raise SystemExit(f"unknown model {name}")


def export(model, example, path, axes):
    dims = {i: torch.export.Dim(a, min=2 if a == "seq" else 1, max=512 if a == "seq" else 1024)
            for i, a in enumerate(axes)}
    with torch.no_grad():
        torch.onnx.export(model, (example,), path, dynamo=True, verbose=False,
                          dynamic_shapes=(dims,))


def compile_so(kiln, onnx_path, so, extra=()):
    subprocess.run([kiln, "compile", onnx_path, "-o", so, *extra], check=True,
                   capture_output=True)


def run_model(a, name, tmp):
    model, input_of, axes, default = make(name)
    shapes = [tuple(int(d) for d in s.split("x")) for s in (a.shapes or default).split(",")]
    onnx_path = os.path.join(tmp, f"{name}.onnx")
    export(model, input_of((2, 16)[:len(axes)]), onnx_path, axes)
    dyn = os.path.join(tmp, f"{name}_dyn.so")
    # --bounded: the largest measured size as each symbol's maximum, so the
    # artifact plans its dynamic intermediates in the arena at that size.
    bounds = [arg for i, axis in enumerate(axes)
              for arg in ("--dim", f"{axis}={1 if axis != 'seq' else 2}..{max(s[i] for s in shapes)}")]
    compile_so(a.kiln, onnx_path, dyn, bounds if a.bounded else ())
    sess = ort_session(onnx_path, a.threads)
    in_name = sess.get_inputs()[0].name
    rows = []
    for shape in shapes:
        if len(shape) != len(axes):
            raise SystemExit(f"{name}: sizes {shape} for dynamic axes {axes}")
        n = "x".join(str(d) for d in shape)
        x = input_of(shape).numpy()
        npy = os.path.join(tmp, f"{name}_{n}.npy")
        np.save(npy, x)
        static = os.path.join(tmp, f"{name}_{n}.so")
        pins = [arg for axis, d in zip(axes, shape) for arg in ("--dim", f"{axis}={d}")]
        compile_so(a.kiln, onnx_path, static, pins)
        feeds = {in_name: npy}
        feed = {in_name: x}
        # Interleaved rounds, the median of each one's medians: on a shared
        # machine a slow second (another tenant, the memory a compile just
        # freed) otherwise decides one of the three numbers alone.
        # onnxruntime first, then a pause: its threads spin on after a run
        # and took the cores from what ran right after (the dynamic MLP at
        # batch 1 read 2.1 ms, 0.19 alone).
        # Short shapes measured over a quarter second at least: BERT's 1x8
        # (0.4 ms) in 5 runs read 1.04x and 1.29x static in two runs.
        once = median_ms(lambda: sess.run(None, feed), a.warmup, 3)
        runs = max(a.runs, math.ceil(250 / max(once, 1e-3)))
        warmup = max(a.warmup, runs // 10)
        times = [[], [], []]
        # The artifact measured right after onnxruntime reads slower (BERT
        # at 1x8: 0.385 ms first, 0.35 second, whichever it is), so the
        # two take turns going first.
        for r in range(a.rounds):
            times[2].append(median_ms(lambda: sess.run(None, feed), warmup, runs))
            time.sleep(0.5)
            for i in ((0, 1) if r % 2 == 0 else (1, 0)):
                so = (dyn, static)[i]
                times[i].append(kiln_bench(a.kiln, so, feeds, a.threads, warmup, runs)[0])
        dyn_ms, static_ms, ort_ms = (float(np.median(t)) for t in times)
        out_dir = os.path.join(tmp, "out")
        subprocess.run([a.kiln, "run", dyn, "--input", f"{in_name}={npy}", "--output-dir",
                        out_dir], check=True, capture_output=True)
        want = sess.run(None, feed)[0]
        got = np.load(os.path.join(out_dir, sess.get_outputs()[0].name + ".npy"))
        err = float(np.abs(got.astype(np.float64) - want).max()) / max(float(np.abs(want).max()),
                                                                       1e-30)
        rows.append((n, dyn_ms, static_ms, ort_ms, err))
        print(f"{name:9} {n:>7} {dyn_ms:9.3f} {static_ms:9.3f} {ort_ms:9.3f} "
              f"{dyn_ms / static_ms:8.2f}x {ort_ms / dyn_ms:7.2f}x  {err:.1e}", flush=True)
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--kiln", default=os.path.join(ROOT, "build", "bin", "kiln"))
    p.add_argument("--models", default="resnet50,mlp")
    p.add_argument("--shapes", default=None,
                   help="sizes of the dynamic axes (1,3,8 or, for bert, 1x8,4x128); "
                        "each model's own by default")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--rounds", type=int, default=4,
                   help="interleaved rounds of the three measurements (median of medians)")
    p.add_argument("--bounded", action="store_true",
                   help="compile the dynamic artifact with the measured sizes' maxima (--dim)")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    print(f"{'model':9} {'size':>7} {'dyn ms':>9} {'static ms':>9} {'ort ms':>9} "
          f"{'dyn/stat':>9} {'ort/dyn':>8}  err")
    ratios, speedups = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.models.split(","):
            for n, d, s, o, _ in run_model(a, name, tmp):
                ratios.append(d / s)
                speedups.append(o / d)
    print(f"geomean dynamic/static {geomean(ratios):.2f}x (goal <= 1.15), "
          f"onnxruntime/dynamic {geomean(speedups):.2f}x; worst dynamic/static "
          f"{max(ratios):.2f}x")


if __name__ == "__main__":
    main()

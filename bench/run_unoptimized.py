#!/usr/bin/env python3
"""Models exported by torch.onnx.export(dynamo=True, optimize=False) against
onnxruntime on the same file (issue 30's check).

Without the exporter's optimization, graphs keep what the optimizer folds
away: zero biases as Expand(CastLike(0, x), Shape(w)...), torch.split /
chunk / unbind as SplitToSequence + SequenceAt, arange(seq) as a Range in
f32 over Cast(seq). Each model is exported once (vision at batch 1,
transformers with dynamic batch and sequence), compiled with no `--shape`,
run at each listed shape, and its outputs compared with onnxruntime's
(largest error over the largest value).

Models (torchvision / transformers from a Config, random weights):
  resnet18, mobilenet_v2   224x224 images, batch 1
  bert, gpt2               hidden 128, 2 layers, 2 heads; ids at 2x8, 3x11
  chunk                    torch.chunk + arange + zeros_like over [B, S, 16]

With --target cuda each is compiled for the GPU and run on it, or, where
there is none, on the PTX emulator (--cuda-driver, the build's
libkiln_ptx_emu.so by default): tf32 products, so a looser bound (1e-3).

  pip install -r bench/requirements.txt
  python3 bench/run_unoptimized.py [--models resnet18,bert] [--target cuda]
"""
import argparse, os, subprocess, sys, tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_cpu import ROOT  # noqa: E402


class HiddenStates(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(input_ids=ids).last_hidden_state


class Chunk(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(16, 32)

    def forward(self, x):
        a, b = torch.chunk(self.linear(x), 2, dim=-1)
        pos = torch.arange(x.shape[1], dtype=torch.float32)
        return a * torch.sigmoid(b) + pos[None, :, None] + torch.zeros_like(a)


def make(name):
    """(module, example input, dynamic axes or None, inputs to compare at)."""
    torch.manual_seed(0)
    rng = np.random.default_rng(1)
    if name in ("resnet18", "mobilenet_v2"):
        import torchvision
        image = torch.randn(1, 3, 224, 224)
        return getattr(torchvision.models, name)(weights=None).eval(), image, None, [image.numpy()]
    if name in ("bert", "gpt2"):
        from transformers import BertConfig, BertModel, GPT2Config, GPT2Model
        if name == "bert":
            m = BertModel(BertConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=256, attn_implementation="eager"),
                          add_pooling_layer=False)
        else:
            m = GPT2Model(GPT2Config(n_embd=128, n_layer=2, n_head=2, attn_implementation="eager"))
        ids = [rng.integers(0, 1000, s) for s in ((2, 8), (3, 11))]
        return HiddenStates(m.eval()).eval(), torch.tensor(ids[0]), ["batch", "seq"], ids
    if name == "chunk":
        xs = [rng.standard_normal(s).astype(np.float32) for s in ((2, 5, 16), (3, 7, 16))]
        return Chunk().eval(), torch.tensor(xs[0]), ["batch", "seq"], xs
    raise SystemExit(f"unknown model {name}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kiln", default=os.path.join(ROOT, "build", "bin", "kiln"))
    p.add_argument("--models", default="resnet18,mobilenet_v2,bert,gpt2,chunk")
    p.add_argument("--target", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--cuda-driver", default=os.path.join(ROOT, "build", "lib", "libkiln_ptx_emu.so"),
                   help="libcuda to load for --target cuda ('' for the system's)")
    a = p.parse_args()
    env = dict(os.environ)
    if a.target == "cuda" and a.cuda_driver:
        env["KILN_CUDA_DRIVER"] = a.cuda_driver
    bound = 1e-3 if a.target == "cuda" else 1e-4
    import onnxruntime as ort
    failed = False
    print(f"{'model':13} {'shape':>16} {'err':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.models.split(","):
            model, example, axes, inputs = make(name)
            path = os.path.join(tmp, f"{name}.onnx")
            dims = None
            if axes:
                dims = ({i: torch.export.Dim(ax) for i, ax in enumerate(axes)},)
            with torch.no_grad():
                torch.onnx.export(model, (example,), path, dynamo=True, optimize=False,
                                  verbose=False, dynamic_shapes=dims)
            so = os.path.join(tmp, f"{name}.so")
            # CUDA sizes device memory for the largest shapes: give each axis one.
            bounds = [f"--dim={ax}=1..64" for ax in (axes or [])] if a.target == "cuda" else []
            r = subprocess.run([a.kiln, "compile", path, f"--target={a.target}", *bounds, "-o", so],
                               capture_output=True, text=True)
            if r.returncode:
                print(f"{name:13} {'compile':>16} failed: {r.stderr.strip().splitlines()[0]}")
                failed = True
                continue
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            in_name = sess.get_inputs()[0].name
            for x in inputs:
                npy = os.path.join(tmp, "x.npy")
                np.save(npy, x)
                out = os.path.join(tmp, "out")
                subprocess.run([a.kiln, "run", so, "--input", f"{in_name}={npy}", "--output-dir",
                                out], check=True, capture_output=True, env=env)
                want = sess.run(None, {in_name: x})[0]
                got = np.load(os.path.join(out, sess.get_outputs()[0].name + ".npy"))
                err = float(np.abs(got.astype(np.float64) - want).max()) / max(
                    float(np.abs(want).max()), 1e-30)
                failed |= not err < bound
                print(f"{name:13} {'x'.join(map(str, x.shape)):>16} {err:9.1e}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Finds the first wrong node of a model on the GPU, for scripts/gpu-check.sh.

pack (build machine): for each node of MODEL.onnx that computes a value, a
copy of the model whose one output is that node's output, compiled with
`kiln compile --target=cuda` (Kiln drops the nodes the output does not
need). Writes PACK/cuts/<stem>_<k>.{onnx,so} and PACK/cuts/manifest.txt.

run (GPU machine): runs each cut on the GPU and onnxruntime's CPU provider on
the same inputs and prints ||got-ref||/||ref|| per node, in graph order: the
first large one names the node whose kernel is wrong.

  python3 test/gpu/cuts.py pack --kiln build/bin/kiln --pack .gpu-pack MODEL.onnx...
  python3 test/gpu/cuts.py run --pack .gpu-pack --tool .gpu-pack/bin/kiln-gpu-check
"""
import argparse, glob, os, subprocess, sys, tempfile

import numpy as np
import onnx

SKIP = {"Constant", "Identity", "Shape", "Cast"}


def pack(args):
    folder = os.path.join(args.pack, "cuts")
    os.makedirs(folder, exist_ok=True)
    lines = []
    for path in args.models:
        stem = os.path.splitext(os.path.basename(path))[0]
        model = onnx.shape_inference.infer_shapes(onnx.load(path))
        infos = {vi.name: vi for vi in list(model.graph.value_info) + list(model.graph.output)}
        for k, node in enumerate(model.graph.node):
            if node.op_type in SKIP or not node.output or node.output[0] not in infos:
                continue
            cut = onnx.ModelProto()
            cut.CopyFrom(model)
            del cut.graph.output[:]
            cut.graph.output.append(infos[node.output[0]])
            name = f"{stem}_{k:03d}"
            onnx_path = os.path.join(folder, name + ".onnx")
            onnx.save(cut, onnx_path)
            so = os.path.join(folder, name + ".so")
            r = subprocess.run([args.kiln, "compile", onnx_path, "--target=cuda", "-o", so],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{name}: kiln compile failed: {r.stderr.strip()[:200]}", flush=True)
                continue
            lines.append(f"{name} {node.op_type} {node.name or '-'}")
    with open(os.path.join(folder, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"cuts: {len(lines)} models in {folder}")


def run(args):
    import onnxruntime as ort
    folder = os.path.join(args.pack, "cuts")
    rng = np.random.default_rng(20261130)
    feeds_by_model = {}
    for line in open(os.path.join(folder, "manifest.txt")).read().split("\n"):
        if not line.strip():
            continue
        name, op, node = line.split()
        stem = name.rsplit("_", 1)[0]
        onnx_path = os.path.join(folder, name + ".onnx")
        model = onnx.load(onnx_path)
        init = {i.name for i in model.graph.initializer}
        if stem not in feeds_by_model:
            feeds = {}
            for vi in model.graph.input:
                if vi.name in init:
                    continue
                shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
                if vi.type.tensor_type.elem_type == onnx.TensorProto.INT64:
                    feeds[vi.name] = rng.integers(0, 64, size=shape).astype(np.int64)
                else:
                    feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
            feeds_by_model[stem] = feeds
        feeds = feeds_by_model[stem]
        tmp = tempfile.mkdtemp()
        flags = []
        for k, v in feeds.items():
            np.save(os.path.join(tmp, f"{k}.npy"), v)
            flags += ["--input", f"{k}={os.path.join(tmp, k + '.npy')}"]
        out = os.path.join(tmp, "out")
        os.makedirs(out)
        r = subprocess.run([args.tool, "run", os.path.join(folder, name + ".so"), "--out", out]
                           + flags, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{name} {op} {node}: run failed: {r.stderr.strip()[:200]}", flush=True)
            continue
        got = np.load(glob.glob(os.path.join(out, "*.npy"))[0]).astype(np.float64)
        sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
        ref = sess.run(None, feeds)[0].astype(np.float64)
        if got.shape != ref.shape:
            print(f"{name} {op} {node}: shape {got.shape}, expected {ref.shape}", flush=True)
            continue
        err = np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30)
        worst = np.unravel_index(np.argmax(np.abs(got - ref)), ref.shape) if ref.size else ()
        print(f"{name} {op:<20} {node:<40} rel err {err:.1e}  worst at {tuple(int(i) for i in worst)}"
              f" got {got[worst] if ref.size else 0:.4g} ref {ref[worst] if ref.size else 0:.4g}",
              flush=True)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack")
    p.add_argument("--kiln", required=True)
    p.add_argument("--pack", required=True)
    p.add_argument("models", nargs="+")
    r = sub.add_parser("run")
    r.add_argument("--pack", required=True)
    r.add_argument("--tool", required=True)
    args = ap.parse_args()
    pack(args) if args.command == "pack" else run(args)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Greedy generation with a KV cache: Kiln against onnxruntime on the same
ONNX file, in ONE run (issue 29's generation measure).

examples/generate/export.py makes a GPT-style model (dynamo export, dynamic
batch, seq and past axes) of the size asked; Kiln compiles it ONCE (past
0..context-1) and examples/generate's C++ program (kiln-generate) runs the
prefill and then one token a step, each step's present keys and values
becoming the next step's past (after one warm-up generation, for both). onnxruntime runs the same loop on the same
file. Printed: prefill ms, decode ms/step and tokens/s for both, their
ratio, and whether the tokens match.

  python3 bench/run_generate.py [--dim 512 --layers 6 --heads 8 --vocab 8192]
      [--batch 1 --prompt 32 --steps 64] [--threads 2]
"""
import argparse, os, re, subprocess, sys, tempfile, time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "generate"))


def ort_generate(path, prompt, steps, threads):
    """onnxruntime's tokens, prefill ms and mean decode ms per step."""
    import onnxruntime as ort
    from export import greedy  # examples/generate/export.py
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    greedy(sess, prompt, steps)  # warm-up, as kiln-generate --warmup
    tokens, ms = greedy(sess, prompt, steps)
    return tokens, ms[0], float(np.mean(ms[1:]))


def main():
    ap = argparse.ArgumentParser()
    for name, default in (("dim", 512), ("layers", 6), ("heads", 8), ("vocab", 8192),
                          ("context", 256), ("batch", 1), ("prompt", 32), ("steps", 64),
                          ("threads", 2)):
        ap.add_argument(f"--{name}", type=int, default=default)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--unbounded", action="store_true",
                    help="no maxima for batch and seq (dynamic buffers from the allocator)")
    a = ap.parse_args()
    kiln = os.path.join(a.build, "bin", "kiln")
    gen = os.path.join(a.build, "bin", "kiln-generate")
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "gpt.onnx")
        subprocess.run([sys.executable, os.path.join(ROOT, "examples", "generate", "export.py"),
                        "--dim", str(a.dim), "--layers", str(a.layers), "--heads", str(a.heads),
                        "--vocab", str(a.vocab), "--context", str(a.context), "-o", model],
                       check=True, capture_output=True)
        so = os.path.join(tmp, "gpt.so")
        start = time.perf_counter()
        # Positions past + i index a table of `context` rows. With every
        # symbol bounded the intermediates are planned in the arena at their
        # largest (--unbounded: from the allocator at run time).
        bounds = ["--dim", f"past=0..{a.context - 1}"]
        if not a.unbounded:
            bounds += ["--dim", f"batch=1..{a.batch}", "--dim", f"seq=1..{a.context}"]
        subprocess.run([kiln, "compile", model, *bounds, "-o", so], check=True)
        compile_s = time.perf_counter() - start
        prompt = np.random.default_rng(1).integers(0, a.vocab, (a.batch, a.prompt))
        np.save(os.path.join(tmp, "prompt.npy"), prompt.astype(np.int64))
        want, ort_prefill, ort_step = ort_generate(model, prompt.astype(np.int64), a.steps,
                                                   a.threads)
        np.save(os.path.join(tmp, "want.npy"), want)
        out = subprocess.run([gen, so, os.path.join(tmp, "prompt.npy"), str(a.steps),
                              "--threads", str(a.threads), "--warmup", "--output",
                              os.path.join(tmp, "got.npy")],
                             check=True, capture_output=True, text=True).stdout
        m = re.search(r"prefill .*: ([\d.]+) ms; decode \d+ steps: ([\d.]+) ms/step", out)
        kiln_prefill, kiln_step = float(m.group(1)), float(m.group(2))
        got = np.load(os.path.join(tmp, "got.npy"))
        same = int((got == want).all(axis=1).sum())
        print(f"GPT d{a.dim} x{a.layers} layers, {a.heads} heads, vocab {a.vocab}; batch "
              f"{a.batch}, prompt {a.prompt}, {a.steps} tokens, {a.threads} threads; kiln "
              f"compile {compile_s:.1f} s")
        print(f"{'':12} {'prefill ms':>11} {'ms/step':>9} {'tokens/s':>9}")
        for name, pre, step in (("kiln", kiln_prefill, kiln_step),
                                ("onnxruntime", ort_prefill, ort_step)):
            print(f"{name:12} {pre:11.2f} {step:9.3f} {a.batch * 1e3 / step:9.1f}")
        print(f"kiln/onnxruntime tokens/s: {ort_step / kiln_step:.2f}x; prefill "
              f"{ort_prefill / kiln_prefill:.2f}x; sequences matching onnxruntime token for "
              f"token: {same}/{a.batch}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Kiln against what a user would pick instead, on the CPU, in ONE run.

For each example model (MLP, small CNN, transformer block, small GPT,
ResNet-style and MobileNetV2-style nets) at batch 1 and 8: export the
PyTorch module to ONNX at that batch, then time with the same threads
  kiln         `kiln compile` + `kiln bench` (in-process runs, last line parsed)
  onnxruntime  CPU provider, all graph optimizations
  eager        the PyTorch module, torch.no_grad()
  compile      torch.compile (inductor)
each warmed up, then the median of --runs. Prints the medians, the ratios
(other / kiln: > 1 means Kiln is faster) and their geomeans. Besides the
examples, --models takes `resnet50` (ResNet-50, 224x224) and `bert` (one
BERT-base encoder layer, 128 tokens), built here with random weights. With
--resnet50 it also reports `kiln compile` time and peak RSS on ResNet-50.
With --quantize dynamic,qoperator,qdq each model is also quantized by
onnxruntime's tool (static forms calibrated on the input) and the quantized
file timed in Kiln and onnxruntime. --saturate adds Kiln with
--int8-arith=saturate (onnxruntime's arithmetic on AVX2 without VNNI:
vpmaddubsw, pairs of products saturated at 16 bits) and, for onnxruntime
and both Kiln forms, the RMS error of the output against the f32 model's.

  pip install -r bench/requirements.txt     (scripts/setup.sh --python)
  python3 bench/run_cpu.py [--threads 2] [--runs 30] [--models mlp,gpt] [--batches 1,8]
  python3 bench/run_cpu.py --models resnet50,bert --batches 1 --runs 10
"""
import argparse, importlib.util, math, os, re, statistics, subprocess, sys, tempfile, time

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ["mlp", "cnn", "transformer", "gpt", "encoder", "resnet", "mobilenetv2"]


def load_example(name):
    """examples/<name>/export.py as a module: make_model(), make_input(batch)."""
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    spec = importlib.util.spec_from_file_location(f"example_{name}",
                                                  os.path.join(ROOT, "examples", name, "export.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def export_onnx(model, inputs, path, fold_constants=True, grad=False):
    # With grad enabled torch's fused encoder-layer fast path stays off: the
    # exporter has no ONNX form for it.
    with torch.set_grad_enabled(grad):
        torch.onnx.export(model, inputs, path, input_names=["input"], output_names=["output"],
                          opset_version=18, do_constant_folding=fold_constants, dynamo=True,
                          verbose=False)


def median_ms(fn, warmup, runs):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def kiln_ms(kiln, onnx_path, input_npy, tmp, threads, warmup, runs, flags=(), so="model.so"):
    """`kiln compile` (with `flags`) to tmp/`so`, then `kiln bench` it."""
    so = os.path.join(tmp, so)
    subprocess.run([kiln, "compile", onnx_path, "-o", so, *flags], check=True)
    out = subprocess.run([kiln, "bench", so, "--input", f"input={input_npy}", "--threads",
                          str(threads), "--warmup", str(warmup), "--runs", str(runs)],
                         check=True, capture_output=True, text=True).stdout
    last = out.strip().splitlines()[-1]
    return float(re.match(r"median_ms=([0-9.]+) ", last).group(1))


def kiln_output(kiln, so, input_npy, tmp):
    """The model's one output as the artifact tmp/`so` (kiln_ms's) computes it."""
    so, out = os.path.join(tmp, so), os.path.join(tmp, "kiln-out")
    subprocess.run([kiln, "run", so, "--input", f"input={input_npy}", "--output-dir", out],
                   check=True, capture_output=True)
    (name,) = os.listdir(out)
    y = np.load(os.path.join(out, name))
    os.remove(os.path.join(out, name))
    return y


def ort_output(onnx_path, x):
    import onnxruntime as ort
    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    return sess.run(None, {"input": x})[0]


def rms(a, b):
    return float(np.sqrt(np.mean((np.asarray(a, np.float64) - b) ** 2)))


def ort_ms(onnx_path, x, threads, warmup, runs):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(onnx_path, opts, providers=["CPUExecutionProvider"])
    feed = {"input": x}
    return median_ms(lambda: sess.run(None, feed), warmup, runs)


def torch_ms(model, inputs, warmup, runs):
    with torch.no_grad():
        return median_ms(lambda: model(*inputs), warmup, runs)


def quantize(onnx_path, x, fmt, out_path):
    """onnxruntime's quantization tool, as a user would run it: dynamic, or
    static (QOperator or QDQ) calibrated on the input."""
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_dynamic, quantize_static)
    if fmt == "dynamic":
        quantize_dynamic(onnx_path, out_path, weight_type=QuantType.QInt8)
        return

    class OneBatch(CalibrationDataReader):
        def __init__(self):
            self.batches = iter([{"input": x}])

        def get_next(self):
            return next(self.batches, None)

    quantize_static(onnx_path, out_path, OneBatch(),
                    quant_format=QuantFormat.QOperator if fmt == "qoperator" else QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def resnet50_model():
    """A ResNet-50 (bottleneck blocks, [3, 4, 6, 3], 224x224), built here since
    torchvision is not required; batch-norm statistics set away from the
    identity so folding them is exercised."""
    import torch.nn as nn

    class Bottleneck(nn.Module):
        def __init__(self, cin, mid, stride):
            super().__init__()
            cout = mid * 4
            self.body = nn.Sequential(
                nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU(),
                nn.Conv2d(mid, mid, 3, stride, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU(),
                nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))
            self.skip = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                       nn.BatchNorm2d(cout))
                         if stride != 1 or cin != cout else nn.Identity())

        def forward(self, x):
            return torch.relu(self.body(x) + self.skip(x))

    torch.manual_seed(0)
    layers, cin = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                   nn.MaxPool2d(3, 2, 1)], 64
    for mid, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
        for i in range(blocks):
            layers.append(Bottleneck(cin, mid, stride if i == 0 else 1))
            cin = mid * 4
    model = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, 1000))
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.0)
    return model.eval()


def bert_layer_model():
    """One BERT-base encoder layer as torch builds it: 768 wide, 12 heads,
    a 3072-wide GELU feed-forward, 128 tokens."""
    import torch.nn as nn

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0,
                                                    activation="gelu", batch_first=True)

        def forward(self, x):
            return self.layer(x)

    torch.manual_seed(0)
    return Layer().eval()


class Zoo:
    """A model built here rather than under examples/ (weights too big to
    commit): the interface of an example's export.py."""

    def __init__(self, make, shape, export_args=None):
        self.make_model, self.shape, self.EXPORT_ARGS = make, shape, export_args or {}

    def make_input(self, batch):
        return (torch.randn(batch, *self.shape),)


ZOO = {"resnet50": Zoo(resnet50_model, (3, 224, 224)),
       "bert": Zoo(bert_layer_model, (128, 768), {"grad": True})}


def kiln_compile(kiln, onnx_path, so):
    """Compile time (s) and peak RSS (MiB) of one `kiln compile`. The RSS
    comes from GNU time: a child forked from this process (torch loaded)
    would report this process's size as its own peak."""
    timer = ["/usr/bin/time", "-f", "KILN_MAXRSS_KB %M"] if os.path.exists("/usr/bin/time") else []
    t = time.perf_counter()
    proc = subprocess.run(timer + [kiln, "compile", onnx_path, "-o", so], stderr=subprocess.PIPE,
                          text=True)
    seconds = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"kiln compile {onnx_path}: {proc.stderr.strip()[-2000:]}")
    m = re.search(r"KILN_MAXRSS_KB (\d+)", proc.stderr)
    return seconds, int(m.group(1)) / 1024 if m else float("nan")


def resnet50_compile(kiln, tmp):
    """`kiln compile` wall time and peak RSS on the ResNet-50."""
    path = os.path.join(tmp, "resnet50.onnx")
    export_onnx(resnet50_model(), (torch.randn(1, 3, 224, 224),), path)
    return kiln_compile(kiln, path, os.path.join(tmp, "resnet50.so"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "bin", "kiln"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile (slow to build)")
    ap.add_argument("--resnet50", action="store_true", help="also time kiln compile on ResNet-50")
    ap.add_argument("--quantize", default="",
                    help="also each model quantized by onnxruntime's tool: dynamic,qoperator,qdq "
                         "(kiln against onnxruntime on the same quantized file)")
    ap.add_argument("--saturate", action="store_true",
                    help="with --quantize: also kiln --int8-arith=saturate, and each output's "
                         "RMS error against the f32 model's")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    rows, quantized = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.models.split(","):
            ex = ZOO[name] if name in ZOO else load_example(name)
            model = ex.make_model()
            for batch in [int(b) for b in a.batches.split(",")]:
                torch.manual_seed(1)
                inputs = ex.make_input(batch)
                onnx_path = os.path.join(tmp, f"{name}-{batch}.onnx")
                export_onnx(model, inputs, onnx_path,
                            ex.EXPORT_ARGS.get("fold_constants", True),
                            ex.EXPORT_ARGS.get("grad", False))
                x = inputs[0].numpy()
                npy = os.path.join(tmp, "input.npy")
                np.save(npy, x)
                r = {"model": f"{name} b{batch}"}
                r["kiln"] = kiln_ms(a.kiln, onnx_path, npy, tmp, a.threads, a.warmup, a.runs)
                r["ort"] = ort_ms(onnx_path, x, a.threads, a.warmup, a.runs)
                r["eager"] = torch_ms(model, inputs, a.warmup, a.runs)
                if not a.no_compile:
                    compiled = torch.compile(model)
                    r["compile"] = torch_ms(compiled, inputs, a.warmup, a.runs)
                rows.append(r)
                print(f"  {r['model']}: " + ", ".join(f"{k} {v:.3f} ms" for k, v in r.items()
                                                     if k != "model"), flush=True)
                for fmt in [f for f in a.quantize.split(",") if f]:
                    q_path = os.path.join(tmp, f"{name}-{batch}-{fmt}.onnx")
                    quantize(onnx_path, x, fmt, q_path)
                    q = {"model": f"{name} b{batch} {fmt}",
                         "kiln": kiln_ms(a.kiln, q_path, npy, tmp, a.threads, a.warmup, a.runs),
                         "ort": ort_ms(q_path, x, a.threads, a.warmup, a.runs)}
                    if a.saturate:
                        q["sat"] = kiln_ms(a.kiln, q_path, npy, tmp, a.threads, a.warmup, a.runs,
                                           ["--int8-arith=saturate"], "saturate.so")
                        ref = ort_output(onnx_path, x)
                        q["err"] = [rms(ort_output(q_path, x), ref),
                                    rms(kiln_output(a.kiln, "model.so", npy, tmp), ref),
                                    rms(kiln_output(a.kiln, "saturate.so", npy, tmp), ref)]
                    quantized.append(q)
                    print(f"  {q['model']}: kiln {q['kiln']:.3f} ms, ort {q['ort']:.3f} ms" +
                          (f", kiln saturating {q['sat']:.3f} ms" if a.saturate else ""),
                          flush=True)
        others = ["ort", "eager"] + ([] if a.no_compile else ["compile"])
        print(f"\nthreads={a.threads} runs={a.runs}: median ms; ratio = other / kiln (> 1: kiln faster)")
        print(f"| model | kiln | " + " | ".join(others) + " | " +
              " | ".join(f"{o}/kiln" for o in others) + " |")
        print("|---" * (2 + 2 * len(others)) + "|")
        for r in rows:
            print(f"| {r['model']} | {r['kiln']:.3f} | " +
                  " | ".join(f"{r[o]:.3f}" for o in others) + " | " +
                  " | ".join(f"{r[o] / r['kiln']:.2f}" for o in others) + " |")
        print("| geomean | | " + " | " * (len(others) - 1) + " | " +
              " | ".join(f"{geomean([r[o] / r['kiln'] for r in rows]):.2f}" for o in others) + " |")
        if quantized:
            print("\nquantized by onnxruntime's tool: median ms; ratio = ort / kiln (> 1: kiln faster)")
            if not a.saturate:
                print("| model | kiln | ort | ort/kiln |\n|---|---|---|---|")
                for q in quantized:
                    print(f"| {q['model']} | {q['kiln']:.3f} | {q['ort']:.3f} | "
                          f"{q['ort'] / q['kiln']:.2f} |")
                print(f"| geomean | | | {geomean([q['ort'] / q['kiln'] for q in quantized]):.2f} |")
            else:
                print("kiln sat: --int8-arith=saturate; rms: error against the f32 model's output")
                print("| model | kiln | kiln sat | ort | ort/kiln | ort/kiln sat | rms ort | "
                      "rms kiln | rms kiln sat |\n" + "|---" * 9 + "|")
                for q in quantized:
                    print(f"| {q['model']} | {q['kiln']:.3f} | {q['sat']:.3f} | {q['ort']:.3f} | "
                          f"{q['ort'] / q['kiln']:.2f} | {q['ort'] / q['sat']:.2f} | " +
                          " | ".join(f"{e:.2g}" for e in q["err"]) + " |")
                print(f"| geomean | | | | {geomean([q['ort'] / q['kiln'] for q in quantized]):.2f} | "
                      f"{geomean([q['ort'] / q['sat'] for q in quantized]):.2f} | | | |")
        if a.resnet50:
            seconds, mb = resnet50_compile(a.kiln, tmp)
            print(f"\nkiln compile ResNet-50: {seconds:.1f} s, peak RSS {mb:.0f} MiB")


if __name__ == "__main__":
    main()

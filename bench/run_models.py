#!/usr/bin/env python3
"""Kiln on real-size models against onnxruntime, PyTorch eager and
torch.compile, on the CPU, in ONE run.

Models as users get them: torchvision's resnet50, mobilenet_v3_large,
efficientnet_b0, convnext_tiny and vit_b_16, and Hugging Face's BERT-base
and GPT-2 small (built from their configs: random weights, nothing is
downloaded), each exported by torch.onnx.export(dynamo=True) at batch 1
and 8 (224x224 images, 128 tokens). Per model and batch:
  kiln         `kiln compile` (wall time, peak RSS) + `kiln bench`, and
               its outputs against onnxruntime's (largest error over the
               largest value, `err`)
  onnxruntime  CPU provider, all graph optimizations, same threads
  eager        the module under torch.no_grad()
  compile      torch.compile (inductor; --no-compile skips it)
the runs split into --rounds rounds in which the tools take turns (a slow
spell of a shared machine then hits every tool, not one), each tool's time
the median of its rounds' medians; the ratios (other / kiln: > 1 means
Kiln is faster) and their geomeans. --profile adds, for each model, the kernels where Kiln
spends most against onnxruntime's profiler on the same ONNX nodes: Kiln's
kernels and onnxruntime's nodes grouped where they share a node, each group
with both times.

  pip install -r bench/requirements.txt
  python3 bench/run_models.py [--models resnet50,bert] [--batches 1,8] [--runs 20] [--rounds 3]
                              [--no-compile] [--profile]
"""
import argparse, json, os, re, statistics, subprocess, sys, tempfile, time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_cpu import ROOT, geomean, kiln_compile, median_ms  # noqa: E402

VISION = ["resnet50", "mobilenet_v3_large", "efficientnet_b0", "convnext_tiny", "vit_b_16"]
TEXT = ["bert", "gpt2"]
SEQ = 128


class HiddenStates(torch.nn.Module):
    """A transformers model returning its last hidden state (a tensor, not
    a ModelOutput)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids).last_hidden_state


def make_model(name):
    torch.manual_seed(0)
    if name in VISION:
        import torchvision.models as tvm
        model = getattr(tvm, name)(weights=None).eval()
        if name == "vit_b_16":
            # torchvision zero-initializes ViT's head: every logit 0, and an
            # output comparison that cannot fail. Random weights instead.
            with torch.no_grad():
                torch.nn.init.normal_(model.heads.head.weight, std=0.02)
                torch.nn.init.normal_(model.heads.head.bias, std=0.02)
        return model
    from transformers import BertConfig, BertModel, GPT2Config, GPT2Model
    if name == "bert":
        model = BertModel(BertConfig(attn_implementation="eager"), add_pooling_layer=False)
    else:
        model = GPT2Model(GPT2Config(attn_implementation="eager"))
    return HiddenStates(model.eval()).eval()


def make_inputs(name, batch):
    torch.manual_seed(1)
    if name in VISION:
        return (torch.randn(batch, 3, 224, 224),)
    return (torch.randint(0, 1000, (batch, SEQ), dtype=torch.int64),)


def export(model, inputs, path):
    with torch.no_grad():
        torch.onnx.export(model, inputs, path, dynamo=True, verbose=False)


def input_names(path):
    import onnx
    graph = onnx.load(path, load_external_data=False).graph
    inits = {i.name for i in graph.initializer}
    return [i.name for i in graph.input if i.name not in inits]


def kiln_bench(kiln, so, feeds, threads, warmup, runs, per_kernel=False):
    args = [kiln, "bench", so, "--threads", str(threads), "--warmup", str(warmup), "--runs",
            str(runs)]
    for name, npy in feeds.items():
        args += ["--input", f"{name}={npy}"]
    if per_kernel:
        args.append("--per-kernel")
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    median = float(re.search(r"median_ms=([0-9.]+) ", out).group(1))
    return median, out


def max_rel_err(kiln, so, feeds, sess, feed, tmp):
    """Kiln's outputs against onnxruntime's: the largest |kiln - ort| over
    the largest |ort| of each output, the worst output's."""
    out_dir = os.path.join(tmp, "out")
    args = [kiln, "run", so, "--output-dir", out_dir]
    for name, npy in feeds.items():
        args += ["--input", f"{name}={npy}"]
    subprocess.run(args, check=True, capture_output=True)
    worst = 0.0
    for meta, want in zip(sess.get_outputs(), sess.run(None, feed)):
        got = np.load(os.path.join(out_dir, meta.name.replace("/", "_").replace(":", "_") + ".npy"))
        scale = max(float(np.abs(want).max()), 1e-30)
        worst = max(worst, float(np.abs(got.astype(np.float64) - want).max()) / scale)
    return worst


def ort_session(onnx_path, threads, profile=False):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.enable_profiling = profile
    return ort.InferenceSession(onnx_path, opts, providers=["CPUExecutionProvider"])


def kiln_kernels(kiln, so):
    """Kernel name -> the ONNX node names it computes (`kiln inspect`)."""
    out = subprocess.run([kiln, "inspect", so], check=True, capture_output=True, text=True).stdout
    kernels = {}
    for line in out.splitlines():
        m = re.match(r"\s+(\S+?)(?: \([^)]*\))?:\s+(node '.*)$", line)
        if m:
            kernels[m.group(1)] = re.findall(r"node '([^']*)'", m.group(2))
    return kernels


def kiln_kernel_times(bench_out, runs):
    """Kernel name -> us per run, from `kiln bench --per-kernel`."""
    times = {}
    for line in bench_out.splitlines():
        m = re.match(r"\s+[0-9.]+%\s+([0-9.]+)\s+\d+\s+\S+\s+\S+\s+(\S+?):", line)
        if m:
            times[m.group(2)] = float(m.group(1))
    return times


def ort_node_times(sess, onnx_path):
    """ONNX node name -> us per run, from onnxruntime's profiler (every run
    of the profiling session counts). onnxruntime names a node it rewrote
    after an output (`relu_1_nchwc`): that output's producer takes its time;
    a node it fused after the first node and the fusion
    (`node_MatMul_95/MatMulAddFusion`): that node; a node its layout
    transformer rewrote to channels last (`node_Conv_753_quant_token_1`):
    that node; its own reorders stay under their names (unmatched)."""
    import onnx
    graph = onnx.load(onnx_path, load_external_data=False).graph
    producer = {out: n.name for n in graph.node for out in n.output}
    nodes = {n.name for n in graph.node}
    path = sess.end_profiling()
    with open(path) as f:
        events = json.load(f)
    os.remove(path)
    runs = max(1, sum(1 for e in events if e.get("name") == "model_run"))
    times = {}
    for e in events:
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time"):
            continue
        name = e["name"][: -len("_kernel_time")]
        # Exported names may hold "/" themselves (`/layer.0/MatMul`): strip
        # the fusions' "/Fusion" segments one at a time until a name matches.
        head = name
        while head:
            base = head[: -len("_nchwc")] if head.endswith("_nchwc") else head
            base = re.sub(r"_token_\d+$", "", base)
            if head in nodes or base in nodes or base in producer:
                name = head if head in nodes else base if base in nodes else producer[base]
                break
            head = head.rpartition("/")[0]
        times[name] = times.get(name, 0) + e["dur"] / runs
    return times


def profile_groups(kernels, kiln_us, ort_us, top):
    """Kiln's kernels and onnxruntime's nodes grouped by the ONNX nodes they
    share (union-find); the heaviest groups by Kiln's time."""
    parent = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for k, nodes in kernels.items():
        for n in nodes:
            parent[find(("node", n))] = find(("kernel", k))
    names = {n for ns in kernels.values() for n in ns}
    groups, unmatched = {}, 0.0
    for k, us in kiln_us.items():
        g = groups.setdefault(find(("kernel", k)), {"kiln": 0.0, "ort": 0.0, "kernels": []})
        g["kiln"] += us
        g["kernels"].append(k)
    for node, us in ort_us.items():
        match = node if node in names else None
        if match is None:
            unmatched += us
            continue
        root = find(("node", match))
        groups.setdefault(root, {"kiln": 0.0, "ort": 0.0, "kernels": []})["ort"] += us
    rows = sorted(groups.values(), key=lambda g: -g["kiln"])[:top]
    for g in rows:
        nodes = sorted({n for k in g["kernels"] for n in kernels.get(k, [])})
        g["nodes"] = nodes
    return rows, unmatched


def print_profile(label, rows, unmatched, kiln_total, ort_total):
    print(f"\n{label}: kernels per run, kiln {kiln_total / 1000:.2f} ms, onnxruntime "
          f"{ort_total / 1000:.2f} ms ({unmatched / 1000:.2f} ms of it on nodes not matched)")
    print("| kiln us | ort us | ort/kiln | kernels | ONNX nodes |\n|---|---|---|---|---|")
    for g in rows:
        nodes = ", ".join(g["nodes"][:3]) + (f" (+{len(g['nodes']) - 3})" if len(g["nodes"]) > 3
                                              else "")
        ratio = g["ort"] / g["kiln"] if g["kiln"] else float("nan")
        print(f"| {g['kiln']:.0f} | {g['ort']:.0f} | {ratio:.2f} | {len(g['kernels'])} | "
              f"{nodes} |")


def run_one(a, name, model, batch, tmp):
    inputs = make_inputs(name, batch)
    onnx_path = os.path.join(tmp, f"{name}-{batch}.onnx")
    export(model, inputs, onnx_path)
    names = input_names(onnx_path)
    feeds, feed = {}, {}
    for n, x in zip(names, inputs):
        feeds[n] = os.path.join(tmp, f"{name}-{batch}-{n}.npy")
        feed[n] = x.numpy()
        np.save(feeds[n], feed[n])
    r = {"model": f"{name} b{batch}"}
    so = os.path.join(tmp, f"{name}-{batch}.so")
    try:
        r["compile_s"], r["rss_mib"] = kiln_compile(a.kiln, onnx_path, so)
    except (RuntimeError, subprocess.CalledProcessError) as e:
        print(f"  {r['model']}: kiln failed: {e}", flush=True)
        r["kiln"] = None
    sess = ort_session(onnx_path, a.threads)
    compiled = None
    if not a.no_compile:
        compiled = torch.compile(model)
    # The runs in rounds, each tool in turn: on a shared machine a slow
    # spell then hits every tool's round, not one tool's whole run. Each
    # tool's time is the median of its rounds' medians.
    per_round = max(1, a.runs // a.rounds)
    rounds = {k: [] for k in ("kiln", "ort", "eager", "compile")}
    for i in range(a.rounds):
        warm = a.warmup if i == 0 else 1
        if r.get("kiln", 0) is not None:
            try:
                rounds["kiln"].append(
                    kiln_bench(a.kiln, so, feeds, a.threads, a.warmup, per_round)[0])
            except subprocess.CalledProcessError as e:
                print(f"  {r['model']}: kiln failed: {e}", flush=True)
                r["kiln"], rounds["kiln"] = None, []
        rounds["ort"].append(median_ms(lambda: sess.run(None, feed), warm, per_round))
        with torch.no_grad():
            rounds["eager"].append(median_ms(lambda: model(*inputs), warm, per_round))
            if compiled is not None:
                rounds["compile"].append(median_ms(lambda: compiled(*inputs), warm, per_round))
    for k, v in rounds.items():
        if v:
            r[k] = statistics.median(v)
    if r.get("kiln") is not None:
        r["err"] = max_rel_err(a.kiln, so, feeds, sess, feed, tmp)
    print(f"  {r['model']}: " + ", ".join(f"{k} {v:.3f}" for k, v in r.items()
                                         if k != "model" and v is not None), flush=True)
    if a.profile and r["kiln"] is not None:
        _, out = kiln_bench(a.kiln, so, feeds, a.threads, a.warmup, a.runs, per_kernel=True)
        kiln_us = kiln_kernel_times(out, a.runs)
        psess = ort_session(onnx_path, a.threads, profile=True)
        for _ in range(a.warmup):
            psess.run(None, feed)
        for _ in range(a.runs):
            psess.run(None, feed)
        ort_us = ort_node_times(psess, onnx_path)
        rows, unmatched = profile_groups(kiln_kernels(a.kiln, so), kiln_us, ort_us, a.top)
        print_profile(r["model"], rows, unmatched, sum(kiln_us.values()), sum(ort_us.values()))
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "bin", "kiln"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3,
                    help="the runs in this many rounds, the tools taking turns")
    ap.add_argument("--models", default=",".join(VISION + TEXT))
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile (slow to build)")
    ap.add_argument("--profile", action="store_true",
                    help="per kernel group against onnxruntime's profiler")
    ap.add_argument("--top", type=int, default=12, help="groups shown by --profile")
    a = ap.parse_args()
    a.rounds = max(1, a.rounds)
    torch.set_num_threads(a.threads)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.models.split(","):
            model = make_model(name)
            for batch in [int(b) for b in a.batches.split(",")]:
                rows.append(run_one(a, name, model, batch, tmp))
    others = ["ort", "eager"] + ([] if a.no_compile else ["compile"])
    print(f"\nthreads={a.threads} runs={a.runs} in {a.rounds} rounds: median ms; ratio = other / kiln (> 1: kiln "
          "faster); kiln compile s and peak MiB")
    print("| model | kiln | " + " | ".join(others) + " | " +
          " | ".join(f"{o}/kiln" for o in others) + " | compile s | MiB | err |")
    print("|---" * (5 + 2 * len(others)) + "|")
    for r in rows:
        k = r["kiln"]
        cells = [f"{r[o]:.2f}" for o in others]
        cells += [f"{r[o] / k:.2f}" if k else "-" for o in others]
        print(f"| {r['model']} | {k:.2f} | " if k else f"| {r['model']} | failed | ", end="")
        print(" | ".join(cells) + f" | {r.get('compile_s', 0):.1f} | {r.get('rss_mib', 0):.0f} | "
              f"{r.get('err', float('nan')):.1e} |")
    ok = [r for r in rows if r["kiln"]]
    print("| geomean | | " + " | " * (len(others) - 1) + " | " +
          " | ".join(f"{geomean([r[o] / r['kiln'] for r in ok]):.2f}" for o in others) +
          " | | | |")


if __name__ == "__main__":
    main()

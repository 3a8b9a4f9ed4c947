"""A GPT-style language model with a KV cache, exported the way generation
runtimes expect it (the input and output names of Hugging Face's ONNX
exports): input_ids and position_ids [batch, seq], and per layer the past
keys and values [batch, heads, past, head_dim]; outputs logits [batch, seq,
vocab] and the present keys and values [batch, heads, past + seq, head_dim].
One file serves the prefill (past 0) and every decode step (seq 1), with
dynamic batch, seq and past axes (torch.onnx.export(dynamo=True)).

    python3 examples/generate/export.py [--dim 64 --layers 2 --heads 4
        --vocab 256 --context 128] [-o examples/generate/model.onnx]

The committed model.onnx is the default size; bench/run_generate.py makes a
larger one with this script. prompt.npy holds a prompt for the tests, and
expected_tokens.npy what greedy generation from it gives under
onnxruntime."""
import argparse, math, os
import numpy as np
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.hd = heads, dim // heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x, past_k, past_v):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=-1)
        q, k, v = (z.reshape(b, t, self.heads, self.hd).transpose(1, 2) for z in (q, k, v))
        k = torch.cat([past_k, k], dim=2)
        v = torch.cat([past_v, v], dim=2)
        past = past_k.shape[2]
        # Query i sits at position past + i and sees keys 0 .. past + i.
        rows = torch.arange(t, device=x.device).unsqueeze(1) + past
        cols = torch.arange(past + t, device=x.device).unsqueeze(0)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.hd)
        att = att.masked_fill(cols > rows, float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, c))
        return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x)))), k, v


class GPT(nn.Module):
    def __init__(self, vocab, dim, heads, layers, context):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(context, dim)
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, input_ids, position_ids, *past):
        x = self.tok(input_ids) + self.pos(position_ids)
        present = []
        for i, block in enumerate(self.blocks):
            x, k, v = block(x, past[2 * i], past[2 * i + 1])
            present += [k, v]
        return (self.head(self.ln(x)), *present)


def names(layers):
    past = [f"past_key_values.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    present = [f"present.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    return ["input_ids", "position_ids"] + past, ["logits"] + present


def export(args):
    torch.manual_seed(args.seed)
    model = GPT(args.vocab, args.dim, args.heads, args.layers, args.context).eval()
    hd = args.dim // args.heads
    b, t, p = 2, 3, 5  # example sizes: none 0 or 1, so none is specialized
    ids = torch.randint(0, args.vocab, (b, t))
    pos = torch.arange(p, p + t).expand(b, t)
    past = [torch.randn(b, args.heads, p, hd) for _ in range(2 * args.layers)]
    batch, seq, plen = (torch.export.Dim(n, max=m) for n, m in
                        (("batch", 64), ("seq", args.context), ("past", args.context)))
    shapes = {"input_ids": {0: batch, 1: seq}, "position_ids": {0: batch, 1: seq},
              "past": [{0: batch, 2: plen}] * (2 * args.layers)}
    inputs, outputs = names(args.layers)
    with torch.no_grad():
        torch.onnx.export(model, (ids, pos, *past), args.output, input_names=inputs,
                          output_names=outputs, dynamo=True, external_data=False,
                          dynamic_shapes=(shapes["input_ids"], shapes["position_ids"],
                                          tuple(shapes["past"])))
    print(f"wrote {args.output} ({os.path.getsize(args.output)} bytes)")


def greedy(sess, prompt, steps):
    """Greedy generation with an onnxruntime session: the prefill at past 0,
    then one token a step. Returns the tokens [batch, steps] and each
    call's milliseconds."""
    import time
    past_names = [i.name for i in sess.get_inputs()][2:]
    b, t = prompt.shape
    first = sess.get_inputs()[2].shape  # [batch, heads, past, head_dim]
    past = {n: np.zeros((b, first[1], 0, first[3]), np.float32) for n in past_names}
    ids, pos = prompt, np.broadcast_to(np.arange(t), (b, t)).astype(np.int64).copy()
    out, ms = [], []
    for _ in range(steps):
        start = time.perf_counter()
        logits, *present = sess.run(None, {"input_ids": ids, "position_ids": pos, **past})
        ms.append((time.perf_counter() - start) * 1e3)
        ids = logits[:, -1].argmax(-1).astype(np.int64)[:, None]
        out.append(ids)
        past = dict(zip(past_names, present))
        pos = pos[:, -1:] + 1
    return np.concatenate(out, 1), ms


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    for name, default in (("dim", 64), ("layers", 2), ("heads", 4), ("vocab", 256),
                          ("context", 128), ("seed", 0)):
        ap.add_argument(f"--{name}", type=int, default=default)
    ap.add_argument("-o", "--output", default=os.path.join(here, "model.onnx"))
    ap.add_argument("--steps", type=int, default=24)
    args = ap.parse_args()
    export(args)
    if args.output == os.path.join(here, "model.onnx"):
        prompt = np.random.default_rng(1).integers(0, args.vocab, (2, 7)).astype(np.int64)
        np.save(os.path.join(here, "prompt.npy"), prompt)
        import onnxruntime as ort
        sess = ort.InferenceSession(args.output, providers=["CPUExecutionProvider"])
        tokens, _ = greedy(sess, prompt, args.steps)
        np.save(os.path.join(here, "expected_tokens.npy"), tokens)
        print("onnxruntime greedy tokens:", tokens.tolist())

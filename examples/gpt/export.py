"""A small GPT: token embedding (Gather), learned positional parameters,
pre-norm blocks with causal self-attention and a GELU MLP, final LayerNorm
and a linear LM head. Input: int64 token ids [batch, seq]."""
import math, os, sys
import torch
import torch.nn as nn
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from export_util import main


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        hd = c // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=-1)
        q, k, v = (z.reshape(b, t, self.heads, hd).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool, device=x.device), diagonal=1)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, c))
        return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab=256, dim=64, heads=4, layers=3, context=32):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(context, dim) * 0.02)
        self.blocks = nn.Sequential(*[Block(dim, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        t = ids.shape[1]
        x = self.tok(ids) + self.pos[:t]
        return self.head(self.ln(self.blocks(x)))


def make_model():
    """The example model, with the weights the committed export has."""
    torch.manual_seed(0)
    return GPT().eval()


def make_input(batch):
    return (torch.randint(0, 256, (batch, 16)),)


BATCH = 2  # of the committed model.onnx
EXPORT_ARGS = dict()

if __name__ == "__main__":
    main(__file__, make_model, make_input, BATCH, EXPORT_ARGS)

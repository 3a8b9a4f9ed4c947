"""A BERT-style encoder layer as users build it: torch's own
nn.TransformerEncoderLayer (post-norm, ReLU MLP, batch_first), 128 tokens of
width 192 in 3 heads. Its export is nn.MultiheadAttention's: one packed QKV
MatMul unflattened into q, k, v by Gather, the heads split with
Reshape/Transpose around shape arithmetic (Shape, Slice, Mod), seq-first
inside the attention."""
import os, sys
import torch
import torch.nn as nn
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from export_util import main


class Encoder(nn.Module):
    # forward(x) only: the layer's own forward takes masks and is_causal,
    # which the exporter would trace as inputs.
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(192, 3, 768, dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.layer(x)


def make_model():
    """The example model, with the weights the committed export has."""
    torch.manual_seed(0)
    return Encoder().eval()


def make_input(batch):
    return (torch.randn(batch, 128, 192),)


BATCH = 1  # of the committed model.onnx
EXPORT_ARGS = dict()

if __name__ == "__main__":
    main(__file__, make_model, make_input, BATCH, EXPORT_ARGS)

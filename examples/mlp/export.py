"""A 3-layer MLP (Gemm + Relu), exported from PyTorch."""
import os, sys
import torch
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from export_util import main


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(64, 128)
        self.fc2 = torch.nn.Linear(128, 64)
        self.fc3 = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


def make_model():
    """The example model, with the weights the committed export has."""
    torch.manual_seed(0)
    return MLP().eval()


def make_input(batch):
    return (torch.randn(batch, 64),)


BATCH = 4  # of the committed model.onnx
EXPORT_ARGS = dict()

if __name__ == "__main__":
    main(__file__, make_model, make_input, BATCH, EXPORT_ARGS)

"""A small CNN: conv, batch-norm, relu, max-pool, global average pool, linear."""
import os, sys
import torch
import torch.nn as nn
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from export_util import main


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.bn2 = nn.BatchNorm2d(32)
        self.dw = nn.Conv2d(32, 32, 3, padding=1, groups=32)  # depthwise: grouped conv
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = self.pool(x)
        x = torch.relu(self.bn2(self.conv2(x)))
        x = torch.relu(self.dw(x))
        x = nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


def make_model():
    """The example model, with the weights the committed export has."""
    torch.manual_seed(0)
    model = SmallCNN()
    # Non-trivial running statistics, as a trained model would have.
    with torch.no_grad():
        for bn in (model.bn1, model.bn2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.2, 0.2)
    return model.eval()


def make_input(batch):
    return (torch.randn(batch, 3, 32, 32),)


BATCH = 2  # of the committed model.onnx
# Without constant folding the exporter keeps BatchNormalization nodes instead
# of folding them into the convolutions, as an unoptimized export would.
EXPORT_ARGS = dict(fold_constants=False)

if __name__ == "__main__":
    main(__file__, make_model, make_input, BATCH, EXPORT_ARGS)

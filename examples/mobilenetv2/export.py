"""A MobileNetV2-style network: inverted residual blocks (1x1 expand,
depthwise 3x3, 1x1 project) with ReLU6 (exported as Clip) and residual adds."""
import os, sys
import torch
import torch.nn as nn
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from export_util import main, trained_bn_statistics


def conv_bn(cin, cout, k, stride, groups=1, act=True):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout)]
    if act:
        layers.append(nn.ReLU6())
    return nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        self.use_res = stride == 1 and cin == cout
        self.block = nn.Sequential(conv_bn(cin, hidden, 1, 1),
                                   conv_bn(hidden, hidden, 3, stride, groups=hidden),
                                   conv_bn(hidden, cout, 1, 1, act=False))

    def forward(self, x):
        y = self.block(x)
        return x + y if self.use_res else y


class MobileNetV2Small(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            conv_bn(3, 16, 3, 2),
            InvertedResidual(16, 16, 1, 1),
            InvertedResidual(16, 24, 2, 4),
            InvertedResidual(24, 24, 1, 4),
            InvertedResidual(24, 32, 2, 4),
            InvertedResidual(32, 32, 1, 4),
            conv_bn(32, 64, 1, 1))
        self.classifier = nn.Linear(64, classes)

    def forward(self, x):
        x = self.features(x)
        return self.classifier(nn.functional.adaptive_avg_pool2d(x, 1).flatten(1))


def make_model():
    """The example model, with the weights the committed export has."""
    torch.manual_seed(0)
    model = MobileNetV2Small()
    return trained_bn_statistics(model).eval()


def make_input(batch):
    return (torch.randn(batch, 3, 64, 64),)


BATCH = 1  # of the committed model.onnx
EXPORT_ARGS = dict(fold_constants=False)

if __name__ == "__main__":
    main(__file__, make_model, make_input, BATCH, EXPORT_ARGS)

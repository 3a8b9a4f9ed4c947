# Writes lstm-dynamic.onnx: torch.nn.LSTM(16, 32, batch_first) exported by
# the dynamo exporter with a dynamic sequence axis ("seq", 2..256), and
# onnxruntime's outputs at 7 and 23 steps (lstm-dynamic-{x,y}{7,23}.npy).
# Needs torch, onnxscript and onnxruntime (not the tests: they read the
# files this writes).
import numpy as np
import onnxruntime as ort
import torch


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(16, 32, num_layers=1, batch_first=True)

    def forward(self, x):
        return self.lstm(x)[0]


torch.manual_seed(0)
seq = torch.export.Dim("seq", min=2, max=256)
torch.onnx.export(M().eval(), (torch.randn(2, 7, 16),), "lstm-dynamic.onnx", dynamo=True,
                  dynamic_shapes=({1: seq},), input_names=["x"], output_names=["y"],
                  external_data=False)
session = ort.InferenceSession("lstm-dynamic.onnx")
for steps in (7, 23):
    x = np.random.RandomState(steps).randn(2, steps, 16).astype(np.float32)
    np.save("lstm-dynamic-x%d.npy" % steps, x)
    np.save("lstm-dynamic-y%d.npy" % steps, session.run(None, {"x": x})[0])

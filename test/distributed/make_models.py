"""The data-parallel tests' models and data: the MLP and transformer-block
examples (same weights) exported by the dynamo exporter with a dynamic batch,
as users export them, and one global batch of 8 for each (and for the
batch-norm CNN of the lit tests' inputs). Needs torch, onnx
and onnxscript (scripts/setup.sh --python); the tests read the committed
files."""
import importlib.util
import os

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "examples")


def example(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, name, "export.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def export(name, model, x):
    path = os.path.join(HERE, f"{name}.onnx")
    batch = torch.export.Dim("batch", min=1, max=1024)
    torch.onnx.export(model, (x,), path, input_names=["input"], output_names=["output"],
                      dynamic_shapes=({0: batch},), dynamo=True, external_data=False)
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def main():
    rng = np.random.default_rng(20261204)
    mlp = example("mlp").make_model()
    x = rng.standard_normal((8, 64)).astype(np.float32)
    export("mlp", mlp, torch.from_numpy(x[:2]))
    np.save(os.path.join(HERE, "mlp_input.npy"), x)
    np.save(os.path.join(HERE, "mlp_label.npy"), rng.integers(0, 10, 8).astype(np.int64))

    block = example("transformer").make_model()
    x = rng.standard_normal((8, 16, 64)).astype(np.float32)
    export("transformer", block, torch.from_numpy(x[:2]))
    np.save(os.path.join(HERE, "transformer_input.npy"), x)
    np.save(os.path.join(HERE, "transformer_label.npy"),
            rng.standard_normal((8, 16, 64)).astype(np.float32))

    # Data for the batch-norm CNN (test/lit/.../Inputs/cnn-train-dynamic.onnxtxt),
    # trained with --sync-batch-norm.
    np.save(os.path.join(HERE, "cnn_input.npy"), rng.standard_normal((8, 3, 8, 8)).astype(np.float32))
    np.save(os.path.join(HERE, "cnn_label.npy"), rng.standard_normal((8, 3)).astype(np.float32))


if __name__ == "__main__":
    main()

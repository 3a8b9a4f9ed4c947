"""Shared by the examples' export scripts: export a PyTorch module to ONNX the
way users do (torch.onnx.export), and save a fixed input with PyTorch's output
as the expected result. Needs torch, onnx and numpy (scripts/setup.sh --python);
the tests only read the committed files."""
import os
import numpy as np
import torch


def export(module, example, folder, input_names=("input",), output_names=("output",),
           opset=17, fold_constants=True):
    module.eval()
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    with torch.no_grad():
        expected = module(*example)
        # The TorchScript exporter keeps the Shape/Gather/Concat shape arithmetic
        # and the op patterns (Trilu, Where, Split) that real exports contain.
        torch.onnx.export(module, example, path, input_names=list(input_names),
                          output_names=list(output_names), opset_version=opset,
                          do_constant_folding=fold_constants, dynamo=False)
    for name, value in zip(input_names, example):
        np.save(os.path.join(folder, f"{name}.npy"), value.numpy())
    outs = expected if isinstance(expected, (tuple, list)) else (expected,)
    for name, value in zip(output_names, outs):
        np.save(os.path.join(folder, f"expected_{name}.npy"), value.numpy())
    try:  # cross-check the exported file with onnxruntime when it is installed
        import onnxruntime as ort
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = sess.run(None, {n: v.numpy() for n, v in zip(input_names, example)})
        for g, w in zip(got, outs):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-4, atol=1e-5)
        print(f"{path}: onnxruntime matches PyTorch")
    except ImportError:
        pass
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def trained_bn_statistics(model, mean=(-0.2, 0.2), var=(0.5, 1.5)):
    """Non-trivial running statistics in every BatchNorm2d, as a trained
    model would have (a fresh one has mean 0, var 1)."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(*mean)
                m.running_var.uniform_(*var)
    return model


def main(script, make_model, make_input, batch, export_args):
    """What each example's export.py does when run: export the model at the
    committed batch beside the script, or with `--batch N` at batch N into
    batchN/ beside it."""
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=None)
    args = parser.parse_args()
    folder = os.path.dirname(os.path.abspath(script))
    if args.batch is not None:
        batch, folder = args.batch, os.path.join(folder, f"batch{args.batch}")
    export(make_model(), make_input(batch), folder, **export_args)

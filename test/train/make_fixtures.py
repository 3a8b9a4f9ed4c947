"""PyTorch references for Kiln's training tests (test/train/check.sh).

For the MLP, the CNN (BatchNorm in training mode: batch statistics, running
statistics updated) and the transformer block of examples/, with the
committed inputs and a seeded label: the gradients of the loss, and the
parameters (and running statistics) after one SGD step and after one Adam
step, saved as fixtures/<model>/{grads,sgd,adam}/<initializer>.npy
(named by the ONNX initializers: weights the exporter stored transposed are
matched by value and compared transposed). Run from the repository root:
    python3 test/train/make_fixtures.py
"""
import importlib.util, os
import numpy as np
import onnx
from onnx import numpy_helper
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "test", "train", "fixtures")
# model -> (loss, SGD settings, Adam settings); check.sh compiles with the same.
CASES = {
    "mlp": ("cross_entropy", dict(lr=0.1, momentum=0.9, weight_decay=1e-3), dict(lr=1e-2)),
    "cnn": ("cross_entropy", dict(lr=0.05, momentum=0.9, nesterov=True), dict(lr=1e-2, weight_decay=1e-2)),
    "transformer": ("mse", dict(lr=0.1), dict(lr=1e-3)),
}
# Frozen in the Adam step (check.sh passes --freeze): the conv biases right
# before a training-mode BatchNorm have an exactly zero gradient (the batch
# mean removes them), so both sides hold float noise there, which Adam's
# first step turns into +-lr.
ADAM_FROZEN = {"cnn": ["conv1.bias", "conv2.bias"]}


def load_example(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "examples", name, "export.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def initializer_map(model, onnx_path):
    """ONNX initializer name -> (torch parameter, transposed?). The exporter
    shares one initializer between parameters with equal values (the two
    LayerNorms' ones and zeros): those parameters are tied here, so the
    reference trains what the ONNX model holds."""
    named = dict(model.named_parameters())
    out, taken = {}, set()
    for init in onnx.load(onnx_path).graph.initializer:
        value = numpy_helper.to_array(init)
        matches = []
        for pname, p in model.named_parameters(remove_duplicate=False):
            if pname in taken:
                continue
            data = p.detach().numpy()
            if pname == init.name or (data.shape == value.shape and np.array_equal(data, value)):
                matches.append((pname, False))
            elif p.dim() == 2 and data.T.shape == value.shape and np.array_equal(data.T, value):
                matches.append((pname, True))
        if not matches:
            continue
        first, transposed = matches[0]
        for pname, t in matches:
            taken.add(pname)
            if pname != first and t == transposed:
                owner, attr = pname.rsplit(".", 1)
                setattr(model.get_submodule(owner), attr, named[first])
        out[init.name] = (named[first], transposed)
    return out


def save(dirname, tensors):
    os.makedirs(dirname, exist_ok=True)
    for name, t in tensors.items():
        # The file names `kiln train --save-params` writes ('/', '\\', ':' -> '_').
        name = name.replace("/", "_").replace("\\", "_").replace(":", "_")
        np.save(os.path.join(dirname, name + ".npy"), np.ascontiguousarray(t, dtype=np.float32))


def main():
    for name, (loss_name, sgd, adam) in CASES.items():
        ex = load_example(name)
        x = torch.from_numpy(np.load(os.path.join(ROOT, "examples", name, "input.npy")))
        rng = np.random.default_rng(0)
        out_shape = ex.make_model()(x).shape
        if loss_name == "cross_entropy":
            label = rng.integers(0, out_shape[1], size=out_shape[0]).astype(np.int64)
        else:
            label = rng.standard_normal(out_shape).astype(np.float32)
        d = os.path.join(OUT, name)
        os.makedirs(d, exist_ok=True)
        np.save(os.path.join(d, "label.npy"), label)

        def run(optimizer_cls=None, settings=None, frozen=()):
            model = ex.make_model().train()  # BatchNorm: batch statistics, as kiln --train
            mapping = initializer_map(model, os.path.join(ROOT, "examples", name, "model.onnx"))
            out = model(x)
            target = torch.from_numpy(label)
            loss = (torch.nn.functional.cross_entropy(out, target) if loss_name == "cross_entropy"
                    else torch.nn.functional.mse_loss(out, target))
            loss.backward()
            grads = {k: (p.grad.T if t else p.grad).numpy() for k, (p, t) in mapping.items()}
            if optimizer_cls is None:
                return loss.item(), grads
            for k in frozen:
                del mapping[k]
            opt = optimizer_cls([p for p, _ in mapping.values()], **settings)
            opt.step()
            after = {k: (p.detach().T if t else p.detach()).numpy() for k, (p, t) in mapping.items()}
            for k, b in model.named_buffers():  # running statistics, updated by the forward pass
                if k.endswith("running_mean") or k.endswith("running_var"):
                    after[k] = b.numpy()
            return loss.item(), after

        loss, grads = run()
        save(os.path.join(d, "grads"), grads)
        save(os.path.join(d, "sgd"), run(torch.optim.SGD, sgd)[1])
        save(os.path.join(d, "adam"), run(torch.optim.AdamW if "weight_decay" in adam else torch.optim.Adam, adam,
                                          ADAM_FROZEN.get(name, ()))[1])
        with open(os.path.join(d, "loss.txt"), "w") as f:
            f.write("%.9g\n" % loss)
        print(name, "loss", loss, "params", len(grads))


if __name__ == "__main__":
    main()

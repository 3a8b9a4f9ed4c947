"""Writes the hostile models of the bad-input catalogue (bad-models.test).

They need fields ONNX's text syntax can't express (negative dims, data
shorter than the dims, external-data keys), so they are small binary files,
committed; rerun this script (needs `onnx` from PyPI) to regenerate them.
"""
import os
import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))


def relu_model(inputs, initializers=(), ir_version=8, opsets=(("", 17),), node_input="x"):
    node = helper.make_node("Relu", [node_input], ["y"])
    graph = helper.make_graph([node], "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    model.ir_version = ir_version
    return model


def x(dims):
    return helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)


def weight(dims, raw=None, external=None):
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=dims)
    if raw is not None:
        t.raw_data = raw
    if external is not None:
        t.data_location = TensorProto.EXTERNAL
        for k, v in external.items():
            t.external_data.add(key=k, value=v)
    return t


def save(name, model):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(model.SerializeToString())


save("negative-dim.onnx", relu_model([x([2, -3])]))
save("overflow-dims.onnx", relu_model([x([1 << 40, 1 << 40, 1 << 40])]))
save("ir-too-new.onnx", relu_model([x([2])], ir_version=99))
save("no-opset.onnx", relu_model([x([2])], opsets=()))
save("duplicate-input.onnx", relu_model([x([2]), x([2])]))
save("duplicate-initializer.onnx",
     relu_model([], [weight([2], raw=b"\0" * 8), weight([2], raw=b"\0" * 8)], node_input="w"))
save("initializer-short.onnx", relu_model([], [weight([4], raw=b"\0" * 8)], node_input="w"))
save("initializer-long.onnx", relu_model([], [weight([2], raw=b"\0" * 16)], node_input="w"))
save("initializer-negative-dim.onnx", relu_model([], [weight([-4], raw=b"")], node_input="w"))
for name, ext in {
    "external-absolute.onnx": {"location": "/etc/passwd"},
    "external-symlink.onnx": {"location": "link.bin"},
    "external-offset.onnx": {"location": "weights.bin", "offset": "1000000"},
    "external-length.onnx": {"location": "weights.bin", "offset": "0", "length": "8"},
    "external-bad-offset.onnx": {"location": "weights.bin", "offset": "12abc"},
    "external-huge.onnx": {"location": "huge.bin"},
}.items():
    dims = [805306368] if name == "external-huge.onnx" else [16]  # 3 GiB of f32
    save(name, relu_model([], [weight(dims, external=ext)], node_input="w"))
with open(os.path.join(HERE, "weights.bin"), "wb") as f:
    f.write(bytes(range(64)))

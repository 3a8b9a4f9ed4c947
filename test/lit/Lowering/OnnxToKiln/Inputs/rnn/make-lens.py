#!/usr/bin/env python3
"""Writes bidirectional recurrences whose sequence lengths are an input
(rnn-lengths.test) and their expected outputs, from onnxruntime: each
sequence's reverse direction starts at its own end. Run from this
folder: python3 make-lens.py (needs onnx, onnxruntime)."""
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(7)
SEQ, BATCH, IN, H = 5, 3, 4, 6


def model(name, op, gates):
    dirs = 2
    inits = [numpy_helper.from_array(rng.standard_normal((dirs, gates * H, IN)).astype(np.float32) * 0.5, "W"),
             numpy_helper.from_array(rng.standard_normal((dirs, gates * H, H)).astype(np.float32) * 0.5, "R"),
             numpy_helper.from_array(rng.standard_normal((dirs, 2 * gates * H)).astype(np.float32) * 0.5, "B")]
    node = helper.make_node(op, ["x", "W", "R", "B", "lens", "h0"], ["y", "y_h"], hidden_size=H,
                            direction="bidirectional")
    graph = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [SEQ, BATCH, IN]),
         helper.make_tensor_value_info("lens", TensorProto.INT32, [BATCH]),
         helper.make_tensor_value_info("h0", TensorProto.FLOAT, [dirs, BATCH, H])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [SEQ, dirs, BATCH, H]),
         helper.make_tensor_value_info("y_h", TensorProto.FLOAT, [dirs, BATCH, H])],
        inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, f"{name}.onnx")
    feed = {"x": rng.standard_normal((SEQ, BATCH, IN)).astype(np.float32),
            "lens": np.array([5, 2, 3], dtype=np.int32),
            "h0": rng.standard_normal((dirs, BATCH, H)).astype(np.float32)}
    got = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feed)
    for k, v in feed.items():
        np.save(f"{name}-{k}.npy", v)
    for k, v in zip(["y", "y_h"], got):
        np.save(f"{name}-{k}.npy", v)


model("gru-lens", "GRU", 3)
model("rnn-lens", "RNN", 1)
model("lstm-lens", "LSTM", 4)

# Lengths no model should be given: past the sequence and negative, which
# Kiln holds to [0, SEQ] (equal to 5, 0, 3), reading no row outside x.
np.save("lens-bad.npy", np.array([9, -1, 3], dtype=np.int32))
np.save("lens-held.npy", np.array([5, 0, 3], dtype=np.int32))

#!/usr/bin/env python3
"""Writes the recurrent-direction test models (rnn-directions.test) and their
expected outputs, computed by onnx's reference evaluator (onnxruntime has no
batch-first recurrences): a bidirectional GRU with biases
and initial state, a reverse batch-first LSTM with peepholes, a bidirectional
RNN. Run from this folder: python3 make.py (needs onnx)."""
import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(0)
SEQ, BATCH, IN, H = 4, 2, 3, 5


def model(name, op, gates, direction, layout=0, peepholes=False, initial=True):
    dirs = 2 if direction == "bidirectional" else 1
    x_shape = [BATCH, SEQ, IN] if layout else [SEQ, BATCH, IN]
    state_shape = [BATCH, dirs, H] if layout else [dirs, BATCH, H]
    y_shape = [BATCH, SEQ, dirs, H] if layout else [SEQ, dirs, BATCH, H]
    inits = [numpy_helper.from_array(rng.standard_normal((dirs, gates * H, IN)).astype(np.float32) * 0.5, "W"),
             numpy_helper.from_array(rng.standard_normal((dirs, gates * H, H)).astype(np.float32) * 0.5, "R"),
             numpy_helper.from_array(rng.standard_normal((dirs, 2 * gates * H)).astype(np.float32) * 0.5, "B")]
    inputs = ["x", "W", "R", "B", "", "h0" if initial else ""]
    graph_inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)]
    if initial:
        graph_inputs.append(helper.make_tensor_value_info("h0", TensorProto.FLOAT, state_shape))
    if op == "LSTM":
        inputs.append("")
        if peepholes:
            inputs.append("P")
            inits.append(numpy_helper.from_array(
                rng.standard_normal((dirs, 3 * H)).astype(np.float32) * 0.5, "P"))
    outputs = ["y", "y_h"]
    node = helper.make_node(op, inputs, outputs, hidden_size=H, direction=direction, layout=layout)
    graph = helper.make_graph([node], name, graph_inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape),
                               helper.make_tensor_value_info("y_h", TensorProto.FLOAT, state_shape)],
                              inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, f"{name}.onnx")
    feed = {"x": rng.standard_normal(x_shape).astype(np.float32)}
    if initial:
        feed["h0"] = rng.standard_normal(state_shape).astype(np.float32)
    got = ReferenceEvaluator(m).run(None, feed)
    for k, v in feed.items():
        np.save(f"{name}-{k}.npy", v)
    for k, v in zip(outputs, got):
        np.save(f"{name}-{k}.npy", v)


model("gru-bidirectional", "GRU", 3, "bidirectional")
model("lstm-reverse", "LSTM", 4, "reverse", layout=1, peepholes=True, initial=False)
model("rnn-bidirectional", "RNN", 1, "bidirectional", layout=1)

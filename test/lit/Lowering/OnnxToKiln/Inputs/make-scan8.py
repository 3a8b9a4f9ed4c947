# make-scan8.py OUT.onnx: an opset-8 Scan (a batch dimension first, no
# sequence_lens) summing 3 steps of x per batch element from `initial`:
# y the sums, z every step's running sum. Needs the onnx package.
import sys
from onnx import TensorProto, helper

body = helper.make_graph(
    [helper.make_node("Add", ["sum_in", "next"], ["sum_out"]),
     helper.make_node("Identity", ["sum_out"], ["scan_out"])],
    "body",
    [helper.make_tensor_value_info("sum_in", TensorProto.FLOAT, [2]),
     helper.make_tensor_value_info("next", TensorProto.FLOAT, [2])],
    [helper.make_tensor_value_info("sum_out", TensorProto.FLOAT, [2]),
     helper.make_tensor_value_info("scan_out", TensorProto.FLOAT, [2])])
node = helper.make_node("Scan", ["", "initial", "x"], ["y", "z"], num_scan_inputs=1, body=body)
graph = helper.make_graph(
    [node], "scan8",
    [helper.make_tensor_value_info("initial", TensorProto.FLOAT, [2, 2]),
     helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 2])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2]),
     helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3, 2])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)])
model.ir_version = 3
with open(sys.argv[1], "wb") as f:
    f.write(model.SerializeToString())

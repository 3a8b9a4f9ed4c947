"""The ResNet-style example quantized by onnxruntime's quantization tool, the
three ways users ship quantized models: dynamic (MatMulInteger, ConvInteger,
DynamicQuantizeLinear), static in the QOperator format (QLinearConv and
onnxruntime's com.microsoft QLinearAdd, QGemm, QLinearGlobalAveragePool) and
static in the QDQ format (QuantizeLinear/DequantizeLinear around float ops).
Calibrated on the example's committed input; the expected outputs are
onnxruntime's. Needs onnxruntime and numpy (scripts/setup.sh --python); the
tests only read the committed files."""
import os
import numpy as np
import onnxruntime as ort
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_dynamic, quantize_static)

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "..", "resnet", "model.onnx")
INPUT = os.path.join(HERE, "..", "resnet", "input.npy")


class OneBatch(CalibrationDataReader):
    def __init__(self, x):
        self.batches = iter([{"input": x}])

    def get_next(self):
        return next(self.batches, None)


def main():
    x = np.load(INPUT)
    paths = {name: os.path.join(HERE, f"model_{name}.onnx") for name in ("dynamic", "qoperator", "qdq")}
    quantize_dynamic(SOURCE, paths["dynamic"], weight_type=QuantType.QInt8)
    for name, fmt in (("qoperator", QuantFormat.QOperator), ("qdq", QuantFormat.QDQ)):
        quantize_static(SOURCE, paths[name], OneBatch(x), quant_format=fmt,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    for name, path in paths.items():
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        np.save(os.path.join(HERE, f"expected_{name}.npy"), sess.run(None, {"input": x})[0])
        print(path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()

# Writes quantized-convs.onnxtxt (random int8 weights, seeded): 8-bit
# convolutions of every form kiln's channels-last integer product takes,
# and one it leaves to the f32 path (group 2); a 3-channel one (K = 27,
# its image given a 4th channel of the zero point: 36); a depthwise one
# (group 4, strided); one of int8 activations (shifted to uint8); the same
# model with a dynamic batch (quantized-convs-dynamic.onnxtxt), and that
# one without the grouped convolutions.
import random
random.seed(7)
def ints(n, lo, hi): return ", ".join(str(random.randint(lo, hi)) for _ in range(n))
lines = []
lines.append('<ir_version: 8, opset_import: ["" : 17]>')
lines.append('agraph (float[1,4,7,7] x) => (uint8[1,8,7,7] c1, uint8[1,8,4,4] c2, int32[1,4,3,3] c3, uint8[1,8,7,7] c4, uint8[1,8,7,7] g, float[1,8,7,7] d, uint8[1,8,7,7] s, uint8[1,4,4,4] dw, int8[1,8,7,7] c8)')
inits = [
 'float xs = {0.01}', 'uint8 xz = {128}', 'int8 xz8 = {-5}', 'int8 yz8 = {2}',
 f'int8[8,4,3,3] w1 = {{{ints(288, -127, 127)}}}', 'float[8] w1s = {0.01, 0.02, 0.015, 0.012, 0.03, 0.008, 0.011, 0.02}',
 'int8[8] w1z = {0, 0, 0, 0, 0, 0, 0, 0}', 'float ys = {0.15}', 'uint8 yz = {3}',
 f'int32[8] b1 = {{{ints(8, -2000, 2000)}}}',
 f'int8[8,8,1,1] w2 = {{{ints(64, -127, 127)}}}', 'float w2s = {0.02}', 'int8 w2z = {0}', 'float y2s = {0.3}', 'uint8 y2z = {120}',
 f'int8[4,4,2,2] w3 = {{{ints(64, -127, 127)}}}', 'int8[4] w3z = {3, -2, 0, 5}',
 f'int8[8,4,3,3] w4 = {{{ints(288, -127, 127)}}}', 'float w4s = {0.01}', 'int8 w4z = {0}',
 f'int8[8,2,3,3] w5 = {{{ints(144, -127, 127)}}}',
 f'int8[8,3,3,3] w6 = {{{ints(216, -127, 127)}}}',
 f'int8[4,1,3,3] w7 = {{{ints(36, -127, 127)}}}', 'float[4] w7s = {0.02, 0.01, 0.03, 0.015}', 'int8[4] w7z = {0, 0, 0, 0}', 'int64[1] s0 = {0}', 'int64[1] s3 = {3}', 'int64[1] s1 = {1}',
]
lines.append('   <' + ', '.join(inits) + '>')
lines.append('{')
lines.append('  q = QuantizeLinear(x, xs, xz)')
lines.append('  c1 = QLinearConv<pads = [1, 1, 1, 1]>(q, xs, xz, w1, w1s, w1z, ys, yz, b1)')
lines.append('  c2 = QLinearConv<strides = [2, 2]>(c1, ys, yz, w2, w2s, w2z, y2s, y2z)')
lines.append('  c3 = ConvInteger<strides = [2, 2]>(q, w3, xz, w3z)')
lines.append('  c4 = QLinearConv<pads = [2, 2, 2, 2], dilations = [2, 2]>(q, xs, xz, w4, w4s, w4z, ys, yz)')
lines.append('  g = QLinearConv<pads = [1, 1, 1, 1], group = 2>(q, xs, xz, w5, w4s, w4z, ys, yz)')
lines.append('  xd = DequantizeLinear(q, xs, xz)')
lines.append('  wd = DequantizeLinear<axis = 0>(w1, w1s, w1z)')
lines.append('  bd = DequantizeLinear(b1, ys)')
lines.append('  d = Conv<pads = [1, 1, 1, 1]>(xd, wd, bd)')
lines.append('  q3 = Slice(q, s0, s3, s1)')
lines.append('  s = QLinearConv<pads = [1, 1, 1, 1]>(q3, xs, xz, w6, w4s, w4z, ys, yz)')
lines.append('  q8 = QuantizeLinear(x, xs, xz8)')
lines.append('  c8 = QLinearConv<pads = [1, 1, 1, 1]>(q8, xs, xz8, w1, w1s, w1z, ys, yz8, b1)')
lines.append('  dw = QLinearConv<pads = [1, 1, 1, 1], strides = [2, 2], group = 4>(q, xs, xz, w7, w7s, w7z, ys, yz)')
lines.append('}')
text = "\n".join(lines) + "\n"
open(__file__.replace(".py", ".onnxtxt"), "w").write(text)
# The same with a batch known only at run time (dim_param N).
signature, rest = text.split("\n", 2)[1], text.split("\n", 2)[2]
dynamic = text.split("\n", 1)[0] + "\n" + signature.replace("[1,", "[N,") + "\n" + rest
open(__file__.replace(".py", "-dynamic.onnxtxt"), "w").write(dynamic)
# The dynamic one without the grouped and the depthwise convolution
# (quantized-convs-ungrouped.onnxtxt): on AVX2 a graph's convolutions are
# integer products only where it has no grouped one.
ungrouped = "\n".join(l for l in dynamic.split("\n") if not l.startswith(("  g = ", "  dw = ")))
ungrouped = ungrouped.replace(", uint8[N,8,7,7] g", "").replace(", uint8[N,4,4,4] dw", "")
open(__file__.replace(".py", "-ungrouped.onnxtxt"), "w").write(ungrouped)

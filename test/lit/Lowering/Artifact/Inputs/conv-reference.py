# conv-reference.py X.npy W.npy OUT.npy GROUP SH SW TOP LEFT BOTTOM RIGHT:
# a float32 NCHW convolution with zero padding in plain Python (no numpy),
# each product rounded to float32 and summed over (channel, kernel row,
# kernel column) in that order.
# --nhwc: X is NHWC and OUT is written NHWC (the weights stay FCHW).
# --bias B.npy: B[f] added to each sum last.
import struct, sys


def read(path):
    data = open(path, "rb").read()
    n = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + n].decode()
    assert "'<f4'" in header, path + ": float32 only"
    shape = tuple(int(d) for d in header.split("(")[1].split(")")[0].split(",") if d.strip())
    count = 1
    for d in shape:
        count *= d
    return shape, struct.unpack("<%df" % count, data[10 + n:10 + n + 4 * count])


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


args = sys.argv[1:]
nhwc = "--nhwc" in args
if nhwc:
    args.remove("--nhwc")
bias = None
if "--bias" in args:
    i = args.index("--bias")
    bias = read(args[i + 1])[1]
    del args[i:i + 2]
shape, x = read(args[0])
if nhwc:  # to NCHW
    N, H, W, C = shape
    x = [x[((n * H + h) * W + w_) * C + c] for n in range(N) for c in range(C) for h in range(H)
         for w_ in range(W)]
else:
    N, C, H, W = shape
(F, CG, KH, KW), w = read(args[1])
group, sh, sw, top, left, bottom, right = (int(a) for a in args[3:10])
OH = (H + top + bottom - KH) // sh + 1
OW = (W + left + right - KW) // sw + 1
out = []
for n in range(N):
    for f in range(F):
        c0 = f // (F // group) * CG
        for oh in range(OH):
            for ow in range(OW):
                acc = 0.0
                for c in range(CG):
                    for kh in range(KH):
                        ih = oh * sh + kh - top
                        if not 0 <= ih < H:
                            continue
                        for kw in range(KW):
                            iw = ow * sw + kw - left
                            if 0 <= iw < W:
                                xv = x[((n * C + c0 + c) * H + ih) * W + iw]
                                acc = f32(acc + f32(xv * w[((f * CG + c) * KH + kh) * KW + kw]))
                out.append(f32(acc + bias[f]) if bias else acc)
dims = (N, F, OH, OW)
if nhwc:  # back to NHWC
    out = [out[((n * F + f) * OH + h) * OW + w_] for n in range(N) for h in range(OH)
           for w_ in range(OW) for f in range(F)]
    dims = (N, OH, OW, F)
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d, %d, %d), }" % dims
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
with open(args[2], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    f.write(struct.pack("<%df" % len(out), *out))

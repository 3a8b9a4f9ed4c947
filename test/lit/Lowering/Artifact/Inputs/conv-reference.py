# conv-reference.py X.npy W.npy OUT.npy GROUP SH SW TOP LEFT BOTTOM RIGHT:
# a float32 NCHW convolution with zero padding in plain Python (no numpy),
# each product rounded to float32 and summed over (channel, kernel row,
# kernel column) in that order.
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


(N, C, H, W), x = read(sys.argv[1])
(F, CG, KH, KW), w = read(sys.argv[2])
group, sh, sw, top, left, bottom, right = (int(a) for a in sys.argv[4:11])
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
                out.append(acc)
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d, %d, %d), }" % (N, F, OH, OW)
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
with open(sys.argv[3], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    f.write(struct.pack("<%df" % len(out), *out))

# det-inputs.py DIR: Det's inputs and the determinants numpy.linalg.det
# gives them (LU with partial pivoting in f64), as .npy, without numpy:
#   x [2,3,3] sin(i); s a singular 3x3 (row 2 = 2 x row 1); p a 4x4 whose
#   diagonal is zero (every column needs a row swap), det -6.
import math, struct, sys


def write(path, shape, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        "".join("%d, " % d for d in shape))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%df" % len(values), *values))


def det(rows):
    a = [list(map(float, r)) for r in rows]
    n, d = len(a), 1.0
    for k in range(n):
        p = max(range(k, n), key=lambda i: abs(a[i][k]))
        if p != k:
            a[k], a[p], d = a[p], a[k], -d
        d *= a[k][k]
        if a[k][k] == 0:
            continue
        for i in range(k + 1, n):
            f = a[i][k] / a[k][k]
            for j in range(k, n):
                a[i][j] -= f * a[k][j]
    return d


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


out = sys.argv[1]
x = [f32(math.sin(i)) for i in range(18)]
s = [1, 2, 3, 2, 4, 6, 1, 0, 1]
p = [0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 2, 0, 0, 3, 0]
write(out + "/x.npy", [2, 3, 3], x)
write(out + "/s.npy", [3, 3], s)
write(out + "/p.npy", [4, 4], p)
mats = lambda v, n: [[v[r * n + c] for c in range(n)] for r in range(n)]
write(out + "/d.npy", [2], [det(mats(x[9 * b:9 * b + 9], 3)) for b in range(2)])
write(out + "/ds.npy", [], [det(mats(s, 3))])
write(out + "/dp.npy", [], [det(mats(p, 4))])

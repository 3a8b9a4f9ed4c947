# write-npy.py FILE D0 D1 ...: a float32 .npy of that shape holding
# sin(i) (deterministic, no numpy needed).
# write-npy.py --int64 N FILE D0 D1 ...: an int64 one holding i % N
# (token ids below a vocabulary of N).
# write-npy.py --values FILE V0 V1 ...: a 1-D int64 one holding V0 V1 ...
# (--floats: float32; --scalar-i64/--scalar-f32 FILE V: rank 0).
# write-npy.py --permuted P0,P1,... FILE D0 D1 ...: the float32 one of shape
# D0 D1 ... transposed by that permutation (numpy's x.transpose(P)).
import math, struct, sys

args = sys.argv[1:]
# --values FILE V...: int64 [n]; --floats FILE V...: float32 [n];
# --scalar-i64 / --scalar-f32 FILE V: a rank-0 one.
listed = {"--values": ("<i8", "q", int, True), "--floats": ("<f4", "f", float, True),
          "--scalar-i64": ("<i8", "q", int, False), "--scalar-f32": ("<f4", "f", float, False)}
# --shaped-i64 / --shaped-f32 FILE D0xD1x... V...: of that shape.
if args[0] in ("--shaped-i64", "--shaped-f32"):
    dims = [int(d) for d in args[2].split("x")]
    args = ["--values" if args[0] == "--shaped-i64" else "--floats", args[1]] + args[3:]
else:
    dims = None
if args[0] in listed:
    descr, code, cast, vector = listed[args[0]]
    values = [cast(v) for v in args[2:]]
    shape = "(%d,)" % len(values) if vector else "()"
    if dims:
        shape = "(%s)" % "".join("%d, " % d for d in dims)
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(args[1], "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), code), *values))
    sys.exit(0)
perm = None
if args[0] == "--permuted":
    perm, args = [int(p) for p in args[1].split(",")], args[2:]
modulus = None
if args[0] == "--int64":
    modulus, args = int(args[1]), args[2:]
path, shape = args[0], [int(d) for d in args[1:]]
count = 1
for d in shape:
    count *= d
index = list(range(count))  # the source element of each element written
if perm:
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    shape, strides = [shape[p] for p in perm], [strides[p] for p in perm]
    index = [0]
    for n, s in zip(shape, strides):
        index = [i + k * s for i in index for k in range(n)]
descr = "<i8" if modulus else "<f4"
header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
    descr, "".join("%d, " % d for d in shape))
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    if modulus:
        f.write(struct.pack("<%dq" % count, *[i % modulus for i in range(count)]))
    else:
        f.write(struct.pack("<%df" % count, *[math.sin(i) for i in index]))

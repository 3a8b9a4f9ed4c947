# erf-grid.py X Y N: X, float32 [N] from -6 to 6 (NaN, -inf and inf first),
# and Y, erf of each by Python's math.erf (no numpy needed).
import math, struct, sys

def write(path, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % len(values)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%df" % len(values), *values))

n = int(sys.argv[3])
grid = [-6 + 12 * i / (n - 4) for i in range(n - 3)]
# Round to f32 first: erf of the float the model reads.
xs = [math.nan, -math.inf, math.inf] + [struct.unpack("<f", struct.pack("<f", v))[0] for v in grid]
write(sys.argv[1], xs)
write(sys.argv[2], [x if math.isnan(x) else math.erf(x) for x in xs])

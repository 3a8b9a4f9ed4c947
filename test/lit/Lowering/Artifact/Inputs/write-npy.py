# write-npy.py FILE D0 D1 ...: a float32 .npy of that shape holding
# sin(i) (deterministic, no numpy needed).
import math, struct, sys

path, shape = sys.argv[1], [int(d) for d in sys.argv[2:]]
count = 1
for d in shape:
    count *= d
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
    "".join("%d, " % d for d in shape))
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    f.write(struct.pack("<%df" % count, *[math.sin(i) for i in range(count)]))

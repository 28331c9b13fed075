"""f32.py write FILE v0 v1 ... | f32.py print FILE: raw little-endian float32 files for the run tests."""
import struct, sys
if sys.argv[1] == "write":
    vals = [float(v) for v in sys.argv[3:]]
    open(sys.argv[2], "wb").write(struct.pack(f"<{len(vals)}f", *vals))
else:
    data = open(sys.argv[2], "rb").read()
    print(" ".join(f"{v:g}" for v in struct.unpack(f"<{len(data) // 4}f", data)))

#!/usr/bin/env python3
"""Elements of a corpus case whose expected bytes are implementation-defined, so a driver skips them.

One rule (docs/targets.md, "Float to integer conversions"): casting a float to an integer dtype whose range
does not hold the truncated value (or a NaN) is undefined in C, and tinygrad's expected bytes for those
elements depend on its compiler: tinygrad 0.14.0's corpus saturates (int8 127 where the value is too large),
the d1c3ae0f91 corpus wraps (41 for the same element). uopc's rule is x86-64's: truncate toward zero, convert through
int32 (int64 for int64/uint32/uint64 targets; "integer indefinite", INT32_MIN / INT64_MIN, when out of that
range or NaN), then wrap to the target width. Every element whose value is out of the target's range is
skipped here, by index, with the reason; every other element is still compared exactly.

The elements are found from the graph, not from a list of cases: an output slot stored from
CAST(int dtype, x) where x is a float input PARAM (possibly through RESHAPE) of the same element count.
"""
import json
import math
import os
import struct

INT_RANGES = {
    "int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767), "uint16": (0, 65535),
    "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1), "int64": (-2**63, 2**63 - 1), "uint64": (0, 2**64 - 1),
}
FLOAT_FORMATS = {"float32": "f", "float64": "d", "float16": "e"}


def _slot_of(nodes, i):
    """The slot of PARAM node i seen through RESHAPEs, or None."""
    while nodes[i]["op"] == "RESHAPE":
        i = nodes[i]["src"][0]
    n = nodes[i]
    if n["op"] == "PARAM" and isinstance(n.get("arg"), dict) and n["arg"].get("slot", -1) >= 0:
        return n["arg"]["slot"], n["arg"]["dtype"]["v"] if isinstance(n["arg"].get("dtype"), dict) else n["dtype"]
    return None


def skipped_elements(case_dir: str, case: dict) -> dict:
    """slot -> (sorted element indices, reason) of elements whose value is implementation-defined."""
    with open(os.path.join(case_dir, "graph.json")) as f:
        g = json.load(f)
    nodes = {n["id"]: n for n in g["nodes"]}
    params = {p["slot"]: p for p in case["params"]}
    out = {}
    for n in g["nodes"]:
        if n["op"] != "STORE":
            continue
        dst, val = _slot_of(nodes, n["src"][0]), nodes[n["src"][1]]
        if dst is None or val["op"] != "CAST" or val["dtype"] not in INT_RANGES:
            continue
        src = _slot_of(nodes, val["src"][0])
        if src is None or src[1] not in FLOAT_FORMATS:
            continue
        p = params.get(src[0])
        if not p or not p.get("input") or len(p["input"]) != 1 or params.get(dst[0], {}).get("numel") != p.get("numel"):
            continue
        with open(os.path.join(case_dir, p["input"][0]), "rb") as f:
            raw = f.read()
        fmt = FLOAT_FORMATS[src[1]]
        xs = struct.unpack(f"<{len(raw) // struct.calcsize(fmt)}{fmt}", raw)
        lo, hi = INT_RANGES[val["dtype"]]
        bad = [i for i, x in enumerate(xs) if not math.isfinite(x) or not lo <= math.trunc(x) <= hi]
        if bad:
            out[dst[0]] = (bad, f"{src[1]} -> {val['dtype']} of a value outside [{lo}, {hi}] is implementation-defined "
                                f"(uopc wraps through int32, tinygrad's result depends on its compiler)")
    return out


def blank(got: bytes, want: bytes, itemsize: int, indices) -> bytes:
    """got with the skipped elements replaced by want's bytes (so the comparison ignores them)."""
    b = bytearray(got)
    for i in indices:
        b[i * itemsize:(i + 1) * itemsize] = want[i * itemsize:(i + 1) * itemsize]
    return bytes(b)

"""Export what a tinygrad (>= 0.14) program computes as a uopc graph.

    uopc_tinygrad.export(fn, *args, out=DIR, model=None)

calls fn(*args) (it must return a Tensor or a tuple of Tensors), captures the one schedule call that
realizes the outputs (tinygrad's own transform_to_call: the function graph and the buffers it binds) and
writes into DIR:

  graph.json          the function graph in uopc's format (graph format v1, tinygrad 0.14.0's forms, which
                      uopc reads), every buffer PARAM named, every variable PARAM named by its user's name
                      (uopc's manifest also keeps tinygrad's positional p<slot> name for it)
  io.json             {"inputs": [{"name", "slot", "dtype", "shape", "devices"}...],
                       "outputs": [...] (in the order fn returns them),
                       "vars": [{"name", "slot", "value", "min", "max"}...]}
  inputs.safetensors  every input's bytes, weights included

Names: the state-dict names of `model`'s tensors (tinygrad.nn.state.get_state_dict), input0, input1, ...
for the Tensor arguments (by position in args), output0, output1, ... for the results, buffer<slot> for any
other buffer the schedule reads (a tensor captured by fn's closure). A tensor on several devices is stored
once per device: NAME@0, NAME@1, ... in the order of its devices, each holding that device's shard (or
copy); a one-device tensor is NAME. uopc-run --inputs/--outputs FILE.safetensors use the same names.

Every input tensor is realized into a buffer of its own first (a tensor tinygrad would fold to a constant,
zeros or an arange, becomes real data), so that it is an input of the graph and can be given new values.
A parameter that is a view of a buffer (a slice tinygrad binds without copying, such as a realized
`t[1:3].contiguous()` captured by fn) is stored with its own elements, in order. Not supported (a clear
error): outputs of symbolic shape, and views on several devices.
"""
import base64
import dataclasses
import enum
import json
import math
import os
import struct

__all__ = ["export", "DTYPE_NAMES", "write_safetensors", "read_safetensors"]

# uopc's dtype names (lib/IR/DTypes.def) that tinygrad has
DTYPE_NAMES = ["void", "weakint", "weakfloat", "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32",
               "int64", "uint64", "fp8e4m3", "fp8e5m2", "fp8e4m3fnuz", "fp8e5m2fnuz", "float16", "bfloat16",
               "float32", "float64"]
SAFETENSORS_CODES = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16", "int64": "I64",
                     "int32": "I32", "int16": "I16", "int8": "I8", "uint64": "U64", "uint32": "U32",
                     "uint16": "U16", "uint8": "U8", "bool": "BOOL", "fp8e4m3": "F8_E4M3", "fp8e5m2": "F8_E5M2"}


def write_safetensors(path, tensors):
    """tensors: {name: (safetensors dtype code, shape, bytes)}, written sorted by name."""
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        code, shape, data = tensors[name]
        header[name] = {"dtype": code, "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - (8 + len(h)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read_safetensors(path):
    """{name: (dtype code, shape, bytes)} of a safetensors file."""
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        out[name] = (t["dtype"], t["shape"], raw[8 + n + b:8 + n + e])
    return out


def _tg():
    import tinygrad
    from tinygrad import Tensor, dtypes
    from tinygrad.uop.ops import UOp, Ops
    return tinygrad, Tensor, dtypes, UOp, Ops


def _dtype_table():
    _, _, dtypes, _, _ = _tg()
    table = {}
    for name in DTYPE_NAMES:
        dt = getattr(dtypes, name, None)
        if dt is not None and dt not in table:
            table[dt] = name
    return table


def _buffer_of(u):
    """The BUFFER a realized tensor's uop stands for (through reshapes and the multi-device wrapper), or None."""
    _, _, _, _, Ops = _tg()
    while u.op in (Ops.RESHAPE, Ops.UNSHARD, Ops.CONTIGUOUS, Ops.DETACH) and u.src:
        u = u.src[0]
    return u if u.op is Ops.BUFFER else None


def _device_bytes(buf_uop):
    """Bytes per device of a BUFFER uop's (Multi)Buffer."""
    b = buf_uop.buffer
    bufs = b.bufs if hasattr(b, "bufs") else [b]
    return [bytes(x.as_memoryview()) for x in bufs]


def _view_bytes(r):
    """The elements of a parameter that is a view of a realized buffer (tinygrad binds a contiguous slice of
    a buffer, e.g. a realized `base[1:3].contiguous()`, without copying it), in order: what the kernels read
    as that parameter, one entry for its one device. None for a view on several devices."""
    _, Tensor, _, _, _ = _tg()
    if isinstance(r.device, tuple):
        return None
    return [bytes(Tensor(r).contiguous().realize().data())]


def _materialize(t):
    """Makes t a tensor backed by a buffer of its own (same shape, dtype, devices, sharding)."""
    _, Tensor, _, _, _ = _tg()
    t.realize()
    if _buffer_of(t.uop) is not None:
        return
    devices = t.device if isinstance(t.device, tuple) else None
    axis = t.uop.axis if devices else None
    data = bytes(t.data()) if t.numel() else b""
    new = Tensor(data, dtype=t.dtype, device=devices[0] if devices else t.device).reshape(t.shape)
    if devices:
        new = new.shard(devices, axis=axis) if axis is not None else new.shard(devices)
    new.realize()
    t.replace(new)
    if _buffer_of(t.uop) is None:
        raise RuntimeError(f"uopc_tinygrad: could not give a tensor of shape {t.shape} a buffer of its own")


class _Encoder:
    def __init__(self, ids):
        self.ids, self.dtypes = ids, _dtype_table()
        tinygrad, _, _, UOp, Ops = _tg()
        from tinygrad.uop.ops import AxisType
        from tinygrad.dtype import AddrSpace, DType
        try:
            from tinygrad.dtype import InvalidType
        except ImportError:  # older layouts
            InvalidType = type(None)
        self.UOp, self.Ops, self.AxisType, self.AddrSpace, self.DType, self.Invalid = UOp, Ops, AxisType, AddrSpace, DType, InvalidType

    def dtype(self, dt):
        base = getattr(dt, "base", dt)
        if base not in self.dtypes:
            raise ValueError(f"uopc_tinygrad: dtype {dt} has no uopc name")
        return self.dtypes[base]

    def arg(self, a):
        # enums first: some are int subclasses
        if isinstance(a, self.Ops):
            return {"$": "Ops", "v": a.name}
        if isinstance(a, self.AxisType):
            return {"$": "AxisType", "v": a.name}
        if isinstance(a, self.AddrSpace):
            return {"$": "AddrSpace", "v": a.name}
        if a is None or isinstance(a, (bool, str)):
            return a
        if isinstance(a, int):
            a = int(a)  # tinygrad's const wrappers print as themselves
            return a if -2**63 <= a < 2**64 else {"$": "bigint", "v": str(a)}
        if isinstance(a, float):
            a = float(a)
            if not math.isfinite(a) or a.is_integer():
                return {"$": "float", "v": repr(a)}
            return a
        if isinstance(a, bytes):
            return {"$": "bytes", "v": base64.b64encode(a).decode()}
        if isinstance(a, (tuple, list)):
            return [self.arg(x) for x in a]
        if isinstance(a, self.UOp):
            if a not in self.ids:
                raise ValueError(f"uopc_tinygrad: an arg refers to a node outside the graph ({a.op})")
            return {"$": "UOp", "id": self.ids[a]}
        if isinstance(a, self.DType):
            return {"$": "DType", "v": self.dtype(a)}
        if isinstance(a, self.Invalid) or type(a).__name__ == "InvalidType":
            return {"$": "Invalid"}
        if dataclasses.is_dataclass(a):
            rec = {"$": type(a).__name__}
            for f in dataclasses.fields(a):
                v = getattr(a, f.name)
                default = f.default if f.default is not dataclasses.MISSING else (
                    f.default_factory() if f.default_factory is not dataclasses.MISSING else dataclasses.MISSING)
                if default is not dataclasses.MISSING and v == default:
                    continue
                rec[f.name] = None if callable(v) and not isinstance(v, (enum.Enum, type)) else self.arg(v)
            return rec
        if callable(a):
            return None
        raise ValueError(f"uopc_tinygrad: cannot encode the arg {a!r} ({type(a).__name__})")


def _graph_json(body, names):
    """graph format v1 text of the function body; `names`: slot -> PARAM name."""
    tinygrad, _, _, _, Ops = _tg()
    order = list(body.toposort())
    ids = {u: i for i, u in enumerate(order)}
    enc = _Encoder(ids)
    nodes = []
    for u in order:
        n = {"id": ids[u], "op": u.op.name, "dtype": enc.dtype(u.dtype)}
        if u.src:
            n["src"] = [ids[s] for s in u.src]
        arg = u.arg
        if u.op is Ops.PARAM and dataclasses.is_dataclass(arg) and getattr(arg, "slot", -1) in names:
            arg = dataclasses.replace(arg, name=names[arg.slot])
        if arg is not None:
            n["arg"] = enc.arg(arg)
        nodes.append(n)
    try:
        from importlib.metadata import version
        tg_version = version("tinygrad")
    except Exception:  # noqa: BLE001  (a source checkout)
        tg_version = "unknown"
    producer = {"name": "tinygrad", "version": tg_version, "exporter": "uopc_tinygrad 0.1.0"}
    lines = ",\n".join(json.dumps(n, separators=(",", ":")) for n in nodes)
    return ('{"format":"uopc-graph","version":1,"producer":%s,"semantics":{"pad_fill":"zero"},"nodes":[\n%s\n],"root":%d}\n'
            % (json.dumps(producer, separators=(",", ":")), lines, ids[body]))


def export(fn, *args, out, model=None):
    """Runs fn(*args) symbolically and writes out/graph.json, out/io.json and out/inputs.safetensors.

    Returns the io.json dictionary. See the module docstring for the names and files."""
    tinygrad, Tensor, dtypes, UOp, Ops = _tg()
    from tinygrad.tensor import transform_to_call
    state = {}
    if model is not None:
        from tinygrad.nn.state import get_state_dict
        state = get_state_dict(model)
    for t in state.values():
        _materialize(t)
    for a in args:
        if isinstance(a, Tensor):
            _materialize(a)
    named = {}
    for name, t in state.items():
        named.setdefault(_buffer_of(t.uop), name)
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            named.setdefault(_buffer_of(a.uop), f"input{i}")

    outs = fn(*args)
    outs = tuple(outs) if isinstance(outs, (tuple, list)) else (outs,)
    if not outs or not all(isinstance(o, Tensor) for o in outs):
        raise TypeError("uopc_tinygrad.export: fn must return a Tensor or a tuple of Tensors")
    for o in outs:
        if o.dtype in (dtypes.weakint, dtypes.weakfloat):
            raise TypeError("uopc_tinygrad.export: an output has a weak dtype; cast it to a concrete dtype first")
    call, buffer_map = transform_to_call(UOp.sink(*[o.uop for o in outs]))
    body, repl = call.src[0], call.src[1:]
    slot_of = {r: i for i, r in enumerate(repl)}
    table = _dtype_table()

    outputs, out_slots = [], {}
    for j, o in enumerate(outs):
        if not all(isinstance(d, int) for d in o.shape):
            shape = tuple(d if isinstance(d, int) else "<symbolic>" for d in o.shape)
            raise RuntimeError(f"uopc_tinygrad.export: output {j} has a symbolic shape {shape}: not supported "
                               "(uopc would have to keep the elements past its size; return a fixed-size tensor)")
        storage = buffer_map.get(o.uop)
        b = _buffer_of(storage) if storage is not None else None
        if b is None or b not in slot_of:
            raise RuntimeError(f"uopc_tinygrad.export: output {j} is computed by no kernel of the schedule "
                               "(is it one of the inputs?)")
        out_slots[slot_of[b]] = f"output{j}"
        devs = list(o.device) if isinstance(o.device, tuple) else [o.device]
        outputs.append({"name": f"output{j}", "slot": slot_of[b], "dtype": table[o.dtype], "shape": list(o.shape),
                        "devices": devs})

    names, inputs, variables, tensors = {}, [], [], {}
    for i, r in enumerate(repl):
        if i in out_slots:
            names[i] = out_slots[i]
            continue
        if r.op is Ops.AFTER and getattr(r, "is_bound_var", False):
            var, value = r.src[0], r.src[1].src[1].arg
            lo, hi = var.arg.vmin_vmax
            names[i] = var.arg.name
            variables.append({"name": var.arg.name, "slot": i, "value": value, "min": lo, "max": hi})
            continue
        # a view of a buffer (a slice tinygrad binds without copying): its own elements are the input
        data = _device_bytes(r) if r.op is Ops.BUFFER else _view_bytes(r)
        if data is None:
            raise RuntimeError(f"uopc_tinygrad.export: parameter {i} is a {r.op.name} of a buffer on several devices "
                               "(a view); make the tensor contiguous on each device before calling fn")
        name = named.get(r, f"buffer{i}")
        names[i] = name
        devs = list(r.device) if isinstance(r.device, tuple) else [r.device]
        dt = table[r.dtype.base if hasattr(r.dtype, "base") else r.dtype]
        per_device = len(data[0]) // max(1, r.dtype.itemsize) if data else 0
        inputs.append({"name": name, "slot": i, "dtype": dt, "shape": [per_device], "devices": devs})
        for d, blob in enumerate(data):
            key = name if len(data) == 1 else f"{name}@{d}"
            tensors[key] = (SAFETENSORS_CODES[dt], [len(blob) // max(1, r.dtype.itemsize)], blob)
    # the shapes of inputs the caller named: the tensor's own shape
    by_name = {**{n: t for n, t in state.items()}, **{f"input{i}": a for i, a in enumerate(args) if isinstance(a, Tensor)}}
    for e in inputs:
        if e["name"] in by_name:
            e["shape"] = list(by_name[e["name"]].shape)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "graph.json"), "w") as f:
        f.write(_graph_json(body, names))
    io = {"inputs": inputs, "outputs": outputs, "vars": variables}
    with open(os.path.join(out, "io.json"), "w") as f:
        json.dump(io, f, indent=1)
        f.write("\n")
    write_safetensors(os.path.join(out, "inputs.safetensors"), tensors)
    return io

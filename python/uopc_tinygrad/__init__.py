"""Export what a tinygrad (>= 0.14) program computes as a uopc graph.

    uopc_tinygrad.export(fn, *args, out=DIR, model=None)

calls fn(*args) (it must return a Tensor or a tuple of Tensors), captures the one schedule call that
realizes the outputs (tinygrad's own transform_to_call: the function graph and the buffers it binds) and
writes into DIR:

  graph.json          the function graph in uopc's format (graph format v1, tinygrad 0.14.0's forms, which
                      uopc reads), every buffer PARAM named, every variable PARAM named by its user's name
                      (uopc's manifest also keeps tinygrad's positional p<slot> name for it); a parameter on
                      one device also has its tensor's shape (ParamArg.shape, uopc's own field: uopc-run
                      --outputs writes each output with it); every input but fn's Tensor arguments and state
                      is marked a weight (ParamArg.weight: uopc packs it for a tile once, not every run, and
                      uopc --emit library --embed-params bakes in only weights)
  io.json             {"inputs": [{"name", "slot", "dtype", "shape", "devices"}...],
                       "outputs": [...] (in the order fn returns them),
                       "vars": [{"name", "slot", "value", "min", "max"}...]}
  inputs.safetensors  every input's bytes, weights included

Names: the state-dict names of `model`'s tensors (tinygrad.nn.state.get_state_dict), input0, input1, ...
for the Tensor arguments (by position in args), output0, output1, ... for the results, buffer<slot> for any
other buffer the schedule reads (a tensor captured by fn's closure). A tensor on several devices is stored
once per device: NAME@0, NAME@1, ... in the order of its devices, each holding that device's shard (or
copy); a one-device tensor is NAME. uopc-run --inputs/--outputs FILE.safetensors use the same names.

fn runs with its realizes of what its arguments reach left lazy: a buffer that held data before the call and
that fn updates in place (a KV cache) is state, an inout parameter (io.json "state"), its current contents an
input; uopc-run --outputs writes its update under the same name.

Every input tensor is realized into a buffer of its own first (a tensor tinygrad would fold to a constant,
zeros or an arange, becomes real data), so that it is an input of the graph and can be given new values.
A parameter that is a view of a buffer (a slice tinygrad binds without copying, such as a realized
`t[1:3].contiguous()` captured by fn) is stored with its own elements, in order. A tensor on a device that
only stores data (DISK: `safe_load`, `Tensor(pathlib.Path)`; NPY; PYTHON) is copied to the device that reads
it and becomes an input under its own name, in its own shape and dtype (the file is never written). A
tensor with no elements is an empty buffer (a parameter of 0 elements, an empty safetensors entry). Every
dtype uopc and tinygrad share is exported; the two that safetensors has no code for (fp8e4m3fnuz,
fp8e5m2fnuz) only as intermediates, not as inputs or outputs.

An output no kernel would compute (an input returned as it is, reshaped or sliced; a value of constants
alone) is copied into a buffer of its own, and so is a result returned twice: every output is a parameter
of its own. tinygrad's @function calls (precompiled ones too) are inlined.

Refused by name, with the reason (ExportError, one line, names and other libraries' text quoted and cut at
about 200 characters): outputs of symbolic shape or with no elements, views on several devices, a read of
an argument's value on the host (.numpy(), .item(), .tolist(); an ONNX input used as a shape: its value
would be baked into the graph; export_onnx's consts, --const, fix such an input), and what tinygrad itself
cannot compute or read (its error quoted).
"""

__version__ = "0.1.0"  # uopc's (CMakeLists.txt project VERSION)
GRAPH_FORMAT_VERSION = 1  # the uopc-graph format version graph.json is written in

import base64
import dataclasses
import enum
import json
import math
import os
import struct

__all__ = ["export", "export_onnx", "ExportError", "DTYPE_NAMES", "write_safetensors", "read_safetensors"]


class ExportError(RuntimeError):
    """The exporter's own refusal: which tensor, and why (untrusted text in it quoted by _quote)."""


def _quote(text, limit=200):
    """text (a tensor name, a user's argument, another library's message) as one quoted line: control
    characters, quotes and backslashes escaped, at most `limit` characters of it, '...' after the quote where
    it was cut."""
    text = str(text)
    q = ""
    for c in text[:limit]:
        if c in "'\\":
            e = "\\" + c
        elif c.isprintable():
            e = c
        else:
            o = ord(c)
            e = f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"
        if len(q) + len(e) > limit:
            return "'" + q + "'..."
        q += e
    return "'" + q + "'" + ("..." if len(text) > limit else "")


def _tinygrad_error(e):
    """One line of what tinygrad (or fn) raised, quoted: its type and the start of its message."""
    return f"{type(e).__name__}: {_quote(str(e).strip(), 160)}"


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
    with open(path, "wb") as f:  # (blob by blob: VGG-19's 548 MB joined first took 1.8 s more)
        f.write(struct.pack("<Q", len(h)) + h)
        for blob in blobs:
            f.write(blob)


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


# devices that hold data but compute nothing (tinygrad copies from them): a tensor there is copied to the
# device that reads it before the capture, never written
_STORAGE_DEVICES = ("DISK", "NPY", "PYTHON", "TINYFS")
# ops that only look at their first source's elements (a view, a copy, a reinterpretation)
_VIEW_OP_NAMES = ("RESHAPE", "EXPAND", "PERMUTE", "PAD", "SHRINK", "FLIP", "BITCAST", "COPY", "CONTIGUOUS", "DETACH")


def _on_storage(device):
    devs = device if isinstance(device, tuple) else (device,)
    return any(isinstance(d, str) and d.split(":")[0].upper() in _STORAGE_DEVICES for d in devs)


def _describe(name, t):
    """'input0 (float32, shape (3, 4))' for messages: the name quoted, the dtype and the shape."""
    base = getattr(t.dtype, "base", t.dtype)
    return f"{_quote(name)} ({_dtype_table().get(base, getattr(base, 'name', base))}, shape {tuple(t.shape)})"


def _device_bytes(buf_uop, what):
    """Bytes per device of a BUFFER uop's (Multi)Buffer. A buffer never written (Tensor.empty) is allocated
    as tinygrad would when fn reads it: its contents are whatever the allocation holds."""
    b = buf_uop.buffer
    bufs = b.bufs if hasattr(b, "bufs") else [b]
    out = []
    for x in bufs:
        if _on_storage(x.device):
            raise ExportError(f"uopc_tinygrad.export: {what} is on {_quote(x.device)}, a device uopc cannot read; "
                              "copy it to the device that computes with it (.to(...)) inside fn")
        if x.nbytes == 0:  # tinygrad allocates nothing of no bytes
            out.append(b"")
            continue
        try:
            out.append(bytes(x.ensure_allocated().as_memoryview()))
        except Exception as e:  # noqa: BLE001  (tinygrad's own assertions, in the exporter's words)
            raise ExportError(f"uopc_tinygrad.export: tinygrad could not read the bytes of {what} on {_quote(x.device)} "
                              f"({_tinygrad_error(e)})") from e
    return out


_UINT_OF_SIZE = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}


def _raw_bytes(t):
    """t's elements as bytes, in order (every device's data gathered). Read as unsigned integers of t's item
    size (a bitcast): tinygrad has no Python format for bfloat16 or fp8, and a bfloat16 made by bitcast of a
    buffer needs no bfloat16 kernel this way."""
    _, _, dtypes, _, _ = _tg()
    if t.dtype != dtypes.bool and t.dtype.itemsize in _UINT_OF_SIZE:
        t = t.bitcast(getattr(dtypes, _UINT_OF_SIZE[t.dtype.itemsize]))
    return bytes(t._data())


def _view_bytes(r, what):
    """The elements of a parameter that is a view of a realized buffer (tinygrad binds a contiguous slice of
    a buffer, e.g. a realized `base[1:3].contiguous()`, without copying it), in order: what the kernels read
    as that parameter, one entry for its one device. None for a view on several devices."""
    _, Tensor, _, _, _ = _tg()
    if isinstance(r.device, tuple):
        return None
    try:
        return [_raw_bytes(Tensor(r))]
    except Exception as e:  # noqa: BLE001
        raise ExportError(f"uopc_tinygrad.export: tinygrad could not read the bytes of {what} "
                          f"({_tinygrad_error(e)})") from e


def _materialize(t, name):
    """Makes t a tensor backed by a buffer of its own (same shape, dtype, devices, sharding; an empty buffer
    for a tensor with no elements). Returns False for a tensor on a storage device (DISK: copied where it is
    read, after fn runs). A tensor of a weak dtype (which tinygrad cannot store) is left as it is."""
    _, Tensor, dtypes, _, _ = _tg()
    if _on_storage(t.device):
        return False
    if _buffer_of(t.uop) is not None:
        return True
    if t.dtype in (dtypes.weakint, dtypes.weakfloat):
        return True  # tinygrad stores no weak dtype (YOLOv8's anchors): left as computed, part of the graph
    devices = t.device if isinstance(t.device, tuple) else None
    if _zero_size(t) and not devices:  # no data: an empty buffer, a parameter of no elements
        t.replace(Tensor.empty(*t.shape, dtype=t.dtype, device=t.device))
        return True
    axis = t.uop.axis if devices else None
    try:
        data = _raw_bytes(t)
        new = Tensor(data, dtype=t.dtype, device=devices[0] if devices else t.device).reshape(t.shape)
        if devices:
            new = new.shard(devices, axis=axis) if axis is not None else new.shard(devices)
        new.realize()
    except Exception as e:  # noqa: BLE001  (what tinygrad cannot compute, in the exporter's words)
        raise ExportError(f"uopc_tinygrad.export: tinygrad could not compute {_describe(name, t)} before the "
                          f"export ({_tinygrad_error(e)})") from e
    t.replace(new)
    if _buffer_of(t.uop) is None:
        raise ExportError(f"uopc_tinygrad.export: could not give {_describe(name, t)} a buffer of its own")
    return True


def _materialize_many(given):
    """_materialize for many tensors at once (a model's weights). One at a time took two tinygrad schedules a
    tensor, each walking every live tensor: DenseNet-121's 848 ONNX initializers ~8 s of a 13.8-14.1 s export.
    Here an initializer, a copy of a byte range of the model's file (_storage_slice), is copied buffer to buffer
    into one of its own, no schedule; the other tensors are computed by one schedule for all of them and copied
    so. DenseNet-121's export 5.0-5.1 s, the same bytes written. Tensors on one device with elements, not on a
    storage device, without a buffer of their own; the others, and all where tinygrad refuses the batch, are left
    to _materialize, one by one, whose errors name the tensor."""
    _, Tensor, dtypes, _, _ = _tg()
    todo, seen = [], set()
    for _, t in given:
        if id(t) in seen or _on_storage(t.device) or isinstance(t.device, tuple) or _buffer_of(t.uop) is not None or \
                _zero_size(t) or t.dtype in (dtypes.weakint, dtypes.weakfloat):
            continue
        seen.add(id(t))
        todo.append(t)
    # a copy of a byte range of a file (an ONNX initializer): read from the file's buffer, no schedule
    rest = []
    for t in todo:
        data = _storage_slice(t)
        if data is None or not _fill_new(t, data):
            rest.append(t)
    todo = rest
    if len(todo) < 2:
        return
    try:
        # as _raw_bytes: read as unsigned integers of the item size (no Python format for bfloat16 or fp8)
        flat = [(t.bitcast(getattr(dtypes, _UINT_OF_SIZE[t.dtype.itemsize]))
                 if t.dtype != dtypes.bool and t.dtype.itemsize in _UINT_OF_SIZE else t).contiguous() for t in todo]
        Tensor.realize(*flat)
        buffers = [_buffer_of(f.uop) for f in flat]
        if any(b is None for b in buffers):
            return
        data = [_device_bytes(b, "a weight")[0] for b in buffers]
    except Exception:  # noqa: BLE001  (one by one instead: the error then names the tensor)
        return
    for t, d in zip(todo, data):
        _fill_new(t, d)


def _storage_slice(t):
    """Where t's uop is a copy of a byte range of a buffer on a storage device, as OnnxRunner makes an
    initializer (COPY(RESHAPE(BITCAST(SHRINK(BUFFER on DISK:model.onnx)))), SHRINK's margins (offset, size)): a view of
    those bytes in that buffer (a tinygrad Buffer), else None."""
    _, _, dtypes, _, Ops = _tg()
    def under_reshapes(u):
        while u.op is Ops.RESHAPE and u.src:
            u = u.src[0]
        return u
    u = under_reshapes(t.uop)
    if u.op is not Ops.COPY or not u.src:
        return None
    u = under_reshapes(u.src[0])
    if u.op is Ops.BITCAST and u.src:
        u = under_reshapes(u.src[0])
    if u.op is not Ops.SHRINK or len(u.src) != 3 or u.src[0].op is not Ops.BUFFER:
        return None
    b = u.src[0]
    try:
        if not _on_storage(b.device) or len(b.shape) != 1 or b.dtype.itemsize != 1 or len(u.marg) != 1:
            return None
        ((off, size),) = u.marg
        n = t.dtype.itemsize
        for d in t.shape:
            n *= d
        if not (isinstance(off, int) and isinstance(size, int) and isinstance(n, int)) or size != n or off < 0 or size < 1:
            return None
        whole = b.buffer.ensure_allocated()
        if off + size > whole.nbytes:
            return None
        return whole.view(size, dtypes.uint8, off)
    except Exception:  # noqa: BLE001  (not the form expected: the schedule instead)
        return None


def _fill_new(t, data):
    """t replaced by a new buffer of its shape, dtype and device holding `data` (bytes, or a tinygrad Buffer of
    as many bytes), copied buffer to buffer: no schedule. False where tinygrad gives no such buffer or copy
    (t is then left as it was)."""
    _, Tensor, dtypes, _, _ = _tg()
    from tinygrad.device import Buffer
    try:
        new = Tensor.empty(*t.shape, dtype=t.dtype, device=t.device)
        b = _buffer_of(new.uop)
        if b is None:
            return False
        src = data if isinstance(data, Buffer) else Buffer("PYTHON", len(data), dtypes.uint8, opaque=memoryview(bytearray(data)))
        if b.buffer.nbytes != src.nbytes:
            return False
        b.buffer.ensure_allocated().copy_from(src.ensure_allocated())
    except Exception:  # noqa: BLE001
        return False
    t.replace(new)
    return True


def _zero_size(t):
    return all(isinstance(d, int) for d in t.shape) and 0 in t.shape


def _device_list(t):
    return list(t.device) if isinstance(t.device, tuple) else [t.device]


def _realize_stored_reads(roots, stored_names, named):
    """Copies, before the capture, what the roots read from a storage device (DISK, NPY, PYTHON: a
    `safe_load` tensor, OnnxRunner's initializers) to the device that reads it, as a buffer of its own:
    uopc cannot read those devices, and tinygrad would read the whole file. A chain of views and copies over
    such a buffer is cut at the tensor the caller named (stored_names: uop -> name, a weight or an argument):
    that tensor becomes the input, under its name and in its shape, the views above it stay in the graph.
    named (buffer -> name) gets the new buffers. Returns the roots with the copies substituted."""
    _, Tensor, _, UOp, Ops = _tg()
    sink = UOp.sink(*roots)
    order = sink.toposort()
    stored = {}
    for u in order:
        if u.op is Ops.BUFFER:
            stored[u] = _on_storage(u.device)
        else:
            stored[u] = u.op.name in _VIEW_OP_NAMES and bool(u.src) and stored.get(u.src[0], False)
    repl = {}
    for u in order:
        if stored[u]:
            continue
        for top in u.src:
            if not stored.get(top) or top in repl:
                continue
            chain = [top]  # top down to the first named node, or to the buffer
            while chain[-1] not in stored_names and chain[-1].op is not Ops.BUFFER:
                chain.append(chain[-1].src[0])
            cut = chain[-1] if chain[-1] in stored_names else top
            name = stored_names.get(cut)
            above = chain[:chain.index(cut)][::-1]  # the views between the cut and top, bottom up
            copies = [v for v in above if v.op is Ops.COPY] + ([top] if top.op is Ops.COPY else [])
            target = copies[-1].device if copies else _consumer_device(u, roots)
            what = _describe(name, Tensor(cut)) if name else f"a tensor on {_quote(cut.device)} of shape {tuple(cut.shape)}"
            try:
                t = Tensor(cut)
                if _zero_size(t):  # nothing to copy (and tinygrad realizes nothing of no elements)
                    t = Tensor.empty(*t.shape, dtype=t.dtype, device=target if _on_storage(cut.device) else cut.device)
                else:
                    t = (t.to(target) if _on_storage(cut.device) else t).contiguous().realize()
            except Exception as e:  # noqa: BLE001
                raise ExportError(f"uopc_tinygrad.export: tinygrad could not copy {what} to {_quote(target)} "
                                  f"({_tinygrad_error(e)})") from e
            new = t.uop
            for v in above:  # the views above the cut, over the copy (a copy already made is dropped)
                if v.op is not Ops.COPY:
                    new = v.replace(src=(new, *v.src[1:]))
            repl[top] = new
            if name is not None and _buffer_of(t.uop) is not None:
                named.setdefault(_buffer_of(t.uop), name)
    if not repl:
        return list(roots)
    return list(sink.substitute(repl).src)


def _consumer_device(u, roots):
    """The device a node computes on (the first root's for the sink), where a stored tensor it reads goes."""
    try:
        d = u.device
    except Exception:  # noqa: BLE001
        d = None
    if d is None or _on_storage(d):
        d = next((r.device for r in roots if not _on_storage(r.device)), None)
    if d is None:
        from tinygrad import Device
        d = Device.DEFAULT
    return d


def _call_lazily(fn, args, in_name):
    """fn(*args) with every realize of what depends on the arguments left lazy (a forward ending in
    .realize(), a KV cache written with assign(...).realize()): the export captures what tinygrad would run,
    outputs and state updates, as one graph, and so is a realize of what a symbolic variable reaches (a
    Variable bound inside fn: GPT-2's decode step, tokens and start_pos). A realize of what neither reaches
    (OnnxRunner's shape constants) runs: its value is the same for every input. A read on the host of what an
    argument reaches (.numpy(), .item(), .tolist(): an argument used as a shape, a loop count) is refused,
    naming the argument: its value would be baked into the graph (every host read goes through
    Tensor._buffer). A TinyJit runs its function. Returns (outputs, state): the tensors that held a buffer
    before fn and an update of it after (the state fn writes in place)."""
    _, Tensor, _, _, Ops = _tg()
    from tinygrad.tensor import all_tensors
    arg_of = {}
    for j, a in enumerate(args):
        if isinstance(a, Tensor) and _buffer_of(a.uop) is not None:
            arg_of.setdefault(_buffer_of(a.uop), j)
    roots = set(arg_of)
    before = {}
    for ref in list(all_tensors):
        t = ref()
        if t is not None and _buffer_of(t.uop) is not None:
            before[id(t)] = (t, t.uop)
    original, original_buffer = Tensor.realize, Tensor._buffer
    from tinygrad.engine.jit import _TinyJit
    original_jit = _TinyJit.__call__

    from tinygrad.dtype import AddrSpace

    def is_input(u):  # an argument's buffer, or a symbolic variable (a bound Variable: a BUFFER of the ALU space)
        return u.op is Ops.BUFFER and (u in roots or getattr(u, "addrspace", None) is AddrSpace.ALU)

    def lazy(self, *lst, **kw):
        if any(any(is_input(u) for u in t.uop.toposort()) for t in (self, *lst)):
            return self
        return original(self, *lst, **kw)

    def guarded_buffer(self):
        j = next((arg_of[u] for u in self.uop.toposort() if u.op is Ops.BUFFER and u in arg_of), None) if roots else None
        if j is not None:
            raise ExportError(f"uopc_tinygrad.export: fn reads input {j} {_quote(in_name(j))} on the host (.numpy(), "
                              ".item(), .tolist(), or an ONNX input used as a shape, axes or a count): its value would "
                              "be baked into the graph; make it a constant of fn (ONNX: --const NAME=V0,V1,...)")
        return original_buffer(self)
    def unjitted(self, *a, **kw):
        # a TinyJit method (RNN-T's, a forward users jit) runs its function: captured, or replaying kernels it
        # captured before, it would compute on the buffers and the graph would only copy what they hold
        if self.fxn is None:
            raise ExportError("uopc_tinygrad.export: fn calls a TinyJit that has no function (a loaded capture): "
                              "export the function it was made from")
        return self.fxn(*a, **kw)
    Tensor.realize, Tensor._buffer, _TinyJit.__call__ = lazy, guarded_buffer, unjitted
    try:
        outs = fn(*args)
    except ExportError:
        raise
    except Exception as e:  # noqa: BLE001  (what tinygrad says when fn reads a value left lazy)
        raise ExportError(f"uopc_tinygrad.export: fn failed with its realizes of what its arguments reach left lazy "
                          f"({_tinygrad_error(e)}); a function that reads such a value on the host "
                          "(.numpy(), .item(), .tolist(), data-dependent control flow) cannot be captured") from e
    finally:
        Tensor.realize, Tensor._buffer, _TinyJit.__call__ = original, original_buffer, original_jit
    state = [(t, u) for t, u in before.values() if t.uop is not u and _buffer_of(t.uop) is None]
    return outs, state


def _inline_function(c):
    """A FUNCTION's body with its PARAMs bound to the call's sources (for _inline_functions' matcher: tinygrad's
    pattern matchers take module-level functions, no closures). The calls inside the body are inlined first,
    in the body's own parameters, so that no PARAM of an inner function (whose slots are its own, and which
    may be the very same node as one of the outer's) is bound to the outer call's sources."""
    _, _, _, UOp, Ops = _tg()
    from tinygrad.uop.ops import graph_rewrite
    body = graph_rewrite(c.src[0], _function_matcher(), name="uopc: inline functions")
    params = [u for u in body.toposort() if u.op is Ops.PARAM and u.arg.slot >= 0]
    args = c.src[1:]
    if any(p.arg.slot >= len(args) for p in params):
        raise ExportError(f"uopc_tinygrad.export: a @function call binds {len(args)} argument(s) but its body reads "
                          f"parameter {max(p.arg.slot for p in params)}; not supported")
    return body.substitute({p: args[p.arg.slot] for p in params}, walk=True)


def _tuple_element(g, t):
    return t.src[g.arg] if isinstance(g.arg, int) and 0 <= g.arg < len(t.src) else None


_FUNCTION_MATCHER = []


def _function_matcher():
    if not _FUNCTION_MATCHER:
        Ops = _tg()[4]
        from tinygrad.uop.ops import PatternMatcher, UPat
        _FUNCTION_MATCHER.append(PatternMatcher([
            (UPat(Ops.FUNCTION, name="c"), _inline_function),
            (UPat(Ops.GETTUPLE, src=(UPat(Ops.TUPLE, name="t"),), name="g"), _tuple_element)]))
    return _FUNCTION_MATCHER[0]


def _inline_functions(roots):
    """roots with every tinygrad FUNCTION (a @function's call: its body, PARAMs bound to the call's sources)
    replaced by its body, the precompiled ones (@function(precompile=True)) too, and each GETTUPLE of the
    resulting TUPLE by its element: tinygrad's scheduler inlines the others the same way (resolve_function);
    a precompiled one it would compile as a program of its own, which uopc's graph has no form for, and
    inlined it computes the same values."""
    _, _, _, UOp, Ops = _tg()
    from tinygrad.uop.ops import graph_rewrite
    if not any(u.op is Ops.FUNCTION for u in UOp.sink(*roots).toposort()):
        return roots
    return list(graph_rewrite(UOp.sink(*roots), _function_matcher(), name="uopc: inline functions").src)


def _writes(body):
    """{slot: [AFTER nodes]} of the PARAMs the call body stores into (through any view of them)."""
    _, _, _, _, Ops = _tg()
    written = {}
    for u in body.toposort():
        if u.op is not Ops.AFTER or len(u.src) < 2 or u.src[1].op is not Ops.STORE:
            continue
        p = u.src[0]
        while p.op is not Ops.PARAM and p.src:
            p = p.src[0]
        if p.op is Ops.PARAM:
            written.setdefault(p.arg.slot, []).append(u)
    return written


def _inline_internal(body, internal, written):
    """The body with each internal buffer (written and read by the call, neither an input nor an output:
    `.contiguous()`, `Tensor.zeros/full` inside fn) turned into a CONTIGUOUS of the value stored into it, so
    that uopc keeps it as an intermediate of its own; several whole stores one after the other (`+=`) into
    one CONTIGUOUS each. Returns (body, slots it could not inline)."""
    _, _, dtypes, UOp, Ops = _tg()
    repl, left = {}, []
    for slot in internal:
        afters = written[slot]
        # whole stores of the buffer, one after the other: the first's target a view of the PARAM (its
        # reshape), each later one's the AFTER of the one before (`b = Tensor.zeros_like(x); b += ...; b += ...`,
        # T5's relative position buckets); each value may read what the stores before left
        roots = [a for a in afters if a.src[0] not in afters]
        chain = roots if len(roots) == 1 else []
        while chain and len(chain) < len(afters):
            nxt = [a for a in afters if a.src[0] is chain[-1]]
            if len(nxt) != 1:
                break
            chain.append(nxt[0])
        if len(chain) != len(afters) or any(a.src[1].op is not Ops.STORE or a.src[1].src[0] is not a.src[0] for a in chain):
            left.append(slot)
            continue
        done = {}
        for a in chain:
            value = a.src[1].src[1]
            if done:
                value = value.substitute(done)
            if value.dtype != a.dtype:
                value = value.cast(a.dtype)
            done[a] = UOp(Ops.CONTIGUOUS, a.dtype, (value,))
        repl.update(done)
    if not repl:
        return body, left
    new = body.substitute(repl)
    keep = [n for s, n in zip(body.src, new.src) if s not in repl]
    return UOp.sink(*keep), left


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


def _graph_json(body, names, shapes=None, weights=()):
    """graph format v1 text of the function body; `names`: slot -> PARAM name; `shapes`: slot -> the shape of
    the tensor bound to it (ParamArg.shape, uopc's own field: the manifest's and uopc-run's shape); `weights`:
    the slots of weights, the same in every run (ParamArg.weight, uopc's own field: their packs run once)."""
    shapes = shapes or {}
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
            if u.op is Ops.PARAM and isinstance(n["arg"], dict) and getattr(arg, "slot", -1) in shapes:
                n["arg"]["shape"] = [int(d) for d in shapes[arg.slot]]
            if u.op is Ops.PARAM and isinstance(n["arg"], dict) and getattr(arg, "slot", -1) in weights:
                n["arg"]["weight"] = True
        nodes.append(n)
    try:
        from importlib.metadata import version
        tg_version = version("tinygrad")
    except Exception:  # noqa: BLE001  (a source checkout)
        tg_version = "unknown"
    producer = {"name": "tinygrad", "version": tg_version, "exporter": f"uopc_tinygrad {__version__}"}
    lines = ",\n".join(json.dumps(n, separators=(",", ":")) for n in nodes)
    return ('{"format":"uopc-graph","version":%d,"producer":%s,"semantics":{"pad_fill":"zero"},"nodes":[\n%s\n],"root":%d}\n'
            % (GRAPH_FORMAT_VERSION, json.dumps(producer, separators=(",", ":")), lines, ids[body]))


def export(fn, *args, out, model=None, input_names=None, output_names=None):
    """Runs fn(*args) symbolically and writes out/graph.json, out/io.json and out/inputs.safetensors.

    input_names/output_names replace input0.../output0... (the ONNX path names them as its graph does).
    Returns the io.json dictionary. See the module docstring for the names and files. Raises ExportError,
    naming the tensor and why, for what cannot be exported."""
    tinygrad, Tensor, dtypes, UOp, Ops = _tg()

    def in_name(i):
        return input_names[i] if input_names else f"input{i}"

    def out_name(j):
        return output_names[j] if output_names else f"output{j}"
    state = {}
    if model is not None:
        from tinygrad.nn.state import get_state_dict
        state = get_state_dict(model)
    named, stored_names = {}, {}
    given = [(name, t) for name, t in state.items()] + [(in_name(i), a) for i, a in enumerate(args) if isinstance(a, Tensor)]
    _materialize_many(given)
    for name, t in given:
        if not _materialize(t, name):
            stored_names.setdefault(t.uop, name)
    for name, t in given:
        if _buffer_of(t.uop) is not None:
            named.setdefault(_buffer_of(t.uop), name)

    outs, state_tensors = _call_lazily(fn, args, in_name)
    outs = tuple(outs) if isinstance(outs, (tuple, list)) else (outs,)
    if not outs or not all(isinstance(o, Tensor) for o in outs):
        raise TypeError("uopc_tinygrad.export: fn must return a Tensor or a tuple of Tensors")
    for j, o in enumerate(outs):
        try:  # tinygrad finds a shape error only when the shape is asked for
            o.shape
        except Exception as e:  # noqa: BLE001
            raise ExportError(f"uopc_tinygrad.export: tinygrad cannot compute output {j} {_quote(out_name(j))} of fn "
                              f"({_tinygrad_error(e)})") from e
        if o.dtype in (dtypes.weakint, dtypes.weakfloat):
            raise ExportError(f"uopc_tinygrad.export: output {j} {_quote(out_name(j))} has the weak dtype {o.dtype.name}; "
                              "cast it to a concrete dtype first")
        if all(isinstance(d, int) for d in o.shape) and 0 in o.shape:
            raise ExportError(f"uopc_tinygrad.export: output {j} {_describe(out_name(j), o)} has no elements: tinygrad "
                              "computes no buffer for it and uopc has no zero-size parameter; return only results "
                              "with elements")
    try:
        return _export_captured(outs, state_tensors, args, out, named, stored_names, state, in_name, out_name)
    except (ExportError, OSError):
        raise
    except Exception as e:  # noqa: BLE001  (what no check above foresaw: still one line of the exporter's)
        raise ExportError(f"uopc_tinygrad.export: tinygrad failed while the exporter read fn's graph "
                          f"({_tinygrad_error(e)})") from e
    finally:
        for t, u in state_tensors:  # the model as it was: its state's updates were only captured
            t.uop = u


def _export_captured(outs, state_tensors, args, out, named, stored_names, state, in_name, out_name):
    tinygrad, Tensor, dtypes, UOp, Ops = _tg()
    from tinygrad.tensor import transform_to_call
    roots = _realize_stored_reads([o.uop for o in outs] + [t.uop for t, _ in state_tensors], stored_names, named)
    roots = _inline_functions(roots)
    outs = [Tensor(r) if r is not o.uop else o for r, o in zip(roots, outs)]
    state_roots = roots[len(outs):]
    # an output that is a view (logits[:, -1, :]) or a buffer fn did not compute gets a buffer of its own: a
    # view of what fn computes a CONTIGUOUS; one of a buffer that held data before fn (an input returned as it
    # is, reshaped or sliced) or of a value tinygrad never stores (a virtual one, computed from constants
    # alone: an arange) a copy into a new buffer (tinygrad turns a CONTIGUOUS of the first back into a view of
    # the same buffer and realizes none of the second, and no kernel would write either)
    # A buffer that is neither an argument nor a weight was computed while fn ran, from neither: its copy would
    # bake the export's value into the graph, so it is refused.
    def own_buffer(j, o):
        base = o.uop.base
        if _buffer_of(base) is not None and _buffer_of(base) not in named:
            raise ExportError(f"uopc_tinygrad.export: output {j} {_describe(out_name(j), o)} is a buffer computed "
                              "before the graph (realized while fn ran from no argument and no variable): its "
                              "value would be baked into the graph; pass what it is computed from as an argument "
                              "(a Tensor, or a Variable for a position)")
        if _buffer_of(base) is not None or getattr(base, "is_virtual", False):
            return o.clone()
        return o if o.uop is base and _buffer_of(o.uop) is None else o.contiguous()
    outs = tuple(own_buffer(j, o) for j, o in enumerate(outs))
    # (and so does an output fn returns twice: each a buffer of its own)
    outs = tuple(o.clone() if any(o.uop is p.uop for p in outs[:j]) else o for j, o in enumerate(outs))
    try:
        call, buffer_map = transform_to_call(UOp.sink(*[o.uop for o in outs], *state_roots))
    except Exception as e:  # noqa: BLE001
        raise ExportError(f"uopc_tinygrad.export: tinygrad could not schedule fn's outputs ({_tinygrad_error(e)})") from e
    body, repl = call.src[0], call.src[1:]
    slot_of = {r: i for i, r in enumerate(repl)}
    table = _dtype_table()

    def dtype_name(dt, what):
        dt = getattr(dt, "base", dt)
        if dt not in table:
            raise ExportError(f"uopc_tinygrad.export: {what} has the dtype {getattr(dt, 'name', dt)}, which uopc has no name for")
        name = table[dt]
        if name not in SAFETENSORS_CODES:
            raise ExportError(f"uopc_tinygrad.export: {what} has the dtype {name}, which safetensors has no code for "
                              "(inputs.safetensors and uopc-run --inputs/--outputs could not hold it); bitcast it to "
                              "uint8 where fn takes or returns it")
        return name

    outputs, out_slots = [], {}
    for j, o in enumerate(outs):
        if not all(isinstance(d, int) for d in o.shape):
            shape = tuple(d if isinstance(d, int) else "<symbolic>" for d in o.shape)
            raise ExportError(f"uopc_tinygrad.export: output {j} {_quote(out_name(j))} has a symbolic shape {shape}: "
                              "not supported (uopc would have to keep the elements past its size; return a fixed-size tensor)")
        storage = buffer_map.get(o.uop)
        b = _buffer_of(storage) if storage is not None else None
        if b is None or b not in slot_of:
            raise ExportError(f"uopc_tinygrad.export: output {j} {_describe(out_name(j), o)} is computed by no kernel "
                              "of the schedule (is it one of the inputs?)")
        out_slots[slot_of[b]] = out_name(j)
        devs = list(o.device) if isinstance(o.device, tuple) else [o.device]
        outputs.append({"name": out_name(j), "slot": slot_of[b], "dtype": dtype_name(o.dtype, f"output {j} {_quote(out_name(j))}"),
                        "shape": list(o.shape), "devices": devs})

    # buffers the call writes that are not outputs: created inside fn (.contiguous(), Tensor.zeros)
    written = _writes(body)
    # state: buffers that held data before fn and that fn updates in place (a KV cache): inout parameters
    state_bufs = {_buffer_of(u) for _, u in state_tensors} - {None}
    state_slots = {i for i in written if repl[i] in state_bufs and i not in out_slots}
    internal = [i for i in sorted(written) if i not in out_slots and i not in state_slots]
    body, left = _inline_internal(body, internal, written)
    if left:
        raise ExportError(f"uopc_tinygrad.export: fn writes buffer parameter(s) {left} in a form the exporter "
                          "cannot inline (several or partial stores into a buffer fn created); not supported")
    internal = set(internal)

    names, inputs, variables, tensors = {}, [], [], {}
    for i, r in enumerate(repl):
        if i in out_slots:
            names[i] = out_slots[i]
            continue
        if i in internal:
            continue
        if r.op is Ops.AFTER and getattr(r, "is_bound_var", False):
            var, value = r.src[0], r.src[1].src[1].arg
            lo, hi = var.arg.vmin_vmax
            names[i] = var.arg.name
            variables.append({"name": var.arg.name, "slot": i, "value": value, "min": lo, "max": hi})
            continue
        name = named.get(r, f"state{i}" if i in state_slots else f"buffer{i}")
        what = f"parameter {i} {_quote(name)}"
        dt = dtype_name(r.dtype, what)
        # a view of a buffer (a slice tinygrad binds without copying): its own elements are the input
        data = _device_bytes(r, what) if r.op is Ops.BUFFER else _view_bytes(r, what)
        if data is None:
            raise ExportError(f"uopc_tinygrad.export: {what} is a {r.op.name} of a buffer on several devices "
                              "(a view); make the tensor contiguous on each device before calling fn")
        names[i] = name
        devs = list(r.device) if isinstance(r.device, tuple) else [r.device]
        per_device = len(data[0]) // max(1, r.dtype.itemsize) if data else 0
        inputs.append({"name": name, "slot": i, "dtype": dt, "shape": [per_device], "devices": devs,
                       **({"state": True} if i in state_slots else {})})
        for d, blob in enumerate(data):
            key = name if len(data) == 1 else f"{name}@{d}"
            tensors[key] = (SAFETENSORS_CODES[dt], [len(blob) // max(1, r.dtype.itemsize)], blob)
    # the shapes of inputs the caller named: the tensor's own shape
    by_name = {**{n: t for n, t in state.items()}, **{in_name(i): a for i, a in enumerate(args) if isinstance(a, Tensor)}}
    for e in inputs:
        t = by_name.get(e["name"])
        if t is not None and all(isinstance(d, int) for d in t.shape) and not _on_storage(t.device):
            e["shape"] = list(t.shape)
        elif t is not None and e["name"] in tensors and len(e["devices"]) == 1:
            # copied from a storage device: the shape of the copy, which is the named tensor's
            e["shape"] = list(t.shape)
        if e["name"] in tensors and math.prod(e["shape"]) == math.prod(tensors[e["name"]][1]):
            # one device: the safetensors entry takes the tensor's shape too (a sharded one stays per device)
            code, _, blob = tensors[e["name"]]
            tensors[e["name"]] = (code, list(e["shape"]), blob)
    # the weights: every input but fn's Tensor arguments and state (model's state-dict tensors, ONNX initializers,
    # tensors fn's closure captured), the same in every run
    arg_names = {in_name(i) for i, a in enumerate(args) if isinstance(a, Tensor)}
    weights = {e["slot"] for e in inputs if e["name"] not in arg_names and not e.get("state")}
    # the tensors' shapes for the PARAMs (one device's elements: a parameter on several devices stays flat)
    shapes = {e["slot"]: e["shape"] for e in inputs + outputs
              if len(e["devices"]) == 1 and all(isinstance(d, int) and d >= 0 for d in e["shape"])}
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "graph.json"), "w") as f:
        f.write(_graph_json(body, names, shapes, weights))
    # state: read and updated in place; uopc-run --outputs writes it under the same name, the next run's input
    io = {"inputs": inputs, "outputs": outputs, "vars": variables, "state": [e["name"] for e in inputs if e.get("state")]}
    with open(os.path.join(out, "io.json"), "w") as f:
        json.dump(io, f, indent=1)
        f.write("\n")
    write_safetensors(os.path.join(out, "inputs.safetensors"), tensors)
    return io


def export_onnx(path, out, shapes=None, seed=0, dynamic=None, consts=None):
    """Exports an ONNX model through tinygrad's OnnxRunner: out/graph.json, io.json, inputs.safetensors.

    Inputs and outputs keep their ONNX names, initializers too (as inputs of the graph: the weights). shapes:
    {input name: (shape tuple, dtype name or None)} for inputs whose ONNX shape has a named (dynamic) dimension
    or that should take another size; every other input takes its ONNX shape. The inputs written are seeded
    random values (normal floats, zeros for integers).

    dynamic: {dimension name: (min, max)} keeps named dimensions of the ONNX inputs symbolic: each is a uopc
    variable of that name and range (uopc-run --var NAME=SIZE), bound to max in the export. An input's buffer
    holds max along such a dimension and the graph reads its first SIZE; an output whose size depends on one is
    stored at its largest size, its elements past SIZE zeros. io.json's inputs and outputs list them
    ("dynamic": {axis: size}).

    consts: {input name: list of numbers}: the input takes these values (in the shape --input gives, else 1-D)
    in the export and is no input of the graph: the graph is specialized to them (a shape, axes or a count the
    model reads on the host, such as Expand's shape; an input read so and not given here is refused by name).
    Returns the io.json dictionary."""
    _, Tensor, dtypes, _, _ = _tg()
    from tinygrad import Variable
    from tinygrad.nn.onnx import OnnxRunner
    shapes, dynamic, consts = dict(shapes or {}), dict(dynamic or {}), dict(consts or {})
    for dim, (lo, hi) in dynamic.items():
        if not (dim.isascii() and dim.isidentifier()):
            raise ExportError(f"uopc_tinygrad: --dynamic {_quote(dim)}: a uopc variable's name is a C identifier "
                              "(letters, digits, _); rename the ONNX dimension")
        if not (isinstance(lo, int) and isinstance(hi, int) and 1 <= lo <= hi):
            raise ExportError(f"uopc_tinygrad: --dynamic {_quote(dim)}={lo}:{hi}: expects 1 <= MIN <= MAX")
    bound = {dim: Variable(dim, lo, hi).bind(hi) for dim, (lo, hi) in dynamic.items()}

    class Runner(OnnxRunner):
        def _parse_input(self, name, value, spec):
            # OnnxRunner compares every size as an int; a dynamic dimension is the bound variable itself
            if not isinstance(value, Tensor) or all(isinstance(d, int) for d in value.shape):
                return super()._parse_input(name, value, spec)
            for axis, (want, got) in enumerate(zip(spec.shape, value.shape, strict=True)):
                if isinstance(want, str):
                    want = bound[want] if want in bound else self.variable_dims.setdefault(want, got)
                if got is not want and not (isinstance(got, int) and isinstance(want, int) and got == want):
                    raise ExportError(f"uopc_tinygrad: ONNX input {_quote(name)} axis {axis}: the model's size does not "
                                      "match the dynamic one")
            return value
    try:
        runner = Runner(path)
    except Exception as e:  # noqa: BLE001
        raise ExportError(f"uopc_tinygrad: tinygrad's OnnxRunner cannot read {_quote(path)} ({_tinygrad_error(e)})") from e
    unused = set(dynamic) - {d for spec in runner.graph_inputs.values() for d in spec.shape if isinstance(d, str)}
    if unused:
        raise ExportError(f"uopc_tinygrad: --dynamic {_quote(', '.join(sorted(unused)))}: no ONNX input has a dimension "
                          "of that name")
    names, args, dyn_axes, fixed = [], [], {}, {}
    Tensor.manual_seed(seed)
    for name, spec in runner.graph_inputs.items():
        axes = {a: d for a, d in enumerate(spec.shape) if isinstance(d, str) and d in dynamic}
        shape, dtname = shapes.pop(name, (None, None))
        if name in consts:
            values = consts.pop(name)
            dt = getattr(dtypes, dtname) if dtname and isinstance(getattr(dtypes, dtname, None), type(dtypes.float32)) \
                else spec.dtype
            if shape is None:
                shape = (len(values),)
            if not dtypes.is_float(dt) and any(not isinstance(v, int) for v in values):
                raise ExportError(f"uopc_tinygrad: --const {_quote(name)}: the input is {dt.name}; its values must be "
                                  "integers")
            if math.prod(shape) != len(values) or axes:
                raise ExportError(f"uopc_tinygrad: --const {_quote(name)}: {len(values)} values for the shape {shape}" +
                                  ("" if not axes else " (a constant has no dynamic dimension)"))
            try:
                fixed[name] = Tensor(values, dtype=dt).reshape(shape).contiguous().realize()
            except Exception as e:  # noqa: BLE001
                raise ExportError(f"uopc_tinygrad: --const {_quote(name)}: tinygrad could not make it as {dt.name} "
                                  f"({_tinygrad_error(e)})") from e
            continue
        if shape is None:
            if not all(isinstance(d, int) or d in dynamic for d in spec.shape):
                dims = _quote(", ".join(str(d) for d in spec.shape))
                raise ExportError(f"uopc_tinygrad: ONNX input {_quote(name)} has the dynamic shape ({dims}); give its "
                                  "size with --input NAME=D0,D1,... or keep a named dimension symbolic with "
                                  "--dynamic DIM=MIN:MAX")
            shape = tuple(dynamic[d][1] if isinstance(d, str) else d for d in spec.shape)
        elif any(a >= len(shape) or shape[a] != dynamic[d][1] for a, d in axes.items()):
            raise ExportError(f"uopc_tinygrad: --input {_quote(name)}: its dynamic dimensions hold their largest size "
                              f"(--dynamic MAX), {_quote({a: dynamic[d][1] for a, d in axes.items()})} by axis")
        if dtname and not isinstance(getattr(dtypes, dtname, None), type(dtypes.float32)):
            raise ExportError(f"uopc_tinygrad: --input {_quote(name)}: no dtype {_quote(dtname)} (float32, int64, ...)")
        dt = getattr(dtypes, dtname) if dtname else spec.dtype
        nbytes = math.prod(shape) * dt.itemsize
        if nbytes > _physical_memory():
            raise ExportError(f"uopc_tinygrad: ONNX input {_quote(name)} of shape {shape} and dtype {dt.name} takes "
                              f"{nbytes / 2**30:.1f} GiB, more than this machine's memory "
                              f"({_physical_memory() / 2**30:.1f} GiB); give it a smaller size with --input NAME=D0,D1,...")
        try:
            x = Tensor.randn(*shape, dtype=dt) if dtypes.is_float(dt) else Tensor.zeros(*shape, dtype=dt)
            args.append(x.contiguous().realize())
        except Exception as e:  # noqa: BLE001
            raise ExportError(f"uopc_tinygrad: tinygrad could not make the random input {_quote(name)} of shape "
                              f"{shape} and dtype {dt.name} ({_tinygrad_error(e)})") from e
        names.append(name)
        dyn_axes[name] = axes
    if shapes or consts:
        raise ExportError(f"uopc_tinygrad: the ONNX model has no input(s) {_quote(', '.join(sorted({*shapes, *consts})))}; "
                          f"it has {_quote(', '.join(runner.graph_inputs))}")
    outputs = list(runner.graph_outputs)
    weights = {k: v for k, v in runner.graph_values.items() if isinstance(v, Tensor)}
    weights.update(fixed)  # a constant a kernel reads is a weight of its own name
    out_dyn = {}

    def fn(*xs):
        feed = dict(fixed)
        for name, x in zip(names, xs):
            axes = dyn_axes[name]
            feed[name] = x.shrink(tuple((0, bound[axes[a]]) if a in axes else None for a in range(x.ndim))) if axes else x
        try:
            res = runner(feed)
        except ExportError:
            raise
        except Exception as e:  # noqa: BLE001  (an operator OnnxRunner lacks, or cannot trace with a symbolic size)
            raise ExportError(f"uopc_tinygrad: tinygrad's OnnxRunner failed on {_quote(path)}" +
                              (f" with {_quote(', '.join(dynamic))} symbolic" if dynamic else "") +
                              f" ({_tinygrad_error(e)})" + ("; a size the graph fixes (a Reshape to a constant "
                                                            "shape) cannot follow a dynamic one" if dynamic else "")) from e
        outs = []
        for o in outputs:
            t = res[o]
            sym = {a: d for a, d in enumerate(t.shape) if not isinstance(d, int)}
            if sym:  # stored at its largest size, zeros past the dynamic one
                out_dyn[o] = {a: _size_text(d) for a, d in sym.items()}
                t = t.pad(tuple((0, d.vmax - d) if a in sym else None for a, d in enumerate(t.shape)))
            outs.append(t)
        return tuple(outs)
    io = export(fn, *args, out=out, model=weights, input_names=names, output_names=outputs)
    if dynamic:
        for e in io["inputs"]:
            if dyn_axes.get(e["name"]):
                e["dynamic"] = {str(a): d for a, d in dyn_axes[e["name"]].items()}
        for e in io["outputs"]:
            if e["name"] in out_dyn:
                e["dynamic"] = {str(a): d for a, d in out_dyn[e["name"]].items()}
        with open(os.path.join(out, "io.json"), "w") as f:
            json.dump(io, f, indent=1)
            f.write("\n")
    return io


def _physical_memory():
    """This machine's memory in bytes (an input larger than it could only end in the OOM killer)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def _size_text(d):
    """A symbolic size as text: the variable's name, or tinygrad's rendering of the expression."""
    try:
        return d.render(simplify=True) if hasattr(d, "render") else str(d)
    except Exception:  # noqa: BLE001
        return "symbolic"

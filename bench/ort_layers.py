#!/usr/bin/env python3
"""ONNX Runtime's time per layer, to set beside uopc's per kernel (`uopc-run MANIFEST --inputs ... --bench N`).

ORT's own profiler (SessionOptions.enable_profiling) on MODEL.onnx, --threads intra-op threads (2, as
bench/networks.py), --runs timed runs after 3 warm-up runs: per node of ORT's optimized graph (its convolutions
fused with their batch norm, ReLU and residual add, in NCHWc blocks), the least time over the runs, the
operator, its input and output shapes as ORT reports them, and for a convolution its flops (2 x output elements
x weight elements per output channel) and GFLOP/s. A network's uopc kernels and ORT's nodes are not one to one
(uopc fuses a downsample branch into its block's last 1x1 convolution, ORT fuses a residual add into a
convolution); match them by shape and flops. The input: seeded normal values of the model's input shape.
Figures only, never asserted.

  build/tinygrad-venv/bin/python bench/ort_layers.py build/networks/resnet50/resnet50.onnx --top 30
"""
import argparse
import collections
import json
import math
import os
import tempfile
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--top", type=int, default=40, help="print the N slowest nodes (0: all)")
    args = ap.parse_args()
    import onnxruntime as ort

    with tempfile.TemporaryDirectory(prefix="ort-layers-") as d:
        so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = args.threads, 1
        so.enable_profiling, so.profile_file_prefix = True, os.path.join(d, "profile")
        s = ort.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(0)
        feed = {i.name: rng.standard_normal([x if isinstance(x, int) else 1 for x in i.shape]).astype(np.float32)
                for i in s.get_inputs()}
        for _ in range(3):
            s.run(None, feed)
        best = math.inf
        for _ in range(args.runs):
            t0 = time.perf_counter()
            s.run(None, feed)
            best = min(best, time.perf_counter() - t0)
        with open(s.end_profiling()) as f:
            events = json.load(f)
    times, info = collections.defaultdict(list), {}
    for e in events:
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time"):
            continue
        name = e["name"][: -len("_kernel_time")]
        times[name].append(e["dur"])
        a = e.get("args", {})
        ins = [list(x.values())[0] for x in a.get("input_type_shape", [])]
        outs = [list(x.values())[0] for x in a.get("output_type_shape", [])]
        flops = 0
        if a.get("op_name") == "Conv" and len(ins) > 1 and outs:
            flops = 2 * math.prod(outs[0]) * math.prod(ins[1][1:])
        info[name] = (a.get("op_name", "?"), ins[:2], outs[:1], flops)
    rows = sorted(((min(t[-args.runs:]), n) for n, t in times.items()), reverse=True)
    total = sum(us for us, _ in rows)
    print(f"{os.path.basename(args.model)}: ORT best run {best * 1e3:.2f} ms, sum of node minima {total / 1e3:.2f} ms, "
          f"{len(rows)} nodes, {args.threads} threads")
    by_op = collections.Counter()
    for us, n in rows:
        by_op[info[n][0]] += us
    print("by operator, ms: " + ", ".join(f"{op} {us / 1e3:.2f}" for op, us in by_op.most_common()))
    for us, n in rows[: args.top or None]:
        op, ins, outs, flops = info[n]
        rate = f"{flops / us / 1e3:6.0f} GFLOP/s" if flops and us else " " * 14
        print(f"  {us:9.1f} us  {op:16s} {flops / 1e6:7.0f} Mflop {rate}  in {ins} out {outs}")


if __name__ == "__main__":
    main()

"""The table of hostile names (issue 30): for each row, compiles a graph whose parameters (or variable) carry
those names with `uopc --emit library` and `uopc -o`, then builds what it wrote: NAME.c with gcc -Wall
-Werror in its default (GNU) mode and in -std=c11, the header alone with g++ -Wall -Werror, and every kernel
file with gcc -Wall -Werror; with a parameter's weights given by file (--embed-params as binary data and as C
text, --params-file), NAME.c and NAME_params.S too; and checks that no name reached a comment end or a line break. Prints one
line per row, `ok ROW` or `FAIL ROW: why`. Usage: hostile-names.py UOPC GRAPH_SCRIPT WORKDIR"""
import json
import os
import struct
import subprocess
import sys

uopc, graph_script, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)

# (row label, mode, names): params names are (output, x, y); var names one variable
ROWS = [
    ("comment-end", "params", ["out", "n*/ __attribute__((constructor)) static void evil(void){} /*", "y"]),
    ("comment-start", "params", ["out", "a/*b", "c*/d"]),
    ("trigraph", "params", ["out", "x??/", "y??="]),
    ("c-macros", "params", ["NULL", "SIZE_MAX", "NAN"]),
    ("c-macros-2", "params", ["INFINITY", "HUGE_VAL", "INT64_C"]),
    ("gnu-predefined", "params", ["linux", "unix", "i386"]),
    ("cxx-keywords", "params", ["class", "new", "delete"]),
    ("c-keywords", "params", ["int", "bool", "true"]),
    ("reserved", "params", ["__x", "_Bool", "_X"]),
    ("stdio-macros", "params", ["EOF", "errno", "stdout"]),
    ("control", "params", ["a\nb", "\x1b[31mred", "tab\there"]),
    ("quotes", "params", ['"q"', "back\\slash", "it's"]),
    ("collide-mapped", "params", ["a.b", "a_b", "a-b"]),
    ("collide-cut", "params", ["p" * 199 + "a", "p" * 199 + "b", "p" * 199 + "c"]),
    ("empty-digit", "params", ["", "0x", "9"]),
    ("utf8", "params", ["caf\u00e9", "\u4e2d\u6587", "\u202eevil"]),
    ("var-macro", "var", ["NULL"]),
    ("var-gnu", "var", ["linux"]),
    ("var-cxx", "var", ["class"]),
    ("var-long", "twovars", ["v" * 199 + "a", "v" * 199 + "b"]),
]


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, **kw)


for label, mode, names in ROWS:
    d = os.path.join(work, label)
    graph = d + ".json"
    subprocess.run([sys.executable, graph_script, mode, graph] + names, check=True)
    why = []
    lib, ker = d + "-lib", d + "-ker"
    r = run([uopc, graph, "-o", lib, "--emit", "library", "--name", "lib"])
    if r.returncode:
        why.append("uopc --emit library: " + r.stderr.decode(errors="replace").strip())
    else:
        for flags in ([], ["-std=c11"]):
            r = run(["gcc", "-Wall", "-Werror", "-O0", "-c"] + flags + ["lib.c", "-o", "/dev/null"], cwd=lib)
            if r.returncode:
                why.append("gcc %s lib.c: %s" % (" ".join(flags), r.stderr.decode(errors="replace").strip()[:300]))
        r = run(["g++", "-Wall", "-Werror", "-x", "c++", "-c", "-", "-o", "/dev/null", "-I", lib],
                input=b'#include "lib.h"\nint main() { return 0; }\n')
        if r.returncode:
            why.append("g++ lib.h: " + r.stderr.decode(errors="replace").strip()[:300])
        for f in ("lib.c", "lib.h"):
            text = open(os.path.join(lib, f), "rb").read()
            for line in text.split(b"\n"):
                # a comment holds no comment end but its own, no control character
                if b"/*" in line and line.count(b"*/") > 1:
                    why.append("%s: a comment ends early: %r" % (f, line[:120]))
                if any(c < 0x20 and c != 9 for c in line):
                    why.append("%s: a control character: %r" % (f, line[:120]))
    if mode == "params":  # y's weights given by file, the three ways: its name reaches only comments
        st = d + "-y.safetensors"
        header = json.dumps({names[2]: {"dtype": "F32", "shape": [8], "data_offsets": [0, 32]}}).encode()
        with open(st, "wb") as f:
            f.write(struct.pack("<Q", len(header)) + header + struct.pack("<8f", *range(8)))
        for form, flags in (("incbin", ["--embed-params", st]), ("c", ["--embed-params", st, "--params-format", "c"]),
                            ("file", ["--params-file", st])):
            wlib = f"{d}-{form}"
            r = run([uopc, graph, "-o", wlib, "--emit", "library", "--name", "lib"] + flags)
            if r.returncode:
                why.append(f"uopc --emit library ({form}): " + r.stderr.decode(errors="replace").strip())
                continue
            sources = ["lib.c"] + (["lib_params.S"] if form == "incbin" else [])
            for src in sources:
                r = run(["gcc", "-Wall", "-Werror", "-O0", "-c", src, "-o", "/dev/null"], cwd=wlib)
                if r.returncode:
                    why.append("gcc %s (%s): %s" % (src, form, r.stderr.decode(errors="replace").strip()[:300]))
            for f in sources:
                for line in open(os.path.join(wlib, f), "rb").read().split(b"\n"):
                    if b"/*" in line and line.count(b"*/") > 1:
                        why.append("%s (%s): a comment ends early: %r" % (f, form, line[:120]))
                    if any(c < 0x20 and c != 9 for c in line):
                        why.append("%s (%s): a control character: %r" % (f, form, line[:120]))
    r = run([uopc, graph, "-o", ker])
    if r.returncode:
        why.append("uopc -o: " + r.stderr.decode(errors="replace").strip())
    else:
        for root, _, files in os.walk(os.path.join(ker, "kernels")):
            for f in files:
                r = run(["gcc", "-Wall", "-Werror", "-O0", "-c", os.path.join(root, f), "-o", "/dev/null"])
                if r.returncode:
                    why.append("gcc %s: %s" % (f, r.stderr.decode(errors="replace").strip()[:300]))
    print(("ok " + label) if not why else ("FAIL %s: %s" % (label, " | ".join(why))))

#!/usr/bin/env bash
# Makes the virtual environment the exporter test and the network benchmark run in: VENV (default
# build/tinygrad-venv) with tinygrad==0.14.0, onnx and onnxruntime from PyPI and the exporter package of this
# repository (python/, pip install ./python). OpenVINO (the benchmark's second bar) is tried, not required.
# Debian 12's pip refuses system-wide installs (PEP 668), hence the venv. Idempotent: a venv that already has
# tinygrad 0.14.0 only gets ./python reinstalled (no network). Exits 77 (a skip for ctest) when python3 has
# no venv module (apt-get install python3-venv; scripts/setup.sh installs it) or PyPI cannot be reached.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${1:-$ROOT/build/tinygrad-venv}"
PY="$VENV/bin/python"

if ! "$PY" -c 'import importlib.metadata as m, sys, onnx, onnxruntime; sys.exit(m.version("tinygrad") != "0.14.0")' 2>/dev/null; then
  if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    echo "setup-python: SKIP: python3 has no venv/ensurepip (apt-get install python3-venv)" >&2
    exit 77
  fi
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  # wheel and setuptools too: ./python is then (re)installed without fetching a build environment
  if ! "$PY" -m pip install -q --disable-pip-version-check "tinygrad==0.14.0" onnx onnxruntime wheel "setuptools>=61"; then
    echo "setup-python: SKIP: pip could not install tinygrad==0.14.0, onnx, onnxruntime from PyPI (no network?)" >&2
    rm -rf "$VENV"
    exit 77
  fi
  "$PY" -m pip install -q --disable-pip-version-check openvino 2>/dev/null || echo "setup-python: no OpenVINO (optional)" >&2
fi
# the exporter from this checkout, as a user installs it (no dependencies to fetch: tinygrad is there)
"$PY" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation --force-reinstall "$ROOT/python"
"$PY" -c 'import uopc_tinygrad, tinygrad' 

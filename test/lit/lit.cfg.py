# lit configuration for uopc: pass behaviour and error messages, checked with FileCheck.
import os
import lit.formats

config.name = "uopc"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".json", ".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.uopc_obj_root, "test", "lit")

config.environment["PATH"] = os.pathsep.join([config.uopc_tools_dir, config.llvm_tools_dir,
                                              config.environment.get("PATH", os.environ.get("PATH", ""))])
config.substitutions.append(("%uopc-run", os.path.join(config.uopc_tools_dir, "uopc-run")))
config.substitutions.append(("%uopc", os.path.join(config.uopc_tools_dir, "uopc")))
config.substitutions.append(("%corpus", config.uopc_corpus))
# The register tiles the tests check are sized for AVX-512's registers whatever the machine running them
# (Passes/Machine.cpp: describeVectors); a test of another size sets UOPC_VECTOR_ISA itself.
config.environment["UOPC_VECTOR_ISA"] = "avx512"
# and a 2 MiB L2 (Machine.cpp: describeHost), which the cache blocks are sized for
config.environment["UOPC_L2_BYTES"] = "2097152"
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
if os.path.isdir(config.uopc_corpus):
    config.available_features.add("corpus")
# CUDA (uopc-run's ptx manifests): `cuda-stub` when the toolkit's stub libcuda.so is here (%cuda-stub names
# it), `cuda-driver` when an NVIDIA driver's libcuda.so.1 loads, `cuda-gpu` when it also initializes and
# reports a GPU. Probed in a child process, so that this one never initializes CUDA.
for stub in [os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "lib64", "stubs", "libcuda.so"),
             "/usr/local/cuda/lib64/stubs/libcuda.so", "/usr/local/cuda/targets/x86_64-linux/lib/stubs/libcuda.so",
             "/usr/lib/x86_64-linux-gnu/stubs/libcuda.so"]:
    if os.path.isfile(stub):
        config.available_features.add("cuda-stub")
        config.substitutions.append(("%cuda-stub", stub))
        break
import subprocess, sys
_probe = ("import ctypes\n"
          "try: lib = ctypes.CDLL('libcuda.so.1')\n"
          "except OSError: raise SystemExit(0)\n"
          "n = ctypes.c_int(0)\n"
          "ok = lib.cuInit(0) == 0 and lib.cuDeviceGetCount(ctypes.byref(n)) == 0 and n.value > 0\n"
          "print('driver gpu' if ok else 'driver')\n")
try:
    _found = subprocess.run([sys.executable, "-c", _probe], capture_output=True, text=True, timeout=60).stdout.split()
except (OSError, subprocess.SubprocessError):
    _found = []
if "driver" in _found:
    config.available_features.add("cuda-driver")
if "gpu" in _found:
    config.available_features.add("cuda-gpu")

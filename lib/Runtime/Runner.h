//===- Runner.h - running a compiled graph (manifest.json) on this machine's CPU or GPUs ===//
// `uopc-run out/manifest.json ...`: compiles the manifest's C kernels with the system C compiler into one
// shared object (cached by a content hash of the sources and flags: Runtime/KernelCache.h), allocates the buffers (the function's
// parameters per device, and one arena per device for the intermediates), loads the inputs, runs the
// steps in order (a copy is a memcpy between arenas), and writes the outputs. A manifest of target
// "llvm" names `.ll` modules instead: they are parsed into LLVM's ORC JIT in-process (Targets/LLVMJit.h),
// with no C compiler and no cache. A manifest of target "ptx" names `.ptx` modules: they run on NVIDIA GPUs
// through the CUDA driver API, loaded at run time (Runtime/Cuda.h); manifest device i maps to GPU i % count.
// The manifest (read and checked by Runtime/ManifestModel.h), the checks of the request and all file I/O are
// shared; the CPU and CUDA backends differ only in memory, kernel loading and launches. Errors throw
// uopc::Error with one clear message.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace uopc {

class Comm;

/// Where an input's bytes are: `size` bytes of the file `path` from `offset` (an --input file: all of it;
/// a tensor of an --inputs safetensors file: its data). They are read straight into the parameter's buffer
/// at each load: a network's weights are read once, not copied through temporary files and strings.
/// A pipe's contents (an --input that is not a regular file) are read once and held in `held` instead.
struct InputRegion {
  std::string path;
  uint64_t offset = 0, size = 0;
  std::shared_ptr<const std::string> held;
  bool operator==(const InputRegion &) const = default;
};

struct ManifestRunRequest {
  std::string manifestPath;
  /// slot -> files, one per device of the slot, in the order of its devices.
  std::map<int64_t, std::vector<std::string>> inputFiles, outputFiles;
  /// slot -> regions of files, one per device (--inputs: safetensors::bindInputs); a slot is given here or
  /// in inputFiles, not both.
  std::map<int64_t, std::vector<InputRegion>> inputRegions;
  std::map<std::string, int64_t> vars;
  int bench = 0; ///< > 0: after the run, run the steps this many more times and print their times
  /// CPU targets: threads that share a kernel's split loop (0: one per core of this machine). Results do
  /// not depend on it: a split hands each thread whole output elements, never part of a reduction.
  int threads = 0;
  /// One process per device (mpirun uopc-run, Runtime/Mpi.h): this rank runs the steps of the devices d with
  /// d % size == rank; a copy between ranks is a send and a receive, a kernel's argument on another rank's
  /// device (a step's remote_args) is sent to it before it runs. Rank 0 alone reads the inputs (inputFiles,
  /// inputRegions: the other ranks' may be empty) and sends each device's shard to its rank, and alone writes
  /// outputFiles, gathered from the ranks. Null: every device in this process.
  Comm *comm = nullptr;
  /// Prints `rank R/N: devices D,...` before the run and where its time went after it (to `out`).
  bool verbose = false;
};

/// Parses and checks a manifest's text as runManifest does before it compiles anything (the kernel files'
/// signatures are read relative to `path`'s folder) and plans the CPU entry points; runs nothing. Throws
/// Error for a bad manifest. The manifest fuzz target's entry (fuzz/).
void checkManifestText(const std::string &text, const std::string &path);

/// Runs a manifest. Bench figures go to `out`.
void runManifest(const ManifestRunRequest &request, std::ostream &out);

} // namespace uopc

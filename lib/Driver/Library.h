//===- Library.h - `uopc --emit library`: a compiled graph as one C library (NAME.h + NAME.c) ===//
// The C target's kernels and the schedule that runs them, as one self-contained C11 translation unit with
// one entry point (docs/library.md): NAME.h declares the API (typed structs of the parameters, a generic
// table of them, the workspace size, NAME_init, NAME_run and NAME_run_params), NAME.c holds every kernel as a
// static function, the helpers once, and the schedule as straight-line calls. Weights (Driver/Params.h) are
// baked in as binary data (NAME_params.S + NAME_params.bin) or C text, or packed into NAME_params.bin for the
// caller to give NAME_init. Once steps (a re-layout of weights) are run by uopc when their weights are baked,
// else once per workspace (the first run, or after NAME_init), never in every run. The schedule is uopc-run's
// (Runtime/Runner.cpp) for the CPU: one arena per device, laid out one after the other in the caller's
// workspace; a copy is a memmove; a kernel split across threads runs its whole range [0, parallel) in one
// call. Nothing is allocated and no uopc header is needed.
#pragma once

#include "Driver/Compile.h"
#include "Driver/OnceCopy.h"
#include "Driver/OutputDir.h"
#include "Runtime/ManifestModel.h"

#include <optional>
#include <string>
#include <vector>

namespace uopc {

/// How --embed-params writes the weights (docs/library.md).
enum class ParamsFormat {
  Incbin, ///< NAME_params.bin (the packed blob, Driver/Params.h) + NAME_params.S: .incbin, one symbol per tensor
  C,      ///< C initializer text in NAME.c (no assembler needed; slow to compile for large weights)
};

struct LibraryOptions {
  std::string name;        ///< the C prefix of every exported name (a C identifier; defaultLibraryName)
  std::string graphName;   ///< the graph's file name, for the generated files' first comment
  std::string embedParams; ///< a .safetensors file whose tensors are baked into the library ("": none)
  std::string paramsFile;  ///< a .safetensors file whose tensors go to NAME_params.bin, given at run time ("": none)
  ParamsFormat format = ParamsFormat::Incbin; ///< how --embed-params writes them
};

/// Writes the library of a compiled Module of target c whose devices are all CPUs into `out`: NAME.h, NAME.c,
/// and with weights NAME_params.bin (+ NAME_params.S when embedded with incbin). It reads the Module's
/// schedule as uopc-run reads a manifest (Module::manifestModel) and takes each kernel's C function from its
/// rendered pieces (renderKernels first); the once steps uopc can run itself (Driver/OnceCopy.h) are folded
/// when the weights they read are baked in: their results are baked instead and the library never runs them.
/// Weights are read and written one tensor at a time. Throws Error (one line) for what it cannot render: a GPU
/// device, a tensor of the weights file that names no input parameter or has another dtype or size, a kernel
/// the C target could not render. The files are a pure function of the arguments.
void writeLibrary(const Module &module, const LibraryOptions &options, OutputDir &out);

/// The default NAME for a graph file: its stem as a C identifier, or, when the stem is `graph` (the
/// exporter's graph.json), the name of the folder holding it (`mlp/graph.json` -> `mlp`); `_model` appended
/// to the name of a C standard header (`math.json` -> `math_model`).
std::string defaultLibraryName(const std::string &graphPath);
/// Throws Error unless `name` can prefix the library's C names: [A-Za-z][A-Za-z0-9_]*, at most 64 characters,
/// not the name of a C standard header (`math`: NAME.h would hide <math.h> from a program built with -I DIR).
void checkLibraryName(const std::string &name);

} // namespace uopc

//===- Library.h - `uopc --emit library`: a compiled graph as one C library (NAME.h + NAME.c) ===//
// The C target's kernels and the schedule that runs them, as one self-contained C11 translation unit with
// one entry point (docs/library.md): NAME.h declares the API (typed structs of the parameters, a generic
// table of them, the workspace size, NAME_run and NAME_run_params), NAME.c holds every kernel as a static
// function, the helpers once, optionally the weights as constant data, and the schedule as straight-line
// calls. The schedule is uopc-run's (Runtime/Runner.cpp) for the CPU: one arena per device, laid out one
// after the other in the caller's workspace; a copy is a memmove; a kernel split across threads runs its
// whole range [0, parallel) in one call. Nothing is allocated and no uopc header is needed.
#pragma once

#include "Runtime/ManifestModel.h"

#include <map>
#include <string>

namespace uopc {

struct LibraryOptions {
  std::string name;        ///< the C prefix of every exported name (a C identifier; defaultLibraryName)
  std::string graphName;   ///< the graph's file name, for the generated files' first comment
  std::string embedParams; ///< a .safetensors file whose tensors become constant data ("": none)
};

/// The library's two files.
struct LibraryFiles {
  std::string header, source; ///< NAME.h, NAME.c
};

/// Renders the library of a read manifest (fromJson: its derived fields filled in) of target c whose
/// devices are all CPUs, with `kernelSources` the text of each kernel file it names (file -> text, as the
/// C emitter wrote it). Throws Error (one line) for what it cannot render: a GPU device, a tensor of the
/// embed file that names no input parameter or has another dtype or size, a kernel whose text is not the
/// C emitter's. The text is a pure function of its arguments.
LibraryFiles renderLibrary(const manifest::Manifest &m, const std::map<std::string, std::string> &kernelSources,
                           const LibraryOptions &options);

/// The default NAME for a graph file: its stem as a C identifier, or, when the stem is `graph` (the
/// exporter's graph.json), the name of the folder holding it (`mlp/graph.json` -> `mlp`); `_model` appended
/// to the name of a C standard header (`math.json` -> `math_model`).
std::string defaultLibraryName(const std::string &graphPath);
/// Throws Error unless `name` can prefix the library's C names: [A-Za-z][A-Za-z0-9_]*, at most 64 characters,
/// not the name of a C standard header (`math`: NAME.h would hide <math.h> from a program built with -I DIR).
void checkLibraryName(const std::string &name);

} // namespace uopc

//===- Manifest.h - out/manifest.json from a Schedule ---------------------===//
// The manifest says how to run a compiled graph: devices (with the bytes of their intermediate arena),
// the function's buffer parameters, the intermediate buffers (size, dtype, devices, arena offsets,
// lifetimes), the steps in execution order and the variables. This file fills the model uopc-run reads
// (Runtime/ManifestModel.h) from a schedule; the model writes the text. Format:
// schemas/manifest.schema.json and docs/schedule.md. The text is a pure function of the schedule: stable
// key and element order, no timestamps, byte-identical across runs.
#pragma once

#include "Passes/Schedule.h"
#include "Runtime/ManifestModel.h"
#include "Targets/Targets.h"

#include <array>
#include <map>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace uopc {

/// Where the source of one kernel step lives and the function it exports.
struct KernelArtifact {
  std::string file;   ///< relative to the output directory: kernels/<device dir>/<kernel>.<ext>
  std::string symbol; ///< the exported function
  /// GPU mappings: blocks per grid and threads per block (the manifest's "global" and "local").
  std::optional<std::array<int64_t, 3>> global, local;
};

/// The default artifact of a kernel step: kernels/<device dir>/<kernel>.<ext>, symbol <kernel>_<device dir>.
KernelArtifact defaultArtifact(const Schedule &s, const SchedStep &step, std::string_view ext);
/// The artifacts of every step (copies: empty): defaultArtifact's, with symbols made distinct across
/// (kernel, device) pairs and at most kMaxSymbol characters (sanitizeCName's limit): a name too long or
/// equal to another's (kernel `a` on `b_c` and `a_b` on `c`, or four 64-character kernel names) or reserved in
/// C (Targets/CNames.h: `INT64_C`, `__x`) is cut and given a hash of its full form, then a counter if it still
/// collides.
std::vector<KernelArtifact> defaultArtifacts(const Schedule &s, std::string_view ext);
inline constexpr size_t kMaxSymbol = 64;

/// The manifest of a schedule. `artifacts` has one entry per step (ignored for copies).
/// `cpu` (CPU targets): the CPU the kernels are to be built for, `uopc --cpu`. The fields manifest::fromJson
/// derives when it reads (indices, a copy's `from`, remote arguments) are filled in too, so that --emit library
/// reads the model as uopc-run would without a round trip through the text. `optsFrom` (--tune): where each
/// kernel's opts came from, by kernel name; a kernel the optimizer added (NAME_packS, NAME_relayoutS) says
/// its kernel's.
manifest::Manifest manifestOf(const Schedule &s, Target target, const std::vector<KernelArtifact> &artifacts,
                              std::string_view cpu = "native",
                              const std::map<std::string, std::string> *optsFrom = nullptr);
/// Its text: manifest::toJson(manifestOf(...)).
std::string manifestJson(const Schedule &s, Target target, const std::vector<KernelArtifact> &artifacts,
                         std::string_view cpu = "native");

} // namespace uopc

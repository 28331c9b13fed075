//===- Targets.h - the registry of targets (Targets.def) ------------------===//
// Everything that differs by target outside the emitters is a column of Targets.def, read through
// TargetInfo: the driver's --target check and file extensions, the manifest's "target", and how uopc-run
// runs the kernels. Header-only: the manifest reader needs it without the emitters.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace uopc {

enum class Target {
#define TARGET(Id, name, ext, gpu, emitter, machine, desc) Id,
#include "Targets/Targets.def"
};

/// Which renderer writes a target's kernels.
enum class Emitter { C, LLVM };
/// Which machine description the passes read (PassTarget::forTarget).
enum class Machine { Host, Gpu };

struct TargetInfo {
  Target id;
  std::string_view name;      ///< uopc --target NAME, the manifest's "target"
  std::string_view extension; ///< of its kernel files
  bool gpu;                   ///< kernels run on GPUs, with a launch per step
  Emitter emitter;
  Machine machine;
  std::string_view description;
};

inline constexpr std::array kTargets = {
#define TARGET(Id, name, ext, gpu, emitter, machine, desc)                                                         \
  TargetInfo{Target::Id, name, ext, gpu, Emitter::emitter, Machine::machine, desc},
#include "Targets/Targets.def"
};

inline const TargetInfo &targetInfo(Target t) { return kTargets[static_cast<size_t>(t)]; }
/// The target named `name`, or null.
inline const TargetInfo *findTarget(std::string_view name) {
  for (const TargetInfo &t : kTargets)
    if (t.name == name) return &t;
  return nullptr;
}
/// "'c', 'llvm' and 'ptx'": every target's name, for messages.
inline std::string targetNameList() {
  std::string s;
  for (size_t i = 0; i < kTargets.size(); ++i)
    s += (i == 0 ? "" : i + 1 == kTargets.size() ? " and " : ", ") + ("'" + std::string(kTargets[i].name) + "'");
  return s;
}

} // namespace uopc

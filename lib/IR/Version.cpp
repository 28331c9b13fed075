//===- Version.cpp - what `--version` says --------------------------------===//
#include "IR/Version.h"

#include "UopcBuildInfo.h"

namespace uopc {

std::string versionText(std::string_view tool) {
  std::string git = UOPC_GIT_DESCRIBE;
  std::string out = std::string(tool) + " " + UOPC_VERSION_STRING;
  if (!git.empty()) out += " (" + git + ")";
  out += "\nLLVM " UOPC_LLVM_VERSION "\n";
  out += "graph format: uopc-graph version 1 (JSON) and its binary form (.uopb), read and written\n";
  out += "manifest format: version 1 (schemas/manifest.schema.json), written by uopc, read by uopc-run";
  return out;
}

} // namespace uopc

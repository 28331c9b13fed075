//===- Version.h - what `--version` says ----------------------------------===//
#pragma once

#include <string>
#include <string_view>

namespace uopc {

/// The text of `TOOL --version`: uopc's version (the project's, and `git describe` of the tree it was built
/// from where there was one), the LLVM it was built with, and the graph and manifest formats it reads and
/// writes. One line each.
std::string versionText(std::string_view tool);

} // namespace uopc

//===- ManifestDetail.h - what ManifestModel.cpp and ManifestRead.cpp share ===//
// Private to lib/Runtime/{ManifestModel,ManifestRead}.cpp (the uopc_manifest library); not part of the
// public API.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <string_view>

namespace uopc::manifest::detail {

/// manifest.json as JSON: keys in the order they are written.
using Json = nlohmann::ordered_json;

/// The names of Role and ReduceOp in the manifest, in the enums' order (roleName, reduceOpName, the reader).
inline constexpr std::array<std::string_view, 3> kRoleNames = {"input", "output", "inout"};
inline constexpr std::array<std::string_view, 3> kReduceOpNames = {"add", "max", "mul"};

} // namespace uopc::manifest::detail

//===- Files.h - output files written whole or not at all -----------------===//
// Every file uopc and uopc-run write outside an output directory (uopc-run --output/--outputs, uopc
// convert, --viz, --dump-dir) is written as the output directory is (Driver/OutputDir.h): into a new file
// beside it, then renamed over it. A reader never sees a torn file, a failed write leaves the old file as it
// was, and what stands at the path is replaced, never written through: a symlink is replaced by the file
// (its target is left alone), a hard link's other names keep the old contents.
#pragma once

#include <string>
#include <string_view>

namespace uopc {

/// Writes `bytes` as the file `path`: a temporary file beside it (created exclusively, never through a
/// link), renamed over `path` once complete. A device or a pipe at the path (or a symlink to one:
/// /dev/stdout, /dev/null) is written in place, as there is nothing to replace. Throws Error naming the path
/// (the temporary file removed, the old file untouched) when it cannot be written.
void writeFileAtomic(const std::string &path, std::string_view bytes);

/// Where the tools' plugin `file` (libuopc-llvm.so, libuopc-mpi.so) is: $`envVar` when set, else beside the
/// running executable (a build tree), else in ../lib/uopc/ from it (an installed prefix) when it is there.
std::string pluginPath(const char *envVar, const std::string &file);

} // namespace uopc

//===- OutputDir.h - atomic output directories ----------------------------===//
// uopc never leaves a partial output directory: files are written into a fresh sibling directory,
// which replaces the destination only when everything has been written.
#pragma once

#include <string>
#include <string_view>

namespace uopc {

class OutputDir {
public:
  /// Prepares a staging directory next to `dest`. Throws Error when that is impossible.
  explicit OutputDir(std::string dest);
  /// Removes the staging directory unless commit() ran.
  ~OutputDir();
  OutputDir(const OutputDir &) = delete;
  OutputDir &operator=(const OutputDir &) = delete;

  /// Writes `relPath` (relative, no "..") under the staging directory, creating folders.
  void write(std::string_view relPath, std::string_view bytes);
  /// Moves the staging directory to the destination (replacing an earlier output there).
  void commit();

private:
  std::string dest_, staging_;
  bool committed_ = false;
};

/// Writes a whole file, replacing it atomically (temp file + rename). Throws Error on failure.
void writeFileAtomic(const std::string &path, std::string_view bytes);
/// Reads a whole file. Throws Error on failure.
std::string readFile(const std::string &path);

} // namespace uopc

//===- OutputDir.h - atomic output directories ----------------------------===//
// uopc never leaves a partial output directory: files are written into a fresh sibling directory,
// which replaces the destination only when everything has been written, atomically (renameat2 with
// RENAME_EXCHANGE: a reader of DEST/manifest.json never sees it missing). uopc never deletes what it did not
// write: an existing destination is replaced only when it is empty or an earlier uopc output (it holds the
// marker file `.uopc-output`, or a uopc manifest.json), unless `force`. Staging (DEST.uopc-tmp-<pid>-<n>)
// and replaced (DEST.uopc-old-<pid>-<n>) directories left by a killed run are removed by the next run for
// the same DEST; parent directories a failed run created are removed again.
#pragma once

#include "IR/Files.h" // (writeFileAtomic)

#include <string>
#include <string_view>
#include <vector>

namespace uopc {

class OutputDir {
public:
  /// The file every output directory holds, marking it as uopc's to replace.
  static constexpr const char *kMarker = ".uopc-output";
  /// Prepares a staging directory next to `dest`. Throws Error when that is impossible, or when `dest`
  /// exists and is not uopc's output (and not empty) without `force`.
  explicit OutputDir(std::string dest, bool force = false);
  /// Removes the staging directory, and the parent directories it created, unless commit() ran.
  ~OutputDir();
  OutputDir(const OutputDir &) = delete;
  OutputDir &operator=(const OutputDir &) = delete;

  /// Writes `relPath` (relative, no "..") under the staging directory, creating folders.
  void write(std::string_view relPath, std::string_view bytes);
  /// The staging path of `relPath` (checked as write() does, folders created), for a file too large to hold:
  /// the caller creates and writes it there itself; it is committed with the rest, or removed.
  std::string path(std::string_view relPath);
  /// Moves the staging directory to the destination (replacing an earlier output there).
  void commit();

private:
  std::string dest_, staging_;
  bool force_ = false, committed_ = false;
  std::vector<std::string> createdParents_; ///< deepest first
  void checkReplaceable() const;
  void removeCreatedParents();
};

/// Reads a whole file. Throws Error on failure.
std::string readFile(const std::string &path);

} // namespace uopc

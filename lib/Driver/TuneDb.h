//===- TuneDb.h - the tuning database: the opts a search chose, per kernel and machine ===//
// `uopc --tune` (Driver/Tune.h) times opt lists per kernel and keeps the best in a versioned JSON file, by
// default $XDG_CACHE_HOME/uopc/tune.json (the kernel cache's directory, Runtime/KernelCache.h), or the file
// --tune-db names (one a team can share). An entry is keyed by the kernel's structural hash, the target, the
// CPU the kernels are built for, this machine's CPU features and the thread count the kernels were timed
// with; a later compile with the database applies the entries of its machine without timing, so that a tuned
// build is reproducible byte for byte. Entries of another machine are kept (and written back) but never used.
// The text is a pure function of the entries (sorted by key, fixed key order), written atomically.
//
// Format (version 1):
//   {"format": "uopc-tune-db", "version": 1, "entries": [
//     {"kernel": "<64 hex digits>", "target": "llvm", "cpu": "...", "features": "...", "threads": 2,
//      "opts": ["upcast:0:8", ...],
//      "searched": {"candidates": 14, "seconds": 1.9, "best_ns": 950000, "heuristic_ns": 1020000}}]}
// `searched` says what the search measured; an entry without it was written by hand (the manifest then says
// the opts came from the database, not from a search).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace uopc {

/// What an entry's opts were chosen for.
struct TuneKey {
  std::string kernel;   ///< kernelHash of the kernel before optimize (Driver/Tune.h)
  std::string target;   ///< "c" or "llvm"
  std::string cpu;      ///< the CPU the kernels are built for (--cpu; native: this machine's model name)
  std::string features; ///< this machine's CPU features (a digest of /proc/cpuinfo's flags)
  int64_t threads = 1;  ///< threads the kernel's split loop was timed with
  auto operator<=>(const TuneKey &) const = default;
};

/// What the search measured for an entry.
struct TuneSearched {
  int64_t candidates = 0; ///< opt lists compiled, run and timed
  double seconds = 0;     ///< the search's wall time
  double bestNs = 0;      ///< the kept list's best time
  double heuristicNs = 0; ///< the heuristic's list's (0: it was not timed)
};

struct TuneEntry {
  TuneKey key;
  std::vector<std::string> opts; ///< as --kernel-opts spells them (each checked by the optimize pass's parser)
  std::optional<TuneSearched> searched;
};

struct TuneDb {
  std::vector<TuneEntry> entries; ///< sorted by key, keys distinct

  /// The entry of `key`, or null.
  const TuneEntry *find(const TuneKey &key) const;
  /// Adds `e`, replacing the entry of its key.
  void put(TuneEntry e);
};

/// Parses a database's text; `path` names it in messages. Throws Error ("tuning database 'P': ...") for text
/// that is not JSON, another format or version, a missing or unknown field, a value out of range (a hash
/// that is not 64 hex digits, threads outside 1..4096, an opt the optimize pass cannot parse) or two entries
/// of one key.
TuneDb parseTuneDb(const std::string &text, const std::string &path);
/// The database's text (newline-terminated).
std::string tuneDbJson(const TuneDb &db);
/// parseTuneDb of the file at `path` (at most 64 MiB); a missing file is an empty database when
/// `missingOk`, else an error.
TuneDb readTuneDb(const std::string &path, bool missingOk);
/// Writes the database atomically (a temporary file renamed over `path`); creates the directory of the
/// default path (owner-only) when missing. Throws Error.
void writeTuneDb(const TuneDb &db, const std::string &path);
/// $XDG_CACHE_HOME/uopc/tune.json, else ~/.cache/uopc/tune.json (the kernel cache's directory).
std::string defaultTuneDbPath();

/// This machine as the keys name it: the CPU model (or `cpu` when it is not "native") and a digest of its
/// CPU feature flags.
struct MachineId {
  std::string cpu, features;
};
MachineId thisMachine(std::string_view cpu);

} // namespace uopc

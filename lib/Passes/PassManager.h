//===- PassManager.h - named passes, pipelines and instrumentation --------===//
// Passes are functions Graph& -> void registered in one table (Passes.def). The manager runs a
// pipeline and owns every dump and check around the passes: printing after a pass, dumping each
// pass's result to a numbered file, timing, and verifying after each pass. Passes never print.
#pragma once

#include "IR/Graph.h"

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace uopc {

using PassFn = void (*)(Graph &);

struct PassInfo {
  std::string_view flag;
  PassFn run;
  std::string_view description;
};

/// Every registered pass, in registry order.
const std::vector<PassInfo> &allPasses();
const PassInfo *findPass(std::string_view flag);
/// The default pipeline: every registered pass in order.
std::vector<std::string> defaultPipeline();
/// Parses "a,b,c"; throws Error naming an unknown pass.
std::vector<const PassInfo *> parsePipeline(std::string_view text);

/// How the manager prints or dumps a graph: the readable text form (IR/AsmPrinter.h) or JSON (format v1,
/// which reads back in).
enum class IRFormat { Text, Json };

struct PassManagerOptions {
  bool printAfterAll = false;
  std::vector<std::string> printAfter; ///< pass flags
  bool printChanged = false;           ///< with a print option: skip passes that left the graph as it was
  std::string dumpDir;                 ///< non-empty: write NN-<pass>.json (.txt for text) after every pass
  /// --print-ir-format; unset: text for the print options, JSON for --dump-dir (so that dumps read back in).
  std::optional<IRFormat> format;
  bool timePasses = false;
  bool verifyEach = false;
  /// Called with each pass's flag and the graph it is about to run on (analyses such as --stats).
  std::function<void(std::string_view, const Graph &)> beforePass;
  /// Called with each pass's flag, the graph it left and whether it changed the graph (uopc --viz).
  std::function<void(std::string_view, const Graph &, bool)> afterPass;
};

/// Runs `pipeline` on `g`. Printing goes to `out`, timings to `err`. Throws Error from a pass.
void runPipeline(Graph &g, const std::vector<const PassInfo *> &pipeline, const PassManagerOptions &opts,
                 std::ostream &out, std::ostream &err);

} // namespace uopc

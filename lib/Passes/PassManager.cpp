//===- PassManager.cpp - running pipelines with dumps, timing and checks --===//
#include "Passes/PassManager.h"

#include "IR/AsmPrinter.h"
#include "IR/Error.h"
#include "IR/GraphIO.h"
#include "IR/Verifier.h"
#include "Passes/Passes.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>

namespace uopc {

const std::vector<PassInfo> &allPasses() {
  static const std::vector<PassInfo> passes = {
#define UOPC_PASS(Flag, Function, Description) {Flag, &Function, Description},
#include "Passes/Passes.def"
  };
  return passes;
}

const PassInfo *findPass(std::string_view flag) {
  for (const PassInfo &p : allPasses())
    if (p.flag == flag) return &p;
  return nullptr;
}

std::vector<std::string> defaultPipeline() {
  std::vector<std::string> names;
  for (const PassInfo &p : allPasses()) names.emplace_back(p.flag);
  return names;
}

std::vector<const PassInfo *> parsePipeline(std::string_view text) {
  std::vector<const PassInfo *> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string_view name = text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (name.empty()) fail("empty pass name in pipeline '" + std::string(text) + "'");
    const PassInfo *p = findPass(name);
    if (!p) fail("unknown pass '" + std::string(name) + "' (see --list-passes)");
    out.push_back(p);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return out;
}

void runPipeline(Graph &g, const std::vector<const PassInfo *> &pipeline, const PassManagerOptions &opts,
                 std::ostream &out, std::ostream &err) {
  using Clock = std::chrono::steady_clock;
  std::vector<std::pair<std::string_view, double>> times;
  if (!opts.dumpDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(opts.dumpDir, ec);
    if (ec) fail("cannot create dump directory '" + opts.dumpDir + "': " + ec.message());
  }
  unsigned index = 0;
  for (const PassInfo *p : pipeline) {
    ++index;
    const UOp *before = g.root;
    if (opts.beforePass) opts.beforePass(p->flag, g);
    auto t0 = Clock::now();
    p->run(g);
    double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    times.push_back({p->flag, secs});
    if (opts.verifyEach) {
      try {
        verifyGraph(g);
      } catch (const Error &e) {
        fail("after pass '" + std::string(p->flag) + "': " + e.what());
      }
    }
    // Hash-consing makes "unchanged" a pointer comparison.
    bool changed = g.root != before;
    bool wantPrint = opts.printAfterAll ||
                     std::find(opts.printAfter.begin(), opts.printAfter.end(), p->flag) != opts.printAfter.end();
    if (wantPrint) {
      out << "// -----// IR dump after " << p->flag;
      if (!changed) out << " (unchanged)";
      out << " //----- //\n";
      if (changed || !opts.printChanged)
        out << (opts.format.value_or(IRFormat::Text) == IRFormat::Text ? printGraphText(g) : writeGraphJson(g));
    }
    if (opts.afterPass) opts.afterPass(p->flag, g, changed);
    if (!opts.dumpDir.empty()) {
      char prefix[16];
      std::snprintf(prefix, sizeof prefix, "%02u-", index);
      bool text = opts.format.value_or(IRFormat::Json) == IRFormat::Text;
      std::filesystem::path file =
          std::filesystem::path(opts.dumpDir) / (prefix + std::string(p->flag) + (text ? ".txt" : ".json"));
      std::ofstream f(file, std::ios::binary);
      f << (text ? printGraphText(g) : writeGraphJson(g));
      if (!f) fail("cannot write dump file '" + file.string() + "'");
    }
  }
  if (opts.timePasses) {
    double total = 0;
    for (auto &[n, s] : times) total += s;
    err << "===- pass execution timing report -===\n";
    char line[128];
    for (auto &[n, s] : times) {
      std::snprintf(line, sizeof line, "  %10.6f s  %5.1f%%  %.*s\n", s, total > 0 ? 100 * s / total : 0.0,
                    static_cast<int>(n.size()), n.data());
      err << line;
    }
    std::snprintf(line, sizeof line, "  %10.6f s  100.0%%  total\n", total);
    err << line;
  }
}

} // namespace uopc

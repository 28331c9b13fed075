//===- PassManager.cpp - running pipelines with dumps, timing and checks --===//
#include "Passes/PassManager.h"

#include "IR/AsmPrinter.h"
#include "IR/Error.h"
#include "IR/GraphIO.h"
#include "IR/Files.h"
#include "IR/Verifier.h"
#include "Passes/Passes.h"
#include "Passes/Schedule.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>


namespace uopc {

const std::vector<PassInfo> &allPasses() {
  static const std::vector<PassInfo> passes = {
#define UOPC_PASS(Flag, Function, Default, Render, Options, Description) {Flag, &Function, Default, Render, Options, Description},
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
  for (const PassInfo &p : allPasses())
    if (p.inDefault) names.emplace_back(p.flag);
  return names;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

bool declares(const PassInfo &p, std::string_view key) {
  std::string_view list = p.options;
  while (!list.empty()) {
    size_t sp = list.find(' ');
    if (list.substr(0, sp) == key) return true;
    if (sp == std::string_view::npos) break;
    list.remove_prefix(sp + 1);
  }
  return false;
}

/// "key=value,key=value" for pass p.
PassOptions parseOptions(const PassInfo &p, std::string_view text) {
  PassOptions opts;
  for (size_t pos = 0; pos <= text.size();) {
    size_t comma = text.find(',', pos);
    std::string_view kv = trim(text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos));
    size_t eq = kv.find('=');
    if (kv.empty() || eq == std::string_view::npos || eq == 0)
      fail("pass '" + std::string(p.flag) + "': option '" + std::string(kv) + "' is not key=value");
    std::string_view key = trim(kv.substr(0, eq));
    if (!declares(p, key))
      fail("pass '" + std::string(p.flag) + "' has no option '" + std::string(key) + "'" +
           (p.options.empty() ? std::string(" (it takes none)") : " (it takes: " + std::string(p.options) + ")"));
    if (!opts.emplace(std::string(key), std::string(trim(kv.substr(eq + 1)))).second)
      fail("pass '" + std::string(p.flag) + "': option '" + std::string(key) + "' given twice");
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return opts;
}

} // namespace

std::vector<PipelineEntry> parsePipeline(std::string_view text) {
  std::vector<PipelineEntry> out;
  if (trim(text).empty()) return out;
  size_t pos = 0;
  while (pos <= text.size()) {
    // the next entry ends at a comma outside braces
    size_t end = pos;
    int depth = 0;
    for (; end < text.size(); ++end) {
      if (text[end] == '{') ++depth;
      else if (text[end] == '}') --depth;
      else if (text[end] == ',' && depth == 0) break;
      if (depth < 0 || depth > 1) fail("unbalanced braces in pipeline '" + std::string(text) + "'");
    }
    if (depth != 0) fail("unbalanced braces in pipeline '" + std::string(text) + "'");
    std::string_view entry = trim(text.substr(pos, end - pos));
    std::string_view name = entry, optText;
    if (size_t brace = entry.find('{'); brace != std::string_view::npos) {
      if (entry.back() != '}') fail("pass entry '" + std::string(entry) + "': text after its options");
      name = trim(entry.substr(0, brace));
      optText = entry.substr(brace + 1, entry.size() - brace - 2);
    }
    if (name.empty()) fail("empty pass name in pipeline '" + std::string(text) + "'");
    const PassInfo *p = findPass(name);
    if (!p) fail("unknown pass '" + std::string(name) + "' (see --list-passes)");
    out.emplace_back(p, optText.empty() && name == entry ? PassOptions{} : parseOptions(*p, optText));
    if (end == text.size()) break;
    pos = end + 1;
  }
  return out;
}

std::string_view PassContext::option(std::string_view key, std::string_view fallback) const {
  auto it = options.find(key);
  return it == options.end() ? fallback : std::string_view(it->second);
}

int64_t PassContext::intOption(std::string_view key, int64_t fallback, int64_t lo, int64_t hi) const {
  auto it = options.find(key);
  if (it == options.end()) return fallback;
  const std::string &v = it->second;
  int64_t x = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || ptr != v.data() + v.size() || x < lo || x > hi)
    fail("pass '" + std::string(pass) + "': option " + std::string(key) + "=" + v + " is not an integer in [" +
         std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return x;
}

void runPipeline(Graph &g, const std::vector<PipelineEntry> &pipeline, const PassManagerOptions &opts,
                 std::ostream &out, std::ostream &err, const PassTarget &target) {
  using Clock = std::chrono::steady_clock;
  std::vector<std::pair<std::string_view, double>> times;
  if (!opts.dumpDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(opts.dumpDir, ec);
    if (ec) fail("cannot create dump directory '" + opts.dumpDir + "': " + ec.message());
  }
  unsigned index = 0;
  for (const PipelineEntry &entry : pipeline) {
    const PassInfo *p = entry.pass;
    ++index;
    const UOp *before = g.root;
    if (opts.beforePass) opts.beforePass(p->flag, g);
    auto t0 = Clock::now();
    p->run(g, PassContext{target, entry.options, p->flag});
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
        out << (opts.format.value_or(IRFormat::Text) == IRFormat::Text
                    ? printGraphText(g, opts.printFull ? AsmOptions::full() : AsmOptions{})
                    : writeGraphJson(g));
    }
    if (opts.afterPass) opts.afterPass(p->flag, g, changed);
    if (!opts.dumpDir.empty()) {
      char prefix[16];
      std::snprintf(prefix, sizeof prefix, "%02u-", index);
      bool text = opts.format.value_or(IRFormat::Json) == IRFormat::Text;
      std::filesystem::path file =
          std::filesystem::path(opts.dumpDir) / (prefix + std::string(p->flag) + (text ? ".txt" : ".json"));
      // a dump is for reading back (uopc DUMP.txt --pass-pipeline=...): nothing elided
      writeFileAtomic(file.string(), text ? printGraphText(g, AsmOptions::full()) : writeGraphJson(g));
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

std::vector<const PassInfo *> renderingTail() {
  std::vector<const PassInfo *> tail;
  for (const PassInfo &p : allPasses())
    if (p.inRenderingTail) tail.push_back(&p);
  return tail;
}

void runRenderingTail(Graph &g, const PassTarget &target, const std::vector<PipelineEntry> &ran, bool withSchedule) {
  bool sink = false;
  for (const UOp *u : toposort(g.root)) sink |= u->op == Op::CALL && u->nsrc > 0 && u->src(0)->op == Op::SINK;
  std::ostringstream out, err;
  for (const PassInfo *p : renderingTail()) {
    bool needed = p->run == &runSchedule
                      ? withSchedule && !currentSchedule(g)
                      : sink && std::none_of(ran.begin(), ran.end(), [&](const PipelineEntry &e) { return e.pass == p; });
    if (needed) runPipeline(g, {PipelineEntry(p)}, PassManagerOptions{}, out, err, target);
  }
}

const UOp *lowerKernelForRendering(Context &c, const UOp *call, const PassTarget &target) {
  if (call->op != Op::CALL || call->nsrc == 0 || call->src(0)->op != Op::SINK) return call;
  // a graph of this one CALL in the caller's Context (borrowed: released, never freed, on the way out)
  Graph g;
  g.ctx.reset(&c);
  struct Borrowed {
    Graph &g;
    ~Borrowed() { (void)g.ctx.release(); }
  } borrowed{g};
  g.root = call;
  std::vector<PipelineEntry> tail;
  for (const PassInfo *p : renderingTail()) // (the per-kernel passes: pack and schedule add and order kernels)
    if (p->run != &runSchedule && p->run != &runPack) tail.emplace_back(p, p->flag == "linearize" ? PassOptions{{"threads", "0"}} : PassOptions{});
  std::ostringstream out, err;
  runPipeline(g, tail, PassManagerOptions{}, out, err, target);
  return g.root;
}

} // namespace uopc

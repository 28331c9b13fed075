//===- bench_read - read+intern throughput of JSON and .uopb --------------===//
// Prints nodes/s for reading (parse + hash-cons) graph documents in both encodings, on the perf corpus
// and on a generated graph of 1,000,000 nodes, and the peak memory per node of a read. Each peak is
// measured in a forked child so that one measurement does not inherit another's heap.
//
//   bench_read [--corpus DIR] [--nodes N] [--reps N] [--quick]
#include "IR/GraphIO.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace uopc;
namespace fs = std::filesystem;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

long maxRssKiB() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

/// A realistic mix: parameters, shape stacks, movement ops and a long elementwise chain with reduces,
/// n nodes in all (the chain makes it n deep).
Graph generate(size_t n) {
  Graph g;
  Context &c = *g.ctx;
  const UOp *size = c.constInt(DType::WeakInt, 64);
  auto pa = [&](int slot) {
    return c.make(Op::PARAM, DType::Float32, {size},
                  c.argRecord("ParamArg", std::vector<std::pair<std::string_view, const Arg *>>{
                                              {"slot", c.argInt(slot)}, {"dtype", c.argDType(DType::Float32)},
                                              {"device", c.argString("CPU")}}));
  };
  const UOp *out = pa(0), *x = pa(1);
  const UOp *cur = x;
  uint64_t i = 0;
  while (c.numNodes() + 4 < n) {
    const UOp *k = c.constFloat(DType::Float32, 1.0 + static_cast<double>(i++) * 0.5);
    cur = c.make(i % 3 == 0 ? Op::MUL : (i % 3 == 1 ? Op::ADD : Op::MAX), DType::Float32, {cur, k});
  }
  const UOp *st = c.make(Op::STORE, DType::Void, {out, cur});
  const UOp *af = c.make(Op::AFTER, DType::Float32, {out, st});
  g.root = c.make(Op::SINK, DType::Void, {af});
  return g;
}

struct Result {
  double secs;
  size_t nodes;
  long rssKiB;
};

/// Reads `path` `reps` times in a child process; returns the best time, the node count and the peak RSS.
Result measure(const std::string &path, int reps) {
  int fd[2];
  if (pipe(fd) != 0) return {0, 0, 0};
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    std::ifstream f(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    long base = maxRssKiB();
    Result r{1e30, 0, 0};
    for (int k = 0; k < reps; ++k) {
      double t0 = now();
      Graph g = readGraph(bytes, path);
      double dt = now() - t0;
      if (dt < r.secs) r.secs = dt;
      r.nodes = g.ctx->numNodes();
      if (k == 0) r.rssKiB = maxRssKiB() - base; // the peak of one read, graph alive
    }
    ssize_t w = write(fd[1], &r, sizeof r);
    (void)w;
    _exit(0);
  }
  close(fd[1]);
  Result r{0, 0, 0};
  ssize_t got = read(fd[0], &r, sizeof r);
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (got != sizeof r || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "bench_read: error: the child reading %s failed\n", path.c_str());
    std::exit(1);
  }
  return r;
}

void row(const std::string &name, const std::string &json, const std::string &bin, int reps) {
  Result j = measure(json, reps), b = measure(bin, reps);
  std::printf("%-24s %9zu %12.0f %12.0f %7.1fx %10.3f %10.3f %9.0f %9.0f\n", name.c_str(), j.nodes, j.nodes / j.secs,
              b.nodes / b.secs, j.secs / b.secs, j.secs, b.secs, j.rssKiB * 1024.0 / j.nodes,
              b.rssKiB * 1024.0 / b.nodes);
}

} // namespace

int main(int argc, char **argv) {
  std::string corpus = "../shared/corpus";
  size_t n = 1000000;
  int reps = 0; // 0: 50 per corpus graph, 3 for the generated one
  bool quick = false;
  CLI::App app{"bench_read: read + intern throughput of JSON and .uopb graph documents (figures only)"};
  app.add_option("--corpus", corpus, "tinygrad corpus directory (its perf/ cases are read)")->capture_default_str();
  app.add_option("--nodes", n, "nodes of the generated graph")->check(CLI::Range(size_t(8), size_t(100000000)))
      ->capture_default_str();
  app.add_option("--reps", reps, "repetitions per graph (best is printed)")->check(CLI::Range(1, 1000000));
  app.add_flag("--quick", quick, "small sizes, one repetition (checks that the benchmark runs)");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    if (!app.count("--nodes")) n = 10000;
    if (!reps) reps = 1;
  }
  try {
  fs::path tmp = fs::temp_directory_path() / ("uopc-bench-" + std::to_string(getpid()));
  fs::create_directories(tmp);
  std::printf("%-24s %9s %12s %12s %8s %10s %10s %9s %9s\n", "graph", "nodes", "json nodes/s", "uopb nodes/s",
              "ratio", "json s", "uopb s", "json B/n", "uopb B/n");
  auto emit = [&](const std::string &name, const Graph &g, int reps) {
    std::string jp = (tmp / (name + ".json")).string(), bp = (tmp / (name + ".uopb")).string();
    std::ofstream(jp, std::ios::binary) << writeGraphJson(g);
    std::ofstream(bp, std::ios::binary) << writeGraphBinary(g);
    row(name, jp, bp, reps);
  };
  if (fs::is_directory(corpus + "/perf")) {
    std::vector<fs::path> cases;
    for (auto &e : fs::directory_iterator(corpus + "/perf")) cases.push_back(e.path());
    std::sort(cases.begin(), cases.end());
    for (auto &p : cases) {
      Graph g = readGraphFile((p / "graph.json").string());
      emit(p.filename().string(), g, reps ? reps : 50);
    }
  } else {
    std::printf("(no perf corpus at %s: skipped)\n", corpus.c_str());
  }
  emit("generated-" + std::to_string(n), generate(n), reps ? reps : 3);
  std::printf("B/n: growth of peak resident memory per node during one read, the graph alive (input bytes, loaded before, excluded)\n");
  fs::remove_all(tmp);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "bench_read: error: %s\n", e.what());
    return 1;
  }
  return 0;
}

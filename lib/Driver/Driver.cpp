//===- Driver.cpp - the uopc command line ---------------------------------===//
// Parses flags, reads the graph, calls compile() (Driver/Compile.h: the pipeline, the rendering tail, the Module)
// and the writers the flags ask for over the Module: the output directory (kernels and manifest.json),
// --emit library, --emit graph, --stats, --viz. Exit codes: 0 success, 1 bad input (one message on stderr), 2 bad usage.
#include "Driver/Driver.h"

#include "Driver/Compile.h"
#include "Driver/Library.h"
#include "Driver/Manifest.h"
#include "Driver/OutputDir.h"
#include "Driver/Tune.h"
#include "Driver/TuneDb.h"
#include "Driver/Viz.h"
#include "IR/AsmPrinter.h"
#include "IR/Error.h"
#include "IR/GraphIO.h"
#include "IR/Kernel.h"
#include "IR/Version.h"
#include "IR/Work.h"
#include "Passes/PassManager.h"
#include "Passes/Schedule.h"
#include "Targets/LLVMTarget.h"
#include "Targets/Renderer.h"
#include "Targets/Targets.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <optional>
#include <iostream>

namespace uopc {
namespace {

constexpr int kExitOk = 0, kExitBadInput = 1, kExitUsage = 2;

/// Log levels, least severe first (--log-level's names).
constexpr const char *kLogLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
enum LogLevel { kTrace, kDebug, kInfo, kWarn, kError, kCritical, kOff };
int logThreshold = kWarn;

void setupLogging(int verbosity, const std::string &level) {
  logThreshold = verbosity >= 2 ? kDebug : verbosity == 1 ? kInfo : kWarn;
  for (int k = 0; k <= kOff; ++k)
    if (level == kLogLevels[k]) logThreshold = k;
}

/// One line "uopc: LEVEL: message" on stderr when the level is at least --log-level's (or -v's).
void logLine(LogLevel lvl, const std::string &message) {
  if (lvl >= logThreshold && lvl < kOff) std::cerr << "uopc: " << kLogLevels[lvl] << ": " << message << "\n";
}

void addLogOptions(CLI::App &app, int &verbosity, std::string &level) {
  app.add_flag("-v,--verbose", verbosity, "More log output (-v info, -vv debug)");
  app.add_option("--log-level", level, "Log level")
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(kLogLevels), std::end(kLogLevels))));
}

/// Parses the flags (verbosity and level are bound to options added by addLogOptions) and sets up logging;
/// returns an exit code when the process should stop (--help, bad usage).
std::optional<int> parseArgs(CLI::App &app, int argc, char **argv, const int &verbosity, const std::string &level) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  setupLogging(verbosity, level);
  return std::nullopt;
}

/// `uopc convert IN -o OUT [--format json|uopb|text]`: re-encodes a graph document.
int convertMain(int argc, char **argv) {
  CLI::App app{"uopc convert: re-encode a graph document (JSON, .uopb, the text form)", "uopc convert"};
  std::string input, output, format;
  int verbosity = 0;
  std::string level;
  app.add_option("input", input, "Graph document (JSON, .uopb or the text form, detected by content)")->required();
  app.add_option("-o,--output", output, "Output file")->required();
  app.add_option("--format", format,
                 "Output encoding (default: from the output name, .uopb, .txt or .uopir (the text form, nothing "
                 "elided), else JSON)")
      ->check(CLI::IsMember({"json", "uopb", "text"}));
  addLogOptions(app, verbosity, level);
  if (std::optional<int> rc = parseArgs(app, argc, argv, verbosity, level)) return *rc;
  auto endsWith = [&](std::string_view suffix) {
    return output.size() >= suffix.size() && output.compare(output.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (format.empty()) format = endsWith(".uopb") ? "uopb" : endsWith(".txt") || endsWith(".uopir") ? "text" : "json";
  try {
    Graph g = readGraphFile(input);
    writeFileAtomic(output, format == "uopb"   ? writeGraphBinary(g)
                            : format == "text" ? printGraphText(g, AsmOptions::full())
                                               : writeGraphJson(g));
  } catch (const Error &e) {
    std::cerr << "uopc: error: " << printable(e.what()) << "\n";
    return kExitBadInput;
  }
  return kExitOk;
}

/// --cpu: a name that is safe as a compiler flag's value; the LLVM target also asks LLVM whether it knows it.
void checkCpuName(const std::string &cpu, const TargetInfo &target) {
  bool ok = !cpu.empty() && cpu.size() <= 64 && cpu[0] != '-';
  for (char ch : cpu) ok &= std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.';
  if (!ok) fail("--cpu '" + cpu + "' is not a CPU name (letters, digits, '-', '_', '.')");
  if (target.gpu && cpu != "native") fail("--cpu is for the C and LLVM targets (the PTX target takes --gpu-arch)");
  if (target.emitter == Emitter::LLVM && cpu != "native") checkHostCpu(cpu);
}

/// `uopc --stats`: the work model of every kernel step, the total, and the tensor-level work.
void printStats(const Schedule &s, const std::optional<Count> &tensor, std::ostream &os) {
  std::vector<std::vector<std::string>> rows{
      {"step", "kernel", "device", "ops", "loads", "load_bytes", "stores", "store_bytes", "most executed op"}};
  KernelWork total;
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const SchedStep &st = s.steps[i];
    if (st.kind != SchedStep::Kind::Kernel) continue;
    KernelWork w = kernelWork(kernelSink(s.kernels[st.kernel].call));
    rows.push_back({std::to_string(i), s.kernels[st.kernel].name, s.devices[st.device], w.ops.str(), w.loads.str(),
                    w.loadBytes.str(), w.stores.str(), w.storeBytes.str(),
                    w.heaviest ? std::string(opName(w.heaviest->op)) + " " + std::string(dtypeName(w.heaviest->dtype)) + " x " +
                                     w.heaviestTrips.str()
                               : "-"});
    total.ops += w.ops, total.loads += w.loads, total.loadBytes += w.loadBytes;
    total.stores += w.stores, total.storeBytes += w.storeBytes;
  }
  rows.push_back({"total", "", "", total.ops.str(), total.loads.str(), total.loadBytes.str(), total.stores.str(),
                  total.storeBytes.str(), ""});
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto &r : rows)
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  for (const auto &r : rows) {
    std::string line;
    for (size_t c = 0; c < r.size(); ++c) {
      std::string cell = r[c];
      bool left = c < 3 || c == 8;
      std::string pad(width[c] - cell.size(), ' ');
      line += (c ? "  " : "") + (left ? cell + pad : pad + cell);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    os << line << "\n";
  }
  if (tensor) {
    os << "tensor-level ops (each data op once per element): " << tensor->str();
    auto a = total.ops.constant(), b = tensor->constant();
    if (a && b && *b > 0) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(*a) / static_cast<double>(*b));
      os << "  kernel/tensor: " << buf;
    }
    os << "\n";
  }
}

int compileMain(int argc, char **argv) {
  CLI::App app{"uopc: ahead-of-time compiler for tinygrad UOp graphs.\n"
               "  uopc GRAPH -o DIR          compile a graph (JSON or .uopb)\n"
               "  uopc convert IN -o OUT     re-encode a graph document (JSON, .uopb, text)",
               "uopc"};
  std::string input, outDir, targetName(kTargets[0].name), pipelineText, emit, libName, embedParams, paramsFile,
      paramsFormat = "incbin";
  bool listPasses = false, stats = false;
  RenderOptions backend;
  int verbosity = 0;
  std::string level;
  PassManagerOptions pm;
  app.set_version_flag("--version", versionText("uopc"), "Print uopc's version, its LLVM's and the formats it reads and writes");
  app.add_option("graph", input, "Graph document (JSON or .uopb, detected by content)");
  app.add_option("-o,--output", outDir, "Output directory (written atomically)");
  bool force = false;
  app.add_flag("--force", force, "Replace the output directory even if it is not an earlier uopc output");
  std::string targetHelp = "Kernel language:", sep = " ";
  std::vector<std::string> targetNames;
  for (const TargetInfo &t : kTargets) {
    targetNames.emplace_back(t.name);
    targetHelp += sep + std::string(t.name) + (&t == &kTargets[0] ? " (default)" : "") + ": " + std::string(t.description);
    sep = "; ";
  }
  app.add_option("--target", targetName, targetHelp)->check(CLI::IsMember(targetNames));
  app.add_option("--gpu-arch", backend.gpuArch, "PTX target: the GPU architecture (default sm_80)");
  app.add_option("--cpu", backend.cpu,
                 "C and LLVM targets: the CPU the kernels are built for, recorded in the manifest (uopc-run "
                 "compiles C with -march=CPU, the LLVM JIT targets it): native (default: the machine that "
                 "runs them), x86-64-v2, x86-64-v3, skylake, ...");
  app.add_flag("--allow-custom", backend.allowCustom,
               "C target: render CUSTOM ops, whose C source comes from the graph (refused otherwise)");
  app.add_flag("--grid-on-host", backend.gridOnHost,
               "LLVM target: compile the PTX target's thread mapping for this CPU (each kernel loops over its "
               "grid): checks the GPU mapping without a GPU");
  app.add_option("--pass-pipeline", pipelineText,
                 "Comma-separated passes, each with optional options (pass{key=value,...}); default: the "
                 "default pipeline (--list-passes); empty: none");
  int optLevel = -1;
  std::string kernelOpts;
  app.add_option("--opt-level", optLevel,
                 "The kernel optimizer (the optimize pass): 0 or 1 the loops as they are, 2 (default) register "
                 "tiles chosen per kernel")
      ->check(CLI::Range(0, 2));
  app.add_option("--kernel-opts", kernelOpts,
                 "Give kernels their opts by hand: NAME/OPT/...;NAME2 (NAME2: none), OPT one of upcast:AXIS:AMOUNT, "
                 "split:AXIS:LO:HI, partial:RAXIS:AMOUNT, unroll:RAXIS:AMOUNT, block:AXIS:SIZE (docs/lowering.md); "
                 "the names and the opts chosen are in --print-after=optimize and the manifest's applied_opts");
  bool tune = false;
  double tuneBudget = 60;
  std::string tuneDb;
  app.add_flag("--tune", tune,
               "CPU targets: time candidate opts per distinct kernel on this machine (a search seeded by the "
               "optimizer's choice, each checked against --opt-level 0) and keep the fastest in the tuning "
               "database; kernels the database has are not timed again");
  app.add_option("--tune-budget", tuneBudget, "--tune: seconds the whole search may take (default 60)")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--tune-db", tuneDb,
                 "The tuning database (default with --tune: $XDG_CACHE_HOME/uopc/tune.json); without --tune its "
                 "entries for this machine are applied, nothing is timed");
  // (hidden, for tests: Driver/Tune.h's TuneRequest::testFound and testNetworkFactor)
  std::vector<std::string> tuneTestFound;
  double tuneTestNetworkFactor = 0;
  app.add_option("--tune-test-found", tuneTestFound, "")->group("");
  app.add_option("--tune-test-network-factor", tuneTestNetworkFactor, "")->check(CLI::Range(0.0, 1e6))->group("");
  app.add_option("--emit", emit,
                 "What to write: 'kernels' (default) the kernel sources and manifest.json, 'manifest' only "
                 "manifest.json (the schedule), 'graph' the final graph as graph.json, 'library' one C library "
                 "DIR/NAME.h + DIR/NAME.c (C target, CPU devices; docs/library.md)")
      ->check(CLI::IsMember({"graph", "manifest", "kernels", "library"}));
  app.add_option("--name", libName,
                 "--emit library: the prefix of the library's C names and files (default: the graph file's stem, "
                 "or its folder's name when the stem is 'graph')");
  app.add_option("--embed-params", embedParams,
                 "--emit library: bake the input parameters this .safetensors file holds (by parameter name; the "
                 "exporter's inputs.safetensors as it is: its input0, input1, ... stay the caller's) into the "
                 "library as constant data (--params-format)");
  app.add_option("--params-format", paramsFormat,
                 "--embed-params: 'incbin' (default) NAME_params.bin + NAME_params.S, which takes it with .incbin "
                 "(GNU as, clang); 'c' the bytes as C initializers in NAME.c (no assembler; slow to build when large)")
      ->check(CLI::IsMember({"incbin", "c"}));
  app.add_option("--params-file", paramsFile,
                 "--emit library: pack the input parameters this .safetensors file holds (as --embed-params picks "
                 "them) into DIR/NAME_params.bin, which the program reads or maps and gives to NAME_init (its size "
                 "and checksum checked there)");
  app.add_flag("--list-passes", listPasses, "List the registered passes and exit");
  app.add_flag("--stats", stats,
               "Print the work model (stdout): per kernel step its ALU ops on data, loads and stores (elements "
               "and bytes), the total, and the tensor-level graph's work (before rangeify)");
  app.add_flag("--print-after-all", pm.printAfterAll, "Print the graph after every pass (stdout)");
  app.add_option("--print-after", pm.printAfter, "Print the graph after this pass (repeatable)")->delimiter(',');
  app.add_flag("--print-changed", pm.printChanged, "With a print option: only print passes that changed the graph");
  app.add_option("--dump-dir", pm.dumpDir,
                 "Write NN-<pass>.json (.txt with --print-ir-format=text, nothing elided) after every pass into this "
                 "directory; either reads back in (uopc NN-<pass>.txt --pass-pipeline=...)");
  std::string irFormat, vizFile;
  app.add_option("--print-ir-format", irFormat,
                 "Form of printed and dumped graphs: text (readable, the default for --print-after*) or json (format "
                 "v1: the default for --dump-dir)")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_flag("--print-ir-full", pm.printFull,
               "With a print option: elide no long tuple, string or source list, so that the text reads back in "
               "(uopc FILE --pass-pipeline=...)");
  app.add_option("--viz", vizFile,
                 "Write one self-contained HTML page showing the graph after every pass (kernels as boxes that open "
                 "into their graph and source); -o is then optional");
  app.add_flag("--time-passes", pm.timePasses, "Print the time each pass took (stderr)");
  app.add_flag("--verify-each", pm.verifyEach, "Run the verifier after every pass");
  addLogOptions(app, verbosity, level);
  if (std::optional<int> rc = parseArgs(app, argc, argv, verbosity, level)) return *rc;

  if (listPasses) {
    for (const PassInfo &p : allPasses())
      std::cout << p.flag << "\t" << (p.inDefault ? "" : "(not in the default pipeline) ")
                << (p.options.empty() ? "" : "{" + std::string(p.options) + "} ") << p.description << "\n";
    return kExitOk;
  }
  if (input.empty()) {
    std::cerr << "uopc: error: no input graph (see --help)\n";
    return kExitUsage;
  }
  if (outDir.empty() && vizFile.empty()) {
    std::cerr << "uopc: error: no output directory: pass -o DIR (or --viz FILE.html)\n";
    return kExitUsage;
  }
  if (outDir.empty() && stats) {
    std::cerr << "uopc: error: --stats needs -o DIR\n";
    return kExitUsage;
  }
  if (!irFormat.empty()) pm.format = irFormat == "json" ? IRFormat::Json : IRFormat::Text;
  std::vector<PipelineEntry> pipeline;
  try {
    if (app.count("--pass-pipeline") == 0) { // given but empty: no pass at all (render the graph as it is)
      for (const std::string &name : defaultPipeline()) pipeline.push_back(findPass(name));
    } else {
      pipeline = parsePipeline(pipelineText);
    }
    for (const std::string &name : pm.printAfter)
      if (!findPass(name)) fail("unknown pass '" + name + "' in --print-after (see --list-passes)");
    if (optLevel >= 0 || !kernelOpts.empty()) { // options of the pipeline's optimize pass
      auto it = std::find_if(pipeline.begin(), pipeline.end(), [](const PipelineEntry &e) { return e.pass->flag == "optimize"; });
      if (it == pipeline.end()) fail("--opt-level and --kernel-opts need the optimize pass in the pipeline");
      if (optLevel >= 0) it->options["level"] = std::to_string(optLevel);
      if (!kernelOpts.empty()) it->options["opts"] = kernelOpts;
    }
  } catch (const Error &e) {
    std::cerr << "uopc: error: " << printable(e.what()) << "\n";
    return kExitUsage;
  }
  if (emit.empty()) emit = "kernels";
  const TargetInfo &target = *findTarget(targetName); // (--target accepts only the registry's names)

  try {
    // Refuse before doing any work what cannot be produced: no partial output either way.
    if (backend.gridOnHost && target.id != Target::LLVM) fail("--grid-on-host needs --target llvm");
    if (stats && emit == "graph") fail("--stats counts the work of the scheduled kernels: use --emit kernels or manifest");
    for (const char *flag : {"--name", "--embed-params", "--params-file", "--params-format"})
      if (emit != "library" && app.count(flag)) fail(std::string(flag) + " is for --emit library");
    if (app.count("--embed-params") && app.count("--params-file"))
      fail("--embed-params and --params-file are two ways to give the weights: choose one");
    if (app.count("--params-format") && !app.count("--embed-params")) fail("--params-format is for --embed-params");
    if (emit == "library") {
      if (target.emitter != Emitter::C || target.gpu)
        fail("--emit library needs the C target (--target c), not '" + std::string(target.name) + "'");
      if (backend.cpu != "native")
        fail("--cpu is for the kernels uopc-run builds; a library is built by its user's compiler, with its flags (-march=...)");
      if (!app.count("--name")) libName = defaultLibraryName(input); // (--name '' is refused below)
      checkLibraryName(libName);
    }
    if (app.count("--tune-budget") && !tune) fail("--tune-budget is for --tune");
    if ((tune || !tuneDb.empty()) && (target.gpu || backend.gridOnHost))
      fail("--tune and --tune-db are for the CPU targets (c, llvm), not '" + std::string(target.name) +
           (backend.gridOnHost ? " --grid-on-host" : "") + "'");
    if ((tune || !tuneDb.empty()) &&
        std::none_of(pipeline.begin(), pipeline.end(), [](const PipelineEntry &e) { return e.pass->flag == "optimize"; }))
      fail("--tune and --tune-db need the optimize pass in the pipeline");
    if (target.gpu) checkGpuArch(backend.gpuArch);
    checkCpuName(backend.cpu, target);
    if (!vizFile.empty()) checkVizPath(vizFile);
    logLine(kInfo, "reading " + input);
    Graph g = readGraphFile(input);
    logLine(kInfo, "running " + std::to_string(pipeline.size()) + " passes");
    std::optional<Count> tensor;
    if (stats)
      pm.beforePass = [&](std::string_view pass, const Graph &cur) {
        if (pass == "rangeify") tensor = tensorWork(cur);
      };
    VizRecorder viz;
    CompileOptions co;
    co.target = &target;
    co.render = backend;
    co.pipeline = pipeline;
    co.renderingTail = emit != "graph";
    co.tailMayFail = outDir.empty(); // (--viz alone: the page says why nothing is rendered)
    if (!vizFile.empty()) {
      viz.record("input", g, true);
      pm.afterPass = [&](std::string_view pass, const Graph &cur, bool changed) { viz.record(pass, cur, changed); };
      // a page of the passes that ran is what one wants to look at when a pass fails
      co.onFailure = [&](const Module &at, const std::string &why) { writeVizPage(vizFile, input, at, viz, why); };
    }
    std::optional<TuneResult> tuned;
    if (tune || !tuneDb.empty()) {
      // the opts of the tuning database and the search, given to optimize by hand (Driver/Tune.h)
      TuneRequest tr;
      tr.input = input;
      tr.base = co;
      tr.search = tune;
      tr.budgetSeconds = tuneBudget;
      tr.dbPath = tuneDb.empty() ? defaultTuneDbPath() : tuneDb;
      for (const std::string &f : tuneTestFound) {
        std::vector<std::string> parts;
        for (size_t at = 0;;) {
          size_t slash = f.find('/', at);
          parts.push_back(f.substr(at, slash == std::string::npos ? std::string::npos : slash - at));
          if (slash == std::string::npos) break;
          at = slash + 1;
        }
        if (parts.empty() || parts[0].empty()) fail("--tune-test-found: expected NAME/OPT/..., got '" + f + "'");
        tr.testFound[parts[0]] = std::vector<std::string>(parts.begin() + 1, parts.end());
      }
      tr.testNetworkFactor = tuneTestNetworkFactor;
      tuned = tuneKernels(tr, std::cerr);
      for (PipelineEntry &e : co.pipeline)
        if (e.pass->flag == "optimize" && !tuned->kernelOpts.empty()) e.options["opts"] = tuned->kernelOpts;
    }
    co.instrumentation = pm;
    Module m = [&] {
      if (!tuned || !tuned->fromDatabase) return compile(std::move(g), co, std::cout, std::cerr);
      try {
        return compile(std::move(g), co, std::cout, std::cerr);
      } catch (const Error &e) { // (an entry the optimize pass refuses: the database is named)
        fail(std::string(e.what()) + " (opts from the tuning database '" + (tuneDb.empty() ? defaultTuneDbPath() : tuneDb) +
             "': remove that kernel's entry, or the file)");
      }
    }();
    if (tuned) m.optsFrom = tuned->optsFrom;
    // the kernels are rendered once, for the kernel files or the library and for the page's sources
    bool writesKernels = !outDir.empty() && (emit == "kernels" || emit == "library");
    if (writesKernels || (!vizFile.empty() && m.notRendered.empty() && m.schedule())) renderKernels(m);
    // --emit manifest writes no kernel: each step names its own file, as before any was rendered
    if (!outDir.empty() && emit == "manifest") planArtifacts(m);
    if (!vizFile.empty()) writeVizPage(vizFile, input, m, viz);
    if (outDir.empty()) return kExitOk;
    OutputDir out(outDir, force);
    // the writers: each only writes what the Module holds
    if (emit == "graph") {
      out.write("graph.json", writeGraphJson(m.graph));
    } else {
      if (const std::string *e = writesKernels ? m.renderError() : nullptr) fail(*e);
      if (emit == "library") {
        writeLibrary(m, {libName, input, embedParams, paramsFile, paramsFormat == "c" ? ParamsFormat::C : ParamsFormat::Incbin}, out);
      } else {
        if (emit == "kernels") // (--emit manifest --viz renders the kernels for the page only)
          for (const ModuleKernel &k : m.kernels) out.write(k.file, m.fileText(k));
        out.write("manifest.json", m.manifestJson());
      }
      if (stats) printStats(*m.schedule(), tensor, std::cout);
    }
    out.commit();
  } catch (const Error &e) {
    std::cout.flush();
    std::cerr << "uopc: error: " << printable(e.what()) << "\n";
    return kExitBadInput;
  } catch (const std::bad_alloc &) {
    std::cerr << "uopc: error: out of memory\n";
    return kExitBadInput;
  }
  return kExitOk;
}

} // namespace

int uopcMain(int argc, char **argv) {
  if (argc >= 2 && std::strcmp(argv[1], "convert") == 0) return convertMain(argc - 1, argv + 1);
  return compileMain(argc, argv);
}

} // namespace uopc

//===- uopc-run - run a compiled graph (CPU, or NVIDIA GPUs for ptx) or interpret one ===//
// Exit codes: 0 success, 1 bad input (one message on stderr), 2 bad usage.
#include "IR/Error.h"
#include "IR/Version.h"
#include "Interp/Interpreter.h"
#include "Passes/PassManager.h"
#include "Runtime/Mpi.h"
#include "Runtime/Runner.h"
#include "Runtime/Safetensors.h"

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <new>

namespace {

constexpr int kExitOk = 0, kExitBadInput = 1, kExitUsage = 2;

int usage(const std::string &msg) {
  std::cerr << "uopc-run: error: " << uopc::printable(msg) << "\n";
  return kExitUsage;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"uopc-run: run a tinygrad UOp graph on this machine's CPU (or its NVIDIA GPUs, for a ptx manifest).\n"
               "  uopc-run OUT/manifest.json --input SLOT=FILE[,FILE...] --output SLOT=FILE[,FILE...]\n"
               "           [--var NAME=VALUE] [--bench N]      run what `uopc GRAPH -o OUT` compiled\n"
               "           [--inputs IN.safetensors] [--outputs OUT.safetensors]   tensors by parameter name\n"
               "  uopc-run --interpret GRAPH [--pass-pipeline P] --input SLOT=FILE[,FILE...]\n"
               "           --output SLOT=FILE[,FILE...] [--var NAME=VALUE]\n"
               "Files are raw little-endian bytes, one per device of the slot, in the order of its devices.\n"
               "A ptx manifest runs through the CUDA driver (libcuda.so.1, or $UOPC_LIBCUDA): device i on GPU i % count.\n"
               "Under mpirun -np N (N at most the manifest's devices): device d runs in process d % N; process 0 reads\n"
               "the inputs and writes the outputs (docs/distributed.md).",
               "uopc-run"};
  uopc::RunRequest req;
  std::vector<std::string> inputs, outputs, vars;
  bool listPasses = false, verbose = false;
  std::string manifest;
  int bench = 0, threads = 0;
  app.set_version_flag("--version", uopc::versionText("uopc-run"), "Print uopc-run's version, its LLVM's and the formats it reads");
  app.add_option("manifest", manifest, "A manifest.json written by uopc: compile (C), JIT (LLVM IR) or load (PTX) its kernels and run them");
  app.add_option("--bench", bench, "Manifest mode: after the run, run the steps N more times and print their times")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--threads", threads,
                 "Manifest mode, CPU targets: threads that share a kernel's split loop (default: one per core; the "
                 "results are bitwise the same for every count)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--interpret", req.graphPath, "Evaluate this graph (JSON or .uopb) with the reference interpreter");
  app.add_option("--pass-pipeline", req.pipeline, "Passes to run before interpreting (default: verify)");
  app.add_option("--input", inputs, "SLOT=FILE[,FILE...]: a buffer's contents before the run (repeatable)");
  app.add_option("--output", outputs, "SLOT=FILE[,FILE...]: where to write a buffer after the run (repeatable)");
  app.add_option("--var", vars, "NAME=VALUE: the value of a symbolic variable (repeatable)");
  std::string stInputs, stOutputs;
  app.add_option("--inputs", stInputs, "Manifest mode: a safetensors file holding the input parameters by name "
                                       "(NAME, or NAME@i for device i of a multi-device one; see Runtime/Safetensors.h)");
  app.add_option("--outputs", stOutputs, "Manifest mode: write every output parameter into this safetensors file by name");
  app.add_flag("--list-passes", listPasses, "List the registered passes and exit");
  app.add_flag("-v,--verbose", verbose, "Manifest mode: print `rank R/N: devices D,...` before the run and where its time went "
                                        "after it (one process: the kernel build or JIT, reading the inputs, the first run, "
                                        "writing the outputs; under mpirun: each process's)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  if (listPasses) {
    for (const uopc::PassInfo &p : uopc::allPasses()) std::cout << p.flag << "\t" << p.description << "\n";
    return kExitOk;
  }
  if (req.graphPath.empty() && manifest.empty())
    return usage("nothing to run: pass a manifest.json or --interpret GRAPH (see --help)");
  if (!req.graphPath.empty() && !manifest.empty()) return usage("pass either a manifest or --interpret GRAPH, not both");
  if (bench && manifest.empty()) return usage("--bench needs a manifest");
  if ((!stInputs.empty() || !stOutputs.empty()) && manifest.empty()) return usage("--inputs/--outputs need a manifest");
  try {
    uopc::parsePipeline(req.pipeline);
    for (const std::string &s : inputs) {
      auto [slot, files] = uopc::parseSlotFiles(s);
      if (!req.inputFiles.emplace(slot, files).second) return usage("--input " + std::to_string(slot) + " given twice");
    }
    for (const std::string &s : outputs) {
      auto [slot, files] = uopc::parseSlotFiles(s);
      if (!req.outputFiles.emplace(slot, files).second) return usage("--output " + std::to_string(slot) + " given twice");
    }
    for (const std::string &s : vars) {
      auto [name, value] = uopc::parseVarBinding(s);
      if (!req.vars.emplace(name, value).second) return usage("--var " + name + " given twice");
    }
  } catch (const uopc::Error &e) {
    return usage(e.what());
  }
  // Under an MPI launcher with several processes: one process per device (Runtime/Mpi.h). From here on a
  // failing process ends the whole job (MPI_Abort), so no other waits for it.
  std::unique_ptr<uopc::Comm> comm;
  auto failed = [&](const std::string &msg) {
    std::cout.flush();
    if (comm) {
      std::cerr << "uopc-run: rank " << comm->rank() << "/" << comm->size() << ": error: " << msg << std::endl;
      comm->abort(kExitBadInput);
    }
    std::cerr << "uopc-run: error: " << msg << "\n";
    return kExitBadInput;
  };
  try {
    if (!manifest.empty()) comm = uopc::startMpi(&argc, &argv);
  } catch (const uopc::Error &e) {
    return failed(uopc::printable(e.what()));
  }
  bool root = !comm || comm->rank() == 0;
  try {
    if (!manifest.empty()) {
      uopc::ManifestRunRequest mr;
      mr.comm = comm.get();
      mr.verbose = verbose;
      mr.manifestPath = manifest;
      mr.inputFiles = req.inputFiles;
      mr.outputFiles = req.outputFiles;
      mr.vars = req.vars;
      mr.bench = bench;
      mr.threads = threads;
      // --inputs: tensors read from the file into the buffers; --outputs: packed from raw files in a
      // private temporary folder
      std::string tmp;
      std::vector<uopc::safetensors::ParamBinding> packed;
      if (!stOutputs.empty() && root) {
        std::string tmpl = (std::filesystem::temp_directory_path() / "uopc-run-st-XXXXXX").string();
        if (!mkdtemp(tmpl.data())) throw uopc::Error("cannot make a temporary folder for --inputs/--outputs");
        tmp = tmpl;
      }
      struct Cleanup {
        const std::string &dir;
        ~Cleanup() {
          std::error_code ec;
          if (!dir.empty()) std::filesystem::remove_all(dir, ec);
        }
      } cleanup{tmp};
      // (one process per device: process 0 alone reads the input files and writes the outputs)
      if (!stInputs.empty() && root) uopc::safetensors::bindInputs(manifest, stInputs, mr.inputFiles, mr.inputRegions);
      if (!stOutputs.empty() && root) packed = uopc::safetensors::bindOutputs(manifest, tmp, mr.outputFiles);
      uopc::runManifest(mr, std::cout);
      if (!stOutputs.empty() && root) uopc::safetensors::packOutputs(packed, mr.outputFiles, stOutputs);
    } else {
      uopc::runInterpret(req);
    }
  } catch (const uopc::Error &e) {
    return failed(uopc::printable(e.what()));
  } catch (const std::bad_alloc &) {
    return failed("out of memory");
  } catch (const std::exception &e) {
    return failed("internal error: " + uopc::printable(e.what()));
  }
  if (comm) comm->finish();
  return kExitOk;
}

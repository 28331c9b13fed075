//===- fuzz_manifest - libFuzzer target: uopc-run's manifest parser and run set-up ===//
// Any manifest text must be refused with a uopc::Error or accepted as consistent (checkManifestText:
// every check runManifest does before compiling, the kernel signatures included, and the CPU entry
// points planned). The manifest's folder holds one kernel file, kernels/CPU/k0.c, with a signature line,
// so that fuzzed manifests naming it reach the signature checks.
#include "IR/Error.h"
#include "Runtime/Runner.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace {
std::string manifestPath() {
  static std::string path = [] {
    namespace fs = std::filesystem;
    fs::path dir = fs::temp_directory_path() / ("uopc-fuzz-manifest-" + std::to_string(::getpid()));
    fs::create_directories(dir / "kernels" / "CPU");
    std::ofstream(dir / "kernels" / "CPU" / "k0.c")
        << "void k0_CPU(float *out0, const float *in1, int64_t var_i) {}\n"
           "/* uopc-signature: float32:3 float32:30 vars 1 i:1:10 */\n";
    std::ofstream(dir / "kernels" / "CPU" / "k1.c") << "void k1_CPU(float *out0) {}\n/* uopc-signature: float32:4 vars 0 */\n";
    return (dir / "manifest.json").string();
  }();
  return path;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string path = manifestPath();
  try {
    uopc::checkManifestText(std::string(reinterpret_cast<const char *>(data), size), path);
  } catch (const uopc::Error &) {
  }
  return 0;
}

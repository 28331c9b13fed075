//===- fuzz_safetensors - libFuzzer target: the safetensors reader (uopc-run --inputs, --embed-params) ===//
// Any file must be refused with a uopc::Error or read whole: its header parsed and checked (parseHeader, the
// same split of the 8-byte size the Reader makes), and then the file itself opened through the Reader (a
// memory file, /proc/self/fd/N) and every tensor read, whose bytes must be the ones the header names.
#include "IR/Error.h"
#include "Runtime/Safetensors.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <sys/mman.h>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  bool parsed = false;
  if (size >= 8) {
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | data[i];
    if (n <= uopc::safetensors::kMaxHeaderBytes && n <= size - 8) {
      try {
        uopc::safetensors::parseHeader(bytes.substr(8, n), size - 8 - n, "fuzz");
        parsed = true;
      } catch (const uopc::Error &) {
      }
    }
  }
  static int fd = ::memfd_create("uopc-fuzz-safetensors", MFD_CLOEXEC);
  if (fd < 0) std::abort();
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) std::abort();
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    uopc::safetensors::Reader r(path);
    if (!parsed) std::abort(); // (the Reader accepted what parseHeader refused)
    uint64_t start = size - [&] {
      uint64_t total = 0;
      for (const auto &[name, t] : r.tensors()) total += t.end - t.begin;
      return total;
    }();
    for (const auto &[name, t] : r.tensors())
      if (r.read(name) != bytes.substr(start + t.begin, t.end - t.begin)) std::abort();
  } catch (const uopc::Error &) {
    if (parsed) std::abort(); // (parseHeader accepted what the Reader refused)
  }
  return 0;
}

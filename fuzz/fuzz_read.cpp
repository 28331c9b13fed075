//===- fuzz_read - libFuzzer target: the JSON and .uopb graph readers ----===//
// Any input: either a uopc::Error (bad input, one message) or a graph that writes back in both encodings
// and reads back as the same graph. Anything else (a crash, another exception, a sanitizer report) is a bug.
#include "IR/Error.h"
#include "IR/GraphIO.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uopc::ReadLimits limits;
  limits.maxNodes = 1u << 16; // keep each input fast; the limits themselves are tested elsewhere
  limits.maxArgItems = 1u << 16;
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  try {
    uopc::Graph g = uopc::readGraph(bytes, "<fuzz>", limits);
    std::string json = uopc::writeGraphJson(g), bin = uopc::writeGraphBinary(g);
    uopc::Graph a = uopc::readGraph(json, "<fuzz json>", limits), b = uopc::readGraph(bin, "<fuzz uopb>", limits);
    if (uopc::writeGraphJson(a) != json || uopc::writeGraphJson(b) != json) std::abort(); // a write/read mismatch
  } catch (const uopc::Error &) {
  }
  return 0;
}

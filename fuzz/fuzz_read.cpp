//===- fuzz_read - libFuzzer target: the JSON, .uopb and text graph readers ===//
// Any input: either a uopc::Error (bad input, one message) or a graph that writes back in both encodings
// and reads back as the same graph, and whose full text form reads back as it and prints the same text. Anything else (a crash, another exception, a sanitizer report) is a bug.
#include "IR/AsmPrinter.h"
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
    std::string text = uopc::printGraphText(g, uopc::AsmOptions::full());
    uopc::Graph t = uopc::readGraphText(text, "<fuzz text>", limits);
    if (uopc::writeGraphJson(t) != json || uopc::printGraphText(t, uopc::AsmOptions::full()) != text) std::abort();
  } catch (const uopc::Error &) {
  }
  return 0;
}

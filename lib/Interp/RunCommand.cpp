//===- RunCommand.cpp - `uopc-run --interpret`: files in, graph evaluated, files out ===//
#include "IR/Error.h"
#include "IR/Files.h"
#include "IR/GraphIO.h"
#include "Interp/Interpreter.h"
#include "Passes/PassManager.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iostream>
#include <sstream>

namespace uopc {
namespace {

int64_t parseInt(std::string_view text, const std::string &what) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    fail("'" + std::string(text) + "' is not an integer " + what);
  return v;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read input file " + quote(path));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail("error while reading " + quote(path));
  return ss.str();
}

/// An --output file: written whole or not at all (IR/Files.h).
void writeFile(const std::string &path, const std::string &bytes) { writeFileAtomic(path, bytes); }

} // namespace

std::pair<int64_t, std::vector<std::string>> parseSlotFiles(const std::string &spec) {
  size_t eq = spec.find('=');
  if (eq == std::string::npos) fail(quote(spec) + " is not of the form SLOT=FILE[,FILE...]");
  int64_t slot = parseInt(std::string_view(spec).substr(0, eq), "slot in " + quote(spec));
  if (slot < 0) fail("slot " + std::to_string(slot) + " in " + quote(spec) + " is negative");
  std::vector<std::string> files;
  std::string rest = spec.substr(eq + 1);
  size_t start = 0;
  while (true) {
    size_t comma = rest.find(',', start);
    std::string f = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (f.empty()) fail("empty file name in " + quote(spec));
    files.push_back(f);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return {slot, files};
}

std::pair<std::string, int64_t> parseVarBinding(const std::string &spec) {
  size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) fail(quote(spec) + " is not of the form NAME=VALUE");
  return {spec.substr(0, eq), parseInt(std::string_view(spec).substr(eq + 1), "value in " + quote(spec))};
}

void runInterpret(const RunRequest &req) {
  std::vector<PipelineEntry> pipeline = parsePipeline(req.pipeline);
  Graph g = readGraphFile(req.graphPath);
  PassManagerOptions pm;
  runPipeline(g, pipeline, pm, std::cout, std::cerr);

  std::vector<std::string> known = graphVariables(g);
  std::map<std::string, std::string> aliases = graphVariableAliases(g); // p<slot> -> name (tinygrad 0.14.0)
  std::map<std::string, int64_t> vars;
  for (const auto &[given, value] : req.vars) {
    auto a = aliases.find(given);
    const std::string &name = a == aliases.end() ? given : a->second;
    if (std::find(known.begin(), known.end(), name) == known.end())
      fail("--var " + given + ": the graph has no variable named " + quote(given));
    if (!vars.emplace(name, value).second)
      fail("--var " + given + ": variable " + quote(name) + " is given twice (by its name and by its p<slot> name)");
  }

  std::map<int64_t, SlotInfo> slots;
  for (const SlotInfo &s : bufferSlots(g, vars)) slots[s.slot] = s;
  auto slotOf = [&](int64_t slot, size_t files, const char *flag) -> const SlotInfo & {
    auto it = slots.find(slot);
    if (it == slots.end()) fail(std::string(flag) + " " + std::to_string(slot) + ": the graph has no buffer slot " + std::to_string(slot));
    if (files != it->second.devices.size())
      fail(std::string(flag) + " " + std::to_string(slot) + ": the slot lives on " +
           std::to_string(it->second.devices.size()) + " device(s), so it needs that many files, got " +
           std::to_string(files));
    return it->second;
  };

  InterpInputs in;
  in.vars = vars;
  for (const auto &[slot, files] : req.inputFiles) {
    const SlotInfo &info = slotOf(slot, files.size(), "--input");
    std::vector<std::string> bytes;
    for (size_t d = 0; d < files.size(); ++d) {
      bytes.push_back(readFile(files[d]));
      size_t want = static_cast<size_t>(info.numel) * dtypeSize(info.dtype);
      if (bytes.back().size() != want)
        fail("--input " + std::to_string(slot) + ": " + quote(files[d]) + " has " + std::to_string(bytes.back().size()) +
             " bytes, but slot " + std::to_string(slot) + " holds " + std::to_string(info.numel) + " " +
             std::string(dtypeName(info.dtype)) + " elements (" + std::to_string(want) + " bytes) per device");
    }
    in.buffers[slot] = std::move(bytes);
  }
  for (const auto &[slot, files] : req.outputFiles) slotOf(slot, files.size(), "--output");

  InterpOutputs out = interpret(g, in);
  for (const auto &[slot, files] : req.outputFiles)
    for (size_t d = 0; d < files.size(); ++d) writeFile(files[d], out.at(slot).at(d));
}

} // namespace uopc

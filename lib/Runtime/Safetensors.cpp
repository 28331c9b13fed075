//===- Safetensors.cpp - uopc-run --inputs/--outputs FILE.safetensors -----===//
#include "Runtime/Safetensors.h"

#include "IR/Error.h"
#include "Runtime/ManifestModel.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <sstream>

namespace uopc::safetensors {
namespace {

using Json = nlohmann::json;

struct Code {
  const char *dtype, *code;
  unsigned size;
};
constexpr Code kCodes[] = {
    {"float64", "F64", 8}, {"float32", "F32", 4}, {"float16", "F16", 2}, {"bfloat16", "BF16", 2},
    {"int64", "I64", 8},   {"int32", "I32", 4},   {"int16", "I16", 2},   {"int8", "I8", 1},
    {"uint64", "U64", 8},  {"uint32", "U32", 4},  {"uint16", "U16", 2},  {"uint8", "U8", 1},
    {"bool", "BOOL", 1},   {"fp8e4m3", "F8_E4M3", 1}, {"fp8e5m2", "F8_E5M2", 1},
};

unsigned sizeOfCode(const std::string &code) {
  for (const Code &c : kCodes)
    if (code == c.code) return c.size;
  return 0;
}

std::string readWhole(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path + ": cannot open");
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) fail(path + ": cannot read");
  return ss.str();
}

void writeWhole(const std::string &path, const std::string &data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) fail(path + ": cannot open for writing");
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
  f.close();
  if (!f) fail(path + ": cannot write");
}

} // namespace

std::string codeOf(const std::string &dtype) {
  for (const Code &c : kCodes)
    if (dtype == c.dtype) return c.code;
  fail("dtype " + dtype + " has no safetensors code");
}

std::map<std::string, Tensor> readFile(const std::string &path) {
  std::string bytes = readWhole(path);
  auto bad = [&](const std::string &why) -> void { fail(path + ": not a safetensors file: " + why); };
  if (bytes.size() < 8) bad("shorter than its 8-byte header size");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  if (n > bytes.size() - 8) bad("the header size " + std::to_string(n) + " exceeds the file");
  Json h;
  try {
    h = Json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  } catch (const Json::exception &e) {
    bad(std::string("the header is not JSON: ") + e.what());
  }
  if (!h.is_object()) bad("the header is not a JSON object");
  size_t dataSize = bytes.size() - 8 - n;
  std::map<std::string, Tensor> out;
  for (auto it = h.begin(); it != h.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const Json &t = it.value();
    std::string where = "tensor '" + it.key() + "'";
    if (!t.is_object() || !t.contains("dtype") || !t["dtype"].is_string() || !t.contains("shape") ||
        !t["shape"].is_array() || !t.contains("data_offsets") || !t["data_offsets"].is_array() ||
        t["data_offsets"].size() != 2)
      bad(where + " needs dtype, shape and data_offsets [begin, end]");
    Tensor x;
    x.dtype = t["dtype"].get<std::string>();
    unsigned item = sizeOfCode(x.dtype);
    if (!item) bad(where + " has dtype " + x.dtype + ", which uopc does not know");
    uint64_t numel = 1;
    for (const Json &d : t["shape"]) {
      if (!d.is_number_unsigned() && !(d.is_number_integer() && d.get<int64_t>() >= 0)) bad(where + ": shape entries must be integers >= 0");
      uint64_t v = d.get<uint64_t>();
      if (v && numel > (uint64_t(1) << 48) / v) bad(where + ": shape too large");
      numel *= v;
      x.shape.push_back(static_cast<int64_t>(v));
    }
    const Json &o = t["data_offsets"];
    if (!o[0].is_number_unsigned() || !o[1].is_number_unsigned()) bad(where + ": data_offsets must be integers >= 0");
    uint64_t b = o[0].get<uint64_t>(), e = o[1].get<uint64_t>();
    if (b > e || e > dataSize) bad(where + ": data_offsets [" + std::to_string(b) + ", " + std::to_string(e) + "] leave the data");
    if (e - b != numel * item)
      bad(where + ": " + std::to_string(e - b) + " bytes for " + std::to_string(numel) + " " + x.dtype + " elements");
    x.data = bytes.substr(8 + n + b, e - b);
    out.emplace(it.key(), std::move(x));
  }
  return out;
}

void writeFile(const std::string &path, const std::map<std::string, Tensor> &tensors) {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  h["__metadata__"] = {{"producer", "uopc-run"}};
  uint64_t off = 0;
  for (const auto &[name, t] : tensors) {
    h[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {off, off + t.data.size()}}};
    off += t.data.size();
  }
  std::string header = h.dump();
  while ((8 + header.size()) % 8) header += ' ';
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>((uint64_t(header.size()) >> (8 * i)) & 0xff);
  out += header;
  for (const auto &[name, t] : tensors) out += t.data;
  writeWhole(path, out);
}

std::vector<ParamBinding> manifestParams(const std::string &manifestPath) {
  std::vector<ParamBinding> out;
  for (const manifest::Param &p : manifest::readFile(manifestPath).params) {
    ParamBinding b;
    b.slot = p.slot;
    b.dtype = std::string(dtypeName(p.dtype));
    b.role = std::string(manifest::roleName(p.role));
    b.numel = p.numel;
    b.bytes = p.bytes;
    b.devices = p.devices.size();
    b.name = p.name.value_or("slot" + std::to_string(p.slot));
    out.push_back(std::move(b));
  }
  return out;
}

void bindInputs(const std::string &manifestPath, const std::string &file, const std::string &dir,
                std::map<int64_t, std::vector<std::string>> &inputFiles) {
  std::map<std::string, Tensor> tensors = readFile(file);
  for (const ParamBinding &p : manifestParams(manifestPath)) {
    if (p.role == "output" || inputFiles.count(p.slot)) continue;
    std::vector<std::string> files;
    for (size_t d = 0; d < p.devices; ++d) {
      std::string name = p.tensorName(d);
      auto it = tensors.find(name);
      if (it == tensors.end())
        fail("--inputs " + file + ": no tensor '" + name + "' (slot " + std::to_string(p.slot) + ", " + p.dtype + ", " +
             std::to_string(p.numel) + " elements per device)");
      if (it->second.dtype != codeOf(p.dtype))
        fail("--inputs " + file + ": tensor '" + name + "' is " + it->second.dtype + ", slot " + std::to_string(p.slot) +
             " holds " + p.dtype + " (" + codeOf(p.dtype) + ")");
      if (static_cast<int64_t>(it->second.data.size()) != p.bytes)
        fail("--inputs " + file + ": tensor '" + name + "' has " + std::to_string(it->second.data.size()) +
             " bytes, slot " + std::to_string(p.slot) + " holds " + std::to_string(p.bytes) + " per device");
      files.push_back(dir + "/in.slot" + std::to_string(p.slot) + ".dev" + std::to_string(d) + ".bin");
      writeWhole(files.back(), it->second.data);
    }
    inputFiles[p.slot] = files;
  }
}

std::vector<ParamBinding> bindOutputs(const std::string &manifestPath, const std::string &dir,
                                      std::map<int64_t, std::vector<std::string>> &outputFiles) {
  std::vector<ParamBinding> out;
  for (const ParamBinding &p : manifestParams(manifestPath)) {
    if (p.role == "input" || outputFiles.count(p.slot)) continue;
    std::vector<std::string> files;
    for (size_t d = 0; d < p.devices; ++d)
      files.push_back(dir + "/out.slot" + std::to_string(p.slot) + ".dev" + std::to_string(d) + ".bin");
    outputFiles[p.slot] = files;
    out.push_back(p);
  }
  return out;
}

void packOutputs(const std::vector<ParamBinding> &params, const std::map<int64_t, std::vector<std::string>> &outputFiles,
                 const std::string &file) {
  std::map<std::string, Tensor> tensors;
  for (const ParamBinding &p : params) {
    const std::vector<std::string> &files = outputFiles.at(p.slot);
    for (size_t d = 0; d < files.size(); ++d) {
      Tensor t{codeOf(p.dtype), {p.numel}, readWhole(files[d])};
      if (!tensors.emplace(p.tensorName(d), std::move(t)).second)
        fail("--outputs " + file + ": two parameters are both named '" + p.tensorName(d) + "'");
    }
  }
  writeFile(file, tensors);
}

} // namespace uopc::safetensors

//===- TuneDb.cpp - the tuning database's reader and writer ---------------===//
#include "Driver/TuneDb.h"

#include "IR/Error.h"
#include "IR/Files.h"
#include "Passes/Optimize/Opts.h"
#include "Runtime/KernelCache.h"
#include "Runtime/ManifestModel.h"
#include "Runtime/Sha256.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <sys/stat.h>

namespace uopc {
namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

constexpr const char *kFormat = "uopc-tune-db";
constexpr int64_t kVersion = 1;

/// Reads one database's JSON, every error naming the file and where in it.
struct Reader {
  std::string path;

  [[noreturn]] void bad(const std::string &where, const std::string &why) const {
    fail("tuning database '" + path + "': " + where + (where.empty() ? "" : ": ") + why);
  }

  void onlyFields(const Json &o, std::initializer_list<const char *> known, const std::string &where) const {
    for (auto it = o.begin(); it != o.end(); ++it)
      if (std::none_of(known.begin(), known.end(), [&](const char *k) { return it.key() == k; }))
        bad(where, "unknown field '" + it.key() + "'");
  }
  const Json &field(const Json &o, const char *name, const std::string &where) const {
    auto it = o.find(name);
    if (it == o.end()) bad(where, std::string("missing field '") + name + "'");
    return *it;
  }
  std::string string(const Json &o, const char *name, const std::string &where, size_t maxBytes) const {
    const Json &v = field(o, name, where);
    if (!v.is_string()) bad(where, std::string("'") + name + "' is not a string");
    std::string s = v.get<std::string>();
    if (s.empty() || s.size() > maxBytes)
      bad(where, std::string("'") + name + "' is empty or longer than " + std::to_string(maxBytes) + " bytes");
    return s;
  }
  int64_t integer(const Json &o, const char *name, const std::string &where, int64_t lo, int64_t hi) const {
    const Json &v = field(o, name, where);
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
      bad(where, std::string("'") + name + "' is not an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
    return v.get<int64_t>();
  }
  double number(const Json &o, const char *name, const std::string &where) const {
    const Json &v = field(o, name, where);
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 || v.get<double>() > 1e15)
      bad(where, std::string("'") + name + "' is not a number from 0 to 1e15");
    return v.get<double>();
  }

  TuneEntry entry(const Json &e, const std::string &where) const {
    if (!e.is_object()) bad(where, "not an object");
    onlyFields(e, {"kernel", "target", "cpu", "features", "threads", "opts", "searched"}, where);
    TuneEntry t;
    t.key.kernel = string(e, "kernel", where, 64);
    if (t.key.kernel.size() != 64 ||
        !std::all_of(t.key.kernel.begin(), t.key.kernel.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }))
      bad(where, "'kernel' is not a kernel hash (64 lowercase hex digits)");
    t.key.target = string(e, "target", where, 16);
    if (t.key.target != "c" && t.key.target != "llvm") bad(where, "'target' is not c or llvm");
    t.key.cpu = string(e, "cpu", where, 256);
    t.key.features = string(e, "features", where, 256);
    t.key.threads = integer(e, "threads", where, 1, 4096);
    const Json &opts = field(e, "opts", where);
    if (!opts.is_array() || opts.size() > 64) bad(where, "'opts' is not a list of at most 64 opts");
    for (const Json &o : opts) {
      if (!o.is_string()) bad(where, "'opts' is not a list of strings");
      std::string text = o.get<std::string>();
      try {
        optimize::parseOpt(text);
      } catch (const Error &err) {
        bad(where, std::string(err.what()).substr(std::string("pass 'optimize': ").size()));
      }
      t.opts.push_back(text);
    }
    if (auto it = e.find("searched"); it != e.end()) {
      const Json &s = *it;
      std::string w = where + ".searched";
      if (!s.is_object()) bad(w, "not an object");
      onlyFields(s, {"candidates", "seconds", "best_ns", "heuristic_ns"}, w);
      TuneSearched r;
      r.candidates = integer(s, "candidates", w, 0, int64_t(1) << 40);
      r.seconds = number(s, "seconds", w);
      r.bestNs = number(s, "best_ns", w);
      r.heuristicNs = number(s, "heuristic_ns", w);
      t.searched = r;
    }
    return t;
  }
};

/// A number in the text: integers as integers, others rounded to 4 significant digits (stable text).
Json figure(double x) {
  if (x == std::floor(x) && std::fabs(x) < 1e15) return static_cast<int64_t>(x);
  std::ostringstream os;
  os.precision(4);
  os << x;
  return std::stod(os.str());
}

} // namespace

const TuneEntry *TuneDb::find(const TuneKey &key) const {
  auto it = std::lower_bound(entries.begin(), entries.end(), key, [](const TuneEntry &e, const TuneKey &k) { return e.key < k; });
  return it != entries.end() && it->key == key ? &*it : nullptr;
}

void TuneDb::put(TuneEntry e) {
  auto it = std::lower_bound(entries.begin(), entries.end(), e.key, [](const TuneEntry &x, const TuneKey &k) { return x.key < k; });
  if (it != entries.end() && it->key == e.key) *it = std::move(e);
  else entries.insert(it, std::move(e));
}

TuneDb parseTuneDb(const std::string &text, const std::string &path) {
  Reader r{path};
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception &e) {
    r.bad("", std::string("not JSON (") + e.what() + ")");
  }
  if (!j.is_object()) r.bad("", "not a JSON object");
  r.onlyFields(j, {"format", "version", "entries"}, "");
  const Json &format = r.field(j, "format", "");
  if (!format.is_string() || format.get<std::string>() != kFormat) r.bad("", std::string("'format' is not \"") + kFormat + "\"");
  const Json &version = r.field(j, "version", "");
  if (!version.is_number_integer() || version.get<int64_t>() != kVersion)
    r.bad("", "version " + version.dump() + ": this uopc reads version " + std::to_string(kVersion));
  const Json &entries = r.field(j, "entries", "");
  if (!entries.is_array()) r.bad("", "'entries' is not a list");
  TuneDb db;
  std::set<TuneKey> seen;
  for (size_t i = 0; i < entries.size(); ++i) {
    std::string where = "entries[" + std::to_string(i) + "]";
    TuneEntry e = r.entry(entries[i], where);
    if (!seen.insert(e.key).second) r.bad(where, "a second entry of kernel " + e.key.kernel + " for the same target and machine");
    db.put(std::move(e));
  }
  return db;
}

std::string tuneDbJson(const TuneDb &db) {
  Json j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  Json entries = Json::array();
  for (const TuneEntry &e : db.entries) {
    Json o;
    o["kernel"] = e.key.kernel;
    o["target"] = e.key.target;
    o["cpu"] = e.key.cpu;
    o["features"] = e.key.features;
    o["threads"] = e.key.threads;
    o["opts"] = e.opts;
    if (e.searched)
      o["searched"] = Json{{"candidates", e.searched->candidates},
                           {"seconds", figure(e.searched->seconds)},
                           {"best_ns", figure(std::round(e.searched->bestNs))},
                           {"heuristic_ns", figure(std::round(e.searched->heuristicNs))}};
    entries.push_back(std::move(o));
  }
  j["entries"] = std::move(entries);
  return j.dump(1) + "\n";
}

TuneDb readTuneDb(const std::string &path, bool missingOk) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    if (missingOk) return {};
    fail("tuning database '" + path + "': no such file (uopc --tune writes it)");
  }
  std::string text;
  try {
    text = manifest::readBounded(path, "tuning database", uint64_t(64) << 20);
  } catch (const Error &e) {
    fail("tuning database '" + path + "': " + e.what());
  }
  return parseTuneDb(text, path);
}

void writeTuneDb(const TuneDb &db, const std::string &path) {
  fs::path p(path);
  std::error_code ec;
  if (p.has_parent_path() && !fs::exists(p.parent_path(), ec)) {
    if (path != defaultTuneDbPath()) fail("tuning database '" + path + "': its directory does not exist");
    fs::create_directories(p.parent_path(), ec); // (the cache directory, owner-only as the kernel cache's)
    if (ec) fail("tuning database '" + path + "': cannot create its directory: " + ec.message());
    ::chmod(p.parent_path().c_str(), 0700);
  }
  writeFileAtomic(path, tuneDbJson(db));
}

std::string defaultTuneDbPath() { return (fs::path(kernelCacheDir()) / "tune.json").string(); }

MachineId thisMachine(std::string_view cpu) {
  MachineId m;
  std::ifstream in("/proc/cpuinfo");
  std::string line, model, flags;
  while (std::getline(in, line) && (model.empty() || flags.empty())) {
    auto value = [&] {
      size_t colon = line.find(':');
      std::string v = colon == std::string::npos ? "" : line.substr(colon + 1);
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.erase(v.begin());
      return v;
    };
    if (model.empty() && (line.rfind("model name", 0) == 0 || line.rfind("CPU part", 0) == 0)) model = value();
    if (flags.empty() && (line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0)) flags = value();
  }
  if (model.empty()) model = "unknown";
  if (model.size() > 200) model.resize(200);
  m.cpu = cpu == "native" ? model : std::string(cpu) + " on " + model;
  // the flags sorted, as a short digest: the same CPU with another microcode or hypervisor mask differs
  std::istringstream fs(flags);
  std::set<std::string> sorted;
  for (std::string f; fs >> f;) sorted.insert(f);
  std::string joined;
  for (const std::string &f : sorted) joined += f + " ";
  m.features = "flags-" + Sha256::hex(joined).substr(0, 16);
  return m;
}

} // namespace uopc

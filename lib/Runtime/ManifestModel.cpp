//===- ManifestModel.cpp - the manifest model, toJson, and checkSignatures against the kernel files ===//
#include "Runtime/ManifestModel.h"

#include "IR/Error.h"
#include "Runtime/ManifestDetail.h"
#include "Targets/Targets.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace uopc::manifest {
namespace fs = std::filesystem;
using detail::Json;

namespace {

// ---- writing -----------------------------------------------------------------------------------------

Json refJson(const Ref &r) {
  Json j;
  j[r.isParam ? "param" : "buffer"] = r.id;
  j["dev"] = r.dev;
  return j;
}

/// The device holding `r`, by name (a manifest being written has no derived indices yet); "" when unknown.
std::string deviceName(const Manifest &m, const Ref &r) {
  const std::vector<std::string> *devs = nullptr;
  if (r.isParam) {
    for (const Param &p : m.params)
      if (p.slot == r.id) devs = &p.devices;
  } else if (r.id >= 0 && static_cast<size_t>(r.id) < m.buffers.size()) {
    devs = &m.buffers[static_cast<size_t>(r.id)].devices;
  }
  return devs && r.dev < devs->size() ? (*devs)[r.dev] : std::string();
}

Json estimateJson(const Estimate &e) {
  if (const int64_t *v = std::get_if<int64_t>(&e)) return *v;
  return std::get<std::string>(e);
}

Json keptJson(const Kept &k) {
  if (!k.known) return "unknown";
  Json runs = Json::array();
  for (const KeptRun &r : k.runs)
    runs.push_back({{"start", r.start}, {"length", r.length}, {"stride", r.stride}, {"count", r.count}});
  return Json{{"elements", k.elements}, {"runs", runs}};
}

// ---- the kernel files' signatures (checkSignatures) --------------------------------------------------

/// One kernel file's `uopc-signature:` line.
struct Signature {
  std::vector<std::pair<std::string, int64_t>> args; // dtype, elements (-1: unbounded)
  size_t nvars = 0;
  struct SigVar {
    std::string name;
    bool ranged = false;
    int64_t lo = 0, hi = 0;
  };
  std::vector<SigVar> vars; // per variable: name and the range the kernel was compiled for (older files: none)
  int64_t parallel = 0;     // the THREAD loop's trip count (0: the kernel takes no [lo, hi))
};

/// The signature of `file` (its text), or nothing when it has none.
std::optional<Signature> parseSignature(const std::string &text, const std::string &file) {
  size_t at = text.rfind("uopc-signature:");
  if (at == std::string::npos) return std::nullopt;
  std::istringstream line(text.substr(at + 15, text.find('\n', at) - at - 15));
  Signature sig;
  std::string tok;
  size_t nvars = SIZE_MAX;
  auto malformed = [&](const std::string &t) -> int64_t {
    fail("kernel " + quote(file) + ": malformed uopc-signature entry " + quote(t));
  };
  auto number = [&](const std::string &n, const std::string &t) -> int64_t {
    if (n.empty() || n.size() > 20) malformed(t);
    size_t used = 0;
    int64_t x = 0;
    try {
      x = std::stoll(n, &used);
    } catch (const std::exception &) {
      malformed(t);
    }
    if (used != n.size()) malformed(t);
    return x;
  };
  while (line >> tok) {
    if (tok == "vars") {
      if (!(line >> tok)) break;
      int64_t n = number(tok, tok);
      if (n < 0 || n > 100000) malformed(tok);
      nvars = static_cast<size_t>(n);
      break;
    }
    size_t colon = tok.find(':');
    if (colon == std::string::npos) malformed(tok);
    std::string n = tok.substr(colon + 1);
    int64_t elems = -1;
    if (n != "?") {
      elems = number(n, tok);
      if (elems < 0) malformed(tok);
    }
    sig.args.push_back({tok.substr(0, colon), elems});
  }
  if (nvars == SIZE_MAX) fail("kernel " + quote(file) + ": malformed uopc-signature line");
  sig.nvars = nvars;
  while (sig.vars.size() < nvars && line >> tok) {
    size_t c1 = tok.find(':');
    if (c1 == std::string::npos || c1 == 0) malformed(tok);
    Signature::SigVar v{tok.substr(0, c1)};
    std::string rest = tok.substr(c1 + 1);
    if (rest != "?") {
      size_t c2 = rest.find(':');
      if (c2 == std::string::npos) malformed(tok);
      v.ranged = true;
      v.lo = number(rest.substr(0, c2), tok);
      v.hi = number(rest.substr(c2 + 1), tok);
    }
    sig.vars.push_back(std::move(v));
  }
  if (!sig.vars.empty() && sig.vars.size() != nvars) fail("kernel " + quote(file) + ": malformed uopc-signature line");
  if (line >> tok && tok != "*/") { // (a C file's signature is a comment)
    if (tok != "parallel" || !(line >> tok)) malformed(tok);
    sig.parallel = number(tok, tok);
    if (sig.parallel < 2 || sig.parallel > INT32_MAX) malformed(tok);
  }
  return sig;
}

} // namespace

std::string_view roleName(Role r) { return detail::kRoleNames[static_cast<size_t>(r)]; }

std::string_view reduceOpName(ReduceOp op) { return detail::kReduceOpNames[static_cast<size_t>(op)]; }

bool isAllreduceDType(DType dt) {
  switch (dt) {
  case DType::Int8: case DType::UInt8: case DType::Int16: case DType::UInt16: case DType::Int32: case DType::UInt32:
  case DType::Int64: case DType::UInt64: case DType::Float32: case DType::Float64: return true;
  default: return false;
  }
}

std::string Step::label() const {
  if (isCopy()) return "copy -> " + device;
  if (isKernel()) return kernel + " @ " + device;
  std::string devs;
  for (const std::string &d : devices) devs += (devs.empty() ? "" : ",") + d;
  return "allreduce " + std::string(reduceOpName(op)) + " @ " + devs;
}

namespace {
constexpr int64_t kGrain = 256;

/// The iteration of a split loop of n where t/parts of it (of its work, with `work`) lies before, rounded
/// down to a multiple of `grain` iterations (of its piece's, with `work`: a piece of 2 grains or more).
int64_t cutAt(int64_t n, int64_t parts, int64_t t, const std::vector<std::pair<int64_t, int64_t>> &work, int64_t grain) {
  if (t <= 0) return 0;
  if (t >= parts) return n;
  if (work.empty()) return n * t / parts / grain * grain;
  // pieces' work: at most 2^30 per iteration, 2^31 iterations; the products in 128 bits
  __int128 whole = 0;
  for (auto [k, w] : work) whole += static_cast<__int128>(k) * w;
  __int128 target = whole * t / parts, before = 0;
  int64_t start = 0;
  for (auto [k, w] : work) {
    __int128 piece = static_cast<__int128>(k) * w;
    if (before + piece >= target) {
      int64_t in = std::min<int64_t>(k, static_cast<int64_t>((target - before + w / 2) / w));
      if (k >= 2 * grain) in = in / grain * grain;
      return std::min(n, start + in);
    }
    before += piece;
    start += k;
  }
  return n;
}
} // namespace

int64_t splitPoint(int64_t n, int64_t parts, int64_t t, const std::vector<std::pair<int64_t, int64_t>> &work) {
  return cutAt(n, parts, t, work, n / std::max<int64_t>(parts, 1) >= kGrain ? kGrain : 1);
}

std::vector<int64_t> splitChunks(int64_t n, int64_t parts, int64_t perPart,
                                 const std::vector<std::pair<int64_t, int64_t>> &work) {
  parts = std::max<int64_t>(parts, 1);
  int64_t grain = n / parts >= kGrain ? kGrain : 1;
  int64_t chunks = std::min<int64_t>(n, parts * std::max<int64_t>(perPart, 1));
  std::vector<int64_t> cuts{0};
  for (int64_t c = 1; c <= chunks; ++c) {
    int64_t at = cutAt(n, chunks, c, work, grain);
    if (at > cuts.back()) cuts.push_back(at);
  }
  if (cuts.back() != n) cuts.push_back(n);
  return cuts;
}

const Param *Manifest::paramOfSlot(int64_t slot) const {
  auto it = paramIndex.find(slot);
  return it == paramIndex.end() ? nullptr : &params[it->second];
}

std::string Manifest::describe(const Ref &r) const {
  return (r.isParam ? "param " + std::to_string(params[r.index].slot) : "buffer " + std::to_string(r.index)) + " on " +
         devices[deviceOf(r)].name;
}

std::vector<std::string> Manifest::kernelFiles() const {
  std::vector<std::string> files;
  for (const Step &s : steps)
    if (s.isKernel() && std::find(files.begin(), files.end(), s.file) == files.end()) files.push_back(s.file);
  return files;
}

std::string toJson(const Manifest &m) {
  Json j;
  j["format"] = "uopc-manifest";
  j["version"] = kVersion;
  j["target"] = std::string(targetInfo(m.target).name);
  if (m.cpu) j["cpu"] = *m.cpu;
  Json devices = Json::array();
  for (const Device &d : m.devices) devices.push_back({{"name", d.name}, {"dir", d.dir}, {"arena_bytes", d.arenaBytes}});
  j["devices"] = devices;
  Json params = Json::array();
  for (const Param &p : m.params) {
    Json e;
    e["slot"] = p.slot;
    e["dtype"] = std::string(dtypeName(p.dtype));
    e["numel"] = p.numel;
    e["bytes"] = p.bytes;
    e["devices"] = p.devices;
    e["role"] = std::string(roleName(p.role));
    if (p.name) e["name"] = *p.name;
    if (p.shape) e["shape"] = *p.shape;
    if (p.weight) e["weight"] = true;
    if (!p.kept.empty()) {
      Json k = Json::array();
      for (const Kept &kd : p.kept) k.push_back(keptJson(kd));
      e["keeps"] = k;
    }
    params.push_back(e);
  }
  j["params"] = params;
  Json buffers = Json::array();
  for (const Buffer &b : m.buffers) {
    Json e;
    e["id"] = buffers.size();
    e["slot"] = b.slot;
    e["dtype"] = std::string(dtypeName(b.dtype));
    e["numel"] = b.numel;
    e["bytes"] = b.bytes;
    if (b.symbolicSize) e["symbolic_size"] = true;
    e["devices"] = b.devices;
    e["offsets"] = b.offsets;
    Json life = Json::array();
    for (auto [lo, hi] : b.lifetimes) life.push_back(Json::array({lo, hi}));
    e["lifetimes"] = life;
    buffers.push_back(e);
  }
  j["buffers"] = buffers;
  Json steps = Json::array();
  for (const Step &s : m.steps) {
    Json e;
    if (s.isAllreduce()) {
      e["kind"] = "allreduce";
      e["op"] = std::string(reduceOpName(s.op));
      e["dtype"] = std::string(dtypeName(s.dtype));
      e["numel"] = s.numel;
      e["bytes"] = s.bytes;
      e["order"] = s.ring ? "ring" : "devices";
      e["devices"] = s.devices;
      Json src = Json::array(), dst = Json::array();
      for (const Ref &r : s.srcs) src.push_back(refJson(r));
      for (const Ref &r : s.dsts) dst.push_back(refJson(r));
      e["src"] = src;
      e["dst"] = dst;
    } else if (s.isCopy()) {
      e["kind"] = "copy";
      e["device"] = s.device;
      e["from"] = deviceName(m, s.src);
      e["src"] = refJson(s.src);
      e["dst"] = refJson(s.dst);
      e["bytes"] = s.bytes;
    } else {
      e["kind"] = "kernel";
      e["kernel"] = s.kernel;
      e["device"] = s.device;
      e["device_num"] = s.deviceNum;
      e["file"] = s.file;
      e["symbol"] = s.symbol;
      Json args = Json::array();
      for (const Ref &r : s.args) args.push_back(refJson(r));
      e["args"] = args;
      Json remote = Json::array();
      for (size_t a = 0; a < s.args.size(); ++a)
        if (deviceName(m, s.args[a]) != s.device) remote.push_back(a);
      if (!remote.empty()) e["remote_args"] = remote;
      e["vars"] = s.vars;
      if (s.global) e["global"] = *s.global;
      if (s.local) e["local"] = *s.local;
      if (s.parallel) e["parallel"] = s.parallel;
      if (s.splitShares) e["split"] = "shares";
      if (!s.parallelWork.empty()) {
        Json w = Json::array();
        for (auto [n, work] : s.parallelWork) w.push_back(Json::array({n, work}));
        e["parallel_work"] = w;
      }
      if (!s.opts.empty()) e["opts"] = s.opts;
      if (!s.optsFrom.empty()) e["opts_from"] = s.optsFrom;
      if (!s.blocked.empty()) e["blocked"] = s.blocked;
      if (s.once) e["once"] = true;
      if (const Estimates *w = s.estimates ? &*s.estimates : nullptr)
        e["estimates"] = Json{{"ops", estimateJson(w->ops)},       {"loads", estimateJson(w->loads)},
                              {"load_bytes", estimateJson(w->loadBytes)}, {"stores", estimateJson(w->stores)},
                              {"store_bytes", estimateJson(w->storeBytes)}};
    }
    steps.push_back(e);
  }
  j["steps"] = steps;
  Json vars = Json::array();
  for (const Var &v : m.vars) {
    Json e = {{"name", v.name}, {"slot", v.slot}, {"min", v.min}, {"max", v.max}};
    if (v.names.size() > 1) e["names"] = v.names;
    vars.push_back(e);
  }
  j["vars"] = vars;
  return j.dump(1) + "\n";
}

void checkSignatures(const Manifest &m, const fs::path &dir) {
  for (const std::string &file : m.kernelFiles()) {
    std::optional<Signature> sig = parseSignature(readBounded((dir / file).string(), "kernel"), file);
    if (!sig) {
      // without a signature nothing says the kernel takes [lo, hi): a split step would call it wrongly
      for (size_t i = 0; i < m.steps.size(); ++i)
        if (m.steps[i].isKernel() && m.steps[i].file == file && m.steps[i].parallel)
          fail("manifest: step " + std::to_string(i) + " (" + m.steps[i].label() + ") splits its kernel across threads, "
               "but " + quote(file) + " has no uopc-signature saying it may be");
      continue;
    }
    for (size_t i = 0; i < m.steps.size(); ++i) {
      const Step &st = m.steps[i];
      if (!st.isKernel() || st.file != file) continue;
      std::string where = "step " + std::to_string(i) + " (" + st.label() + ")";
      if (st.args.size() != sig->args.size() || st.vars.size() != sig->nvars)
        fail("manifest: " + where + " passes " + std::to_string(st.args.size()) + " buffers and " +
             std::to_string(st.vars.size()) + " variables; " + quote(file) + " takes " + std::to_string(sig->args.size()) +
             " and " + std::to_string(sig->nvars));
      if (st.parallel != sig->parallel)
        fail("manifest: " + where + " says its kernel's loop of " + std::to_string(st.parallel) +
             " iterations is split across threads (0: none); " + quote(file) + " has " + std::to_string(sig->parallel));
      for (size_t k = 0; k < sig->args.size(); ++k) {
        const Ref &r = st.args[k];
        const auto &[want, elems] = sig->args[k];
        std::string dt(dtypeName(m.dtypeOf(r)));
        auto size = dtypeFromName(want);
        if (dt != want || !size)
          fail("manifest: " + where + " argument " + std::to_string(k) + " (" + m.describe(r) + ") is " + dt + "; '" +
               file + "' reads " + want);
        if (elems >= 0 && (elems > INT64_MAX / static_cast<int64_t>(dtypeSize(*size)) ||
                           m.bytesOf(r) < elems * static_cast<int64_t>(dtypeSize(*size))))
          fail("manifest: " + where + " argument " + std::to_string(k) + " (" + m.describe(r) + ") holds " +
               std::to_string(m.bytesOf(r)) + " bytes; " + quote(file) + " indexes " + std::to_string(elems) + " elements");
      }
      for (size_t k = 0; k < sig->vars.size(); ++k) {
        const Var &mv = m.vars[st.varIndex[k]];
        const Signature::SigVar &sv = sig->vars[k];
        if (sv.name != mv.name)
          fail("manifest: " + where + " passes variable " + quote(mv.name) + " as argument " + std::to_string(k) + "; '" +
               file + "' takes " + quote(sv.name) + " there");
        if (sv.ranged && (mv.min < sv.lo || mv.max > sv.hi))
          fail("manifest: variable " + quote(mv.name) + " has range [" + std::to_string(mv.min) + ", " + std::to_string(mv.max) +
               "], but " + quote(file) + " was compiled for [" + std::to_string(sv.lo) + ", " + std::to_string(sv.hi) + "]");
      }
    }
  }
}

std::string readBounded(const std::string &path, const std::string &what, uint64_t maxBytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot read " + what + " " + quote(path) + ": " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail("cannot read " + what + " " + quote(path) + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail("cannot read " + what + " " + quote(path) + ": it is a directory");
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode))
    fail("cannot read " + what + " " + quote(path) + ": not a regular file or a pipe");
  std::string data;
  if (S_ISREG(st.st_mode)) {
    if (static_cast<uint64_t>(st.st_size) > maxBytes)
      fail(what + " " + quote(path) + " has " + std::to_string(st.st_size) + " bytes, more than the " +
           std::to_string(maxBytes) + " expected");
    data.reserve(static_cast<size_t>(st.st_size));
  }
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("error while reading " + what + " " + quote(path) + ": " + std::strerror(errno));
    if (n == 0) break;
    if (data.size() + static_cast<uint64_t>(n) > maxBytes)
      fail(what + " " + quote(path) + " has more than the " + std::to_string(maxBytes) + " bytes expected");
    data.append(buf, static_cast<size_t>(n));
  }
  return data;
}

} // namespace uopc::manifest

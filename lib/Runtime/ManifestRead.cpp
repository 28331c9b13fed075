//===- ManifestRead.cpp - manifest.json into the model (fromJson), with every check of a read ===//
#include "Runtime/ManifestModel.h"

#include "IR/Error.h"
#include "IR/Records.h"
#include "Runtime/ManifestDetail.h"
#include "Targets/Targets.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <map>

namespace uopc::manifest {
namespace fs = std::filesystem;
using detail::Json;
using detail::kReduceOpNames;
using detail::kRoleNames;

namespace {

bool isIdentifier(const std::string &s) {
  if (s.empty() || s.size() > 200 || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

/// A CPU name that is safe as a compiler flag's value (the driver's --cpu check, Driver.cpp).
bool isCpuName(const std::string &cpu) {
  bool ok = !cpu.empty() && cpu.size() <= 64 && cpu[0] != '-';
  for (char ch : cpu) ok &= std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.';
  return ok;
}

// ---- reading: field access with clear messages -------------------------------------------------------

const Json &field(const Json &j, const char *key, const std::string &where) {
  if (!j.is_object() || !j.contains(key)) fail("manifest: " + where + " has no " + quote(key));
  return j.at(key);
}
int64_t asInt(const Json &v, const std::string &what, int64_t lo = INT64_MIN) {
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)))
    fail("manifest: " + what + " is not an integer");
  int64_t x = v.get<int64_t>();
  if (x < lo) fail("manifest: " + what + " is " + std::to_string(x) + ", below " + std::to_string(lo));
  return x;
}
int64_t intField(const Json &j, const char *key, const std::string &where, int64_t lo = INT64_MIN) {
  return asInt(field(j, key, where), where + "." + key, lo);
}
std::string strField(const Json &j, const char *key, const std::string &where) {
  const Json &v = field(j, key, where);
  if (!v.is_string()) fail("manifest: " + where + "." + key + " is not a string");
  return v.get<std::string>();
}
const Json &arrField(const Json &j, const char *key, const std::string &where) {
  const Json &v = field(j, key, where);
  if (!v.is_array()) fail("manifest: " + where + "." + key + " is not an array");
  return v;
}
/// An optional field: null when absent.
const Json *optField(const Json &j, const char *key) { return j.contains(key) ? &j.at(key) : nullptr; }

/// dtype and bytes of a buffer: bytes must be numel elements of dtype (a manifest that says otherwise would
/// let a kernel run past its allocation).
DType checkedDtype(const std::string &dtype, int64_t numel, int64_t bytes, const std::string &where) {
  auto dt = dtypeFromName(dtype);
  if (!dt || dtypeSize(*dt) == 0) fail("manifest: " + where + " has unknown dtype " + quote(dtype));
  if (numel > INT64_MAX / static_cast<int64_t>(dtypeSize(*dt)) || numel * static_cast<int64_t>(dtypeSize(*dt)) != bytes)
    fail("manifest: " + where + " says " + std::to_string(bytes) + " bytes for " + std::to_string(numel) + " " + dtype +
         " elements");
  return *dt;
}

/// "global"/"local" of a kernel step: three integers in [1, 2^31 - 1].
std::array<int64_t, 3> launchDims(const Json &s, const char *key, const std::string &where) {
  const Json &v = arrField(s, key, where);
  if (v.size() != 3) fail("manifest: " + where + "." + key + " must hold 3 integers, it holds " + std::to_string(v.size()));
  std::array<int64_t, 3> d{};
  for (size_t i = 0; i < 3; ++i) {
    std::string at = where + "." + key + "[" + std::to_string(i) + "]";
    if (!v[i].is_number_integer()) fail("manifest: " + at + " is not an integer");
    int64_t x = v[i].get<int64_t>();
    if (x < 1 || x > INT32_MAX) fail("manifest: " + at + " is " + std::to_string(x) + ", not in [1, 2147483647]");
    d[i] = x;
  }
  return d;
}

Estimates readEstimates(const Json &e, const std::string &where) {
  auto one = [&](const char *key) -> Estimate {
    const Json &v = field(e, key, where);
    if (v.is_string()) return v.get<std::string>();
    return asInt(v, where + "." + key, 0);
  };
  return {one("ops"), one("loads"), one("load_bytes"), one("stores"), one("store_bytes")};
}

/// Parameter `p`'s "keeps": per device, {"elements", "runs": [{start, length, stride, count}...]} or
/// "unknown"; every run inside the parameter's elements.
std::vector<Kept> readKept(const Json &v, const Param &p, const std::string &where) {
  if (!v.is_array() || v.size() != p.devices.size())
    fail("manifest: " + where + ".keeps must hold one entry per device of the parameter");
  std::vector<Kept> out;
  for (const Json &e : v) {
    Kept k;
    if (e.is_string() && e.get<std::string>() == "unknown") {
      out.push_back(k);
      continue;
    }
    k.known = true;
    k.elements = intField(e, "elements", where + ".keeps", 0);
    int64_t total = 0, end = 0;
    for (const Json &r : arrField(e, "runs", where + ".keeps")) {
      std::string at = where + ".keeps.runs";
      KeptRun run{intField(r, "start", at, 0), intField(r, "length", at, 1), intField(r, "stride", at, 0),
                  intField(r, "count", at, 1)};
      // the last element, start + (count-1)*stride + length - 1, below numel, computed without overflow;
      // runs in increasing order and disjoint (stride >= length when count > 1)
      bool ok = run.start >= end && (run.count == 1 || run.stride >= run.length) && run.length <= p.numel &&
                run.start <= p.numel - run.length &&
                (run.count == 1 || (run.stride > 0 && run.count - 1 <= (p.numel - run.length - run.start) / run.stride));
      if (!ok) fail("manifest: " + where + ".keeps has a run outside the parameter's " + std::to_string(p.numel) + " elements or out of order");
      end = run.start + (run.count - 1) * run.stride + run.length;
      total += run.length * run.count; // <= numel: the runs are disjoint and inside it
      k.runs.push_back(run);
    }
    if (total != k.elements) fail("manifest: " + where + ".keeps says " + std::to_string(k.elements) + " elements, its runs hold " + std::to_string(total));
    out.push_back(std::move(k));
  }
  return out;
}

/// The reader: the JSON document, checked field by field into `m`.
struct Reader {
  const std::string &path;
  Manifest m;

  size_t deviceIndex(const std::string &name, const std::string &where) const {
    auto it = std::find_if(m.devices.begin(), m.devices.end(), [&](const Device &d) { return d.name == name; });
    if (it == m.devices.end()) fail("manifest: " + where + " names unknown device " + quote(name));
    return static_cast<size_t>(it - m.devices.begin());
  }

  /// A list of device names, each known: their indices.
  std::vector<size_t> deviceList(const Json &j, const std::string &where, std::vector<std::string> &names) const {
    std::vector<size_t> idx;
    for (const Json &d : arrField(j, "devices", where)) {
      if (!d.is_string()) fail("manifest: " + where + ".devices holds a non-string");
      idx.push_back(deviceIndex(d.get<std::string>(), where));
      names.push_back(d.get<std::string>());
    }
    return idx;
  }

  Ref ref(const Json &j, const std::string &where) const {
    Ref r{};
    if (j.is_object() && j.contains("param")) {
      r.isParam = true;
      r.id = intField(j, "param", where);
      auto it = m.paramIndex.find(r.id);
      if (it == m.paramIndex.end()) fail("manifest: " + where + " names unknown param slot " + std::to_string(r.id));
      r.index = it->second;
    } else {
      r.id = intField(j, "buffer", where, 0);
      if (static_cast<size_t>(r.id) >= m.buffers.size()) fail("manifest: " + where + " names unknown buffer " + std::to_string(r.id));
      r.index = static_cast<size_t>(r.id);
    }
    int64_t d = intField(j, "dev", where, 0);
    size_t nd = r.isParam ? m.params[r.index].devices.size() : m.buffers[r.index].devices.size();
    if (static_cast<size_t>(d) >= nd) fail("manifest: " + where + ".dev " + std::to_string(d) + " is out of range");
    r.dev = static_cast<size_t>(d);
    return r;
  }

  void header(const Json &j) {
    // (value() would throw nlohmann's type_error for a field of another type: compare the JSON values)
    if (!j.is_object() || !j.contains("format") || j["format"] != Json("uopc-manifest"))
      fail(quote(path) + " is not a uopc manifest");
    if (!j.contains("version") || j["version"] != Json(kVersion))
      fail("manifest " + quote(path) + ": unsupported version (this uopc-run reads version " + std::to_string(kVersion) + ")");
    std::string target = strField(j, "target", "manifest");
    // the CPU the kernels are built for (uopc --cpu; manifests before it: this machine's)
    if (j.contains("cpu")) {
      m.cpu = strField(j, "cpu", "manifest");
      if (!isCpuName(*m.cpu)) fail("manifest " + quote(path) + ": cpu " + quote(*m.cpu) + " is not a CPU name (letters, digits, '-', '_', '.')");
    }
    const TargetInfo *t = findTarget(target);
    if (!t) fail("manifest " + quote(path) + ": target " + quote(target) + " cannot run here (only " + targetNameList() + " are supported)");
    m.target = t->id;
  }

  void devices(const Json &j) {
    for (const Json &d : arrField(j, "devices", "manifest")) {
      Device dev;
      dev.name = strField(d, "name", "device");
      if (d.contains("dir")) dev.dir = strField(d, "dir", "device " + dev.name);
      dev.arenaBytes = intField(d, "arena_bytes", "device " + dev.name, 0);
      m.devices.push_back(std::move(dev));
    }
  }

  void params(const Json &j) {
    for (const Json &p : arrField(j, "params", "manifest")) {
      Param q;
      q.slot = intField(p, "slot", "param", 0);
      std::string where = "param " + std::to_string(q.slot);
      std::string dtype = strField(p, "dtype", where), role = strField(p, "role", where);
      auto r = std::find(kRoleNames.begin(), kRoleNames.end(), role);
      if (r == kRoleNames.end()) fail("manifest: " + where + ".role is " + quote(role) + ", not input, output or inout");
      q.role = static_cast<Role>(r - kRoleNames.begin());
      q.bytes = intField(p, "bytes", where, 0);
      q.numel = intField(p, "numel", where, 0);
      q.dtype = checkedDtype(dtype, q.numel, q.bytes, where);
      q.deviceIndex = deviceList(p, where, q.devices);
      if (q.devices.empty()) fail("manifest: " + where + " lives on no device");
      if (p.contains("name")) q.name = strField(p, "name", where);
      if (const Json *sh = optField(p, "shape")) {
        if (!sh->is_array() || sh->size() > ParamArg::kMaxParamDims)
          fail("manifest: " + where + ".shape must be a list of at most " + std::to_string(ParamArg::kMaxParamDims) + " sizes");
        std::vector<int64_t> dims;
        for (const Json &d : *sh) dims.push_back(asInt(d, where + ".shape", 0));
        std::optional<int64_t> total = shapeElements(dims);
        if (!total) fail("manifest: " + where + ".shape has more elements than a 64-bit count holds");
        if (*total != q.numel)
          fail("manifest: " + where + ".shape holds " + std::to_string(*total) + " elements, its numel " + std::to_string(q.numel));
        q.shape = std::move(dims);
      }
      if (const Json *w = optField(p, "weight")) {
        if (!w->is_boolean()) fail("manifest: " + where + ".weight must be true or false");
        q.weight = w->get<bool>();
        if (q.weight && q.role != Role::Input) fail("manifest: " + where + " is a weight but not an input");
      }
      if (const Json *k = optField(p, "keeps")) {
        if (q.role == Role::Input) fail("manifest: " + where + " is an input: it keeps everything, it has no 'keeps'");
        q.kept = readKept(*k, q, where);
      }
      if (!m.paramIndex.emplace(q.slot, m.params.size()).second) fail("manifest: slot " + std::to_string(q.slot) + " listed twice");
      m.params.push_back(std::move(q));
    }
  }

  void buffers(const Json &j) {
    for (const Json &b : arrField(j, "buffers", "manifest")) {
      Buffer q;
      std::string where = "buffer " + std::to_string(m.buffers.size());
      if (const Json *id = optField(b, "id"); id && asInt(*id, where + ".id") != static_cast<int64_t>(m.buffers.size()))
        fail("manifest: " + where + " has id " + id->dump() + ": a buffer's id is its position in the list");
      if (b.contains("slot")) q.slot = intField(b, "slot", where);
      std::string dtype = strField(b, "dtype", where);
      q.bytes = intField(b, "bytes", where, 0);
      q.numel = intField(b, "numel", where, 0);
      q.dtype = checkedDtype(dtype, q.numel, q.bytes, where);
      if (const Json *s = optField(b, "symbolic_size")) {
        if (*s != Json(true)) fail("manifest: " + where + ".symbolic_size must be true when given");
        q.symbolicSize = true;
      }
      q.deviceIndex = deviceList(b, where, q.devices);
      for (const Json &o : arrField(b, "offsets", where)) {
        if (!o.is_number_integer() || o.get<int64_t>() < 0) fail("manifest: " + where + ".offsets holds a bad offset");
        q.offsets.push_back(o.get<int64_t>());
      }
      if (q.offsets.size() != q.devices.size()) fail("manifest: " + where + " needs one offset per device");
      for (size_t d = 0; d < q.devices.size(); ++d) { // (offsets and bytes are >= 0: no sum that could overflow)
        int64_t arena = m.devices[q.deviceIndex[d]].arenaBytes;
        if (q.bytes > arena || q.offsets[d] > arena - q.bytes)
          fail("manifest: " + where + " does not fit the arena of " + q.devices[d]);
      }
      if (const Json *l = optField(b, "lifetimes")) {
        if (!l->is_array()) fail("manifest: " + where + ".lifetimes is not an array");
        for (const Json &p : *l) {
          if (!p.is_array() || p.size() != 2) fail("manifest: " + where + ".lifetimes holds a non-pair");
          q.lifetimes.push_back({asInt(p[0], where + ".lifetimes"), asInt(p[1], where + ".lifetimes")});
        }
      }
      m.buffers.push_back(std::move(q));
    }
  }

  void vars(const Json &j) {
    for (const Json &v : arrField(j, "vars", "manifest")) {
      std::string name = strField(v, "name", "var");
      if (!isIdentifier(name)) fail("manifest: variable name " + quote(name) + " is not an identifier");
      if (std::any_of(m.vars.begin(), m.vars.end(), [&](const Var &x) { return x.name == name; }))
        fail("manifest: variable " + quote(name) + " is declared twice");
      Var var{name, -1, intField(v, "min", "var " + name), intField(v, "max", "var " + name), {name}};
      if (v.contains("slot")) var.slot = intField(v, "slot", "var " + name);
      if (var.min > var.max) fail("manifest: variable " + quote(name) + " has an empty range");
      if (v.contains("names")) { // tinygrad 0.14.0's p<slot> beside the user's name
        const Json &ns = v["names"];
        if (!ns.is_array()) fail("manifest: variable " + quote(name) + ": names must be a list of strings");
        for (const Json &a : ns) {
          if (!a.is_string() || !isIdentifier(a.get<std::string>()))
            fail("manifest: variable " + quote(name) + ": names must be a list of identifiers");
          std::string alias = a.get<std::string>();
          auto named = [&](const Var &x) { return std::find(x.names.begin(), x.names.end(), alias) != x.names.end(); };
          if (std::any_of(m.vars.begin(), m.vars.end(), named) || (alias != name && named(var)))
            fail("manifest: variable name " + quote(alias) + " is declared twice");
          if (alias != name) var.names.push_back(alias);
        }
      }
      m.vars.push_back(std::move(var));
    }
  }

  void steps(const Json &j) {
    bool gpu = targetInfo(m.target).gpu;
    std::map<std::string, std::string> symbolFiles; // a symbol may serve several steps, from one file
    for (const Json &s : arrField(j, "steps", "manifest")) {
      Step st;
      std::string where = "step " + std::to_string(m.steps.size());
      std::string kind = strField(s, "kind", where);
      if (kind == "allreduce") {
        allreduceStep(s, where, st);
        m.steps.push_back(std::move(st));
        continue;
      }
      st.device = strField(s, "device", where);
      st.deviceIndex = deviceIndex(st.device, where);
      if (kind == "copy") {
        st.kind = Step::Kind::Copy;
        st.src = ref(field(s, "src", where), where + ".src");
        st.dst = ref(field(s, "dst", where), where + ".dst");
        st.bytes = intField(s, "bytes", where, 0);
        if (st.bytes > m.bytesOf(st.src) || st.bytes > m.bytesOf(st.dst))
          fail("manifest: " + where + " copies more bytes than its buffers hold");
        if (m.deviceOf(st.dst) != st.deviceIndex)
          fail("manifest: " + where + " runs on " + quote(st.device) + " but writes " + m.describe(st.dst));
        st.fromIndex = m.deviceOf(st.src);
        st.from = m.devices[st.fromIndex].name;
        if (s.contains("from") && strField(s, "from", where) != st.from)
          fail("manifest: " + where + ".from " + quote(strField(s, "from", where)) + " is not the device of its source, " +
               m.describe(st.src));
      } else if (kind == "kernel") {
        kernelStep(s, where, st, gpu, symbolFiles);
      } else {
        fail("manifest: " + where + " has unknown kind " + quote(kind));
      }
      m.steps.push_back(std::move(st));
    }
  }

  /// {"kind": "allreduce", "op", "dtype", "numel", "bytes", "order"?, "devices", "src", "dst"}: every shard
  /// a buffer of the step's dtype on its own device, large enough, none written but in place.
  void allreduceStep(const Json &s, const std::string &where, Step &st) {
    st.kind = Step::Kind::Allreduce;
    if (targetInfo(m.target).gpu)
      fail("manifest: " + where + " is an allreduce: a " + std::string(targetInfo(m.target).name) +
           " manifest cannot run one (allreduce steps are for CPU targets)");
    std::string op = strField(s, "op", where);
    auto o = std::find(kReduceOpNames.begin(), kReduceOpNames.end(), op);
    if (o == kReduceOpNames.end()) fail("manifest: " + where + ".op is " + quote(op) + ", not add, max or mul");
    st.op = static_cast<ReduceOp>(o - kReduceOpNames.begin());
    std::string dtype = strField(s, "dtype", where);
    st.numel = intField(s, "numel", where, 0);
    st.bytes = intField(s, "bytes", where, 0);
    st.dtype = checkedDtype(dtype, st.numel, st.bytes, where);
    if (!isAllreduceDType(st.dtype))
      fail("manifest: " + where + " is an allreduce of " + dtype + ": only 8- to 64-bit integers, float32 and float64 are reduced");
    if (const Json *order = optField(s, "order")) {
      if (*order != Json("devices") && *order != Json("ring")) fail("manifest: " + where + ".order is not \"devices\" or \"ring\"");
      st.ring = *order == Json("ring");
    }
    st.devicesIndex = deviceList(s, where, st.devices);
    if (st.devices.size() < 2) fail("manifest: " + where + " is an allreduce over fewer than 2 devices");
    for (size_t i = 0; i < st.devicesIndex.size(); ++i)
      for (size_t k = 0; k < i; ++k)
        if (st.devicesIndex[k] == st.devicesIndex[i]) fail("manifest: " + where + ".devices names " + quote(st.devices[i]) + " twice");
    st.device = st.devices[0];
    st.deviceIndex = st.devicesIndex[0];
    auto refs = [&](const char *key, std::vector<Ref> &out) {
      const Json &a = arrField(s, key, where);
      if (a.size() != st.devices.size())
        fail("manifest: " + where + "." + key + " must hold one buffer per device of the allreduce (" +
             std::to_string(st.devices.size()) + "), it holds " + std::to_string(a.size()));
      for (size_t i = 0; i < a.size(); ++i) {
        std::string at = where + "." + key + "[" + std::to_string(i) + "]";
        Ref r = ref(a[i], at);
        if (m.deviceOf(r) != st.devicesIndex[i])
          fail("manifest: " + at + " is " + m.describe(r) + ", not a buffer on " + quote(st.devices[i]));
        if (m.dtypeOf(r) != st.dtype || m.bytesOf(r) < st.bytes)
          fail("manifest: " + at + " (" + m.describe(r) + ") does not hold " + std::to_string(st.numel) + " " + dtype + " elements");
        out.push_back(r);
      }
    };
    refs("src", st.srcs);
    refs("dst", st.dsts);
    // (the devices are distinct, so no destination is another device's shard.) A destination is its own shard
    // (in place) or memory apart from it: two intermediates of one arena that partly overlap would let the
    // reduction read what it already wrote.
    for (size_t i = 0; i < st.dsts.size(); ++i) {
      const Ref &d = st.dsts[i], &x = st.srcs[i];
      if (d.isParam || x.isParam || d.index == x.index) continue;
      int64_t a = m.buffers[d.index].offsets[d.dev], b = m.buffers[x.index].offsets[x.dev];
      if (a < b + st.bytes && b < a + st.bytes)
        fail("manifest: " + where + ".dst[" + std::to_string(i) + "] overlaps its shard src[" + std::to_string(i) +
             "] in the arena of " + quote(st.devices[i]) + " (it may be the same buffer, in place, or apart)");
    }
  }

  void kernelStep(const Json &s, const std::string &where, Step &st, bool gpu, std::map<std::string, std::string> &symbolFiles) {
    st.symbol = strField(s, "symbol", where);
    if (!isIdentifier(st.symbol)) fail("manifest: " + where + ".symbol " + quote(st.symbol) + " is not a C identifier");
    st.file = strField(s, "file", where);
    auto [known, isNew] = symbolFiles.emplace(st.symbol, st.file);
    if (!isNew && known->second != st.file)
      fail("manifest: symbol " + quote(st.symbol) + " is exported by two files (" + quote(known->second) + " and " + quote(st.file) + ")");
    fs::path rel(st.file);
    bool ok = !rel.empty() && rel.is_relative();
    for (const fs::path &part : rel) ok = ok && part != ".." && part != ".";
    if (!ok) fail("manifest: " + where + ".file " + quote(st.file) + " must be a relative path inside the output directory");
    for (const Json &a : arrField(s, "args", where)) st.args.push_back(ref(a, where + ".args"));
    for (size_t a = 0; a < st.args.size(); ++a)
      if (m.deviceOf(st.args[a]) != st.deviceIndex) st.remoteArgs.push_back(a);
    if (const Json *r = optField(s, "remote_args")) {
      std::vector<size_t> given;
      if (!r->is_array()) fail("manifest: " + where + ".remote_args is not a list of argument indices");
      for (const Json &x : *r) {
        if (!x.is_number_unsigned()) fail("manifest: " + where + ".remote_args is not a list of argument indices");
        given.push_back(x.get<size_t>());
      }
      if (given != st.remoteArgs)
        fail("manifest: " + where + ".remote_args does not list exactly the arguments on other devices than " + quote(st.device));
    }
    for (const Json &v : arrField(s, "vars", where)) {
      if (!v.is_string()) fail("manifest: " + where + ".vars holds a non-string");
      std::string name = v.get<std::string>();
      auto it = std::find_if(m.vars.begin(), m.vars.end(), [&](const Var &x) { return x.name == name; });
      if (it == m.vars.end()) fail("manifest: " + where + " uses undeclared variable " + quote(name));
      st.vars.push_back(name);
      st.varIndex.push_back(static_cast<size_t>(it - m.vars.begin()));
    }
    st.kernel = strField(s, "kernel", where);
    if (s.contains("device_num")) st.deviceNum = intField(s, "device_num", where, 0);
    // The launch geometry: required by GPU targets, checked wherever it is given.
    bool hasGlobal = s.contains("global"), hasLocal = s.contains("local");
    if (gpu && (!hasGlobal || !hasLocal))
      fail("manifest: " + where + " (kernel " + st.label() + ") has no '" + (hasGlobal ? "local" : "global") +
           "': a " + std::string(targetInfo(m.target).name) +
           " kernel step needs \"global\": [gx, gy, gz] (grid size, in blocks) and \"local\": [lx, ly, lz] "
           "(threads per block)");
    if (hasGlobal != hasLocal)
      fail("manifest: " + where + " (kernel " + st.label() + ") gives '" + (hasGlobal ? "global" : "local") +
           "' without '" + (hasGlobal ? "local" : "global") + "'");
    if (hasGlobal) {
      st.global = launchDims(s, "global", where);
      st.local = launchDims(s, "local", where);
    }
    if (const Json *e = optField(s, "estimates")) st.estimates = readEstimates(*e, where + ".estimates");
    if (const Json *o = optField(s, "opts")) {
      if (!o->is_array()) fail("manifest: " + where + ".opts is not a list of strings");
      for (const Json &x : *o) {
        if (!x.is_string()) fail("manifest: " + where + ".opts is not a list of strings");
        st.opts.push_back(x.get<std::string>());
      }
    }
    if (const Json *o = optField(s, "blocked")) {
      if (!o->is_array()) fail("manifest: " + where + ".blocked is not a list of strings");
      for (const Json &x : *o) {
        if (!x.is_string()) fail("manifest: " + where + ".blocked is not a list of strings");
        std::string b = x.get<std::string>();
        // SLOT:L:P, an argument of the step, a block of at least 2 channels and planes of at least 2 elements
        // (SLOT:L: a manifest written before P was recorded)
        auto digits = [](std::string_view t, int64_t &v) {
          auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
          return !t.empty() && ec == std::errc() && p == t.data() + t.size();
        };
        std::string_view rest(b);
        int64_t field[3] = {-1, 0, 2};
        size_t fields = 0;
        bool good = true;
        while (good && fields < 3) {
          size_t colon = rest.find(':');
          good = digits(rest.substr(0, colon), field[fields++]);
          if (colon == std::string_view::npos) break;
          rest.remove_prefix(colon + 1);
          good = good && fields < 3;
        }
        if (!good || fields < 2 || field[0] >= static_cast<int64_t>(st.args.size()) || field[1] < 2 || field[2] < 2)
          fail("manifest: " + where + ".blocked entry '" + b.substr(0, 40) + "' is not SLOT:L:P of an argument of the step");
        st.blocked.push_back(std::move(b));
      }
    }
    if (const Json *o = optField(s, "opts_from")) {
      if (!o->is_string()) fail("manifest: " + where + ".opts_from is not a string");
      st.optsFrom = o->get<std::string>();
      if (st.optsFrom != "heuristic" && st.optsFrom != "hand" && st.optsFrom != "search" && st.optsFrom != "database")
        fail("manifest: " + where + ".opts_from is not heuristic, hand, search or database");
    }
    if (const Json *o = optField(s, "once")) {
      if (!o->is_boolean()) fail("manifest: " + where + ".once is not true or false");
      st.once = o->get<bool>();
    }
    if (s.contains("parallel")) {
      if (gpu) fail("manifest: " + where + " (kernel " + st.label() + "): 'parallel' is for CPU targets");
      st.parallel = intField(s, "parallel", where, 2);
      if (st.parallel > INT32_MAX) fail("manifest: " + where + ".parallel is above 2^31 - 1");
    }
    if (const Json *sp = optField(s, "split")) {
      if (!st.parallel) fail("manifest: " + where + ".split without 'parallel'");
      if (!sp->is_string() || (sp->get<std::string>() != "shares" && sp->get<std::string>() != "turns"))
        fail("manifest: " + where + ".split is not \"shares\" or \"turns\"");
      st.splitShares = sp->get<std::string>() == "shares";
    }
    if (const Json *w = optField(s, "parallel_work")) {
      if (!st.parallel) fail("manifest: " + where + ".parallel_work without 'parallel'");
      if (!w->is_array() || w->size() < 2 || w->size() > 4096)
        fail("manifest: " + where + ".parallel_work is not a list of 2 to 4096 pieces");
      int64_t total = 0;
      for (size_t k = 0; k < w->size(); ++k) {
        const Json &piece = (*w)[k];
        std::string at = where + ".parallel_work[" + std::to_string(k) + "]";
        if (!piece.is_array() || piece.size() != 2 || !piece[0].is_number_integer() || !piece[1].is_number_integer())
          fail("manifest: " + at + " is not [iterations, work]");
        int64_t n = piece[0].get<int64_t>(), work = piece[1].get<int64_t>();
        if (n < 1 || n > st.parallel - total) fail("manifest: " + at + "'s iterations are not within 'parallel'");
        if (work < 1 || work > (int64_t(1) << 30)) fail("manifest: " + at + "'s work is not 1 to 2^30");
        total += n;
        st.parallelWork.push_back({n, work});
      }
      if (total != st.parallel) fail("manifest: " + where + ".parallel_work's iterations do not add up to 'parallel'");
    }
  }
};

} // namespace

Manifest fromJson(const std::string &text, const std::string &path) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception &e) {
    fail("manifest " + quote(path) + " is not valid JSON: " + e.what());
  }
  Reader r{path, {}};
  r.header(j);
  r.devices(j);
  r.params(j);
  r.buffers(j);
  r.vars(j);
  r.steps(j);
  return std::move(r.m);
}

Manifest readFile(const std::string &path) { return fromJson(readBounded(path, "manifest"), path); }

} // namespace uopc::manifest

//===- Runner.cpp - `uopc-run MANIFEST`: compile, allocate, load, run, write ===//
#include "Runtime/Runner.h"

#include "IR/Error.h"
#include "Targets/LLVMJit.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace uopc {
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

std::string readWhole(const std::string &path, const std::string &what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read " + what + " '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail("error while reading " + what + " '" + path + "'");
  return ss.str();
}

void writeWhole(const std::string &path, const void *data, size_t n) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail("cannot write output file '" + path + "'");
  out.write(static_cast<const char *>(data), static_cast<std::streamsize>(n));
  out.close();
  if (!out) fail("error while writing '" + path + "'");
}

/// FNV-1a, 64 bits: the cache key of a compiled kernel set.
struct Hasher {
  uint64_t h = 1469598103934665603ull;
  void add(std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull; // separator
  }
  std::string hex() const {
    std::ostringstream ss;
    ss << std::hex << std::setw(16) << std::setfill('0') << h;
    return ss.str();
  }
};

bool isIdentifier(const std::string &s) {
  if (s.empty() || s.size() > 200 || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// ---- manifest access with clear messages ------------------------------------------------------------

const Json &field(const Json &j, const char *key, const std::string &where) {
  if (!j.is_object() || !j.contains(key)) fail("manifest: " + where + " has no '" + key + "'");
  return j.at(key);
}
int64_t intField(const Json &j, const char *key, const std::string &where, int64_t lo = INT64_MIN) {
  const Json &v = field(j, key, where);
  if (!v.is_number_integer()) fail("manifest: " + where + "." + key + " is not an integer");
  int64_t x = v.get<int64_t>();
  if (x < lo) fail("manifest: " + where + "." + key + " is " + std::to_string(x) + ", below " + std::to_string(lo));
  return x;
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

struct AlignedFree {
  void operator()(void *p) const { std::free(p); }
};
using Mem = std::unique_ptr<unsigned char, AlignedFree>;
Mem allocate(int64_t bytes) {
  size_t n = static_cast<size_t>(std::max<int64_t>(bytes, 1));
  n = (n + 63) / 64 * 64;
  void *p = std::aligned_alloc(64, n);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, n);
  return Mem(static_cast<unsigned char *>(p));
}

struct Param {
  int64_t slot;
  std::string dtype, role;
  int64_t bytes;
  std::vector<std::string> devices;
  std::vector<Mem> data; // per device
};
struct Buffer {
  int64_t bytes;
  std::vector<size_t> devices; // device indices
  std::vector<int64_t> offsets;
};
struct Ref {
  bool isParam;
  size_t index; // into params / buffers
  size_t dev;
};
using Entry = void (*)(void **, const int64_t *);
struct Step {
  bool isCopy = false;
  std::string label;  // for --bench
  std::string symbol; // kernels
  std::string file;
  std::vector<Ref> args;
  std::vector<std::string> vars;
  Entry entry = nullptr;
  Ref src{}, dst{};
  int64_t bytes = 0;
};

struct Program {
  fs::path dir;
  std::vector<std::string> devices;
  std::vector<int64_t> arenaBytes;
  std::vector<Param> params;
  std::map<int64_t, size_t> paramOfSlot;
  std::vector<Buffer> buffers;
  std::vector<Step> steps;
  struct Var {
    std::string name;
    int64_t min, max;
  };
  std::vector<Var> vars;
  std::vector<Mem> arenas;
  void *handle = nullptr;
  std::string target = "c";
  std::unique_ptr<KernelJit> jit; // target llvm: the kernels' modules, run in-process

  ~Program() {
    if (handle) dlclose(handle);
  }

  size_t deviceIndex(const std::string &name, const std::string &where) const {
    auto it = std::find(devices.begin(), devices.end(), name);
    if (it == devices.end()) fail("manifest: " + where + " names unknown device '" + name + "'");
    return static_cast<size_t>(it - devices.begin());
  }

  Ref ref(const Json &j, const std::string &where) const {
    Ref r{};
    if (j.is_object() && j.contains("param")) {
      int64_t slot = intField(j, "param", where);
      auto it = paramOfSlot.find(slot);
      if (it == paramOfSlot.end()) fail("manifest: " + where + " names unknown param slot " + std::to_string(slot));
      r = {true, it->second, 0};
    } else {
      int64_t b = intField(j, "buffer", where, 0);
      if (static_cast<size_t>(b) >= buffers.size()) fail("manifest: " + where + " names unknown buffer " + std::to_string(b));
      r = {false, static_cast<size_t>(b), 0};
    }
    int64_t d = intField(j, "dev", where, 0);
    size_t nd = r.isParam ? params[r.index].devices.size() : buffers[r.index].devices.size();
    if (static_cast<size_t>(d) >= nd) fail("manifest: " + where + ".dev " + std::to_string(d) + " is out of range");
    r.dev = static_cast<size_t>(d);
    return r;
  }

  int64_t bytesOf(const Ref &r) const { return r.isParam ? params[r.index].bytes : buffers[r.index].bytes; }
  void *pointer(const Ref &r) const {
    if (r.isParam) return params[r.index].data[r.dev].get();
    const Buffer &b = buffers[r.index];
    return arenas[b.devices[r.dev]].get() + b.offsets[r.dev];
  }

  void parse(const std::string &path) {
    dir = fs::path(path).parent_path();
    Json m;
    try {
      m = Json::parse(readWhole(path, "manifest"));
    } catch (const Json::exception &e) {
      fail("manifest '" + path + "' is not valid JSON: " + e.what());
    }
    if (!m.is_object() || m.value("format", "") != "uopc-manifest") fail("'" + path + "' is not a uopc manifest");
    if (m.value("version", 0) != 1) fail("manifest '" + path + "': unsupported version (this uopc-run reads version 1)");
    target = strField(m, "target", "manifest");
    if (target != "c" && target != "llvm")
      fail("manifest '" + path + "': target '" + target + "' cannot run here (only 'c' and 'llvm' are supported)");
    for (const Json &d : arrField(m, "devices", "manifest")) {
      devices.push_back(strField(d, "name", "device"));
      arenaBytes.push_back(intField(d, "arena_bytes", "device " + devices.back(), 0));
    }
    for (const Json &p : arrField(m, "params", "manifest")) {
      Param q;
      q.slot = intField(p, "slot", "param", 0);
      std::string where = "param " + std::to_string(q.slot);
      q.dtype = strField(p, "dtype", where);
      q.role = strField(p, "role", where);
      q.bytes = intField(p, "bytes", where, 0);
      for (const Json &d : arrField(p, "devices", where)) {
        if (!d.is_string()) fail("manifest: " + where + ".devices holds a non-string");
        deviceIndex(d.get<std::string>(), where);
        q.devices.push_back(d.get<std::string>());
      }
      if (q.devices.empty()) fail("manifest: " + where + " lives on no device");
      if (!paramOfSlot.emplace(q.slot, params.size()).second) fail("manifest: slot " + std::to_string(q.slot) + " listed twice");
      params.push_back(std::move(q));
    }
    for (const Json &b : arrField(m, "buffers", "manifest")) {
      Buffer q;
      std::string where = "buffer " + std::to_string(buffers.size());
      q.bytes = intField(b, "bytes", where, 0);
      for (const Json &d : arrField(b, "devices", where)) {
        if (!d.is_string()) fail("manifest: " + where + ".devices holds a non-string");
        q.devices.push_back(deviceIndex(d.get<std::string>(), where));
      }
      for (const Json &o : arrField(b, "offsets", where)) {
        if (!o.is_number_integer() || o.get<int64_t>() < 0) fail("manifest: " + where + ".offsets holds a bad offset");
        q.offsets.push_back(o.get<int64_t>());
      }
      if (q.offsets.size() != q.devices.size()) fail("manifest: " + where + " needs one offset per device");
      for (size_t d = 0; d < q.devices.size(); ++d)
        if (q.offsets[d] + q.bytes > arenaBytes[q.devices[d]])
          fail("manifest: " + where + " does not fit the arena of " + devices[q.devices[d]]);
      buffers.push_back(std::move(q));
    }
    for (const Json &v : arrField(m, "vars", "manifest")) {
      std::string name = strField(v, "name", "var");
      vars.push_back({name, intField(v, "min", "var " + name), intField(v, "max", "var " + name)});
    }
    std::set<std::string> symbols;
    for (const Json &s : arrField(m, "steps", "manifest")) {
      Step st;
      std::string where = "step " + std::to_string(steps.size());
      std::string kind = strField(s, "kind", where);
      std::string device = strField(s, "device", where);
      deviceIndex(device, where);
      if (kind == "copy") {
        st.isCopy = true;
        st.src = ref(field(s, "src", where), where + ".src");
        st.dst = ref(field(s, "dst", where), where + ".dst");
        st.bytes = intField(s, "bytes", where, 0);
        if (st.bytes > bytesOf(st.src) || st.bytes > bytesOf(st.dst)) fail("manifest: " + where + " copies more bytes than its buffers hold");
        st.label = "copy -> " + device;
      } else if (kind == "kernel") {
        st.symbol = strField(s, "symbol", where);
        if (!isIdentifier(st.symbol)) fail("manifest: " + where + ".symbol '" + st.symbol + "' is not a C identifier");
        if (!symbols.insert(st.symbol).second) fail("manifest: symbol '" + st.symbol + "' is used by two steps");
        st.file = strField(s, "file", where);
        fs::path rel(st.file);
        bool ok = !rel.empty() && rel.is_relative();
        for (const fs::path &part : rel) ok = ok && part != ".." && part != ".";
        if (!ok) fail("manifest: " + where + ".file '" + st.file + "' must be a relative path inside the output directory");
        for (const Json &a : arrField(s, "args", where)) st.args.push_back(ref(a, where + ".args"));
        for (const Json &v : arrField(s, "vars", where)) {
          if (!v.is_string()) fail("manifest: " + where + ".vars holds a non-string");
          std::string name = v.get<std::string>();
          if (std::none_of(vars.begin(), vars.end(), [&](const Var &x) { return x.name == name; }))
            fail("manifest: " + where + " uses undeclared variable '" + name + "'");
          st.vars.push_back(name);
        }
        st.label = strField(s, "kernel", where) + " @ " + device;
      } else {
        fail("manifest: " + where + " has unknown kind '" + kind + "'");
      }
      steps.push_back(std::move(st));
    }
  }

  /// One C file of trampolines `void uopc_entry_<i>(void **bufs, const int64_t *vars)` calling each kernel
  /// with its arguments spread out (the kernels are declared with pointer and int64_t parameters; every
  /// pointer has the same representation, so the declarations match what the emitter wrote).
  std::string trampolines() const {
    std::ostringstream c;
    c << "/* generated by uopc-run: entry points of the kernels */\n#include <stdint.h>\n";
    for (size_t i = 0; i < steps.size(); ++i) {
      const Step &s = steps[i];
      if (s.isCopy) continue;
      std::string params, call;
      for (size_t a = 0; a < s.args.size(); ++a) {
        params += std::string(params.empty() ? "" : ", ") + "void *";
        call += std::string(call.empty() ? "" : ", ") + "b[" + std::to_string(a) + "]";
      }
      for (size_t v = 0; v < s.vars.size(); ++v) {
        params += std::string(params.empty() ? "" : ", ") + "int64_t";
        call += std::string(call.empty() ? "" : ", ") + "v[" + std::to_string(v) + "]";
      }
      c << "extern void " << s.symbol << "(" << (params.empty() ? "void" : params) << ");\n";
      c << "void uopc_entry_" << i << "(void **b, const int64_t *v) { (void)b; (void)v; " << s.symbol << "(" << call
        << "); }\n";
    }
    return c.str();
  }

  void compile() {
    std::vector<std::string> files;
    for (const Step &s : steps)
      if (!s.isCopy && std::find(files.begin(), files.end(), s.file) == files.end()) files.push_back(s.file);
    if (files.empty()) return;
    if (target == "llvm") return jitCompile(files);
    std::string entry = trampolines();
    std::string cc = cCompiler();
    Hasher h;
    h.add("uopc-run kernels v1");
    h.add(cc);
    for (const char *f : kKernelCFlags) h.add(f);
    h.add(entry);
    std::vector<std::string> sources;
    for (const std::string &f : files) {
      h.add(f);
      h.add(readWhole((dir / f).string(), "kernel source"));
    }
    fs::path cache = kernelCacheDir();
    std::error_code ec;
    fs::create_directories(cache, ec);
    if (ec) fail("cannot create the kernel cache '" + cache.string() + "': " + ec.message());
    fs::path so = cache / (h.hex() + ".so");
    if (!fs::exists(so, ec)) build(cache, so, h.hex(), entry, files);
    handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) fail(std::string("cannot load the compiled kernels: ") + dlerror());
    for (size_t i = 0; i < steps.size(); ++i) {
      if (steps[i].isCopy) continue;
      std::string name = "uopc_entry_" + std::to_string(i);
      void *p = dlsym(handle, name.c_str());
      if (!p) fail("the compiled kernels lack " + name + " (" + steps[i].symbol + ")");
      steps[i].entry = reinterpret_cast<Entry>(p);
    }
  }

  /// Target llvm: every `.ll` module into one ORC JIT, one compiled trampoline per kernel step.
  void jitCompile(const std::vector<std::string> &files) {
    jit = std::make_unique<KernelJit>();
    for (const std::string &f : files) jit->addModule(readWhole((dir / f).string(), "kernel module"), f);
    for (Step &s : steps)
      if (!s.isCopy) s.entry = jit->entry(s.symbol, s.args.size(), s.vars.size());
  }

  void build(const fs::path &cache, const fs::path &so, const std::string &key, const std::string &entry,
             const std::vector<std::string> &files) {
    std::string tag = key + "." + std::to_string(getpid());
    fs::path entryC = cache / (tag + ".entry.c"), tmpSo = cache / (tag + ".so.tmp"), log = cache / (tag + ".log");
    writeWhole(entryC.string(), entry.data(), entry.size());
    std::vector<std::string> argv{cCompiler()};
    for (const char *f : kKernelCFlags) argv.push_back(f);
    argv.push_back("-o");
    argv.push_back(tmpSo.string());
    for (const std::string &f : files) argv.push_back((dir / f).string());
    argv.push_back(entryC.string());
    argv.push_back("-lm");
    std::vector<char *> cargv;
    for (std::string &a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int rc = posix_spawnp(&pid, cargv[0], &fa, nullptr, cargv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    std::error_code ec;
    if (rc != 0) {
      fs::remove(entryC, ec);
      fail("cannot run the C compiler '" + argv[0] + "': " + std::strerror(rc));
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    fs::remove(entryC, ec);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::string msg = fs::exists(log, ec) ? readWhole(log.string(), "compiler log") : "";
      fs::remove(log, ec);
      fs::remove(tmpSo, ec);
      if (msg.size() > 2000) msg = msg.substr(0, 2000) + "...";
      fail("the C compiler failed on the kernels of '" + dir.string() + "':\n" + msg);
    }
    fs::remove(log, ec);
    fs::rename(tmpSo, so, ec);
    if (ec) fail("cannot store the compiled kernels in '" + so.string() + "': " + ec.message());
  }

  void allocateAll() {
    for (int64_t b : arenaBytes) arenas.push_back(allocate(b));
    for (Param &p : params)
      for (size_t d = 0; d < p.devices.size(); ++d) p.data.push_back(allocate(p.bytes));
  }

  void run(const std::vector<int64_t> &varValues, std::vector<double> *times) {
    std::vector<void *> bufs;
    std::vector<int64_t> vals;
    for (size_t i = 0; i < steps.size(); ++i) {
      const Step &s = steps[i];
      auto t0 = std::chrono::steady_clock::now();
      if (s.isCopy) {
        std::memmove(pointer(s.dst), pointer(s.src), static_cast<size_t>(s.bytes));
      } else {
        bufs.clear();
        vals.clear();
        for (const Ref &r : s.args) bufs.push_back(pointer(r));
        for (const std::string &v : s.vars)
          for (size_t k = 0; k < vars.size(); ++k)
            if (vars[k].name == v) vals.push_back(varValues[k]);
        s.entry(bufs.data(), vals.data());
      }
      if (times) (*times)[i] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
  }
};

} // namespace

std::string cCompiler() {
  const char *cc = std::getenv("UOPC_CC");
  return cc && *cc ? cc : "cc";
}

std::string kernelCacheDir() {
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x) return (fs::path(x) / "uopc").string();
  if (const char *h = std::getenv("HOME"); h && *h) return (fs::path(h) / ".cache" / "uopc").string();
  return (fs::temp_directory_path() / "uopc-cache").string();
}

void runManifest(const ManifestRunRequest &req, std::ostream &out) {
  Program p;
  p.parse(req.manifestPath);

  // check every request against the manifest before compiling anything
  std::vector<int64_t> varValues;
  for (const auto &[name, value] : req.vars)
    if (std::none_of(p.vars.begin(), p.vars.end(), [&](const Program::Var &v) { return v.name == name; }))
      fail("--var " + name + ": the manifest has no variable named '" + name + "'");
  for (const Program::Var &v : p.vars) {
    auto it = req.vars.find(v.name);
    if (it == req.vars.end()) fail("variable '" + v.name + "' needs a value: pass --var " + v.name + "=VALUE");
    if (it->second < v.min || it->second > v.max)
      fail("--var " + v.name + "=" + std::to_string(it->second) + " is outside its range [" + std::to_string(v.min) +
           ", " + std::to_string(v.max) + "]");
    varValues.push_back(it->second);
  }
  auto paramFor = [&](int64_t slot, size_t nfiles, const char *flag) -> Param & {
    auto it = p.paramOfSlot.find(slot);
    if (it == p.paramOfSlot.end()) fail(std::string(flag) + " " + std::to_string(slot) + ": the manifest has no buffer slot " + std::to_string(slot));
    Param &q = p.params[it->second];
    if (nfiles != q.devices.size())
      fail(std::string(flag) + " " + std::to_string(slot) + ": the slot lives on " + std::to_string(q.devices.size()) +
           " device(s), so it needs that many files, got " + std::to_string(nfiles));
    return q;
  };
  std::map<int64_t, std::vector<std::string>> inputs;
  for (const auto &[slot, files] : req.inputFiles) {
    Param &q = paramFor(slot, files.size(), "--input");
    for (const std::string &f : files) {
      inputs[slot].push_back(readWhole(f, "input file"));
      if (static_cast<int64_t>(inputs[slot].back().size()) != q.bytes)
        fail("--input " + std::to_string(slot) + ": '" + f + "' has " + std::to_string(inputs[slot].back().size()) +
             " bytes, but slot " + std::to_string(slot) + " holds " + std::to_string(q.bytes) + " bytes (" + q.dtype +
             ") per device");
    }
  }
  for (const Param &q : p.params)
    if ((q.role == "input" || q.role == "inout") && !req.inputFiles.count(q.slot))
      fail("slot " + std::to_string(q.slot) + " is an " + q.role + " of the function: pass --input " +
           std::to_string(q.slot) + "=FILE" + (q.devices.size() > 1 ? "[,FILE...] (one per device)" : ""));
  for (const auto &[slot, files] : req.outputFiles) paramFor(slot, files.size(), "--output");

  p.compile();
  p.allocateAll();
  auto load = [&] {
    for (Param &q : p.params) {
      auto it = inputs.find(q.slot);
      for (size_t d = 0; d < q.devices.size(); ++d)
        if (it != inputs.end()) std::memcpy(q.data[d].get(), it->second[d].data(), static_cast<size_t>(q.bytes));
        else std::memset(q.data[d].get(), 0, static_cast<size_t>(q.bytes));
    }
  };
  load();
  p.run(varValues, nullptr);
  for (const auto &[slot, files] : req.outputFiles) {
    const Param &q = p.params[p.paramOfSlot.at(slot)];
    for (size_t d = 0; d < files.size(); ++d) writeWhole(files[d], q.data[d].get(), static_cast<size_t>(q.bytes));
  }
  if (req.bench > 0) {
    std::vector<double> times(p.steps.size(), 0.0);
    std::vector<double> totals;
    for (int i = 0; i < req.bench; ++i) {
      load();
      std::vector<double> once(p.steps.size(), 0.0);
      p.run(varValues, &once);
      double t = 0;
      for (size_t k = 0; k < once.size(); ++k) times[k] += once[k], t += once[k];
      totals.push_back(t);
    }
    out << "step  what                                  mean_us\n";
    for (size_t k = 0; k < p.steps.size(); ++k)
      out << std::left << std::setw(6) << k << std::setw(38) << p.steps[k].label << std::right << std::fixed
          << std::setprecision(2) << std::setw(10) << times[k] / req.bench * 1e6 << "\n";
    double sum = 0, best = totals.empty() ? 0 : *std::min_element(totals.begin(), totals.end());
    for (double t : totals) sum += t;
    out << "total: mean " << std::fixed << std::setprecision(2) << sum / req.bench * 1e6 << " us, min " << best * 1e6
        << " us over " << req.bench << " run(s)\n";
  }
}

} // namespace uopc

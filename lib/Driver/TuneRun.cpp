//===- TuneRun.cpp - uopc --tune: a kernel's steps built, filled, run and checked (TuneRun.h) ===//
#include "Driver/TuneRun.h"

#include "IR/Error.h"
#include "IR/Kernel.h"
#include "IR/Records.h"
#include "Runtime/ManifestModel.h"
#include "Targets/KernelABI.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>

#include <dlfcn.h>
#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h> // (_mm_clflush, _mm_mfence: SSE2)
#endif

namespace uopc::tunerun {

SharedObject::~SharedObject() {
  if (handle) dlclose(handle);
}

static uint64_t splitmix(uint64_t &s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint16_t toHalf(float f) { // (round to nearest even; the values filled are normal numbers)
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int exp = static_cast<int>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffff;
  if (exp <= 0) return static_cast<uint16_t>(sign);
  uint32_t h = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  if ((mant & 0x1fff) > 0x1000 || ((mant & 0x1fff) == 0x1000 && (h & 1))) ++h;
  return static_cast<uint16_t>(h);
}

static float fromHalf(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float f;
  if (exp == 0) f = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31) f = mant ? NAN : INFINITY;
  else f = std::ldexp(static_cast<float>(mant | 0x400), static_cast<int>(exp) - 25);
  return sign ? -f : f;
}
static float fromBf16(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

void fill(Mem &m, const BufKey &key) {
  uint64_t s = 0x5eed ^ (static_cast<uint64_t>(key.second) * 2 + key.first);
  unsigned char *p = m.data();
  size_t size = dtypeSize(m.dtype), n = size ? m.bytes / size : 0;
  auto unit = [&] { return static_cast<float>(static_cast<double>(splitmix(s) >> 11) * 0x1p-53 + 0.5); };
  for (size_t i = 0; i < n; ++i) {
    unsigned char *e = p + i * size;
    switch (m.dtype) {
    case DType::Float32: {
      float f = unit();
      std::memcpy(e, &f, 4);
      break;
    }
    case DType::Float64: {
      double d = unit();
      std::memcpy(e, &d, 8);
      break;
    }
    case DType::Float16: {
      uint16_t h = toHalf(unit());
      std::memcpy(e, &h, 2);
      break;
    }
    case DType::BFloat16: {
      float f = unit();
      uint32_t x;
      std::memcpy(&x, &f, 4);
      uint16_t b = static_cast<uint16_t>(x >> 16);
      std::memcpy(e, &b, 2);
      break;
    }
    case DType::Bool: e[0] = splitmix(s) & 1; break;
    default:
      if (isInt(m.dtype)) {
        std::memset(e, 0, size);
        e[0] = static_cast<unsigned char>(splitmix(s) & 7); // (little-endian: the low byte)
      } else {
        std::memset(e, 0, size);
      }
    }
  }
}

bool matches(const unsigned char *got, const unsigned char *want, size_t bytes, DType dt) {
  double rtol = dt == DType::Float32 ? 1e-4 : dt == DType::Float64 ? 1e-9 : dt == DType::Float16 || dt == DType::BFloat16 ? 1e-2 : -1;
  if (rtol < 0) return std::memcmp(got, want, bytes) == 0;
  size_t size = dtypeSize(dt), n = bytes / size;
  auto at = [&](const unsigned char *p, size_t i) -> double {
    const unsigned char *e = p + i * size;
    if (dt == DType::Float32) {
      float f;
      std::memcpy(&f, e, 4);
      return f;
    }
    if (dt == DType::Float64) {
      double d;
      std::memcpy(&d, e, 8);
      return d;
    }
    uint16_t h;
    std::memcpy(&h, e, 2);
    return dt == DType::Float16 ? fromHalf(h) : fromBf16(h);
  };
  double scale = 0;
  for (size_t i = 0; i < n; ++i)
    if (double w = std::fabs(at(want, i)); std::isfinite(w)) scale = std::max(scale, w);
  for (size_t i = 0; i < n; ++i) {
    double a = at(got, i), b = at(want, i);
    if (std::isnan(a) || std::isnan(b)) {
      if (std::isnan(a) != std::isnan(b)) return false;
      continue;
    }
    if (std::isinf(a) || std::isinf(b)) {
      if (a != b) return false;
      continue;
    }
    if (std::fabs(a - b) > rtol * (std::fabs(b) + scale)) return false;
  }
  return true;
}

std::vector<size_t> stepsOf(const Schedule &s, const std::string &name) {
  std::vector<size_t> out;
  for (size_t i = 0; i < s.steps.size(); ++i) {
    if (s.steps[i].kind != SchedStep::Kind::Kernel) continue;
    const std::string &k = s.kernels[s.steps[i].kernel].name;
    if (k == name || k.rfind(name + "_pack", 0) == 0 || k.rfind(name + "_relayout", 0) == 0) out.push_back(i);
  }
  return out;
}

Steps prepare(Module &m, const std::vector<size_t> &which, const std::string &cpu, const fs::path &scratch,
              double buildSeconds) {
  const Schedule &s = *m.schedule();
  if (which.empty()) fail("the compile has no such kernel");
  Steps out;
  bool c = m.renderer->language() == "C";
  if (!c) out.jit = std::make_unique<KernelJit>(cpu);
  std::vector<KernelJit::EntrySpec> specs;
  std::vector<std::string> files;
  std::ostringstream entry; // (C: the entry points, as uopc-run's trampolines)
  entry << "#include <stdint.h>\n";
  static uint64_t built = 0;
  fs::path dir = scratch / ("candidate" + std::to_string(built++));
  if (c) {
    std::error_code ec;
    fs::create_directory(dir, ec);
    if (ec) fail("cannot create '" + dir.string() + "': " + ec.message());
  }
  for (size_t i : which) {
    const SchedStep &st = s.steps[i];
    if (!st.vars.empty()) fail("the kernel has variables");
    std::string symbol = "uopc_tune_" + std::to_string(i);
    RenderedKernel rk = m.renderer->render(*m.graph.ctx, st.call, st.deviceNum, symbol);
    if (c) {
      files.push_back("k" + std::to_string(i) + ".c");
      std::ofstream f(dir / files.back(), std::ios::binary);
      f << m.renderer->fileText(rk);
      if (!f.flush()) fail("cannot write '" + (dir / files.back()).string() + "'");
      entry << kernelTrampoline(specs.size(), rk.symbol, st.args.size(), kernelParallel(st.call) ? 2 : 0);
    } else {
      out.jit->addModule(m.renderer->fileText(rk), s.kernels[st.kernel].name);
    }
    Steps::One one;
    one.parallel = kernelParallel(st.call);
    one.parallelWork = kernelParallelWork(st.call);
    one.splitShares = kernelSplitByShares(st.call);
    one.once = st.once;
    KernelABI abi = KernelABI::of(st.call, "tune");
    for (size_t a = 0; a < st.args.size(); ++a) {
      const SchedBuffer &b = s.buffers.at(st.args[a].buffer);
      if (b.symbolicSize) fail("a buffer of symbolic size");
      BufKey key{b.isParam, b.slot};
      one.args.push_back(key);
      out.sizes[key] = {static_cast<size_t>(b.bytes()), b.dtype};
      if (abi.written.count(static_cast<int64_t>(a))) {
        out.written.insert(key);
        if (st.once) out.onceWritten.insert(key);
      }
    }
    for (const std::string &b : blockedArgs(kernelSink(st.call))) {
      int64_t slot = -1, lanes = 0, plane = 0;
      char sep1 = 0, sep2 = 0;
      std::istringstream in(b);
      if (!(in >> slot >> sep1 >> lanes >> sep2 >> plane) || sep1 != ':' || sep2 != ':' || slot < 0 ||
          static_cast<size_t>(slot) >= one.args.size() || lanes < 2 || plane < 2)
        fail("the kernel's blocked argument '" + b + "' is not SLOT:L:P");
      out.blocked[one.args[static_cast<size_t>(slot)]] = {lanes, plane};
    }
    specs.push_back({rk.symbol, st.args.size(), one.parallel ? 2u : 0u});
    out.steps.push_back(std::move(one));
  }
  if (!c) {
    std::vector<KernelJit::Entry> e = out.jit->entries(specs);
    for (size_t k = 0; k < e.size(); ++k) out.steps[k].entry = e[k];
    return out;
  }
  struct RemoveDir {
    fs::path dir;
    ~RemoveDir() {
      std::error_code ec;
      fs::remove_all(dir, ec); // (the loaded object stays mapped)
    }
  } remove{dir};
  fs::path so = buildKernelObject(dir, files, entry.str(), cpu, dir, buildSeconds);
  out.object = std::make_unique<SharedObject>();
  out.object->handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!out.object->handle) fail(std::string("cannot load the candidate's kernels: ") + dlerror());
  for (size_t k = 0; k < out.steps.size(); ++k) {
    std::string name = "uopc_entry_" + std::to_string(k);
    void *p = dlsym(out.object->handle, name.c_str());
    if (!p) fail("the candidate's kernels lack " + name);
    out.steps[k].entry = reinterpret_cast<KernelJit::Entry>(p);
  }
  return out;
}

/// Buffer m, in planes (element c*P + p), stored in blocks of L channels ((c / L)*P*L + p*L + c % L) when
/// `toBlocked`, else the other way. Throws Error where its size is no whole number of blocks of planes.
static void relayout(Mem &m, int64_t L, int64_t P, bool toBlocked) {
  size_t size = dtypeSize(m.dtype), n = size ? m.bytes / size : 0;
  size_t lanes = static_cast<size_t>(L), plane = static_cast<size_t>(P);
  if (!n || n % plane || (n / plane) % lanes) fail("a blocked argument's size is no whole number of blocks of planes");
  std::vector<unsigned char> from(m.data(), m.data() + m.bytes);
  unsigned char *to = m.data();
  for (size_t c = 0; c < n / plane; ++c)
    for (size_t p = 0; p < plane; ++p) {
      size_t flat = c * plane + p, blocked = (c / lanes) * plane * lanes + p * lanes + c % lanes;
      std::memcpy(to + (toBlocked ? blocked : flat) * size, from.data() + (toBlocked ? flat : blocked) * size, size);
    }
}

void relayoutBlocked(const Steps &g, std::map<BufKey, Mem> &mem, bool toBlocked) {
  for (const auto &[key, lp] : g.blocked)
    if (auto it = mem.find(key); it != mem.end()) relayout(it->second, lp.first, lp.second, toBlocked);
}

void runSteps(Steps &g, std::map<BufKey, Mem> &mem, ThreadPool &pool, bool withOnce, std::vector<double> *stepNs) {
  std::vector<void *> bufs;
  for (size_t i = 0; i < g.steps.size(); ++i) {
    const Steps::One &s = g.steps[i];
    if (s.once && !withOnce) continue;
    bufs.clear();
    for (const BufKey &k : s.args) {
      auto own = g.own.find(k);
      bufs.push_back(own != g.own.end() ? own->second.data() : mem.at(k).data());
    }
    auto start = std::chrono::steady_clock::now();
    int64_t n = s.parallel, parts = std::min<int64_t>(pool.size(), n);
    if (n == 0) {
      s.entry(bufs.data(), nullptr);
    } else if (parts <= 1) {
      int64_t v[2] = {0, n};
      s.entry(bufs.data(), v);
    } else {
      // (as uopc-run runs it: chunks of like work, in turns or by shares (runChunks), on the same spinning
      // pool)
      std::vector<int64_t> cuts = manifest::splitChunks(n, parts, manifest::kChunksPerThread, s.parallelWork);
      runChunks(pool, cuts, s.splitShares, [&](int, int64_t lo, int64_t hi) {
        int64_t v[2] = {lo, hi};
        s.entry(bufs.data(), v);
      });
    }
    if (stepNs && i < stepNs->size()) {
      double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
      (*stepNs)[i] = std::min((*stepNs)[i], ns);
    }
  }
}

void flushWeights(Steps &g, std::map<BufKey, Mem> &work) {
#if defined(__x86_64__) || defined(__i386__)
  std::set<BufKey> done;
  for (const Steps::One &st : g.steps) {
    if (st.once) continue;
    for (const BufKey &k : st.args) {
      if (!(k.first || g.onceWritten.count(k)) || !done.insert(k).second) continue;
      auto own = g.own.find(k);
      Mem &m = own != g.own.end() ? own->second : work.at(k);
      for (size_t i = 0; i < m.bytes; i += 64) _mm_clflush(m.data() + i);
    }
  }
  _mm_mfence();
#else
  (void)g, (void)work;
#endif
}

} // namespace uopc::tunerun

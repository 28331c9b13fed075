//===- Runner.cpp - `uopc-run MANIFEST`: compile, allocate, load, run, write ===//
#include "Runtime/Runner.h"

#include "IR/Collective.h"
#include "IR/Error.h"
#include "IR/Files.h"
#include "IR/Types.h"
#include "Runtime/Cuda.h"
#include "Runtime/KernelCache.h"
#include "Runtime/ManifestModel.h"
#include "Runtime/Mpi.h"
#include "Runtime/ThreadPool.h"
#include "Targets/LLVMJit.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <type_traits>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace uopc {
namespace fs = std::filesystem;

namespace {

using manifest::Buffer;
using manifest::Manifest;
using manifest::Param;
using manifest::Ref;
using manifest::Role;
using manifest::Step;

std::string readWhole(const std::string &path, const std::string &what, uint64_t maxBytes = uint64_t(1) << 30) {
  return manifest::readBounded(path, what, maxBytes);
}

/// An --output file: written whole or not at all (IR/Files.h).
void writeWhole(const std::string &path, const void *data, size_t n) {
  writeFileAtomic(path, std::string_view(static_cast<const char *>(data), n));
}

/// Where every given input is, per slot, one region per device of the slot.
using Inputs = std::map<int64_t, std::vector<InputRegion>>;

/// An --input file: a region of all of it when it is a regular file; a pipe's contents read now (at most
/// `maxBytes`, more is refused); a directory or device refused.
InputRegion inputFile(const std::string &path, uint64_t maxBytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail("cannot read input file " + quote(path) + ": " + std::strerror(errno));
  if (S_ISREG(st.st_mode)) return {path, 0, static_cast<uint64_t>(st.st_size), nullptr};
  auto held = std::make_shared<const std::string>(readWhole(path, "input file", maxBytes));
  return {path, 0, held->size(), held};
}

/// Reads `r` into `dst` (r.size bytes). Throws Error naming the file when it cannot, or is shorter now.
void readRegion(const InputRegion &r, void *dst) {
  if (r.held) {
    std::memcpy(dst, r.held->data(), std::min<size_t>(r.held->size(), static_cast<size_t>(r.size)));
    return;
  }
  int fd = ::open(r.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open the input " + quote(r.path) + ": " + std::strerror(errno));
  char *out = static_cast<char *>(dst);
  uint64_t done = 0;
  while (done < r.size) {
    ssize_t got = ::pread(fd, out + done, std::min<uint64_t>(r.size - done, uint64_t(1) << 30), static_cast<off_t>(r.offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      ::close(fd);
      fail("cannot read " + std::to_string(r.size) + " bytes of the input " + quote(r.path) + " from byte " +
           std::to_string(r.offset) + (got < 0 ? std::string(": ") + std::strerror(errno) : std::string(" (was the file cut short?)")));
    }
    done += static_cast<uint64_t>(got);
  }
  ::close(fd);
}

/// What differs between running on this machine's CPU and on GPUs: memory, kernels, launches. The
/// manifest, the checks of the request and all file I/O are shared (runManifest).
class Backend {
public:
  virtual ~Backend() = default;
  /// Compiles or loads the kernels and allocates every parameter (per device) and arena, zeroed.
  virtual void prepare() = 0;
  /// Sets every parameter: an input's contents where one was given, zeros elsewhere.
  virtual void load(const Inputs &inputs) = 0;
  /// Runs the steps in order and waits for them. `times` (one per step): adds each step's seconds.
  virtual void run(const std::vector<int64_t> &varValues, std::vector<double> *times) = 0;
  /// Copies device `dev` of parameter `param` (an index into Manifest::params) to `dst`.
  virtual void read(size_t param, size_t dev, void *dst) = 0;
};

// ---- this machine's CPU: targets c (a cached shared object) and llvm (ORC JIT) ------------------------

/// Zeroed memory aligned to 64 bytes, from calloc: a large block comes straight from the kernel's fresh
/// pages, zero already, each touched only when first written (a memset touched every page of the weights
/// and the arena once before the inputs were read into them: VGG-19's 0.6 GB, 0.3-2 s of page faults in
/// the first run). The block calloc returned is kept in the 8 bytes before the aligned pointer.
struct AlignedFree {
  void operator()(unsigned char *p) const {
    if (p) std::free(reinterpret_cast<void **>(p)[-1]);
  }
};
using Mem = std::unique_ptr<unsigned char, AlignedFree>;
Mem allocate(int64_t bytes) {
  size_t n = static_cast<size_t>(std::max<int64_t>(bytes, 1));
  n = (n + 63) / 64 * 64;
  void *raw = n > SIZE_MAX - 128 ? nullptr : std::calloc(n + 64 + sizeof(void *), 1);
  if (!raw) throw std::bad_alloc();
  uintptr_t at = (reinterpret_cast<uintptr_t>(raw) + sizeof(void *) + 63) / 64 * 64;
  auto *p = reinterpret_cast<unsigned char *>(at);
  reinterpret_cast<void **>(p)[-1] = raw;
  return Mem(p);
}

using Entry = void (*)(void **, const int64_t *);

// ---- allreduce steps: the shards reduced in the runner -------------------------------------------------

/// a op b as the kernels compute it (OpSpelling.def: MAX is `a < b ? b : a`); integers wrap.
template <class T> T combine(manifest::ReduceOp op, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (op == manifest::ReduceOp::Add) return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    if (op == manifest::ReduceOp::Mul) return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  } else {
    if (op == manifest::ReduceOp::Add) return a + b;
    if (op == manifest::ReduceOp::Mul) return a * b;
  }
  return a < b ? b : a;
}

template <class T>
void reduceRange(manifest::ReduceOp op, int64_t lo, int64_t hi, size_t first, const std::vector<const void *> &src,
                 const std::vector<void *> &dst) {
  constexpr int64_t kBlock = 2048;
  T acc[kBlock];
  size_t n = src.size();
  for (int64_t b = lo; b < hi; b += kBlock) {
    int64_t len = std::min(kBlock, hi - b);
    std::memcpy(acc, static_cast<const T *>(src[first]) + b, static_cast<size_t>(len) * sizeof(T));
    for (size_t j = 1; j < n; ++j) {
      const T *x = static_cast<const T *>(src[(first + j) % n]) + b;
      for (int64_t e = 0; e < len; ++e) acc[e] = combine<T>(op, acc[e], x[e]);
    }
    for (void *d : dst) std::memcpy(static_cast<T *>(d) + b, acc, static_cast<size_t>(len) * sizeof(T));
  }
}

/// Allreduce step `s` in one process: every element of `dst` (any number of them) becomes the shards
/// `src` reduced in order, src[0] op src[1] op ..., or with `ring` in tinygrad's ring order (chunk k starting
/// at shard k: IR/Collective.h), each step in the dtype: what the copies and sum kernels tinygrad's lowering
/// makes compute, bit for bit. Each block of elements is read from every shard before any destination is
/// written, so a destination that is its own shard (in place) is safe.
void reduceShards(const Step &s, const std::vector<const void *> &src, const std::vector<void *> &dst, bool ring) {
  std::vector<int64_t> starts = ring ? ringChunkStarts(s.numel, static_cast<int64_t>(src.size()))
                                     : std::vector<int64_t>{0, s.numel};
  for (size_t k = 0; k + 1 < starts.size(); ++k) {
    size_t first = ring ? k : 0;
    switch (s.dtype) {
#define UOPC_REDUCE(DT, T)                                                                                             \
  case DType::DT: reduceRange<T>(s.op, starts[k], starts[k + 1], first, src, dst); break;
      UOPC_REDUCE(Int8, int8_t) UOPC_REDUCE(UInt8, uint8_t) UOPC_REDUCE(Int16, int16_t) UOPC_REDUCE(UInt16, uint16_t)
      UOPC_REDUCE(Int32, int32_t) UOPC_REDUCE(UInt32, uint32_t) UOPC_REDUCE(Int64, int64_t) UOPC_REDUCE(UInt64, uint64_t)
      UOPC_REDUCE(Float32, float) UOPC_REDUCE(Float64, double)
#undef UOPC_REDUCE
    default: fail("internal error: an allreduce of " + std::string(dtypeName(s.dtype))); // (the reader refuses it)
    }
  }
}

MpiType mpiType(DType dt) {
  switch (dt) {
  case DType::Int8: return MpiType::Int8;
  case DType::UInt8: return MpiType::UInt8;
  case DType::Int16: return MpiType::Int16;
  case DType::UInt16: return MpiType::UInt16;
  case DType::Int32: return MpiType::Int32;
  case DType::UInt32: return MpiType::UInt32;
  case DType::Int64: return MpiType::Int64;
  case DType::UInt64: return MpiType::UInt64;
  case DType::Float32: return MpiType::Float32;
  case DType::Float64: return MpiType::Float64;
  default: fail("internal error: an allreduce of " + std::string(dtypeName(dt)));
  }
}

MpiReduction mpiReduction(manifest::ReduceOp op) {
  return op == manifest::ReduceOp::Add ? MpiReduction::Sum : op == manifest::ReduceOp::Max ? MpiReduction::Max : MpiReduction::Prod;
}

/// Where a rank's time went (one process per device): reading or receiving the inputs, its kernels, the
/// copies and remote arguments that cross ranks (waiting for the peer included) and within it.
struct RankTimes {
  double inputs = 0, kernels = 0, transfers = 0, localCopies = 0, outputs = 0;
  uint64_t messages = 0, bytes = 0;
  double allreduces = 0;                          ///< MPI_Allreduce calls (waiting included) and the local reductions
  uint64_t allreduceCalls = 0, allreduceBytes = 0; ///< (bytes: of this rank's reduced shard, per call)
};

class CpuBackend final : public Backend {
public:
  /// `comm`: this process runs only the devices of its rank (RankTimes, ManifestRunRequest::comm); null: all.
  /// `given` (with comm): per parameter, whether rank 0 holds an input for it.
  CpuBackend(const Manifest &m, const fs::path &dir, int threads, Comm *comm = nullptr, std::vector<char> given = {})
      : m_(m), dir_(dir), pool_(threads), comm_(comm), given_(std::move(given)) {}
  const RankTimes &rankTimes() const { return times_; }
  int rankOf(size_t device) const { return comm_ ? static_cast<int>(device % static_cast<size_t>(comm_->size())) : 0; }
  bool owns(size_t device) const { return !comm_ || rankOf(device) == comm_->rank(); }

  /// The C of the entry points compile() builds (what the fuzz target checks without compiling).
  std::string entrySource() const { return trampolines(); }
  ~CpuBackend() override {
    if (handle_) dlclose(handle_);
  }

  void prepare() override {
    compile();
    // (one process per device: only this rank's devices get memory, and a copy of each argument of its
    // kernels that lives on another rank)
    for (size_t d = 0; d < m_.devices.size(); ++d) arenas_.push_back(owns(d) ? allocate(m_.devices[d].arenaBytes) : Mem());
    for (const Param &p : m_.params) {
      data_.emplace_back();
      for (size_t d = 0; d < p.devices.size(); ++d) data_.back().push_back(owns(p.deviceIndex[d]) ? allocate(p.bytes) : Mem());
    }
    for (const Step &s : m_.steps)
      if (s.isKernel() && owns(s.deviceIndex))
        for (size_t a : s.remoteArgs)
          if (const Ref &r = s.args[a]; !owns(m_.deviceOf(r)) && !remote_.count(key(r))) remote_[key(r)] = allocate(m_.bytesOf(r));
    // one communicator per set of ranks an allreduce spans (made by every rank, in step order: collective)
    groups_.assign(m_.steps.size(), -1);
    if (comm_) {
      std::map<std::vector<int>, int> made;
      for (size_t i = 0; i < m_.steps.size(); ++i) {
        const Step &s = m_.steps[i];
        if (!s.isAllreduce()) continue;
        std::set<int> rs;
        for (size_t d : s.devicesIndex) rs.insert(rankOf(d));
        std::vector<int> ranks(rs.begin(), rs.end());
        if (ranks.size() < 2) continue; // (all its devices on one rank: reduced there, as in one process)
        auto it = made.find(ranks);
        if (it == made.end()) it = made.emplace(ranks, comm_->group(ranks)).first;
        groups_[i] = it->second;
      }
    }
  }

  void load(const Inputs &inputs) override {
    if (comm_) return loadRanks(inputs);
    // the once steps run again when a parameter they read changes (--bench loads the same inputs each run)
    std::set<size_t> onceReads;
    for (const Step &s : m_.steps)
      if (s.once)
        for (const Ref &r : s.args)
          if (r.isParam) onceReads.insert(r.index);
    // (a parameter a once step reads is one no step writes: loaded again from the same region, it holds the
    // same bytes, unless the file changed meanwhile, which a run does not guard against)
    loadedFrom_.resize(m_.params.size());
    for (size_t i = 0; i < m_.params.size(); ++i) {
      const Param &q = m_.params[i];
      auto it = inputs.find(q.slot);
      std::vector<InputRegion> from = it != inputs.end() ? it->second : std::vector<InputRegion>(q.devices.size());
      if (onceReads.count(i) && (from != loadedFrom_[i] || it == inputs.end())) onceDone_ = false;
      for (size_t d = 0; d < q.devices.size(); ++d) {
        void *dst = data_[i][d].get();
        if (it != inputs.end()) readRegion(it->second[d], dst);
        else std::memset(dst, 0, static_cast<size_t>(q.bytes));
      }
      loadedFrom_[i] = std::move(from);
    }
  }

  void run(const std::vector<int64_t> &varValues, std::vector<double> *times) override {
    std::vector<void *> bufs;
    std::vector<int64_t> vals;
    for (size_t i = 0; i < m_.steps.size(); ++i) {
      const Step &s = m_.steps[i];
      if (s.once && onceDone_) continue; // (its result, weights re-laid out or transformed, is still in its buffer)
      auto t0 = std::chrono::steady_clock::now();
      // One process per device: every rank walks the same steps in the same order, so each send meets its
      // receive (blocking, one pair at a time: the earliest pending transfer can always complete).
      if (s.isAllreduce()) {
        if (!runAllreduce(i, s)) continue; // (none of its devices here)
      } else if (comm_ && !crossRanks(s)) {
        continue;
      } else if (s.isCopy()) {
        if (!comm_ || rankOf(s.fromIndex) == rankOf(s.deviceIndex)) {
          std::memmove(pointer(s.dst), pointer(s.src), static_cast<size_t>(s.bytes));
          if (comm_) times_.localCopies += secondsSince(t0);
        } else if (owns(s.fromIndex)) {
          comm_->send(pointer(s.src), static_cast<uint64_t>(s.bytes), rankOf(s.deviceIndex));
          note(t0, s.bytes);
        } else {
          comm_->recv(pointer(s.dst), static_cast<uint64_t>(s.bytes), rankOf(s.fromIndex));
          note(t0, s.bytes);
        }
      } else if (!owns(s.deviceIndex)) {
        continue; // (crossRanks sent the arguments it needs from here)
      } else {
        bufs.clear();
        vals.clear();
        for (const Ref &r : s.args) bufs.push_back(pointer(r));
        for (size_t k : s.varIndex) vals.push_back(varValues[k]);
        if (s.parallel == 0) {
          entries_[i](bufs.data(), vals.data());
        } else {
          // the split loop's iterations [0, parallel) in chunks of like work (kChunksPerThread per thread),
          // taken in turns or by shares (the manifest's "split": runChunks); either way a thread that is done
          // takes what is left: the work estimates are rough (a concatenation's copy piece against a register
          // tile's rows) and a thread of a shared machine may run slower
          int64_t n = s.parallel, parts = std::min<int64_t>(pool_.size(), n);
          Entry entry = entries_[i];
          if (parts <= 1) {
            std::vector<int64_t> v(vals);
            v.insert(v.end(), {0, n});
            entry(bufs.data(), v.data());
          } else {
            std::vector<int64_t> cuts = manifest::splitChunks(n, parts, manifest::kChunksPerThread, s.parallelWork);
            std::vector<std::vector<int64_t>> args(static_cast<size_t>(pool_.size()), vals); // per thread
            for (std::vector<int64_t> &a : args) a.resize(vals.size() + 2);
            runChunks(pool_, cuts, s.splitShares, [&](int thread, int64_t lo, int64_t hi) {
              std::vector<int64_t> &v = args[static_cast<size_t>(thread)];
              v[vals.size()] = lo;
              v[vals.size() + 1] = hi;
              entry(bufs.data(), v.data());
            });
          }
        }
        if (comm_) times_.kernels += secondsSince(t0);
      }
      if (times) (*times)[i] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    onceDone_ = true;
  }

  void read(size_t param, size_t dev, void *dst) override {
    std::memcpy(dst, data_[param][dev].get(), static_cast<size_t>(m_.params[param].bytes));
  }

  /// One process per device, rank 0 only: the parameter's `dev` from the rank that holds it.
  void gather(size_t param, size_t dev, void *dst) {
    auto t0 = std::chrono::steady_clock::now();
    int from = rankOf(m_.params[param].deviceIndex[dev]);
    if (from == comm_->rank()) read(param, dev, dst);
    else comm_->recv(dst, static_cast<uint64_t>(m_.params[param].bytes), from);
    times_.outputs += secondsSince(t0);
  }
  /// One process per device, every rank but 0: sends its devices of the parameter to rank 0 (gather's peer).
  void sendToRoot(size_t param) {
    auto t0 = std::chrono::steady_clock::now();
    const Param &q = m_.params[param];
    for (size_t d = 0; d < q.devices.size(); ++d)
      if (owns(q.deviceIndex[d])) comm_->send(data_[param][d].get(), static_cast<uint64_t>(q.bytes), 0);
    times_.outputs += secondsSince(t0);
  }

private:
  const Manifest &m_;
  const fs::path dir_; ///< the manifest's folder: kernel files are relative to it
  std::vector<Mem> arenas_;
  std::vector<std::vector<Mem>> data_; // per param, per device
  std::vector<Entry> entries_;         // per step (null for copies)
  void *handle_ = nullptr;
  std::unique_ptr<KernelJit> jit_; // target llvm: the kernels' modules, run in-process
  ThreadPool pool_;                // the threads of split kernels
  bool onceDone_ = false;          // the once steps ran since the inputs were loaded
  std::vector<std::vector<InputRegion>> loadedFrom_; // per param, per device: where the last load read it
  Comm *comm_ = nullptr;                             // one process per device: this rank's peers
  std::vector<char> given_;                          // with comm_: per param, whether rank 0 has its input
  std::map<std::tuple<bool, size_t, size_t>, Mem> remote_; // with comm_: this rank's copy of another's argument
  RankTimes times_;

  std::vector<int> groups_; ///< per step: an allreduce's communicator across ranks (-1: none, one rank holds it all)

  /// Allreduce step `i`. One process, or every device of it on this rank: the shards reduced here in the
  /// step's order (reduceShards). Across ranks: this rank's shards reduced in device order into its first
  /// destination, MPI_Allreduce of that among the ranks holding the step's devices, then copied to its other
  /// destinations (the order of the reduction is MPI's: docs/distributed.md). False when this rank holds
  /// none of its devices.
  bool runAllreduce(size_t i, const Step &s) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<const void *> src;
    std::vector<void *> dst;
    for (size_t k = 0; k < s.devicesIndex.size(); ++k)
      if (owns(s.devicesIndex[k])) src.push_back(pointer(s.srcs[k])), dst.push_back(pointer(s.dsts[k]));
    if (src.empty()) return false;
    if (!comm_ || groups_[i] < 0) {
      reduceShards(s, src, dst, s.ring);
      if (comm_) times_.localCopies += secondsSince(t0);
      return true;
    }
    reduceShards(s, src, {dst[0]}, false);
    comm_->allreduce(dst[0], static_cast<uint64_t>(s.numel), mpiType(s.dtype), mpiReduction(s.op), groups_[i]);
    for (size_t k = 1; k < dst.size(); ++k) std::memcpy(dst[k], dst[0], static_cast<size_t>(s.bytes));
    times_.allreduces += secondsSince(t0);
    times_.allreduceCalls += 1;
    times_.allreduceBytes += static_cast<uint64_t>(s.bytes);
    return true;
  }

  static std::tuple<bool, size_t, size_t> key(const Ref &r) { return {r.isParam, r.index, r.dev}; }
  static double secondsSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  void note(std::chrono::steady_clock::time_point t0, int64_t bytes) {
    times_.transfers += secondsSince(t0);
    times_.messages += 1;
    times_.bytes += static_cast<uint64_t>(bytes);
  }

  /// One process per device, before step `s`: a kernel's arguments on other ranks' devices go to its rank
  /// (sent by their holders, received into remote_). False when this rank has nothing to do for `s`.
  bool crossRanks(const Step &s) {
    if (s.isCopy()) return owns(s.fromIndex) || owns(s.deviceIndex);
    int at = rankOf(s.deviceIndex);
    for (size_t a : s.remoteArgs) {
      const Ref &r = s.args[a];
      size_t dev = m_.deviceOf(r);
      if (rankOf(dev) == at) continue;
      auto t0 = std::chrono::steady_clock::now();
      if (at == comm_->rank()) comm_->recv(pointer(r), static_cast<uint64_t>(m_.bytesOf(r)), rankOf(dev));
      else if (owns(dev)) comm_->send(pointer(r), static_cast<uint64_t>(m_.bytesOf(r)), at);
      else continue;
      note(t0, m_.bytesOf(r));
    }
    return owns(s.deviceIndex);
  }

  /// load() with one process per device: rank 0 reads every given input and sends each device's shard to
  /// the rank that holds it; the others receive theirs. Parameters without an input start zeroed.
  void loadRanks(const Inputs &inputs) {
    auto t0 = std::chrono::steady_clock::now();
    onceDone_ = false; // (the other ranks do not see where inputs come from: the once steps run again)
    std::vector<unsigned char> staging;
    for (size_t i = 0; i < m_.params.size(); ++i) {
      const Param &q = m_.params[i];
      for (size_t d = 0; d < q.devices.size(); ++d) {
        int holder = rankOf(q.deviceIndex[d]);
        void *dst = owns(q.deviceIndex[d]) ? data_[i][d].get() : nullptr;
        if (!given_[i]) {
          if (dst) std::memset(dst, 0, static_cast<size_t>(q.bytes));
        } else if (comm_->rank() == 0) {
          const InputRegion &r = inputs.at(q.slot)[d];
          if (dst) {
            readRegion(r, dst);
          } else {
            staging.resize(static_cast<size_t>(q.bytes));
            readRegion(r, staging.data());
            comm_->send(staging.data(), static_cast<uint64_t>(q.bytes), holder);
          }
        } else if (dst) {
          comm_->recv(dst, static_cast<uint64_t>(q.bytes), 0);
        }
      }
    }
    times_.inputs += secondsSince(t0);
  }

  void *pointer(const Ref &r) const {
    if (comm_ && !owns(m_.deviceOf(r))) return remote_.at(key(r)).get();
    if (r.isParam) return data_[r.index][r.dev].get();
    const Buffer &b = m_.buffers[r.index];
    return arenas_[b.deviceIndex[r.dev]].get() + b.offsets[r.dev];
  }

  /// One C file of trampolines `void uopc_entry_<i>(void **bufs, const int64_t *vars)` calling each kernel
  /// with its arguments spread out (the kernels are declared with pointer and int64_t parameters; every
  /// pointer has the same representation, so the declarations match what the emitter wrote).
  std::string trampolines() const {
    std::ostringstream c;
    c << "/* generated by uopc-run: entry points of the kernels */\n#include <stdint.h>\n";
    for (size_t i = 0; i < m_.steps.size(); ++i) {
      const Step &s = m_.steps[i];
      if (!s.isKernel()) continue;
      c << kernelTrampoline(i, s.symbol, s.args.size(), s.vars.size() + (s.parallel ? 2 : 0)); // (split: lo, hi last)
    }
    return c.str();
  }

  void compile() {
    entries_.assign(m_.steps.size(), nullptr);
    std::vector<std::string> files = m_.kernelFiles();
    if (files.empty()) return;
    if (targetInfo(m_.target).emitter == Emitter::LLVM) return jitCompile(files);
    fs::path so = cachedKernelObject(dir_, files, trampolines(), m_.cpuName());
    handle_ = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) fail(std::string("cannot load the compiled kernels: ") + dlerror());
    for (size_t i = 0; i < m_.steps.size(); ++i) {
      if (!m_.steps[i].isKernel()) continue;
      std::string name = "uopc_entry_" + std::to_string(i);
      void *p = dlsym(handle_, name.c_str());
      if (!p) fail("the compiled kernels lack " + name + " (" + m_.steps[i].symbol + ")");
      entries_[i] = reinterpret_cast<Entry>(p);
    }
  }

  /// Target llvm: every `.ll` module into one ORC JIT, one compiled trampoline per kernel step.
  void jitCompile(const std::vector<std::string> &files) {
    jit_ = std::make_unique<KernelJit>(m_.cpuName());
    for (const std::string &f : files) jit_->addModule(readWhole((dir_ / f).string(), "kernel module"), f);
    std::vector<KernelJit::EntrySpec> specs;
    std::vector<size_t> steps;
    for (size_t i = 0; i < m_.steps.size(); ++i) {
      const Step &s = m_.steps[i];
      if (!s.isKernel()) continue;
      specs.push_back({s.symbol, s.args.size(), s.vars.size() + (s.parallel ? 2 : 0)});
      steps.push_back(i);
    }
    std::vector<KernelJit::Entry> e = jit_->entries(specs); // (compiled together, on every core)
    for (size_t k = 0; k < steps.size(); ++k) entries_[steps[k]] = e[k];
  }

};

// ---- NVIDIA GPUs through the CUDA driver: target ptx ---------------------------------------------------

/// Manifest device i runs on GPU i % (number of GPUs): with one GPU every device of the manifest shares
/// it, each keeping its own allocations. Each distinct .ptx file is JIT-compiled once per GPU. Steps go to
/// each GPU's default stream in order; before a step runs on one GPU, pending work of every other GPU is
/// waited for (kernels may read other devices' buffers, through peer access).
class CudaBackend final : public Backend {
public:
  CudaBackend(const Manifest &m, const fs::path &dir) : m_(m), dir_(dir) {}

  void prepare() override {
    cuda::init();
    size_t count = static_cast<size_t>(cuda::deviceCount());
    for (size_t d = 0; d < m_.devices.size(); ++d) {
      size_t ordinal = d % count;
      auto it = std::find_if(gpus_.begin(), gpus_.end(), [&](const auto &g) { return g->ordinal() == int(ordinal); });
      if (it == gpus_.end()) {
        gpus_.push_back(std::make_unique<cuda::Gpu>(static_cast<int>(ordinal)));
        it = gpus_.end() - 1;
      }
      gpuOfDevice_.push_back(it->get());
    }
    for (size_t d = 0; d < m_.devices.size(); ++d) {
      arenas_.push_back(std::make_unique<cuda::DeviceMemory>(*gpuOfDevice_[d], static_cast<size_t>(m_.devices[d].arenaBytes),
                                                             "the arena of " + m_.devices[d].name));
      arenas_.back()->zero();
    }
    for (const Param &p : m_.params) {
      data_.emplace_back();
      for (size_t d = 0; d < p.devices.size(); ++d) {
        data_.back().push_back(std::make_unique<cuda::DeviceMemory>(
            *gpuOfDevice_[p.deviceIndex[d]], static_cast<size_t>(p.bytes),
            "param " + std::to_string(p.slot) + " on " + p.devices[d]));
        data_.back().back()->zero();
      }
    }
    // Kernels: each file once per GPU, each symbol looked up in its step's GPU; argument addresses are
    // fixed from here on.
    std::map<std::pair<const cuda::Gpu *, std::string>, std::unique_ptr<cuda::Module>> modules;
    std::map<std::string, std::string> sources;
    functions_.assign(m_.steps.size(), nullptr);
    for (size_t i = 0; i < m_.steps.size(); ++i) {
      const Step &s = m_.steps[i];
      whats_.push_back("step " + std::to_string(i) + " (" +
                       (!s.isKernel() ? s.label() : "kernel " + s.label() + ", symbol " + s.symbol + " in " + s.file) + ")");
    }
    argPtrs_.assign(m_.steps.size(), {});
    grid_.assign(m_.steps.size(), {});
    block_.assign(m_.steps.size(), {});
    for (size_t i = 0; i < m_.steps.size(); ++i) {
      const Step &s = m_.steps[i];
      if (!s.isKernel()) continue; // (an allreduce: the reader refuses one in a GPU manifest)
      const cuda::Gpu &gpu = *gpuOfDevice_[s.deviceIndex];
      auto key = std::make_pair(&gpu, s.file);
      auto mod = modules.find(key);
      if (mod == modules.end()) {
        auto src = sources.find(s.file);
        if (src == sources.end()) src = sources.emplace(s.file, readWhole((dir_ / s.file).string(), "PTX module")).first;
        mod = modules.emplace(key, std::make_unique<cuda::Module>(gpu, src->second, s.file)).first;
      }
      functions_[i] = mod->second->function(s.symbol);
      for (size_t k = 0; k < 3; ++k) // (the reader checked both are given, each in [1, 2^31 - 1])
        grid_[i][k] = static_cast<uint32_t>((*s.global)[k]), block_[i][k] = static_cast<uint32_t>((*s.local)[k]);
      for (const Ref &r : s.args) {
        const cuda::Gpu &home = *gpuOfDevice_[m_.deviceOf(r)];
        if (&home != &gpu)
          gpu.enablePeerAccess(home, "step " + std::to_string(i) + " (kernel " + s.label() + ") reads " + m_.describe(r));
        argPtrs_[i].push_back(pointer(r));
      }
    }
    for (auto &[key, mod] : modules) modules_.push_back(std::move(mod));
  }

  void load(const Inputs &inputs) override {
    for (size_t i = 0; i < m_.params.size(); ++i) {
      const Param &q = m_.params[i];
      auto it = inputs.find(q.slot);
      for (size_t d = 0; d < q.devices.size(); ++d)
        if (it != inputs.end()) {
          std::unique_ptr<unsigned char[]> host(new unsigned char[std::max<size_t>(1, static_cast<size_t>(q.bytes))]);
          readRegion(it->second[d], host.get());
          data_[i][d]->upload(host.get(), static_cast<size_t>(q.bytes));
        } else {
          data_[i][d]->zero();
        }
    }
  }

  void run(const std::vector<int64_t> &varValues, std::vector<double> *times) override {
    // The first (untimed) run waits after every step, so that a kernel's fault names its step.
    bool checkEach = times == nullptr;
    if (times && starts_.empty())
      for (const Step &s : m_.steps) {
        starts_.push_back(std::make_unique<cuda::Event>(*gpuOfDevice_[s.deviceIndex]));
        ends_.push_back(std::make_unique<cuda::Event>(*gpuOfDevice_[s.deviceIndex]));
      }
    std::set<const cuda::Gpu *> busy;
    std::vector<int64_t> vals;
    std::vector<void *> params;
    for (size_t i = 0; i < m_.steps.size(); ++i) {
      const Step &s = m_.steps[i];
      const cuda::Gpu &gpu = *gpuOfDevice_[s.deviceIndex];
      const std::string &what = whats_[i];
      for (auto it = busy.begin(); it != busy.end();)
        if (*it != &gpu) {
          (*it)->synchronize("waiting for the steps before " + what);
          it = busy.erase(it);
        } else {
          ++it;
        }
      if (times) starts_[i]->record();
      if (s.isCopy()) {
        const cuda::Gpu &from = *gpuOfDevice_[m_.deviceOf(s.src)];
        cuda::copy(gpu, pointer(s.dst), from, pointer(s.src), static_cast<size_t>(s.bytes),
                   "running " + what + ", " + m_.describe(s.src) + " to " + m_.describe(s.dst));
        busy.insert(&from);
      } else {
        vals.clear();
        for (size_t k : s.varIndex) vals.push_back(varValues[k]);
        params.clear();
        for (cuda::CUdeviceptr &p : argPtrs_[i]) params.push_back(&p);
        for (int64_t &v : vals) params.push_back(&v);
        cuda::launch(gpu, functions_[i], grid_[i].data(), block_[i].data(), params.data(), what);
      }
      if (times) ends_[i]->record();
      busy.insert(&gpu);
      if (checkEach) gpu.synchronize("running " + what);
    }
    for (const auto &g : gpus_) g->synchronize("running the steps");
    if (times)
      for (size_t i = 0; i < m_.steps.size(); ++i) (*times)[i] += ends_[i]->secondsSince(*starts_[i]);
  }

  void read(size_t param, size_t dev, void *dst) override {
    data_[param][dev]->download(dst, static_cast<size_t>(m_.params[param].bytes));
  }

private:
  const Manifest &m_;
  const fs::path dir_; ///< the manifest's folder: kernel files are relative to it
  // Declared first, destroyed last: everything below belongs to one of these contexts.
  std::vector<std::unique_ptr<cuda::Gpu>> gpus_;
  std::vector<const cuda::Gpu *> gpuOfDevice_; // per manifest device
  std::vector<std::unique_ptr<cuda::DeviceMemory>> arenas_;
  std::vector<std::vector<std::unique_ptr<cuda::DeviceMemory>>> data_; // per param, per device
  std::vector<std::unique_ptr<cuda::Module>> modules_;
  std::vector<cuda::CUfunction> functions_;              // per step (null for copies)
  std::vector<std::vector<cuda::CUdeviceptr>> argPtrs_;  // per step: its arguments' addresses
  std::vector<std::array<uint32_t, 3>> grid_, block_;    // per kernel step: its launch
  std::vector<std::unique_ptr<cuda::Event>> starts_, ends_; // per step, for --bench
  std::vector<std::string> whats_;                          // per step, for messages

  cuda::CUdeviceptr pointer(const Ref &r) const {
    if (r.isParam) return data_[r.index][r.dev]->ptr();
    const Buffer &b = m_.buffers[r.index];
    return arenas_[b.deviceIndex[r.dev]]->ptr() + static_cast<cuda::CUdeviceptr>(b.offsets[r.dev]);
  }
};

} // namespace

void checkManifestText(const std::string &text, const std::string &path) {
  fs::path dir = fs::path(path).parent_path();
  Manifest m = manifest::fromJson(text, path);
  manifest::checkSignatures(m, dir);
  if (!targetInfo(m.target).gpu) {
    CpuBackend cpu(m, dir, 1);
    (void)cpu.entrySource();
  }
}

void runManifest(const ManifestRunRequest &req, std::ostream &out) {
  fs::path dir = fs::path(req.manifestPath).parent_path();
  Manifest m = manifest::readFile(req.manifestPath);
  manifest::checkSignatures(m, dir);
  Comm *comm = req.comm;
  int rank = comm ? comm->rank() : 0, nranks = comm ? comm->size() : 1;
  if (comm) {
    // (every rank reads the same manifest and refuses the same way, before any step runs)
    if (static_cast<size_t>(nranks) > m.devices.size())
      fail("launched as " + std::to_string(nranks) + " processes, but the manifest has " + std::to_string(m.devices.size()) +
           " device(s): device d runs on process d % N, so N may be at most " + std::to_string(m.devices.size()));
    if (targetInfo(m.target).gpu)
      fail("one process per device runs CPU manifests (targets c and llvm); a " + std::string(targetInfo(m.target).name) +
           " manifest runs in one process (docs/distributed.md: NCCL)");
  }
  if (req.verbose) {
    std::string devs, names;
    for (size_t d = 0; d < m.devices.size(); ++d)
      if (static_cast<int>(d % static_cast<size_t>(nranks)) == rank)
        devs += (devs.empty() ? "" : ",") + std::to_string(d), names += (names.empty() ? "" : ", ") + m.devices[d].name;
    out << "rank " << rank << "/" << nranks << ": devices " << (devs.empty() ? "none" : devs + " (" + names + ")") << std::endl;
  }

  // check every request against the manifest before compiling anything
  std::vector<int64_t> varValues;
  auto names = [](const manifest::Var &v, const std::string &n) {
    return std::find(v.names.begin(), v.names.end(), n) != v.names.end();
  };
  for (const auto &[name, value] : req.vars)
    if (std::none_of(m.vars.begin(), m.vars.end(), [&](const manifest::Var &v) { return names(v, name); }))
      fail("--var " + name + ": the manifest has no variable named " + quote(name));
  for (const manifest::Var &v : m.vars) {
    auto it = req.vars.end();
    for (auto j = req.vars.begin(); j != req.vars.end(); ++j) {
      if (!names(v, j->first)) continue;
      if (it != req.vars.end())
        fail("--var " + it->first + " and --var " + j->first + " name the same variable: give one of them");
      it = j;
    }
    if (it == req.vars.end()) fail("variable " + quote(v.name) + " needs a value: pass --var " + v.name + "=VALUE");
    if (it->second < v.min || it->second > v.max)
      fail("--var " + v.name + "=" + std::to_string(it->second) + " is outside its range [" + std::to_string(v.min) +
           ", " + std::to_string(v.max) + "]");
    varValues.push_back(it->second);
  }
  if (comm && !varValues.empty()) // (rank 0's values, whatever the others were given)
    comm->bcast(varValues.data(), varValues.size() * sizeof(int64_t), 0);
  auto paramFor = [&](int64_t slot, size_t nfiles, const char *flag) -> const Param & {
    const Param *p = m.paramOfSlot(slot);
    if (!p) fail(std::string(flag) + " " + std::to_string(slot) + ": the manifest has no buffer slot " + std::to_string(slot));
    const Param &q = *p;
    if (nfiles != q.devices.size())
      fail(std::string(flag) + " " + std::to_string(slot) + ": the slot lives on " + std::to_string(q.devices.size()) +
           " device(s), so it needs that many files, got " + std::to_string(nfiles));
    return q;
  };
  Inputs inputs;
  if (rank == 0) { // (one process per device: rank 0 alone reads the inputs and writes the outputs)
  for (const auto &[slot, files] : req.inputFiles) {
    const Param &q = paramFor(slot, files.size(), "--input");
    for (const std::string &f : files) {
      InputRegion r = inputFile(f, static_cast<uint64_t>(q.bytes));
      uint64_t size = r.size;
      if (size != static_cast<uint64_t>(q.bytes))
        fail("--input " + std::to_string(slot) + ": " + quote(f) + " has " + std::to_string(size) + " bytes, but slot " +
             std::to_string(slot) + " holds " + std::to_string(q.bytes) + " bytes (" + std::string(dtypeName(q.dtype)) +
             ") per device");
      inputs[slot].push_back(std::move(r));
    }
  }
  for (const auto &[slot, regions] : req.inputRegions) {
    const Param &q = paramFor(slot, regions.size(), "--inputs");
    if (inputs.count(slot)) fail("slot " + std::to_string(slot) + " is given twice");
    for (const InputRegion &r : regions)
      if (r.size != static_cast<uint64_t>(q.bytes))
        fail("--inputs: " + std::to_string(r.size) + " bytes of " + quote(r.path) + " for slot " + std::to_string(slot) +
             ", which holds " + std::to_string(q.bytes) + " bytes per device");
    inputs[slot] = regions;
  }
  for (const Param &q : m.params)
    if (q.role != Role::Output && !inputs.count(q.slot))
      fail("slot " + std::to_string(q.slot) + " is an " + std::string(manifest::roleName(q.role)) + " of the function: pass --input " +
           std::to_string(q.slot) + "=FILE" + (q.devices.size() > 1 ? "[,FILE...] (one per device)" : ""));
  for (const auto &[slot, files] : req.outputFiles) paramFor(slot, files.size(), "--output");
  }
  // one process per device: which parameters rank 0 has inputs for, and which outputs it writes
  std::vector<char> given(m.params.size(), 0);
  std::vector<int64_t> written; // indices into m.params, in the order of req.outputFiles
  if (rank == 0) {
    for (size_t i = 0; i < m.params.size(); ++i) given[i] = inputs.count(m.params[i].slot) ? 1 : 0;
    for (const auto &[slot, files] : req.outputFiles) written.push_back(m.paramOfSlot(slot) - m.params.data());
  }
  if (comm) {
    comm->bcast(given.data(), given.size(), 0);
    int64_t n = static_cast<int64_t>(written.size());
    comm->bcast(&n, sizeof n, 0);
    written.resize(static_cast<size_t>(n));
    if (n) comm->bcast(written.data(), written.size() * sizeof(int64_t), 0);
  }

  int threads = req.threads;
  if (threads <= 0) // (one per core, shared among the processes of this host)
    threads = std::max(1, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())) / (comm ? std::max(1, comm->localSize()) : 1));
  std::unique_ptr<Backend> backend;
  CpuBackend *cpu = nullptr;
  if (targetInfo(m.target).gpu) {
    backend = std::make_unique<CudaBackend>(m, dir);
  } else {
    auto c = std::make_unique<CpuBackend>(m, dir, threads, comm, given);
    cpu = c.get();
    backend = std::move(c);
  }
  // (-v, one process: where the first run's time went; the build or JIT is what a cached run skips)
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };
  auto t0 = Clock::now();
  backend->prepare();
  auto t1 = Clock::now();
  backend->load(inputs);
  auto t2 = Clock::now();
  backend->run(varValues, nullptr);
  auto t3 = Clock::now();
  std::vector<unsigned char> host;
  if (comm && rank != 0) {
    for (int64_t i : written) cpu->sendToRoot(static_cast<size_t>(i));
  } else {
    for (const auto &[slot, files] : req.outputFiles) {
      const Param &q = *m.paramOfSlot(slot);
      size_t index = static_cast<size_t>(&q - m.params.data());
      host.resize(static_cast<size_t>(q.bytes));
      for (size_t d = 0; d < files.size(); ++d) {
        if (comm) cpu->gather(index, d, host.data());
        else backend->read(index, d, host.data());
        writeWhole(files[d], host.data(), host.size());
      }
    }
  }
  if (req.verbose && !comm)
    out << std::fixed << std::setprecision(3) << "time: prepare (kernel build, JIT or load) " << seconds(t0, t1)
        << " s, inputs " << seconds(t1, t2) << " s, first run " << seconds(t2, t3) << " s, outputs "
        << seconds(t3, Clock::now()) << " s" << std::endl;
  if (req.verbose && cpu && comm) {
    const RankTimes &t = cpu->rankTimes();
    out << std::fixed << std::setprecision(3) << "rank " << rank << "/" << nranks << ": inputs " << t.inputs << " s, kernels "
        << t.kernels << " s, transfers " << t.transfers << " s (" << t.messages << " message(s), " << t.bytes
        << " bytes, waiting included), allreduces " << t.allreduces << " s (" << t.allreduceCalls << " MPI_Allreduce(s) of "
        << t.allreduceBytes << " bytes, waiting included), copies within the rank " << t.localCopies << " s, outputs "
        << t.outputs << " s" << std::endl;
  }
  if (req.bench > 0) {
    std::vector<double> times(m.steps.size(), 0.0);
    std::vector<double> totals;
    // the same inputs every run: loaded again only where a run changes what the next one reads (a parameter it
    // reads and writes); otherwise the runs follow each other, as a program calling it in a loop (and ORT's
    // benchmark loop) does. (Loading ResNet-50's 100 MB of weights again before each run let the pool's
    // workers fall asleep, and the first kernel of every run waited about 100 us for one to wake.)
    bool reload = std::any_of(m.params.begin(), m.params.end(), [](const Param &q) { return q.role == Role::Inout; });
    for (int i = 0; i < req.bench; ++i) {
      if (reload) backend->load(inputs);
      std::vector<double> once(m.steps.size(), 0.0);
      backend->run(varValues, &once);
      double t = 0;
      for (size_t k = 0; k < once.size(); ++k) times[k] += once[k], t += once[k];
      totals.push_back(t);
    }
    if (rank != 0) return; // (rank 0 prints the figures: its own steps' times)
    out << "step  what                                  mean_us\n";
    for (size_t k = 0; k < m.steps.size(); ++k)
      out << std::left << std::setw(6) << k << std::setw(38) << m.steps[k].label() << std::right << std::fixed
          << std::setprecision(2) << std::setw(10) << times[k] / req.bench * 1e6 << "\n";
    double sum = 0, best = totals.empty() ? 0 : *std::min_element(totals.begin(), totals.end());
    for (double t : totals) sum += t;
    out << "total: mean " << std::fixed << std::setprecision(2) << sum / req.bench * 1e6 << " us, min " << best * 1e6
        << " us over " << req.bench << " run(s)\n";
  }
}

} // namespace uopc

//===- Cuda.h - the CUDA driver API, loaded at run time (no CUDA headers, no link-time dependency) ===//
// uopc-run runs PTX manifests through the CUDA driver: libcuda is dlopen'ed the first time it is needed
// ($UOPC_LIBCUDA if set, else libcuda.so.1, else libcuda.so), the few entry points used are resolved with
// dlsym, and the driver is initialized. The types below are the ABI's (CUresult is an int, handles are
// opaque pointers, device pointers are 64-bit integers); cuda.h is never included, so uopc builds on a
// machine with no CUDA toolkit. Every failing call throws uopc::Error naming the call, the driver's error
// (name and description) and what was being done.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

namespace uopc::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUevent = struct CUevent_st *;
using CUstream = struct CUstream_st *;

inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_STUB_LIBRARY = 34;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;

/// "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)": the driver's name and
/// description of an error, from a built-in table where the driver cannot say (stub library).
std::string errorText(CUresult r);

/// Loads and initializes the driver (once per process). Throws uopc::Error when there is no driver, when
/// it cannot be initialized (no usable GPU, or the toolkit's stub library), or when it reports no GPU.
void init();
/// The number of GPUs (init() first).
int deviceCount();

/// One GPU's primary context, retained for the object's lifetime. The context is made current before
/// every call that acts on it (a process-wide note of the current one makes that free when it already is).
class Gpu {
public:
  explicit Gpu(int ordinal);
  ~Gpu();
  Gpu(const Gpu &) = delete;
  Gpu &operator=(const Gpu &) = delete;

  int ordinal() const { return ordinal_; }
  /// "GPU 0 (NVIDIA H200)", for messages.
  const std::string &label() const { return label_; }
  CUcontext context() const { return ctx_; }
  void makeCurrent() const;
  /// Waits for all work of this GPU; `what` is what the failure would interrupt.
  void synchronize(const std::string &what) const;
  /// Lets kernels on this GPU read and write `peer`'s memory (once per pair). Throws, naming `what`,
  /// where the hardware cannot.
  void enablePeerAccess(const Gpu &peer, const std::string &what) const;

private:
  int ordinal_;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  std::string label_;
  mutable std::set<int> peers_;
};

/// Device memory of one GPU, freed with the object. Sizes are rounded up to 256 bytes (at least one
/// such block, so an empty buffer still has an address).
class DeviceMemory {
public:
  DeviceMemory(const Gpu &gpu, size_t bytes, const std::string &what);
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory &) = delete;
  DeviceMemory &operator=(const DeviceMemory &) = delete;

  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  const Gpu &gpu() const { return *gpu_; }
  const std::string &what() const { return what_; }

  void zero();
  void upload(const void *src, size_t n);
  void download(void *dst, size_t n) const;

private:
  const Gpu *gpu_;
  CUdeviceptr ptr_ = 0;
  size_t bytes_;
  std::string what_;
};

/// Copies n bytes between device addresses: within one GPU on its stream, across GPUs with cuMemcpyPeer
/// (ordered with the pending work of both). `what` names the step for messages.
void copy(const Gpu &dstGpu, CUdeviceptr dst, const Gpu &srcGpu, CUdeviceptr src, size_t n, const std::string &what);

/// A PTX module JIT-compiled by the driver for one GPU; a compile error carries the JIT's log.
class Module {
public:
  Module(const Gpu &gpu, const std::string &ptx, const std::string &file);
  ~Module();
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;

  /// The `.entry` named `symbol`.
  CUfunction function(const std::string &symbol) const;

private:
  const Gpu *gpu_;
  CUmodule mod_ = nullptr;
  std::string file_;
};

/// Launches `f` on the GPU's default stream: grid and block in CUDA's sense, no dynamic shared memory.
/// `params` points to each argument's value, in order.
void launch(const Gpu &gpu, CUfunction f, const uint32_t grid[3], const uint32_t block[3], void **params,
            const std::string &what);

/// A timing event of one GPU.
class Event {
public:
  explicit Event(const Gpu &gpu);
  ~Event();
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;

  void record();
  /// Seconds between `start` and this event, both recorded; waits for this one.
  double secondsSince(const Event &start);

private:
  const Gpu *gpu_;
  CUevent ev_ = nullptr;
};

} // namespace uopc::cuda

//===- Cuda.cpp - the CUDA driver API through dlopen/dlsym ------------------------------------------===//
#include "Runtime/Cuda.h"

#include "IR/Error.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include <dlfcn.h>

namespace uopc::cuda {

namespace {

/// The entry points used, with the signatures of the driver API (cuda.h, CUDA 12/13).
struct Api {
  void *lib = nullptr;
  std::string path;
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*cuMemcpyPeer)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t);
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void **, void **);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuDeviceCanAccessPeer)(int *, CUdevice, CUdevice);
  CUresult (*cuCtxEnablePeerAccess)(CUcontext, unsigned);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  int deviceCount = 0;
};

Api *gApi = nullptr;
CUcontext gCurrent = nullptr; // the context last made current (uopc-run is single-threaded)

const Api &api() {
  if (!gApi) fail("internal error: the CUDA driver is used before cuda::init()");
  return *gApi;
}

constexpr const char *kPrefix = "cannot run a PTX manifest: ";

// CUjit_option values (cuda.h): the error log buffer and its size.
constexpr int CU_JIT_ERROR_LOG_BUFFER = 5, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;
constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
constexpr CUresult CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704;

/// Names and descriptions of the errors worth explaining, for when the driver cannot (its stub does not).
struct Known {
  CUresult code;
  const char *name, *text;
};
constexpr Known kKnown[] = {
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {35, "CUDA_ERROR_INSUFFICIENT_DRIVER", "CUDA driver version is insufficient for CUDA runtime version"},
    {36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER", "operation not supported on current system or device"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND", "PTX JIT compiler library not found"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
    {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered"},
    {716, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

[[noreturn]] void failCall(CUresult r, const char *call, const std::string &what) {
  fail(std::string(call) + " failed while " + what + ": " + errorText(r));
}
void check(CUresult r, const char *call, const std::string &what) {
  if (r != CUDA_SUCCESS) failCall(r, call, what);
}

/// dlsym of `name`, else of `fallback` (an older name of the same entry point).
template <class F> void resolve(Api &a, F &fn, const char *name, const char *fallback = nullptr) {
  void *p = dlsym(a.lib, name);
  if (!p && fallback) p = dlsym(a.lib, fallback);
  if (!p) fail(std::string(kPrefix) + "the CUDA driver '" + a.path + "' has no " + name + " (too old a driver?)");
  fn = reinterpret_cast<F>(p);
}

} // namespace

std::string errorText(CUresult r) {
  const char *name = nullptr, *text = nullptr;
  if (gApi) {
    if (gApi->cuGetErrorName(r, &name) != CUDA_SUCCESS) name = nullptr;
    if (gApi->cuGetErrorString(r, &text) != CUDA_SUCCESS) text = nullptr;
  }
  for (const Known &k : kKnown)
    if (k.code == r) {
      if (!name) name = k.name;
      if (!text) text = k.text;
    }
  std::string s = name ? name : "CUDA error " + std::to_string(r);
  if (text && *text) s += std::string(" (") + text + ")";
  return s;
}

void init() {
  if (gApi) return;
  auto a = std::make_unique<Api>();
  const char *env = std::getenv("UOPC_LIBCUDA");
  if (env && *env) {
    a->path = env;
    a->lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    if (!a->lib) {
      const char *e = dlerror();
      fail(std::string(kPrefix) + "cannot load the CUDA driver named by UOPC_LIBCUDA ('" + env + "')" +
           (e ? std::string(": ") + e : ""));
    }
  } else {
    for (const char *name : {"libcuda.so.1", "libcuda.so"})
      if ((a->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) {
        a->path = name;
        break;
      }
    if (!a->lib) fail(std::string(kPrefix) + "libcuda.so.1 not found (no NVIDIA driver on this machine)");
  }
  // The library stays loaded for the life of the process (unloading a driver at exit gains nothing).
  resolve(*a, a->cuInit, "cuInit");
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(a->cuInit), &info) && info.dli_fname && *info.dli_fname) a->path = info.dli_fname;
  resolve(*a, a->cuDeviceGetCount, "cuDeviceGetCount");
  resolve(*a, a->cuDeviceGet, "cuDeviceGet");
  resolve(*a, a->cuDeviceGetName, "cuDeviceGetName");
  resolve(*a, a->cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  resolve(*a, a->cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease");
  resolve(*a, a->cuCtxSetCurrent, "cuCtxSetCurrent");
  resolve(*a, a->cuCtxSynchronize, "cuCtxSynchronize");
  resolve(*a, a->cuModuleLoadDataEx, "cuModuleLoadDataEx");
  resolve(*a, a->cuModuleGetFunction, "cuModuleGetFunction");
  resolve(*a, a->cuModuleUnload, "cuModuleUnload");
  resolve(*a, a->cuMemAlloc, "cuMemAlloc_v2");
  resolve(*a, a->cuMemFree, "cuMemFree_v2");
  resolve(*a, a->cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  resolve(*a, a->cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  resolve(*a, a->cuMemcpyDtoD, "cuMemcpyDtoD_v2");
  resolve(*a, a->cuMemcpyPeer, "cuMemcpyPeer");
  resolve(*a, a->cuMemsetD8, "cuMemsetD8_v2");
  resolve(*a, a->cuLaunchKernel, "cuLaunchKernel");
  resolve(*a, a->cuEventCreate, "cuEventCreate");
  resolve(*a, a->cuEventRecord, "cuEventRecord");
  resolve(*a, a->cuEventSynchronize, "cuEventSynchronize");
  resolve(*a, a->cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime");
  resolve(*a, a->cuEventDestroy, "cuEventDestroy_v2", "cuEventDestroy");
  resolve(*a, a->cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer");
  resolve(*a, a->cuCtxEnablePeerAccess, "cuCtxEnablePeerAccess");
  resolve(*a, a->cuGetErrorName, "cuGetErrorName");
  resolve(*a, a->cuGetErrorString, "cuGetErrorString");
  // From here errorText may ask the driver (its stub answers nothing, and the table fills in).
  Api *raw = a.get();
  gApi = raw;
  CUresult r = raw->cuInit(0);
  if (r != CUDA_SUCCESS) {
    gApi = nullptr;
    std::string why = std::string(kPrefix) + "no usable GPU: cuInit failed with " + errorText(r);
    if (r == CUDA_ERROR_STUB_LIBRARY)
      why += "; '" + raw->path + "' is the CUDA toolkit's stub library, not an NVIDIA driver";
    fail(why);
  }
  r = raw->cuDeviceGetCount(&raw->deviceCount);
  if (r != CUDA_SUCCESS) {
    gApi = nullptr;
    fail(std::string(kPrefix) + "no usable GPU: cuDeviceGetCount failed with " + errorText(r));
  }
  if (raw->deviceCount <= 0) {
    gApi = nullptr;
    fail(std::string(kPrefix) + "no usable GPU: the NVIDIA driver reports none (cuDeviceGetCount returned 0)");
  }
  a.release();
}

int deviceCount() { return api().deviceCount; }

// ---- Gpu ---------------------------------------------------------------------------------------------

Gpu::Gpu(int ordinal) : ordinal_(ordinal) {
  const Api &a = api();
  std::string what = "opening GPU " + std::to_string(ordinal);
  check(a.cuDeviceGet(&dev_, ordinal), "cuDeviceGet", what);
  char name[256] = {};
  check(a.cuDeviceGetName(name, sizeof name - 1, dev_), "cuDeviceGetName", what);
  label_ = "GPU " + std::to_string(ordinal) + " (" + name + ")";
  check(a.cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain", "creating the context of " + label_);
}

Gpu::~Gpu() {
  if (!gApi || !ctx_) return;
  if (gCurrent == ctx_) {
    gApi->cuCtxSetCurrent(nullptr);
    gCurrent = nullptr;
  }
  gApi->cuDevicePrimaryCtxRelease(dev_);
}

void Gpu::makeCurrent() const {
  if (gCurrent == ctx_) return;
  check(api().cuCtxSetCurrent(ctx_), "cuCtxSetCurrent", "switching to " + label_);
  gCurrent = ctx_;
}

void Gpu::synchronize(const std::string &what) const {
  makeCurrent();
  check(api().cuCtxSynchronize(), "cuCtxSynchronize", what + " on " + label_);
}

void Gpu::enablePeerAccess(const Gpu &peer, const std::string &what) const {
  if (peer.ctx_ == ctx_ || peers_.count(peer.ordinal_)) return;
  const Api &a = api();
  int can = 0;
  check(a.cuDeviceCanAccessPeer(&can, dev_, peer.dev_), "cuDeviceCanAccessPeer", what);
  if (!can)
    fail(what + ": " + label_ + " cannot access the memory of " + peer.label_ +
         " (cuDeviceCanAccessPeer says no; run on one GPU, or on GPUs with peer access)");
  makeCurrent();
  CUresult r = a.cuCtxEnablePeerAccess(peer.ctx_, 0);
  if (r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) check(r, "cuCtxEnablePeerAccess", what);
  peers_.insert(peer.ordinal_);
}

// ---- memory ------------------------------------------------------------------------------------------

DeviceMemory::DeviceMemory(const Gpu &gpu, size_t bytes, const std::string &what)
    : gpu_(&gpu), bytes_((std::max<size_t>(bytes, 1) + 255) / 256 * 256), what_(what) {
  gpu.makeCurrent();
  check(api().cuMemAlloc(&ptr_, bytes_), "cuMemAlloc",
        "allocating " + std::to_string(bytes_) + " bytes for " + what_ + " on " + gpu.label());
}

DeviceMemory::~DeviceMemory() {
  if (!gApi || !ptr_) return;
  if (gCurrent != gpu_->context() && gApi->cuCtxSetCurrent(gpu_->context()) == CUDA_SUCCESS) gCurrent = gpu_->context();
  gApi->cuMemFree(ptr_); // after a failed kernel the context may refuse; nothing more to do then
}

void DeviceMemory::zero() {
  gpu_->makeCurrent();
  check(api().cuMemsetD8(ptr_, 0, bytes_), "cuMemsetD8", "zeroing " + what_ + " on " + gpu_->label());
}

void DeviceMemory::upload(const void *src, size_t n) {
  if (n == 0) return;
  gpu_->makeCurrent();
  check(api().cuMemcpyHtoD(ptr_, src, n), "cuMemcpyHtoD", "uploading " + what_ + " to " + gpu_->label());
}

void DeviceMemory::download(void *dst, size_t n) const {
  if (n == 0) return;
  gpu_->makeCurrent();
  check(api().cuMemcpyDtoH(dst, ptr_, n), "cuMemcpyDtoH", "downloading " + what_ + " from " + gpu_->label());
}

void copy(const Gpu &dstGpu, CUdeviceptr dst, const Gpu &srcGpu, CUdeviceptr src, size_t n, const std::string &what) {
  if (n == 0) return;
  dstGpu.makeCurrent();
  if (&dstGpu == &srcGpu || dstGpu.context() == srcGpu.context())
    check(api().cuMemcpyDtoD(dst, src, n), "cuMemcpyDtoD", what + " on " + dstGpu.label());
  else
    check(api().cuMemcpyPeer(dst, dstGpu.context(), src, srcGpu.context(), n), "cuMemcpyPeer",
          what + " from " + srcGpu.label() + " to " + dstGpu.label());
}

// ---- modules and launches ----------------------------------------------------------------------------

Module::Module(const Gpu &gpu, const std::string &ptx, const std::string &file) : gpu_(&gpu), file_(file) {
  gpu.makeCurrent();
  std::vector<char> log(16384, 0);
  int options[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[2] = {log.data(), reinterpret_cast<void *>(static_cast<uintptr_t>(log.size() - 1))};
  CUresult r = api().cuModuleLoadDataEx(&mod_, ptx.c_str(), 2, options, values);
  if (r != CUDA_SUCCESS) {
    mod_ = nullptr;
    std::string msg = "cuModuleLoadDataEx failed while loading the PTX module '" + file + "' on " + gpu.label() + ": " +
                      errorText(r);
    std::string jit(log.data());
    while (!jit.empty() && (jit.back() == '\n' || jit.back() == ' ')) jit.pop_back();
    if (!jit.empty()) msg += "\nPTX JIT log:\n" + jit;
    fail(msg);
  }
}

Module::~Module() {
  if (!gApi || !mod_) return;
  if (gCurrent != gpu_->context() && gApi->cuCtxSetCurrent(gpu_->context()) == CUDA_SUCCESS) gCurrent = gpu_->context();
  gApi->cuModuleUnload(mod_);
}

CUfunction Module::function(const std::string &symbol) const {
  gpu_->makeCurrent();
  CUfunction f = nullptr;
  CUresult r = api().cuModuleGetFunction(&f, mod_, symbol.c_str());
  if (r == CUDA_ERROR_NOT_FOUND)
    fail("the PTX module '" + file_ + "' has no .entry '" + symbol + "' (cuModuleGetFunction: " + errorText(r) + ")");
  check(r, "cuModuleGetFunction", "looking up kernel '" + symbol + "' in '" + file_ + "' on " + gpu_->label());
  return f;
}

void launch(const Gpu &gpu, CUfunction f, const uint32_t grid[3], const uint32_t block[3], void **params,
            const std::string &what) {
  gpu.makeCurrent();
  CUresult r = api().cuLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0, nullptr, params, nullptr);
  if (r != CUDA_SUCCESS) {
    auto dims = [](const uint32_t d[3]) {
      return "[" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) + "]";
    };
    failCall(r, "cuLaunchKernel", "launching " + what + " on " + gpu.label() + " (global " + dims(grid) + ", local " +
                                      dims(block) + ")");
  }
}

// ---- events ------------------------------------------------------------------------------------------

Event::Event(const Gpu &gpu) : gpu_(&gpu) {
  gpu.makeCurrent();
  check(api().cuEventCreate(&ev_, 0), "cuEventCreate", "creating a timing event on " + gpu.label());
}

Event::~Event() {
  if (!gApi || !ev_) return;
  if (gCurrent != gpu_->context() && gApi->cuCtxSetCurrent(gpu_->context()) == CUDA_SUCCESS) gCurrent = gpu_->context();
  gApi->cuEventDestroy(ev_);
}

void Event::record() {
  gpu_->makeCurrent();
  check(api().cuEventRecord(ev_, nullptr), "cuEventRecord", "timing a step on " + gpu_->label());
}

double Event::secondsSince(const Event &start) {
  gpu_->makeCurrent();
  check(api().cuEventSynchronize(ev_), "cuEventSynchronize", "waiting for a timed step on " + gpu_->label());
  float ms = 0;
  check(api().cuEventElapsedTime(&ms, start.ev_, ev_), "cuEventElapsedTime", "timing a step on " + gpu_->label());
  return ms * 1e-3;
}

} // namespace uopc::cuda

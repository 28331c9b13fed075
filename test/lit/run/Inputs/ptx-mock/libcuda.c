/* A mock CUDA driver for uopc-run's ptx tests on machines with no GPU: built as a shared object and named by
 * UOPC_LIBCUDA. Device memory is host memory (freshly allocated memory is filled with 0xAB, so a missing
 * zeroing shows), modules are the PTX text, and a launch runs a C stand-in for the kernels it knows:
 * scale_CUDA (out[i] = in[i] * 2 + n over 4 float32, the kernel of Inputs/ptx-manifest). Launching any other
 * kernel makes the next synchronization fail with CUDA_ERROR_ILLEGAL_ADDRESS (700), like a faulting kernel
 * (with MOCK_CUDA_NOOP=1 it does nothing instead: a dry run of any manifest's allocations and copies).
 * PTX containing MOCK_JIT_ERROR fails to load with a JIT log.
 * Environment: MOCK_CUDA_DEVICES (GPU count, default 1), MOCK_CUDA_TRACE=1 (each interesting call on
 * stderr), and at exit a line "mock: N allocation(s) leaked" when memory was not freed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct { int ordinal; } Ctx;
typedef struct { char name[256]; } Func;
typedef struct { double t; int recorded; } Ev;

static Ctx g_ctx[16];
static Ctx *g_current;
static int g_inited, g_sticky, g_live;

static int trace(void) { const char *t = getenv("MOCK_CUDA_TRACE"); return t && *t == '1'; }
static int count(void) { const char *d = getenv("MOCK_CUDA_DEVICES"); int n = d ? atoi(d) : 1; return n < 0 ? 0 : n > 16 ? 16 : n; }
static int cur(void) { return g_current ? g_current->ordinal : -1; }

static void report(void) {
  if (g_live) fprintf(stderr, "mock: %d allocation(s) leaked\n", g_live);
}

CUresult cuInit(unsigned flags) {
  (void)flags;
  if (!g_inited) atexit(report);
  g_inited = 1;
  return 0;
}
CUresult cuDeviceGetCount(int *n) { *n = count(); return 0; }
CUresult cuDeviceGet(int *dev, int ordinal) { if (ordinal < 0 || ordinal >= count()) return 101; *dev = ordinal; return 0; }
CUresult cuDeviceGetName(char *name, int len, int dev) { snprintf(name, (size_t)len, "Mock GPU %d", dev); return 0; }
CUresult cuDevicePrimaryCtxRetain(Ctx **ctx, int dev) { g_ctx[dev].ordinal = dev; *ctx = &g_ctx[dev]; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int dev) { (void)dev; return 0; }
CUresult cuCtxSetCurrent(Ctx *ctx) { g_current = ctx; return 0; }
CUresult cuCtxSynchronize(void) {
  if (!g_current) return 201;
  if (g_sticky) return g_sticky;
  return 0;
}
CUresult cuDeviceCanAccessPeer(int *can, int dev, int peer) { (void)dev; (void)peer; *can = 1; return 0; }
CUresult cuCtxEnablePeerAccess(Ctx *peer, unsigned flags) {
  (void)flags;
  if (trace()) fprintf(stderr, "mock: peer access GPU %d -> GPU %d\n", cur(), peer->ordinal);
  return 0;
}

CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned n, int *opts, void **vals) {
  const char *ptx = (const char *)image;
  if (!g_current) return 201;
  if (strstr(ptx, "MOCK_JIT_ERROR")) {
    for (unsigned i = 0; i < n; ++i)
      if (opts[i] == 5) snprintf((char *)vals[i], 64, "ptxas fatal   : mock JIT error in line 1");
    return 218;
  }
  if (!strstr(ptx, ".entry")) return 200;
  *mod = strdup(ptx);
  if (trace()) fprintf(stderr, "mock: module loaded on GPU %d\n", cur());
  return 0;
}
CUresult cuModuleUnload(void *mod) { free(mod); return 0; }
CUresult cuModuleGetFunction(Func **f, void *mod, const char *name) {
  char pat[300];
  snprintf(pat, sizeof pat, ".entry %s(", name);
  if (!strstr((const char *)mod, pat)) return 500;
  /* Functions belong to their module and are never freed through the API: keep them in a table, so a leak
   * checker (make asan) sees them reachable. */
  static Func funcs[256];
  static int nfuncs;
  for (int i = 0; i < nfuncs; ++i)
    if (strcmp(funcs[i].name, name) == 0) { *f = &funcs[i]; return 0; }
  if (nfuncs == 256 || strlen(name) >= sizeof funcs[0].name) return 2;
  strcpy(funcs[nfuncs].name, name);
  *f = &funcs[nfuncs++];
  return 0;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  if (!g_current) return 201;
  void *m = malloc(n);
  if (!m) return 2;
  memset(m, 0xAB, n);
  ++g_live;
  *p = (CUdeviceptr)(uintptr_t)m;
  return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) { free((void *)(uintptr_t)p); --g_live; return 0; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) { memcpy((void *)(uintptr_t)d, s, n); return 0; }
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) { memcpy(d, (void *)(uintptr_t)s, n); return g_sticky; }
CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) {
  if (trace()) fprintf(stderr, "mock: cuMemcpyDtoD on GPU %d, %zu bytes\n", cur(), n);
  memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n);
  return 0;
}
CUresult cuMemcpyPeer(CUdeviceptr d, Ctx *dc, CUdeviceptr s, Ctx *sc, size_t n) {
  if (trace()) fprintf(stderr, "mock: cuMemcpyPeer GPU %d -> GPU %d, %zu bytes\n", sc->ordinal, dc->ordinal, n);
  memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n);
  return 0;
}
CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) { memset((void *)(uintptr_t)d, v, n); return 0; }

CUresult cuLaunchKernel(Func *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void *stream, void **params, void **extra) {
  (void)stream;
  if (!g_current) return 201;
  if (shared || extra) return 1;
  if (trace())
    fprintf(stderr, "mock: launch %s on GPU %d, global [%u, %u, %u], local [%u, %u, %u]\n", f->name, cur(), gx, gy, gz,
            bx, by, bz);
  if (strcmp(f->name, "scale_CUDA") != 0) {
    const char *noop = getenv("MOCK_CUDA_NOOP");
    if (!(noop && *noop == '1')) g_sticky = 700;
    return 0;
  }
  float *out = *(float **)params[0];
  const float *in = *(float *const *)params[1];
  int64_t n = *(const int64_t *)params[2];
  for (unsigned b = 0; b < gx * gy * gz; ++b)
    for (unsigned t = 0; t < bx * by * bz; ++t) {
      unsigned i = b * bx + t;
      if (i < 4) out[i] = in[i] * 2 + (float)n;
    }
  return 0;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
CUresult cuEventCreate(Ev **e, unsigned flags) { (void)flags; *e = calloc(1, sizeof(Ev)); return 0; }
CUresult cuEventRecord(Ev *e, void *stream) { (void)stream; e->t = now(); e->recorded = 1; return 0; }
CUresult cuEventSynchronize(Ev *e) { return e->recorded ? 0 : 400; }
CUresult cuEventElapsedTime_v2(float *ms, Ev *a, Ev *b) {
  if (!a->recorded || !b->recorded) return 400;
  *ms = (float)((b->t - a->t) * 1e3);
  return 0;
}
CUresult cuEventDestroy_v2(Ev *e) { free(e); return 0; }

CUresult cuGetErrorName(CUresult r, const char **s) {
  switch (r) {
  case 700: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; return 0;
  case 218: *s = "CUDA_ERROR_INVALID_PTX"; return 0;
  default: return 1;
  }
}
CUresult cuGetErrorString(CUresult r, const char **s) {
  switch (r) {
  case 700: *s = "an illegal memory access was encountered"; return 0;
  case 218: *s = "a PTX JIT compilation failed"; return 0;
  default: return 1;
  }
}

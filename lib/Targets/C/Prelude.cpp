//===- Prelude.cpp - the C text of the kernels' helper functions ----------===//
#include "Targets/C/Prelude.h"

#include <vector>

namespace uopc::ctarget {
namespace {

struct HelperText {
  Helper h;
  const char *guard; ///< its text is wrapped in #ifndef UOPC_HELPER_<guard>: defined once per translation unit
  std::vector<Helper> deps;
  const char *text;
};

// Order matters: a helper comes after the helpers it calls.
const HelperText kHelpers[] = {
    {Helper::Bits, "BITS", {}, R"(UOPC_FN uint64_t uopc_bits64(double x) { uint64_t u; memcpy(&u, &x, 8); return u; }
UOPC_FN double uopc_from_bits64(uint64_t u) { double x; memcpy(&x, &u, 8); return x; }
UOPC_FN uint32_t uopc_bits32(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
UOPC_FN float uopc_from_bits32(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
)"},
    {Helper::F16Bits, "F16_BITS", {}, R"(/* float16 bits of x, round to nearest even (overflow gives inf) */
UOPC_FN uint16_t uopc_f16_bits(double x) {
  uint16_t sign = signbit(x) ? 0x8000 : 0;
  if (isnan(x)) return sign | 0x7e00;
  double a = fabs(x);
  if (isinf(a)) return sign | 0x7c00;
  if (a == 0) return sign;
  int e;
  frexp(a, &e);
  int ex = e - 1 < -14 ? -14 : e - 1;
  double q = ldexp(1.0, ex - 10);
  double r = nearbyint(a / q) * q;
  if (r > 65504.0) return sign | 0x7c00;
  if (r < 0x1p-14) return sign | (uint16_t)ldexp(r, 24);
  frexp(r, &e);
  return sign | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)(ldexp(r, -(e - 1)) * 1024.0 - 1024.0);
}
)"},
    {Helper::F16Value, "F16_VALUE", {}, R"(UOPC_FN float uopc_f16_value(uint16_t h) {
  int ex = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v = ex == 0 ? ldexpf((float)mant, -24) : ex == 31 ? (mant ? NAN : INFINITY) : ldexpf((float)(1024 + mant), ex - 25);
  return (h & 0x8000) ? -v : v;
}
)"},
    {Helper::RoundF16, "ROUND_F16", {Helper::F16Bits, Helper::F16Value},
     "UOPC_FN float uopc_round_f16(double x) { return uopc_f16_value(uopc_f16_bits(x)); }\n"},
    {Helper::BF16Bits, "BF16_BITS", {Helper::Bits}, R"(/* tinygrad's float_to_bf16 */
UOPC_FN uint16_t uopc_bf16_bits(float x) {
  uint32_t u = uopc_bits32(x);
  if (isfinite(x)) u = u + 0x7FFFu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
)"},
    {Helper::BF16Value, "BF16_VALUE", {Helper::Bits},
     "UOPC_FN float uopc_bf16_value(uint16_t h) { return uopc_from_bits32((uint32_t)h << 16); }\n"},
    {Helper::RoundBF16, "ROUND_BF16", {Helper::Bits}, R"(UOPC_FN float uopc_round_bf16(float x) {
  if (!isfinite(x)) return x;
  uint32_t u = uopc_bits32(x);
  return uopc_from_bits32((u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u);
}
)"},
    {Helper::CvtI32, "CVT_I32", {}, R"(/* float to int as x86-64 cvttsd2si (32-bit): INT32_MIN for NaN and out of range */
UOPC_FN int64_t uopc_cvt_i32(double x) {
  double t = trunc(x);
  return (t >= -2147483648.0 && t < 2147483648.0) ? (int64_t)t : (int64_t)INT32_MIN;
}
)"},
    {Helper::CvtI64, "CVT_I64", {}, R"(UOPC_FN int64_t uopc_cvt_i64(double x) {
  double t = trunc(x);
  return (t >= -9223372036854775808.0 && t < 9223372036854775808.0) ? (int64_t)t : INT64_MIN;
}
)"},
    {Helper::CvtU64, "CVT_U64", {Helper::CvtI64}, R"(UOPC_FN uint64_t uopc_cvt_u64(double x) {
  double t = trunc(x);
  if (t >= 9223372036854775808.0 && t < 18446744073709551616.0) return (uint64_t)t;
  return (uint64_t)uopc_cvt_i64(t);
}
)"},
    {Helper::IntDiv, "INT_DIV", {}, R"(/* integer division and modulo: x//0 = 0, x%0 = x, no overflow trap */
UOPC_FN int64_t uopc_floordiv_s(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return (int64_t)(0 - (uint64_t)a);
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
UOPC_FN int64_t uopc_floormod_s(int64_t a, int64_t b) {
  if (b == 0) return a;
  if (b == -1) return 0;
  int64_t m = a % b;
  return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
}
UOPC_FN int64_t uopc_cdiv_s(int64_t a, int64_t b) { return b == 0 ? 0 : b == -1 ? (int64_t)(0 - (uint64_t)a) : a / b; }
UOPC_FN int64_t uopc_cmod_s(int64_t a, int64_t b) { return b == 0 ? a : b == -1 ? 0 : a % b; }
UOPC_FN uint64_t uopc_div_u(uint64_t a, uint64_t b) { return b == 0 ? 0 : a / b; }
UOPC_FN uint64_t uopc_mod_u(uint64_t a, uint64_t b) { return b == 0 ? a : a % b; }
)"},
    {Helper::Shift, "SHIFT", {}, R"(UOPC_FN uint64_t uopc_shl(uint64_t a, uint64_t b, int is_signed) {
  return ((is_signed && (int64_t)b < 0) || b >= 64) ? 0 : a << b;
}
UOPC_FN uint64_t uopc_shr_u(uint64_t a, uint64_t b) { return b >= 64 ? 0 : a >> b; }
UOPC_FN int64_t uopc_shr_s(int64_t a, int64_t b) {
  if (b < 0) return 0;
  if (b >= 64) return a < 0 ? -1 : 0;
  return a < 0 ? (int64_t)~(~(uint64_t)a >> b) : (int64_t)((uint64_t)a >> b);
}
)"},
    // glibc's libmvec has vector versions of libm's float functions: declared `omp declare simd`, a loop
    // calling them can still vectorize (a matmul column loop ending in gelu). uopc-run links -lmvec;
    // elsewhere these are the plain declarations of <math.h>.
    {Helper::SimdMath, "SIMD_MATH", {}, R"(#if defined(UOPC_OMP_SIMD) && defined(__x86_64__) && defined(__GLIBC__)
#pragma omp declare simd notinbranch
float exp2f(float);
#pragma omp declare simd notinbranch
float log2f(float);
#pragma omp declare simd notinbranch
float sinf(float);
#pragma omp declare simd notinbranch
float powf(float, float);
#endif
)"},
    // a loop of independent lanes (an UPCAST range: Targets/KernelABI.h's independentLaneLoops), vectorized
    // as a loop rather than unrolled first (gcc then vectorizes a max, which it does not once unrolled)
    {Helper::SimdLanes, "SIMD_LANES", {}, R"(#if defined(UOPC_OMP_SIMD)
#define UOPC_SIMD_LANES _Pragma("omp simd")
#else
#define UOPC_SIMD_LANES
#endif
)"},
    {Helper::IntPow, "INT_POW", {}, R"(UOPC_FN uint64_t uopc_ipow(int64_t base, int64_t e) {
  if (e < 0) return base == 1 ? 1 : base == -1 ? ((e & 1) ? (uint64_t)-1 : 1) : 0;
  uint64_t r = 1, b = (uint64_t)base;
  for (uint64_t k = (uint64_t)e; k; k >>= 1) {
    if (k & 1) r *= b;
    b *= b;
  }
  return r;
}
)"},
    {Helper::FloatDiv, "FLOAT_DIV", {}, R"(UOPC_FN double uopc_floordiv_f(double x, double y) { return y == 0 ? 0.0 : floor(x / y); }
UOPC_FN double uopc_floormod_f(double x, double y) { return y == 0 ? x : x - floor(x / y) * y; }
UOPC_FN double uopc_cdiv_f(double x, double y) { return y == 0 ? 0.0 : trunc(x / y); }
UOPC_FN double uopc_cmod_f(double x, double y) { return y == 0 ? x : x - trunc(x / y) * y; }
)"},
    {Helper::Threefry, "THREEFRY", {}, R"(/* tinygrad's threefry2x32 */
UOPC_FN uint32_t uopc_rotl32(uint32_t v, int r) { return (v << r) | (v >> (32 - r)); }
UOPC_FN uint64_t uopc_threefry(uint64_t x, uint64_t key) {
  static const int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  uint32_t key0 = (uint32_t)key, key1 = (uint32_t)(key >> 32);
  uint32_t ks[3] = {key1, key0 ^ key1 ^ 0x1BD11BDAu, key0};
  uint32_t x0 = (uint32_t)x + ks[2], x1 = (uint32_t)(x >> 32) + ks[0];
  for (uint32_t i = 0; i < 5; ++i) {
    for (int j = 0; j < 4; ++j) {
      uint32_t sum = x0 + x1;
      x1 = sum ^ uopc_rotl32(x1, rot[i % 2][j]);
      x0 = sum;
    }
    x0 = x0 + ks[i % 3];
    x1 = x1 + ks[(i + 1) % 3] + i + 1;
  }
  return ((uint64_t)x1 << 32) | x0;
}
)"},
    // an UNROLL range's loop (the optimizer's unroll:R:N, tinygrad's UNROLL): the loop of N iterations run as N
    // copies of its body
    {Helper::Unroll, "UNROLL", {}, R"(#if defined(__GNUC__)
#define UOPC_PRAGMA(x) _Pragma(#x)
#define UOPC_UNROLL(n) UOPC_PRAGMA(GCC unroll n)
#else
#define UOPC_UNROLL(n)
#endif
)"},
    // a PREFETCH item (linearize's weight stream ahead of a tile's reduction): the address as an integer, since it
    // may lie past the buffer's end (a prefetch never faults, but pointer arithmetic past an object is undefined)
    {Helper::Prefetch, "PREFETCH", {}, R"(#if defined(__GNUC__)
#define UOPC_PREFETCH(base, bytes) __builtin_prefetch((const void *)((uintptr_t)(base) + (uintptr_t)(bytes)), 0, 3)
#else
#define UOPC_PREFETCH(base, bytes) ((void)0)
#endif
)"},
    // a register tile's accumulating lanes, n of them, each element `bytes` wide, run a piece at a time
    // (CEmitter.cpp's chunkedLaneLoops): two of the widest vector registers the build targets where they divide
    // n (a loop of two registers gcc unrolls itself, and half the pieces build faster: ResNet-50's gated 3x3
    // kernel 1.70 -> 0.76 s of gcc, the same multiply-adds), else one, else all n in one piece
    {Helper::LaneChunk, "LANE_CHUNK", {Helper::SimdLanes, Helper::Unroll}, R"(#if defined(__AVX512F__)
#define UOPC_VECTOR_BYTES 64
#elif defined(__AVX__)
#define UOPC_VECTOR_BYTES 32
#else
#define UOPC_VECTOR_BYTES 16
#endif
#define UOPC_LANE_CHUNK(n, bytes) \
  ((n) % (2 * UOPC_VECTOR_BYTES / (bytes)) == 0 ? 2 * UOPC_VECTOR_BYTES / (bytes) \
   : (n) % (UOPC_VECTOR_BYTES / (bytes)) == 0  ? UOPC_VECTOR_BYTES / (bytes)     \
                                               : (n))
)"},
};

} // namespace

std::string preludeText(const std::set<Helper> &used) {
  std::set<Helper> all = used;
  for (bool grew = true; grew;) {
    grew = false;
    for (const HelperText &t : kHelpers)
      if (all.count(t.h))
        for (Helper d : t.deps) grew |= all.insert(d).second;
  }
  if (all.empty()) return "";
  // clang warns about unused static inline functions in the main file: a helper group may be half used
  std::string out = "#if defined(__GNUC__)\n#define UOPC_FN static inline __attribute__((unused))\n#else\n"
                    "#define UOPC_FN static inline\n#endif\n";
  // each helper guarded: kernel files concatenated into one translation unit (uopc-run's build, a
  // library) define each helper once
  for (const HelperText &t : kHelpers)
    if (all.count(t.h))
      out += std::string("#ifndef UOPC_HELPER_") + t.guard + "\n#define UOPC_HELPER_" + t.guard + "\n" + t.text + "#endif\n";
  return out;
}

std::string preludeAllText() {
  std::set<Helper> all;
  for (const HelperText &t : kHelpers) all.insert(t.h);
  return preludeText(all);
}

} // namespace uopc::ctarget

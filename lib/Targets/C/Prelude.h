//===- Prelude.h - the C helper functions a kernel may need (internal to the C target) ===//
// Each helper is a `static inline` C function with the exact semantics of one scalar op of the reference
// interpreter (Interp/ScalarOps.cpp). A kernel includes only the helpers it calls, with their dependencies.
#pragma once

#include <set>
#include <string>

namespace uopc::ctarget {

enum class Helper {
  F16Bits,    ///< uint16_t uopc_f16_bits(double): round-to-nearest-even to float16 bits
  F16Value,   ///< float uopc_f16_value(uint16_t)
  RoundF16,   ///< float uopc_round_f16(double): the float16 value nearest x
  BF16Bits,   ///< uint16_t uopc_bf16_bits(float): tinygrad's float_to_bf16, bits
  BF16Value,  ///< float uopc_bf16_value(uint16_t)
  RoundBF16,  ///< float uopc_round_bf16(float)
  CvtI32,     ///< int64_t uopc_cvt_i32(double): cvttsd2si (32-bit), INT32_MIN out of range
  CvtI64,     ///< int64_t uopc_cvt_i64(double): cvttsd2si (64-bit), INT64_MIN out of range
  CvtU64,     ///< uint64_t uopc_cvt_u64(double)
  IntDiv,     ///< floor/trunc division and modulo of int64_t/uint64_t with x//0 = 0, x%0 = x
  Shift,      ///< uopc_shl / uopc_shr_s / uopc_shr_u on 64-bit words
  IntPow,     ///< uint64_t uopc_ipow(int64_t, int64_t)
  FloatDiv,   ///< double floor/trunc division and modulo with x//0 = 0, x%0 = x
  Threefry,   ///< uint64_t uopc_threefry(uint64_t x, uint64_t key)
  Bits,       ///< memcpy-based bit casts
  SimdMath,   ///< exp2f/log2f/sinf/powf declared `omp declare simd` (glibc's libmvec) under UOPC_OMP_SIMD
  SimdLanes,  ///< UOPC_SIMD_LANES: `#pragma omp simd` on a loop of independent lanes under UOPC_OMP_SIMD
  Unroll,     ///< UOPC_UNROLL(n): `#pragma GCC unroll n` (GCC and Clang) on an UNROLL range's loop
  Prefetch,   ///< UOPC_PREFETCH(base, byteOffset): a hint to bring that line into the cache (GCC and Clang)
  LaneChunk,  ///< UOPC_LANE_CHUNK(n, bytes): the lanes of a tile's piece, two (or one) of the build's vector registers
};

/// The C text of the helpers in `used` and of the helpers they call, in dependency order.
std::string preludeText(const std::set<Helper> &used);
/// The C text of every helper (preludeText of all of them): what `uopc --emit library` puts once before its
/// kernels, whose own preludes are subsets of it.
std::string preludeAllText();

} // namespace uopc::ctarget

//===- ScalarOps.cpp - per-dtype scalar semantics of the reference interpreter ===//
#include "IR/ScalarOps.h"

#include "IR/Error.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace uopc::interp {
namespace {

static_assert(std::endian::native == std::endian::little, "the interpreter reads buffers as little-endian");

template <typename T> T loadAs(const unsigned char *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T> void storeAs(T v, unsigned char *p) { std::memcpy(p, &v, sizeof(T)); }

/// Round-to-nearest-even of a double to a binary format with `mant` fraction bits, minimum normal
/// exponent `emin` and largest finite value `maxFinite` (overflow gives inf, like struct.pack('e')).
double roundBinary(double x, int mant, int emin, double maxFinite) {
  if (!std::isfinite(x) || x == 0) return x;
  int e;
  std::frexp(x, &e);
  int exp = std::max(e - 1, emin);
  double quantum = std::ldexp(1.0, exp - mant);
  double r = std::nearbyint(x / quantum) * quantum;
  if (std::fabs(r) > maxFinite) return std::copysign(std::numeric_limits<double>::infinity(), x);
  return r;
}

double roundHalf(double x) { return roundBinary(x, 10, -14, 65504.0); }

uint16_t halfBits(double x) {
  x = roundHalf(x);
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x)) return sign | 0x7e00;
  double a = std::fabs(x);
  if (std::isinf(a)) return sign | 0x7c00;
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e);
  int exp = e - 1;
  if (exp < -14) return sign | static_cast<uint16_t>(std::ldexp(a, 24)); // subnormal: units of 2^-24
  auto mant = static_cast<uint16_t>(std::ldexp(a, -exp) * 1024.0 - 1024.0);
  return sign | static_cast<uint16_t>((exp + 15) << 10) | mant;
}

double halfValue(uint16_t h) {
  int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0) v = std::ldexp(mant, -24);
  else if (exp == 31) v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else v = std::ldexp(1024 + mant, exp - 25);
  return (h & 0x8000) ? -v : v;
}

/// tinygrad's float_to_bf16 on the bits of the float32 value, returned as the float32 value.
double roundBF16(double x) {
  if (!std::isfinite(x)) return x;
  uint32_t u = std::bit_cast<uint32_t>(static_cast<float>(x));
  u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000u;
  return std::bit_cast<float>(u);
}

struct Fp8Cfg {
  int bias, sigBits;
  uint64_t mantMask, minDenormHalf, ovfThreshold, maxNorm, minNorm;
  bool fnuz;
};
// tinygrad's _fp8_cfg (dtype.py).
const Fp8Cfg &fp8Cfg(DType dt) {
  static const Fp8Cfg e4m3{7, 4, 0x7, 0x3F50000000000000, 0x407D000000000000, 0x7E, 0x3F90000000000000, false};
  static const Fp8Cfg e5m2{15, 3, 0x3, 0x3EE0000000000000, 0x40EE000000000000 - 1, 0x7B, 0x3F10000000000000, false};
  static const Fp8Cfg e4m3fnuz{8, 4, 0x7, 0x3F40000000000000, 0x406F000000000000 - 1, 0x7F, 0x3F80000000000000, true};
  static const Fp8Cfg e5m2fnuz{16, 3, 0x3, 0x3ED0000000000000, 0x40EE000000000000 - 1, 0x7F, 0x3F00000000000000, true};
  switch (dt) {
  case DType::FP8E4M3: return e4m3;
  case DType::FP8E5M2: return e5m2;
  case DType::FP8E4M3FNUZ: return e4m3fnuz;
  default: return e5m2fnuz;
  }
}

/// tinygrad's float_to_fp8.
uint8_t floatToFp8(double x, DType dt) {
  const Fp8Cfg &c = fp8Cfg(dt);
  if (c.fnuz && !std::isfinite(x)) return 0x80;
  if (c.fnuz && x == 0.0) return 0x00;
  if (dt == DType::FP8E4M3 && !std::isfinite(x)) return std::copysign(1.0, x) > 0 ? 0x7f : 0xff;
  if (dt == DType::FP8E5M2 && !std::isfinite(x))
    return (std::copysign(1.0, x) > 0 ? 0 : 0x80) | (std::isinf(x) ? 0x7c : 0x7f);
  uint64_t xbits = std::bit_cast<uint64_t>(x);
  uint64_t halfUlp = uint64_t(1) << (52 - c.sigBits);
  uint64_t sign = ((xbits >> 63) & 1) << 7;
  int64_t exp = int64_t((xbits >> 52) & 0x7FF) - 1023 + c.bias;
  uint64_t mantissa = (xbits >> (53 - c.sigBits)) & c.mantMask;
  uint64_t absx = xbits & 0x7FFFFFFFFFFFFFFFull;
  uint64_t res;
  if (absx <= c.minDenormHalf) {
    res = 0;
  } else if (absx > c.ovfThreshold) {
    res = c.maxNorm;
  } else if (absx >= c.minNorm) {
    res = (uint64_t(exp) << (c.sigBits - 1)) | mantissa;
    uint64_t roundBits = xbits & ((halfUlp << 1) - 1);
    if (roundBits > halfUlp || (roundBits == halfUlp && (mantissa & 1))) res += 1;
  } else {
    int64_t shift = 1 - exp;
    mantissa |= uint64_t(1) << (c.sigBits - 1);
    res = shift >= 64 ? 0 : mantissa >> shift;
    uint64_t half = shift >= 11 ? ~uint64_t(0) >> 1 : halfUlp << shift;
    uint64_t roundBits = (xbits | (uint64_t(1) << 52)) & ((half << 1) - 1);
    if (roundBits > half || (roundBits == half && (res & 1))) res += 1;
  }
  if (c.fnuz && res == 0) return 0;
  return static_cast<uint8_t>(res | sign);
}

/// tinygrad's fp8_to_float.
double fp8ToFloat(uint8_t x, DType dt) {
  const Fp8Cfg &c = fp8Cfg(dt);
  if (c.fnuz && x == 0x80) return std::numeric_limits<double>::quiet_NaN();
  if ((x & 0x7F) == 0) return (x & 0x80) ? -0.0 : 0.0;
  int mantBits = c.sigBits - 1, expBits = 8 - c.sigBits;
  int expMax = (1 << expBits) - 1, mantMax = (1 << mantBits) - 1;
  int sign = (x >> 7) & 1, exp = (x >> mantBits) & expMax, mantissa = x & mantMax;
  if (!c.fnuz && exp == expMax) {
    if (dt == DType::FP8E5M2)
      return std::copysign(mantissa ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity(),
                           sign ? -1.0 : 1.0);
    if (mantissa == mantMax) return std::numeric_limits<double>::quiet_NaN();
  }
  double frac = double(mantissa) / double(mantMax + 1);
  double val = exp == 0 ? frac * std::ldexp(1.0, 1 - c.bias) : (1 + frac) * std::ldexp(1.0, exp - c.bias);
  return sign ? -val : val;
}

bool isFp8(DType dt) {
  return dt == DType::FP8E4M3 || dt == DType::FP8E5M2 || dt == DType::FP8E4M3FNUZ || dt == DType::FP8E5M2FNUZ;
}

/// C conversion of a float to an integer dtype on x86-64: truncation toward zero; NaN and values out of
/// the converting instruction's range give its "integer indefinite" (INT32_MIN for targets narrower
/// than 32 bits and int32, INT64_MIN for the 64-bit conversions clang uses for uint32 and int64).
Word floatToIntWord(DType dt, double x) {
  double t = std::trunc(x);
  auto cvt32 = [](double v) -> int64_t {
    return (v >= -2147483648.0 && v < 2147483648.0) ? static_cast<int64_t>(v) : std::numeric_limits<int32_t>::min();
  };
  auto cvt64 = [](double v) -> int64_t {
    return (v >= -9223372036854775808.0 && v < 9223372036854775808.0) ? static_cast<int64_t>(v)
                                                                        : std::numeric_limits<int64_t>::min();
  };
  switch (dt) {
  case DType::Int8: case DType::UInt8: case DType::Int16: case DType::UInt16: case DType::Int32:
    return wrapInt(dt, static_cast<uint64_t>(cvt32(t)));
  case DType::UInt64:
    if (t >= 9223372036854775808.0 && t < 18446744073709551616.0) return static_cast<uint64_t>(t);
    return static_cast<uint64_t>(cvt64(t));
  default: return wrapInt(dt, static_cast<uint64_t>(cvt64(t)));
  }
}

/// Integer power with wraparound (python's int pow, then truncated by the caller).
uint64_t intPow(int64_t base, int64_t e) {
  if (e < 0) return base == 1 ? 1 : base == -1 ? ((e & 1) ? uint64_t(-1) : 1) : 0;
  uint64_t r = 1, b = static_cast<uint64_t>(base);
  for (uint64_t k = static_cast<uint64_t>(e); k; k >>= 1) {
    if (k & 1) r *= b;
    b *= b;
  }
  return r;
}

uint32_t rotl32(uint32_t v, int r) { return (v << r) | (v >> (32 - r)); }

} // namespace

bool isFloatDType(DType dt) { return dtypeKind(dt) == DTypeKind::Float; }
bool isIntWordDType(DType dt) { return isInt(dt) || dt == DType::Bool; }
bool isHoldable(DType dt) { return (isFloatDType(dt) || isIntWordDType(dt)) && dtypeSize(dt) <= 8; }

Word wrapInt(DType dt, uint64_t v) {
  switch (dt) {
  case DType::Bool: return v != 0;
  case DType::Int8: return static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(static_cast<uint8_t>(v))));
  case DType::UInt8: return static_cast<uint8_t>(v);
  case DType::Int16: return static_cast<uint64_t>(static_cast<int64_t>(static_cast<int16_t>(static_cast<uint16_t>(v))));
  case DType::UInt16: return static_cast<uint16_t>(v);
  case DType::Int32: return static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(v))));
  case DType::UInt32: return static_cast<uint32_t>(v);
  default: return v;
  }
}

double roundFloat(DType dt, double v) {
  switch (dt) {
  case DType::Float32: return static_cast<double>(static_cast<float>(v));
  case DType::Float16: return roundHalf(v);
  case DType::BFloat16: return roundBF16(v);
  case DType::FP8E4M3: case DType::FP8E5M2: case DType::FP8E4M3FNUZ: case DType::FP8E5M2FNUZ:
    return fp8ToFloat(floatToFp8(v, dt), dt);
  default: return v;
  }
}

Word intToWord(DType dt, int64_t v) {
  if (dt == DType::Float32) return fromDouble(static_cast<float>(v));
  if (isFloatDType(dt)) return fromDouble(roundFloat(dt, static_cast<double>(v)));
  return wrapInt(dt, static_cast<uint64_t>(v));
}

Word uintToWord(DType dt, uint64_t v) {
  if (dt == DType::Float32) return fromDouble(static_cast<float>(v));
  if (isFloatDType(dt)) return fromDouble(roundFloat(dt, static_cast<double>(v)));
  return wrapInt(dt, v);
}

Word floatToWord(DType dt, double v) {
  if (isFloatDType(dt)) return fromDouble(roundFloat(dt, v));
  if (dt == DType::Bool) return v != 0;
  return floatToIntWord(dt, v);
}

Word castWord(DType from, DType to, Word w) {
  if (isFloatDType(from)) return floatToWord(to, asDouble(w));
  if (to == DType::Bool) return w != 0;
  if (isUnsigned(from)) return uintToWord(to, w);
  return intToWord(to, asInt(w));
}

Word bitcastWord(DType from, DType to, Word w) {
  unsigned char bytes[8] = {};
  storeWord(from, w, bytes);
  return loadWord(to, bytes);
}

bool aluSupported(Op op, DType in) {
  bool fl = isFloatDType(in), in_ = isIntWordDType(in);
  if (!isHoldable(in)) return false;
  switch (op) {
  case Op::ADD: case Op::SUB: case Op::MUL: case Op::MAX: case Op::CMPLT: case Op::CMPNE: case Op::CMPEQ:
  case Op::NEG: case Op::TRUNC: case Op::WHERE: case Op::MULACC: case Op::FLOORDIV: case Op::FLOORMOD:
  case Op::CDIV: case Op::CMOD: case Op::POW:
    return true;
  case Op::FDIV: case Op::RECIPROCAL: case Op::SQRT: case Op::EXP2: case Op::LOG2: case Op::SIN: return fl;
  case Op::AND: case Op::OR: case Op::XOR: case Op::SHL: case Op::SHR: return in_;
  case Op::THREEFRY: return in == DType::UInt64;
  default: return false;
  }
}

Word aluWord(Op op, DType out, DType in, const Word *o) {
  if (isFloatDType(in)) {
    double x = asDouble(o[0]);
    double y = (isBinary(op) || isTernary(op)) ? asDouble(o[1]) : 0.0;
    double r;
    switch (op) {
    case Op::CMPLT: return x < y;
    case Op::CMPNE: return x != y;
    case Op::CMPEQ: return x == y;
    case Op::ADD: r = x + y; break;
    case Op::SUB: r = x - y; break;
    case Op::MUL: r = x * y; break;
    case Op::FDIV: r = x / y; break;
    case Op::MAX: r = x < y ? y : x; break; // python max(x, y): x unless y is larger
    case Op::NEG: r = -x; break;
    case Op::RECIPROCAL: r = 1.0 / x; break;
    case Op::SQRT: r = std::sqrt(x); break;
    case Op::EXP2: r = std::exp2(x); break;
    case Op::LOG2: r = std::log2(x); break;
    case Op::SIN: r = std::sin(x); break;
    case Op::TRUNC: r = std::trunc(x); break;
    case Op::POW: r = std::pow(x, y); break;
    case Op::FLOORDIV: r = y == 0 ? 0.0 : std::floor(x / y); break;
    case Op::FLOORMOD: r = y == 0 ? x : x - std::floor(x / y) * y; break;
    case Op::CDIV: r = y == 0 ? 0.0 : std::trunc(x / y); break;
    case Op::CMOD: r = y == 0 ? x : x - std::trunc(x / y) * y; break;
    case Op::MULACC: r = x * y + asDouble(o[2]); break;
    default: fail("op " + std::string(opName(op)) + " is not defined on " + std::string(dtypeName(in)));
    }
    return floatToWord(out, r);
  }

  bool uns = isUnsigned(in);
  uint64_t a = o[0], b = (isBinary(op) || isTernary(op)) ? o[1] : 0;
  int64_t sa = asInt(a), sb = asInt(b);
  uint64_t r;
  switch (op) {
  case Op::CMPLT: return uns ? a < b : sa < sb;
  case Op::CMPNE: return a != b;
  case Op::CMPEQ: return a == b;
  case Op::ADD: r = a + b; break;
  case Op::SUB: r = a - b; break;
  case Op::MUL: r = a * b; break;
  case Op::NEG: r = uint64_t(0) - a; break;
  case Op::TRUNC: r = a; break;
  case Op::MAX: r = (uns ? a < b : sa < sb) ? b : a; break;
  case Op::AND: r = a & b; break;
  case Op::OR: r = a | b; break;
  case Op::XOR: r = a ^ b; break;
  case Op::SHL: {
    bool neg = !uns && sb < 0;
    r = (neg || b >= 64) ? 0 : a << b;
    break;
  }
  case Op::SHR: {
    if (uns) r = b >= 64 ? 0 : a >> b;
    else if (sb < 0) r = 0;
    else r = sb >= 64 ? (sa < 0 ? ~uint64_t(0) : 0) : static_cast<uint64_t>(sa >> sb);
    break;
  }
  case Op::FLOORDIV:
    if (b == 0) r = 0;
    else if (uns) r = a / b;
    else if (sb == -1) r = uint64_t(0) - a;
    else {
      int64_t q = sa / sb;
      if (sa % sb != 0 && ((sa < 0) != (sb < 0))) --q;
      r = static_cast<uint64_t>(q);
    }
    break;
  case Op::FLOORMOD:
    if (b == 0) r = a;
    else if (uns) r = a % b;
    else if (sb == -1) r = 0;
    else {
      int64_t m = sa % sb;
      if (m != 0 && ((m < 0) != (sb < 0))) m += sb;
      r = static_cast<uint64_t>(m);
    }
    break;
  case Op::CDIV:
    if (b == 0) r = 0;
    else if (uns) r = a / b;
    else r = sb == -1 ? uint64_t(0) - a : static_cast<uint64_t>(sa / sb);
    break;
  case Op::CMOD:
    if (b == 0) r = a;
    else if (uns) r = a % b;
    else r = sb == -1 ? 0 : static_cast<uint64_t>(sa % sb);
    break;
  case Op::POW: r = uns ? intPow(static_cast<int64_t>(a), b > uint64_t(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(b))
                        : intPow(sa, sb);
    break;
  case Op::MULACC: r = a * b + o[2]; break;
  case Op::THREEFRY: r = threefry2x32(a, b); break;
  default: fail("op " + std::string(opName(op)) + " is not defined on " + std::string(dtypeName(in)));
  }
  return wrapInt(out, r);
}

Word reduceIdentity(Op op, DType dt) {
  switch (op) {
  case Op::ADD: return isFloatDType(dt) ? fromDouble(0.0) : 0;
  case Op::MUL: return isFloatDType(dt) ? fromDouble(1.0) : 1;
  case Op::MAX:
    if (isFloatDType(dt)) return fromDouble(-std::numeric_limits<double>::infinity());
    if (dt == DType::Bool || isUnsigned(dt)) return 0;
    if (dt == DType::WeakInt || dtypeSize(dt) >= 8) return static_cast<uint64_t>(std::numeric_limits<int64_t>::min());
    return static_cast<uint64_t>(-(int64_t(1) << (8 * dtypeSize(dt) - 1)));
  default: fail("'" + std::string(opName(op)) + "' is not a reduce op");
  }
}

Word reduceStep(Op op, DType dt, Word acc, Word x) {
  if (isFloatDType(dt)) {
    double a = asDouble(acc), b = asDouble(x);
    switch (op) {
    case Op::ADD: return fromDouble(a + b);
    case Op::MUL: return fromDouble(a * b);
    default: return fromDouble(a < b ? b : a);
    }
  }
  bool uns = isUnsigned(dt);
  switch (op) {
  case Op::ADD: return wrapInt(dt, acc + x);
  case Op::MUL: return wrapInt(dt, acc * x);
  default: return (uns ? acc < x : asInt(acc) < asInt(x)) ? x : acc;
  }
}

Word loadWord(DType dt, const unsigned char *p) {
  switch (dt) {
  case DType::Bool: return p[0] != 0;
  case DType::Int8: return static_cast<uint64_t>(static_cast<int64_t>(loadAs<int8_t>(p)));
  case DType::UInt8: return p[0];
  case DType::Int16: return static_cast<uint64_t>(static_cast<int64_t>(loadAs<int16_t>(p)));
  case DType::UInt16: return loadAs<uint16_t>(p);
  case DType::Int32: return static_cast<uint64_t>(static_cast<int64_t>(loadAs<int32_t>(p)));
  case DType::UInt32: return loadAs<uint32_t>(p);
  case DType::Int64: case DType::UInt64: case DType::WeakInt: return loadAs<uint64_t>(p);
  case DType::Float16: return fromDouble(halfValue(loadAs<uint16_t>(p)));
  case DType::BFloat16: return fromDouble(std::bit_cast<float>(uint32_t(loadAs<uint16_t>(p)) << 16));
  case DType::Float32: return fromDouble(loadAs<float>(p));
  case DType::Float64: case DType::WeakFloat: return fromDouble(loadAs<double>(p));
  default:
    if (isFp8(dt)) return fromDouble(fp8ToFloat(p[0], dt));
    fail("the interpreter cannot hold dtype " + std::string(dtypeName(dt)));
  }
}

void storeWord(DType dt, Word w, unsigned char *p) {
  switch (dt) {
  case DType::Bool: p[0] = w != 0; return;
  case DType::Int8: case DType::UInt8: p[0] = static_cast<unsigned char>(w); return;
  case DType::Int16: case DType::UInt16: storeAs<uint16_t>(static_cast<uint16_t>(w), p); return;
  case DType::Int32: case DType::UInt32: storeAs<uint32_t>(static_cast<uint32_t>(w), p); return;
  case DType::Int64: case DType::UInt64: case DType::WeakInt: storeAs<uint64_t>(w, p); return;
  case DType::Float16: storeAs<uint16_t>(halfBits(asDouble(w)), p); return;
  case DType::BFloat16: {
    double v = roundBF16(asDouble(w));
    storeAs<uint16_t>(static_cast<uint16_t>(std::bit_cast<uint32_t>(static_cast<float>(v)) >> 16), p);
    return;
  }
  case DType::Float32: storeAs<float>(static_cast<float>(asDouble(w)), p); return;
  case DType::Float64: case DType::WeakFloat: storeAs<double>(asDouble(w), p); return;
  default:
    if (isFp8(dt)) {
      p[0] = floatToFp8(asDouble(w), dt);
      return;
    }
    fail("the interpreter cannot hold dtype " + std::string(dtypeName(dt)));
  }
}

uint64_t threefry2x32(uint64_t x, uint64_t key) {
  uint32_t x0 = static_cast<uint32_t>(x), x1 = static_cast<uint32_t>(x >> 32);
  uint32_t key0 = static_cast<uint32_t>(key), key1 = static_cast<uint32_t>(key >> 32);
  static const int rotations[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  uint32_t ks[3] = {key1, key0 ^ key1 ^ 0x1BD11BDAu, key0};
  uint32_t xr0 = x0 + ks[2], xr1 = x1 + ks[0];
  for (uint32_t i = 0; i < 5; ++i) {
    for (int r : rotations[i % 2]) {
      uint32_t sum = xr0 + xr1;
      xr1 = sum ^ rotl32(xr1, r);
      xr0 = sum;
    }
    xr0 = xr0 + ks[i % 3];
    xr1 = xr1 + ks[(i + 1) % 3] + i + 1;
  }
  return (uint64_t(xr1) << 32) | xr0;
}

} // namespace uopc::interp

//===- CNames.cpp - untrusted names in generated C ------------------------===//
#include "Targets/CNames.h"

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>

namespace uopc {
namespace {

bool identChar(char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; }

const std::set<std::string, std::less<>> &reservedNames() {
  static const std::set<std::string, std::less<>> names = [] {
    std::set<std::string, std::less<>> s = {
        // C11 keywords
        "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
        "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
        "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while",
        // C23 keywords and GNU extensions
        "alignas", "alignof", "bool", "constexpr", "false", "nullptr", "static_assert", "thread_local", "true",
        "typeof", "typeof_unqual", "asm",
        // C++20 keywords (the header is read by C++ compilers too)
        "and", "and_eq", "bitand", "bitor", "catch", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
        "consteval", "constinit", "const_cast", "co_await", "co_return", "co_yield", "decltype", "delete",
        "dynamic_cast", "explicit", "export", "friend", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
        "operator", "or", "or_eq", "private", "protected", "public", "reinterpret_cast", "requires", "static_cast",
        "template", "this", "throw", "try", "typeid", "typename", "using", "virtual", "wchar_t", "xor", "xor_eq",
        // gcc's predefined macros outside the reserved names (GNU modes, the default)
        "linux", "unix", "i386",
        // stddef.h, stdbool.h, string.h
        "NULL", "offsetof", "size_t", "ptrdiff_t", "max_align_t", "nullptr_t", "unreachable",
        // stdint.h (the sized names are added below)
        "INTPTR_MIN", "INTPTR_MAX", "UINTPTR_MAX", "INTMAX_MIN", "INTMAX_MAX", "UINTMAX_MAX", "PTRDIFF_MIN",
        "PTRDIFF_MAX", "SIG_ATOMIC_MIN", "SIG_ATOMIC_MAX", "SIZE_MAX", "WCHAR_MIN", "WCHAR_MAX", "WINT_MIN",
        "WINT_MAX", "INTMAX_C", "UINTMAX_C", "INTPTR_WIDTH", "UINTPTR_WIDTH", "INTMAX_WIDTH", "UINTMAX_WIDTH",
        "PTRDIFF_WIDTH", "SIG_ATOMIC_WIDTH", "SIZE_WIDTH", "WCHAR_WIDTH", "WINT_WIDTH", "intptr_t", "uintptr_t",
        "intmax_t", "uintmax_t",
        // math.h (C11, POSIX, glibc)
        "NAN", "INFINITY", "HUGE_VAL", "HUGE_VALF", "HUGE_VALL", "HUGE", "MAXFLOAT", "FP_NAN", "FP_INFINITE",
        "FP_ZERO", "FP_SUBNORMAL", "FP_NORMAL", "FP_FAST_FMA", "FP_FAST_FMAF", "FP_FAST_FMAL", "FP_ILOGB0",
        "FP_ILOGBNAN", "FP_INT_UPWARD", "FP_INT_DOWNWARD", "FP_INT_TOWARDZERO", "FP_INT_TONEARESTFROMZERO",
        "FP_INT_TONEAREST", "MATH_ERRNO", "MATH_ERREXCEPT", "math_errhandling", "fpclassify", "isfinite", "isinf",
        "isnan", "isnormal", "signbit", "isgreater", "isgreaterequal", "isless", "islessequal", "islessgreater",
        "isunordered", "issignaling", "issubnormal", "iszero", "iscanonical", "iseqsig", "float_t", "double_t",
        "M_E", "M_LOG2E", "M_LOG10E", "M_LN2", "M_LN10", "M_PI", "M_PI_2", "M_PI_4", "M_1_PI", "M_2_PI",
        "M_2_SQRTPI", "M_SQRT2", "M_SQRT1_2", "DOMAIN", "SING", "OVERFLOW", "UNDERFLOW", "TLOSS", "PLOSS",
        "X_TLOSS",
        // limits.h, float.h
        "CHAR_BIT", "CHAR_MIN", "CHAR_MAX", "SCHAR_MIN", "SCHAR_MAX", "UCHAR_MAX", "SHRT_MIN", "SHRT_MAX",
        "USHRT_MAX", "INT_MIN", "INT_MAX", "UINT_MAX", "LONG_MIN", "LONG_MAX", "ULONG_MAX", "LLONG_MIN",
        "LLONG_MAX", "ULLONG_MAX", "MB_LEN_MAX", "PATH_MAX", "FLT_MAX", "FLT_MIN", "FLT_EPSILON", "DBL_MAX",
        "DBL_MIN", "DBL_EPSILON", "LDBL_MAX", "LDBL_MIN", "LDBL_EPSILON", "FLT_DIG", "DBL_DIG", "FLT_RADIX",
        "FLT_MANT_DIG", "DBL_MANT_DIG", "DECIMAL_DIG", "FLT_EVAL_METHOD", "FLT_ROUNDS",
        // stdio.h, stdlib.h, errno.h, assert.h, complex.h, stdnoreturn.h, stdalign.h
        "EOF", "BUFSIZ", "FILENAME_MAX", "FOPEN_MAX", "L_tmpnam", "SEEK_SET", "SEEK_CUR", "SEEK_END", "TMP_MAX",
        "stdin", "stdout", "stderr", "errno", "assert", "EXIT_SUCCESS", "EXIT_FAILURE", "RAND_MAX", "MB_CUR_MAX",
        "complex", "imaginary", "I", "noreturn", "EDOM", "ERANGE", "EILSEQ"};
    for (const char *w : {"8", "16", "32", "64"}) {
      std::string n = w;
      for (const char *pre : {"INT", "INT_LEAST", "INT_FAST"})
        for (const char *suf : {"_MIN", "_MAX", "_WIDTH"}) s.insert(pre + n + suf);
      for (const char *pre : {"UINT", "UINT_LEAST", "UINT_FAST"})
        for (const char *suf : {"_MAX", "_WIDTH"}) s.insert(pre + n + suf);
      s.insert("INT" + n + "_C"), s.insert("UINT" + n + "_C");
      for (const char *t : {"int", "uint", "int_least", "uint_least", "int_fast", "uint_fast"}) s.insert(t + n + "_t");
    }
    return s;
  }();
  return names;
}

/// FNV-1a, 64 bits folded to 32, as 8 hex digits: only to keep a cut name distinct.
std::string hash8(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  char b[9];
  std::snprintf(b, sizeof b, "%08x", static_cast<unsigned>((h >> 32) ^ h));
  return b;
}

} // namespace

bool isCIdentifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char ch : s)
    if (!identChar(ch)) return false;
  return true;
}

bool isReservedCName(std::string_view s) {
  if (s.size() >= 2 && s[0] == '_' && (s[1] == '_' || std::isupper(static_cast<unsigned char>(s[1])))) return true;
  return reservedNames().count(s) > 0;
}

std::string sanitizeCName(std::string_view name) {
  if (isCIdentifier(name) && name.size() <= kMaxCName && !isReservedCName(name)) return std::string(name);
  std::string s;
  for (char ch : name.substr(0, kMaxCName)) s += identChar(ch) ? ch : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '_') s = "k_" + s;
  return s.substr(0, kMaxCName - 9) + "_" + hash8(name);
}

std::string cIdentifier(std::string_view name, std::string_view prefix) {
  std::string out;
  for (char ch : name.substr(0, kMaxCName)) out += identChar(ch) ? ch : '_';
  if (out.empty() || !std::isalpha(static_cast<unsigned char>(out[0]))) out = std::string(prefix) + out;
  if (isReservedCName(out)) out += "_";
  return out;
}

std::string cComment(std::string_view s) {
  std::string out;
  for (unsigned char ch : s) {
    if (ch == '\n' || ch == '\r' || ch == '\t') ch = ' ';
    if (ch < 0x20 || ch >= 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", ch);
      out += b;
      continue;
    }
    // "*/" would end the comment, "/*" in it is a warning (-Wcomment), "??" may start a trigraph
    if (!out.empty() && ((ch == '/' && out.back() == '*') || (ch == '*' && out.back() == '/') ||
                         (ch == '?' && out.back() == '?')))
      out += ' ';
    out += static_cast<char>(ch);
  }
  return out;
}

std::string cStringLiteral(std::string_view s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\', out += static_cast<char>(ch);
    else if (ch >= 0x20 && ch < 0x7f && ch != '?') out += static_cast<char>(ch);
    else {
      char b[8];
      std::snprintf(b, sizeof b, "\\%03o", ch);
      out += b;
    }
  }
  return out + "\"";
}

bool isSystemHeaderName(std::string_view name) {
  static const std::set<std::string, std::less<>> headers = {
      // C11 and C23
      "assert", "complex", "ctype", "errno", "fenv", "float", "inttypes", "iso646", "limits", "locale", "math",
      "setjmp", "signal", "stdalign", "stdarg", "stdatomic", "stdbit", "stdbool", "stdckdint", "stddef", "stdint",
      "stdio", "stdlib", "stdnoreturn", "string", "tgmath", "threads", "time", "uchar", "wchar", "wctype",
      // POSIX
      "aio", "cpio", "dirent", "dlfcn", "fcntl", "fmtmsg", "fnmatch", "ftw", "glob", "grp", "iconv", "langinfo",
      "libgen", "libintl", "monetary", "mqueue", "ndbm", "netdb", "nl_types", "poll", "pthread", "pwd", "regex",
      "sched", "search", "semaphore", "spawn", "strings", "stropts", "syslog", "tar", "termios", "trace",
      "ulimit", "unistd", "utime", "utmpx", "wordexp",
      // glibc and compilers' own, commonly included
      "alloca", "byteswap", "crypt", "endian", "err", "error", "execinfo", "features", "getopt", "link", "malloc",
      "memory", "mntent", "obstack", "paths", "printf", "shadow", "sysexits", "ucontext", "utmp", "values",
      "omp", "immintrin", "x86intrin", "xmmintrin", "emmintrin", "pmmintrin", "tmmintrin", "smmintrin",
      "nmmintrin", "wmmintrin", "avxintrin", "avx2intrin", "arm_neon", "cpuid", "stdc-predef"};
  std::string lower;
  for (char ch : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return headers.count(lower) > 0;
}

} // namespace uopc

//===- GraphIO.cpp - encoding dispatch, shared helpers, sameGraph ---------===//
// The JSON reader is in JsonReader.cpp, the JSON writer in JsonWriter.cpp and the .uopb encoding in
// BinaryFormat.cpp; this file detects the encoding and compares graphs.
#include "IR/GraphIO.h"

#include "IR/Error.h"
#include "IR/GraphIOInternal.h"

#include <nlohmann/json.hpp>

#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <fstream>
#include <new>
#include <unordered_map>

namespace uopc {

//===----------------------------------------------------------------------===//
// Helpers shared by the readers and writers
//===----------------------------------------------------------------------===//
namespace io {

namespace {
/// Length of the well-formed UTF-8 sequence starting at s[i], or 0 when the bytes there are not one.
size_t utf8SeqLen(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if ((c & 0xE0) == 0xC0) n = 2, cp = c & 0x1F;
  else if ((c & 0xF0) == 0xE0) n = 3, cp = c & 0x0F;
  else if ((c & 0xF8) == 0xF0) n = 4, cp = c & 0x07;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000)) return 0; // overlong
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}
} // namespace

bool validUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t n = utf8SeqLen(s, i);
    if (!n) return false;
    i += n;
  }
  return true;
}

void appendJsonString(std::string &out, std::string_view s) {
  static const char hex[] = "0123456789abcdef";
  out.push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    // copy the longest run of bytes that need no escaping in one go
    size_t j = i;
    while (j < s.size()) {
      unsigned char c = static_cast<unsigned char>(s[j]);
      if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) break;
      ++j;
    }
    out.append(s.data() + i, j - i);
    i = j;
    if (i >= s.size()) break;
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      size_t n = utf8SeqLen(s, i);
      if (n) {
        out.append(s.data() + i, n);
        i += n;
        continue;
      }
      // not UTF-8: write the byte as the code point of the same value (lossy, but valid JSON)
    }
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\b': out += "\\b"; break;
    case '\f': out += "\\f"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default:
      out += "\\u00";
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
    ++i;
  }
  out.push_back('"');
}

bool isIntegralFloat(double v) { return std::isfinite(v) && std::trunc(v) == v; }

size_t pyFloatRepr(double v, char *out) {
  auto put = [&](const char *s) {
    size_t n = std::strlen(s);
    std::memcpy(out, s, n);
    return n;
  };
  if (std::isnan(v)) return put("nan");
  if (std::isinf(v)) return put(v < 0 ? "-inf" : "inf");
  if (v == 0) return put(std::signbit(v) ? "-0.0" : "0.0");
  // Shortest round-trip digits in scientific form, e.g. "-1.2345e-05".
  char sci[40];
  auto res = std::to_chars(sci, sci + sizeof sci, v, std::chars_format::scientific);
  const char *p = sci, *e = res.ptr;
  size_t o = 0;
  if (*p == '-') {
    out[o++] = '-';
    ++p;
  }
  char digits[24];
  size_t nd = 0;
  while (p < e && *p != 'e') {
    if (*p != '.') digits[nd++] = *p;
    ++p;
  }
  int exp10 = 0;
  if (p < e) std::from_chars(p + 1 + (p[1] == '+'), e, exp10);
  while (nd > 1 && digits[nd - 1] == '0') --nd; // to_chars gives no trailing zeros; be safe
  int decpt = exp10 + 1; // value = 0.d1d2...dn * 10^decpt
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out[o++] = '0';
      out[o++] = '.';
      for (int k = 0; k < -decpt; ++k) out[o++] = '0';
      for (size_t k = 0; k < nd; ++k) out[o++] = digits[k];
    } else if (static_cast<size_t>(decpt) >= nd) {
      for (size_t k = 0; k < nd; ++k) out[o++] = digits[k];
      for (size_t k = nd; k < static_cast<size_t>(decpt); ++k) out[o++] = '0';
      out[o++] = '.';
      out[o++] = '0';
    } else {
      for (size_t k = 0; k < static_cast<size_t>(decpt); ++k) out[o++] = digits[k];
      out[o++] = '.';
      for (size_t k = decpt; k < nd; ++k) out[o++] = digits[k];
    }
    return o;
  }
  out[o++] = digits[0];
  if (nd > 1) {
    out[o++] = '.';
    for (size_t k = 1; k < nd; ++k) out[o++] = digits[k];
  }
  out[o++] = 'e';
  int x = decpt - 1;
  out[o++] = x < 0 ? '-' : '+';
  if (x < 0) x = -x;
  if (x < 10) out[o++] = '0';
  auto r = std::to_chars(out + o, out + o + 8, x);
  return static_cast<size_t>(r.ptr - out);
}

std::optional<double> parsePyFloat(std::string_view s) {
  if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  // -?digits(.digits)?([eE][+-]?digits)?
  size_t i = 0, n = s.size();
  auto digits = [&] {
    size_t st = i;
    while (i < n && s[i] >= '0' && s[i] <= '9') ++i;
    return i > st;
  };
  if (i < n && s[i] == '-') ++i;
  if (!digits()) return std::nullopt;
  if (i < n && s[i] == '.') {
    ++i;
    if (!digits()) return std::nullopt;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < n && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digits()) return std::nullopt;
  }
  if (i != n) return std::nullopt;
  double v = 0;
  auto r = std::from_chars(s.data(), s.data() + n, v, std::chars_format::general);
  if (r.ec == std::errc::result_out_of_range) {
    // underflow to zero/denormal is fine (Python does the same); overflow is not representable
    bool neg = s[0] == '-';
    size_t epos = s.find_first_of("eE");
    bool negExp = epos != std::string_view::npos && epos + 1 < n && s[epos + 1] == '-';
    if (negExp) return neg ? -0.0 : 0.0;
    return std::nullopt;
  }
  if (r.ec != std::errc() || r.ptr != s.data() + n) return std::nullopt;
  return v;
}

bool validBigInt(std::string_view s) {
  size_t i = 0;
  if (!s.empty() && s[0] == '-') i = 1;
  if (i >= s.size()) return false;
  for (size_t k = i; k < s.size(); ++k)
    if (s[k] < '0' || s[k] > '9') return false;
  if (s[i] == '0' && s.size() - i > 1) return false; // leading zero
  if (i == 1 && s == "-0") return false;
  return true;
}

const Arg *intArgFromDecimal(Context &ctx, std::string_view s) {
  if (!s.empty() && s[0] == '-') {
    int64_t v;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec == std::errc() && r.ptr == s.data() + s.size()) return ctx.argInt(v);
  } else {
    uint64_t v;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec == std::errc() && r.ptr == s.data() + s.size()) return ctx.argUInt(v);
  }
  return ctx.argBigInt(s);
}

std::string base64Encode(std::string_view raw) {
  static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((raw.size() + 2) / 3 * 4);
  size_t i = 0;
  auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(raw[k])); };
  for (; i + 3 <= raw.size(); i += 3) {
    uint32_t v = b(i) << 16 | b(i + 1) << 8 | b(i + 2);
    out += tbl[v >> 18];
    out += tbl[(v >> 12) & 63];
    out += tbl[(v >> 6) & 63];
    out += tbl[v & 63];
  }
  size_t rest = raw.size() - i;
  if (rest == 1) {
    uint32_t v = b(i) << 16;
    out += tbl[v >> 18];
    out += tbl[(v >> 12) & 63];
    out += "==";
  } else if (rest == 2) {
    uint32_t v = b(i) << 16 | b(i + 1) << 8;
    out += tbl[v >> 18];
    out += tbl[(v >> 12) & 63];
    out += tbl[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::optional<std::string> base64Decode(std::string_view t) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (t.size() % 4) return std::nullopt;
  std::string out;
  out.reserve(t.size() / 4 * 3);
  for (size_t i = 0; i < t.size(); i += 4) {
    bool last = i + 4 == t.size();
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      char c = t[i + k];
      if (c == '=') {
        if (!last || k < 2) return std::nullopt;
        ++pad;
        v[k] = 0;
        continue;
      }
      if (pad) return std::nullopt; // data after padding
      v[k] = val(c);
      if (v[k] < 0) return std::nullopt;
    }
    uint32_t x = uint32_t(v[0]) << 18 | uint32_t(v[1]) << 12 | uint32_t(v[2]) << 6 | uint32_t(v[3]);
    out += static_cast<char>(x >> 16);
    if (pad < 2) out += static_cast<char>((x >> 8) & 0xFF);
    if (pad < 1) out += static_cast<char>(x & 0xFF);
  }
  return out;
}

namespace {
void collectRefs(const Arg *a, std::vector<const UOp *> &out) {
  if (!a || !a->hasRef) return;
  std::vector<const Arg *> work{a};
  while (!work.empty()) {
    const Arg *x = work.back();
    work.pop_back();
    if (x->kind == ArgKind::UOpRef) out.push_back(x->ref());
    for (const Arg *e : x->elems())
      if (e && e->hasRef) work.push_back(e);
  }
}
} // namespace

std::vector<const UOp *> writeOrder(const UOp *root) {
  std::vector<const UOp *> order = toposort(root);
  bool tagRefs = false;
  for (const UOp *u : order) tagRefs = tagRefs || (u->tag && u->tag->hasRef);
  if (!tagRefs) return order;
  // Rare: redo toposort's walk (sources, then arg refs) with tag refs after the arg refs.
  order.clear();
  std::vector<uint8_t> state; // 0 unseen, 1 on the stack, 2 done
  auto st = [&](const UOp *u) -> uint8_t & {
    if (u->index >= state.size()) state.resize(u->index + 1 + state.size() / 2, 0);
    return state[u->index];
  };
  struct Frame {
    const UOp *u;
    uint32_t next;            // next source
    std::vector<const UOp *> refs; // arg then tag refs, filled after the sources
    size_t nextRef;
    bool refsDone;
  };
  std::vector<Frame> stack;
  stack.push_back({root, 0, {}, 0, false});
  st(root) = 1;
  while (!stack.empty()) {
    Frame &f = stack.back();
    const UOp *next = nullptr;
    while (f.next < f.u->nsrc) {
      const UOp *s = f.u->srcs[f.next++];
      if (st(s) == 0) {
        next = s;
        break;
      }
    }
    if (!next) {
      if (!f.refsDone) {
        collectRefs(f.u->arg, f.refs);
        collectRefs(f.u->tag, f.refs);
        f.refsDone = true;
      }
      while (f.nextRef < f.refs.size()) {
        const UOp *r = f.refs[f.nextRef++];
        if (st(r) == 0) {
          next = r;
          break;
        }
      }
    }
    if (next) {
      st(next) = 1;
      stack.push_back({next, 0, {}, 0, false}); // invalidates f
      continue;
    }
    st(f.u) = 2;
    order.push_back(f.u);
    stack.pop_back();
  }
  return order;
}

} // namespace io

namespace io {

void checkVariableNames(const Graph &g, std::string_view where) {
  if (!g.root) return;
  for (const UOp *u : toposort(g.root)) {
    if (u->op != Op::PARAM || u->dtype != DType::WeakInt || !u->arg || u->arg->kind != ArgKind::Record) continue;
    if (u->nsrc != 0 && !(u->src(0)->op == Op::STACK && u->src(0)->nsrc == 0)) continue;
    const Arg *n = u->arg->field("name");
    if (!n || n->kind != ArgKind::String) continue;
    std::string_view name = n->str();
    bool ok = !name.empty() && name.size() <= kMaxVariableName && !std::isdigit(static_cast<unsigned char>(name[0]));
    for (char ch : name) ok = ok && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_');
    if (!ok)
      fail(std::string(where) + ": " + g.describe(u) + ": variable name " + quote(name) +
           " is not an identifier (letters, digits and '_', not starting with a digit, at most " +
           std::to_string(kMaxVariableName) + " characters)");
  }
}

} // namespace io

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

bool looksBinary(std::string_view bytes) { return bytes.size() >= 4 && std::memcmp(bytes.data(), "UOPB", 4) == 0; }

Graph readGraph(std::string_view bytes, std::string_view name, const ReadLimits &limits) {
  if (looksBinary(bytes)) return readGraphBinary(bytes, name, limits);
  if (looksText(bytes)) return readGraphText(bytes, name, limits);
  return readGraphJson(bytes, name, limits);
}

Graph readGraphFile(const std::string &path, const ReadLimits &limits) {
  std::string data;
  try {
    // Bounded: a regular file's size is checked before it is read; other files (a pipe) are read up to
    // the limit; a device (/dev/zero) is refused; and the first bytes must begin a document.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(path + ": cannot open: " + std::strerror(errno));
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) fail(path + ": cannot read: " + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) fail(path + ": is a directory");
    if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode))
      fail(path + ": is not a regular file or a pipe");
    if (S_ISREG(st.st_mode)) {
      if (static_cast<uint64_t>(st.st_size) > limits.maxFileBytes)
        fail(path + ": is " + std::to_string(st.st_size) + " bytes, more than the limit of " +
             std::to_string(limits.maxFileBytes) + " bytes for a graph document");
      data.reserve(static_cast<size_t>(st.st_size));
    }
    char buf[1 << 16];
    bool checkedStart = false;
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail(path + ": cannot read: " + std::strerror(errno));
      if (n == 0) break;
      if (data.size() + static_cast<size_t>(n) > limits.maxFileBytes)
        fail(path + ": more than the limit of " + std::to_string(limits.maxFileBytes) + " bytes for a graph document");
      data.append(buf, static_cast<size_t>(n));
      if (!checkedStart) {
        // a document starts with the .uopb magic, or after white space with '{' (JSON) or (the text form)
        // "//", '%' or "kernel @"
        size_t i = data.find_first_not_of(" \t\r\n");
        if (i == std::string::npos && data.size() < 4096) continue;
        bool textStart = i != std::string::npos && (data[i] == '/' || data[i] == '%' || data[i] == 'k');
        if (i == std::string::npos ||
            (data[i] != '{' && !textStart && data.compare(0, 4, "UOPB") != 0 && data.size() >= 4))
          fail(path + ": not a graph document (neither JSON, .uopb nor the text form)");
        if (data[i] != '{' && data.size() < 4) continue;
        checkedStart = true;
      }
    }
  } catch (const std::bad_alloc &) {
    fail(path + ": out of memory reading the file");
  }
  return readGraph(data, path, limits);
}

//===----------------------------------------------------------------------===//
// sameGraph
//===----------------------------------------------------------------------===//

namespace {

std::string argKindName(ArgKind k) {
  switch (k) {
  case ArgKind::Bool: return "bool";
  case ArgKind::Int: return "int";
  case ArgKind::UInt: return "uint";
  case ArgKind::BigInt: return "bigint";
  case ArgKind::Float: return "float";
  case ArgKind::String: return "string";
  case ArgKind::Invalid: return "Invalid";
  case ArgKind::OpName: return "Ops";
  case ArgKind::AxisType: return "AxisType";
  case ArgKind::AddrSpace: return "AddrSpace";
  case ArgKind::DType: return "DType";
  case ArgKind::UOpRef: return "UOp";
  case ArgKind::Bytes: return "bytes";
  case ArgKind::Tuple: return "tuple";
  case ArgKind::Record: return "record";
  }
  return "?";
}

class Comparer {
public:
  Comparer(const Graph &a, const Graph &b) : a_(a), b_(b) {}

  bool run(std::string &why) {
    if (a_.padFill != b_.padFill) return differ(why, "semantics.pad_fill differs");
    if (a_.stage != b_.stage) return differ(why, "stage differs ('" + a_.stage + "' vs '" + b_.stage + "')");
    if (a_.producerJson != b_.producerJson) {
      bool eq = false;
      try {
        eq = nlohmann::json::parse(a_.producerJson) == nlohmann::json::parse(b_.producerJson);
      } catch (const std::exception &) {
        eq = false;
      }
      if (!eq) return differ(why, "producer differs (" + a_.producerJson + " vs " + b_.producerJson + ")");
    }
    if (!a_.root || !b_.root) {
      if (a_.root == b_.root) return true;
      return differ(why, "one graph has no root");
    }
    if (!bind(a_.root, b_.root)) return differ(why, "roots differ");
    while (!work_.empty()) {
      auto [x, y] = work_.back();
      work_.pop_back();
      std::string where = a_.describe(x) + " vs " + b_.describe(y) + ": ";
      if (x->op != y->op) return differ(why, where + "ops differ");
      if (x->dtype != y->dtype)
        return differ(why, where + "dtypes differ (" + std::string(dtypeName(x->dtype)) + " vs " +
                               std::string(dtypeName(y->dtype)) + ")");
      if (x->nsrc != y->nsrc)
        return differ(why, where + "source counts differ (" + std::to_string(x->nsrc) + " vs " +
                               std::to_string(y->nsrc) + ")");
      for (uint32_t i = 0; i < x->nsrc; ++i)
        if (!bind(x->srcs[i], y->srcs[i]))
          return differ(why, where + "source " + std::to_string(i) + " differs (" + a_.describe(x->srcs[i]) +
                                 " vs " + b_.describe(y->srcs[i]) + ")");
      std::string what;
      if (!sameArg(x->arg, y->arg, what)) return differ(why, where + "args differ" + what);
      if (!sameArg(x->tag, y->tag, what)) return differ(why, where + "tags differ" + what);
    }
    return true;
  }

private:
  const Graph &a_, &b_;
  NodeMap<const UOp *> ab_{nullptr}, ba_{nullptr};
  std::vector<std::pair<const UOp *, const UOp *>> work_;
  std::unordered_map<const Arg *, const Arg *> argAB_, argBA_;

  static bool differ(std::string &why, std::string msg) {
    why = std::move(msg);
    return false;
  }

  /// Pairs x (in a) with y (in b); false when either is already paired with another node.
  bool bind(const UOp *x, const UOp *y) {
    const UOp *&m = ab_[x];
    const UOp *&n = ba_[y];
    if (m || n) return m == y && n == x;
    m = y;
    n = x;
    work_.push_back({x, y});
    return true;
  }

  bool sameArg(const Arg *x, const Arg *y, std::string &what) {
    std::vector<std::pair<const Arg *, const Arg *>> st{{x, y}};
    while (!st.empty()) {
      auto [p, q] = st.back();
      st.pop_back();
      if (!p || !q) {
        if (p != q) return what = (p ? " (value vs None)" : " (None vs value)"), false;
        continue;
      }
      auto itp = argAB_.find(p);
      auto itq = argBA_.find(q);
      if (itp != argAB_.end() || itq != argBA_.end()) {
        if (itp != argAB_.end() && itq != argBA_.end() && itp->second == q && itq->second == p) continue;
        // p or q was already matched with something else: since args are interned, structurally
        // different
        return what = "", false;
      }
      if (p->kind != q->kind) return what = " (" + argKindName(p->kind) + " vs " + argKindName(q->kind) + ")", false;
      bool eq = p->small == q->small && p->count == q->count && p->len == q->len;
      if (eq) switch (p->kind) {
        case ArgKind::Int:
        case ArgKind::UInt:
        case ArgKind::Float: eq = p->uval == q->uval; break; // floats by bits
        case ArgKind::BigInt:
        case ArgKind::String:
        case ArgKind::Bytes: eq = p->str() == q->str(); break;
        case ArgKind::UOpRef:
          if (!bind(p->ref(), q->ref())) return what = " (references different nodes)", false;
          break;
        case ArgKind::Tuple:
          for (uint32_t i = 0; i < p->count; ++i) st.push_back({p->items[i], q->items[i]});
          break;
        case ArgKind::Record:
          eq = p->str() == q->str();
          for (uint32_t i = 0; eq && i < p->count; ++i) {
            eq = p->fieldNames[i] == q->fieldNames[i];
            st.push_back({p->items[i], q->items[i]});
          }
          break;
        default: break;
        }
      if (!eq) return what = " (" + argKindName(p->kind) + " values differ)", false;
      // Memoize only after the shallow part matched; the children pushed above are checked before we
      // return true, so a wrong memo can only arise on a path that returns false anyway.
      argAB_[p] = q;
      argBA_[q] = p;
    }
    return true;
  }
};

} // namespace

bool sameGraph(const Graph &a, const Graph &b, std::string *why) {
  std::string w;
  bool same;
  try {
    same = Comparer(a, b).run(w);
  } catch (const std::bad_alloc &) {
    fail("out of memory comparing graphs");
  }
  if (!same && why) *why = std::move(w);
  return same;
}

} // namespace uopc

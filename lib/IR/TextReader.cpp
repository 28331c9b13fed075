//===- TextReader.cpp - reads the text form of the IR (IR/AsmPrinter.h) ---===//
// Two passes over the text. The first finds the kernel regions (`kernel @name { ... }`), the header's
// document fields and the kernels each region calls: kernels print in the order their CALLs print, so a
// kernel may call one printed after it. The second builds the regions callees first (a CALL's body must
// exist before the CALL is made: nodes are immutable and hash-consed), then the top level. A region is its
// lines in order, so nothing recurses on the graph; only an arg's nesting (at most ReadLimits::maxArgDepth)
// is parsed recursively. Args are built with the Context's arg constructors and makeRecord, as the JSON
// reader builds them, so every arg the printer writes reads back as the same interned Arg.
#include "IR/AsmSyntax.h"
#include "IR/Error.h"
#include "IR/GraphIO.h"
#include "IR/GraphIOInternal.h"
#include "IR/ProducerForms.h"
#include "IR/Records.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <new>
#include <unordered_map>
#include <unordered_set>

namespace uopc {
namespace {

using asmtext::Word;

constexpr unsigned kNumDTypes = 0
#define UOPC_DTYPE(Enum, Name, Size, Kind) +1
#include "IR/DTypes.def"
    ;

/// Name -> enum for the op and dtype of every line (a million lines are a million lookups).
struct NameTables {
  std::unordered_map<std::string_view, Op> ops;
  std::unordered_map<std::string_view, DType> dtypes;
  NameTables() {
    for (unsigned i = 0; i < kNumOps; ++i) ops.emplace(opName(static_cast<Op>(i)), static_cast<Op>(i));
    for (unsigned i = 0; i < kNumDTypes; ++i) dtypes.emplace(dtypeName(static_cast<DType>(i)), static_cast<DType>(i));
  }
  std::optional<Op> op(std::string_view s) const {
    auto it = ops.find(s);
    return it != ops.end() ? std::optional<Op>(it->second) : opFromName(s); // aliases (UNSHARD)
  }
  std::optional<DType> dtype(std::string_view s) const {
    auto it = dtypes.find(s);
    return it != dtypes.end() ? std::optional<DType>(it->second) : dtypeFromName(s);
  }
};

const NameTables &names() {
  static const NameTables t;
  return t;
}

bool isAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }

struct Tok {
  enum Kind : uint8_t { End, Newline, Comment, Word, Number, String, Id, At, Punct, Ellipsis } kind = End;
  size_t pos = 0;        ///< byte offset of its first character
  std::string_view text; ///< Word, Number, Comment (after "//"); Id: the digits; At: the name or its literal; String: the literal
  bool parenFollows = false; ///< Word: '(' right after it (a record or bytes)
  bool eqFollows = false;    ///< Word, String: '=' right after it (a record field's key, `tag=`)
  bool quoted = false;       ///< At: the name is a string literal
};

const char *describe(const Tok &t) {
  switch (t.kind) {
  case Tok::End: return "the end of the text";
  case Tok::Newline: return "the end of the line";
  case Tok::Comment: return "a comment";
  case Tok::Word: return "a word";
  case Tok::Number: return "a number";
  case Tok::String: return "a string";
  case Tok::Id: return "a node id";
  case Tok::At: return "a kernel name";
  case Tok::Punct: return "punctuation";
  case Tok::Ellipsis: return "'...'";
  }
  return "?";
}

class TextReader {
public:
  TextReader(std::string_view text, std::string_view name, const ReadLimits &limits)
      : text_(text), name_(name), lim_(limits) {}

  Graph read() {
    scanStructure();
    buildRegions();
    size_t top = regions_.size() - 1;
    g_.root = buildRegion(top);
    io::checkVariableNames(g_, name_);
    return std::move(g_);
  }

private:
  /// A region: a kernel (`kernel @name { ... }`) or the top level (always last).
  struct Region {
    std::string name;
    size_t pos = 0;      ///< its `kernel` word (the top level: its first line)
    size_t bodyPos = 0;  ///< where its lines start
    std::vector<std::pair<std::string, size_t>> calls; ///< the kernels it names, with where
    const UOp *root = nullptr;
  };

  std::string_view text_;
  std::string name_;
  const ReadLimits &lim_;
  Graph g_;
  size_t pos_ = 0;
  Tok look_;
  bool hasLook_ = false;
  std::vector<Region> regions_;
  std::unordered_map<std::string, size_t> byName_;
  std::unordered_map<uint64_t, const UOp *> ids_; ///< the region being built: %ID -> node
  bool topLevel_ = false;
  size_t nodes_ = 0;
  unsigned maxDepth_ = 0; ///< the deepest arg value of the line so far (the printer's depth: the arg is 0)

  // ---- messages -----------------------------------------------------------------------------------
  [[noreturn]] void failAt(size_t pos, const std::string &msg) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos && i < text_.size(); ++i) {
      if (text_[i] == '\n') ++line, col = 1;
      else ++col;
    }
    fail(name_ + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + msg);
  }
  [[noreturn]] void elided(size_t pos) const {
    failAt(pos, "the text elides a value here (printed with elision: long tuples, strings, bytes and source lists "
                "are cut short); print it with --print-ir-full, or dump it with --dump-dir, to read it back");
  }
  [[noreturn]] void unexpected(const Tok &t, const std::string &expected) const {
    std::string found = describe(t);
    if (t.kind == Tok::Word || t.kind == Tok::Number || t.kind == Tok::Punct) found += " " + quote(t.text, 40);
    failAt(t.pos, "expected " + expected + ", found " + found);
  }

  // ---- lexer --------------------------------------------------------------------------------------
  char at(size_t i) const { return i < text_.size() ? text_[i] : '\0'; }

  Tok lex() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\r')) ++pos_;
    Tok t;
    t.pos = pos_;
    if (pos_ >= text_.size()) return t;
    char c = text_[pos_];
    size_t start = pos_;
    if (c == '/' && at(pos_ + 1) == '/') {
      size_t e = text_.find('\n', pos_);
      if (e == std::string_view::npos) e = text_.size();
      t.kind = Tok::Comment;
      t.text = text_.substr(pos_ + 2, e - pos_ - 2);
      if (!t.text.empty() && t.text.back() == '\r') t.text.remove_suffix(1); // CRLF text
      pos_ = e;
      return t;
    }
    if (c == '\n') {
      ++pos_;
      t.kind = Tok::Newline;
      return t;
    }
    if (isAlpha(c)) {
      while (pos_ < text_.size() && (isAlpha(text_[pos_]) || isDigit(text_[pos_]) || text_[pos_] == '.' || text_[pos_] == ':'))
        ++pos_;
      t.kind = Tok::Word;
      t.text = text_.substr(start, pos_ - start);
      t.parenFollows = at(pos_) == '(';
      t.eqFollows = at(pos_) == '=';
      return t;
    }
    if (isDigit(c) || (c == '-' && (isDigit(at(pos_ + 1)) || text_.substr(pos_ + 1, 3) == "inf"))) {
      ++pos_;
      while (pos_ < text_.size()) {
        char d = text_[pos_];
        bool sign = (d == '+' || d == '-') && (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E');
        if (!(isAlpha(d) || isDigit(d) || d == '.' || sign)) break;
        ++pos_;
      }
      t.kind = Tok::Number;
      t.text = text_.substr(start, pos_ - start);
      return t;
    }
    if (c == '"') {
      t.kind = Tok::String;
      t.text = stringLiteral();
      t.eqFollows = at(pos_) == '=';
      return t;
    }
    if (c == '%') {
      ++pos_;
      while (pos_ < text_.size() && isDigit(text_[pos_])) ++pos_;
      if (pos_ == start + 1) failAt(start, "expected a node id after '%' (%0, %1, ...)");
      t.kind = Tok::Id;
      t.text = text_.substr(start + 1, pos_ - start - 1);
      return t;
    }
    if (c == '@') {
      ++pos_;
      t.kind = Tok::At;
      if (at(pos_) == '"') {
        t.quoted = true;
        t.text = stringLiteral();
        return t;
      }
      while (pos_ < text_.size() && (isAlpha(text_[pos_]) || isDigit(text_[pos_]) || text_[pos_] == '.')) ++pos_;
      if (pos_ == start + 1) failAt(start, "expected a kernel name after '@'");
      t.text = text_.substr(start + 1, pos_ - start - 1);
      return t;
    }
    if (c == '.' && text_.substr(pos_, 3) == "...") {
      pos_ += 3;
      t.kind = Tok::Ellipsis;
      return t;
    }
    if (std::string_view("=,(){}[]:").find(c) != std::string_view::npos) {
      ++pos_;
      t.kind = Tok::Punct;
      t.text = text_.substr(start, 1);
      return t;
    }
    unsigned char u = static_cast<unsigned char>(c);
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", u);
    failAt(start, std::string("unexpected character ") + (u >= 0x20 && u < 0x7f ? "'" + std::string(1, c) + "'" : buf));
  }

  /// Skips a string literal at pos_ (JSON escapes), returning it with its quotes.
  std::string_view stringLiteral() {
    size_t start = pos_++;
    while (true) {
      if (pos_ >= text_.size() || text_[pos_] == '\n') failAt(start, "unterminated string");
      char c = text_[pos_++];
      if (c == '"') break;
      if (c == '\\') {
        if (pos_ >= text_.size() || text_[pos_] == '\n') failAt(start, "unterminated string");
        ++pos_;
      }
    }
    return text_.substr(start, pos_ - start);
  }

  /// Decodes a string literal. JSON's escapes, with one addition that makes every string round-trip: the
  /// printer copies valid UTF-8 as it is and writes a byte that is not part of it as \u0080..\u00ff, so
  /// those escapes stand for that byte.
  std::string decode(const Tok &t) {
    std::string_view s = t.text.substr(1, t.text.size() - 2);
    size_t base = t.pos + 1 + (t.kind == Tok::At ? 1 : 0);
    std::string out;
    auto hex4 = [&](size_t i) -> uint32_t {
      uint32_t v = 0;
      for (size_t k = 0; k < 4; ++k) {
        char c = i + k < s.size() ? s[i + k] : '\0';
        int d = isDigit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
        if (d < 0) failAt(base + i - 2, "bad \\u escape (expected four hex digits)");
        v = v * 16 + static_cast<uint32_t>(d);
      }
      return v;
    };
    auto utf8 = [&](uint32_t cp) {
      if (cp < 0x80) out += static_cast<char>(cp);
      else if (cp < 0x800) out += static_cast<char>(0xC0 | cp >> 6), out += static_cast<char>(0x80 | (cp & 63));
      else if (cp < 0x10000)
        out += static_cast<char>(0xE0 | cp >> 12), out += static_cast<char>(0x80 | ((cp >> 6) & 63)),
            out += static_cast<char>(0x80 | (cp & 63));
      else
        out += static_cast<char>(0xF0 | cp >> 18), out += static_cast<char>(0x80 | ((cp >> 12) & 63)),
            out += static_cast<char>(0x80 | ((cp >> 6) & 63)), out += static_cast<char>(0x80 | (cp & 63));
    };
    for (size_t i = 0; i < s.size();) {
      unsigned char c = static_cast<unsigned char>(s[i]);
      if (c < 0x20) failAt(base + i, "a control character in a string (write it as an escape)");
      if (c != '\\') {
        out += s[i++];
        continue;
      }
      char e = s[i + 1];
      i += 2;
      switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        uint32_t cp = hex4(i);
        i += 4;
        if (cp >= 0x80 && cp <= 0xFF) {
          out += static_cast<char>(cp); // a raw byte (see above)
          break;
        }
        if (cp >= 0xD800 && cp <= 0xDBFF && i + 1 < s.size() && s[i] == '\\' && s[i + 1] == 'u') {
          uint32_t lo = hex4(i + 2);
          if (lo >= 0xDC00 && lo <= 0xDFFF) {
            i += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
        }
        if (cp >= 0xD800 && cp <= 0xDFFF) failAt(base + i - 6, "a lone surrogate in a \\u escape");
        utf8(cp);
        break;
      }
      default: failAt(base + i - 2, std::string("bad escape '\\") + e + "' in a string");
      }
    }
    return out;
  }

  Tok next() {
    if (hasLook_) {
      hasLook_ = false;
      return look_;
    }
    Tok t;
    do t = lex();
    while (t.kind == Tok::Comment);
    return t;
  }
  const Tok &peek() {
    if (!hasLook_) {
      look_ = next();
      hasLook_ = true;
    }
    return look_;
  }
  bool isPunct(const Tok &t, char c) const { return t.kind == Tok::Punct && t.text[0] == c; }
  void expectPunct(char c, const std::string &what) {
    Tok t = next();
    if (!isPunct(t, c)) unexpected(t, what);
  }
  // ---- pass 1: the regions and the header ---------------------------------------------------------
  /// The header the printer writes first: `// N nodes[, K kernels (M nodes)]; pad_fill=P[; stage=S]`, and
  /// (AsmOptions::full) `// producer {...}`. Other comments are for people.
  void headerComment(const Tok &t) {
    std::string_view c = t.text;
    if (c.substr(0, 1) == " " && c.size() > 1 && isDigit(c[1])) {
      size_t i = 1;
      while (i < c.size() && isDigit(c[i])) ++i;
      if (c.substr(i, 5) != " node") return;
      for (size_t p = c.find("; ", i); p != std::string_view::npos; p = c.find("; ", p + 2)) {
        std::string_view f = c.substr(p + 2);
        if (f.substr(0, 9) == "pad_fill=") {
          std::string_view v = f.substr(9, f.find(';') == std::string_view::npos ? std::string_view::npos : f.find(';') - 9);
          if (v == "zero") g_.padFill = PadFill::Zero;
          else if (v == "invalid") g_.padFill = PadFill::Invalid;
          else failAt(t.pos + 2 + p + 2 + 9, "pad_fill must be zero or invalid, not " + quote(v, 40));
        } else if (f.substr(0, 6) == "stage=") {
          // the last field: the rest of the line, quoted unless plain (asmtext::plainStage)
          std::string_view v = f.substr(6);
          while (!v.empty() && (v.back() == ' ' || v.back() == '\r')) v.remove_suffix(1);
          size_t vpos = t.pos + 2 + p + 2 + 6;
          if (!v.empty() && v[0] == '"') {
            size_t save = pos_;
            pos_ = vpos;
            Tok s{};
            s.kind = Tok::String;
            s.pos = vpos;
            s.text = stringLiteral();
            if (pos_ != vpos + v.size()) failAt(pos_, "unexpected text after the stage");
            pos_ = save;
            g_.stage = decode(s);
          } else {
            g_.stage = std::string(v);
          }
          break;
        }
      }
      return;
    }
    if (c.substr(0, 10) == " producer ") {
      std::string_view j = c.substr(10);
      while (!j.empty() && (j.back() == ' ' || j.back() == '\r')) j.remove_suffix(1);
      if (j.empty() || j[0] != '{' || !nlohmann::json::accept(j))
        failAt(t.pos + 12, "the producer must be a JSON object on one line");
      g_.producerJson = std::string(j);
    }
  }

  /// Scans the tokens of one line up to its end, noting the kernels it names.
  void scanLine(Region &r) {
    while (true) {
      Tok t = lex();
      if (t.kind == Tok::Newline || t.kind == Tok::End) return;
      if (t.kind == Tok::At) r.calls.push_back({t.quoted ? decode(t) : std::string(t.text), t.pos});
    }
  }

  void scanStructure() {
    bool content = false;
    Region top;
    top.pos = std::string_view::npos;
    while (true) {
      Tok t = lex();
      if (t.kind == Tok::End) break;
      if (t.kind == Tok::Newline) continue;
      if (t.kind == Tok::Comment) {
        if (t.text.substr(0, 22) == " -----// IR dump after") {
          if (content)
            failAt(t.pos, "a second graph starts here (the text holds several dumps): put one graph in a file");
        } else if (!content) {
          headerComment(t);
        }
        continue;
      }
      if (t.kind == Tok::Word && t.text == "kernel") {
        if (top.pos != std::string_view::npos)
          failAt(t.pos, "a kernel after the top level's first line (every kernel comes before the top-level graph)");
        content = true;
        Region r;
        r.pos = t.pos;
        Tok n = lex();
        if (n.kind != Tok::At) unexpected(n, "the kernel's name (kernel @name {)");
        r.name = n.quoted ? decode(n) : std::string(n.text);
        if (byName_.count(r.name)) failAt(n.pos, "kernel @" + r.name + " is defined twice");
        Tok b = lex();
        if (!isPunct(b, '{')) unexpected(b, "'{' after the kernel's name");
        Tok e = lex();
        if (e.kind == Tok::Comment) e = lex();
        if (e.kind != Tok::Newline) unexpected(e, "the end of the line after '{'");
        r.bodyPos = pos_;
        while (true) {
          size_t lineStart = pos_;
          Tok f = lex();
          while (f.kind == Tok::Comment) f = lex();
          if (f.kind == Tok::End) failAt(r.pos, "kernel @" + r.name + " is not closed (no '}' line)");
          if (f.kind == Tok::Newline) continue;
          if (isPunct(f, '}')) break;
          pos_ = lineStart;
          scanLine(r);
        }
        byName_[r.name] = regions_.size();
        regions_.push_back(std::move(r));
        continue;
      }
      if (t.kind == Tok::Id) {
        if (top.pos == std::string_view::npos) top.pos = top.bodyPos = t.pos;
        content = true;
        scanLine(top);
        continue;
      }
      if (isPunct(t, '}')) failAt(t.pos, "a '}' outside a kernel");
      unexpected(t, "a node line (%ID = OP ...) or a kernel (kernel @name {)");
    }
    if (top.pos == std::string_view::npos) {
      if (!content) fail(name_ + ": the text holds no graph (no node lines)");
      failAt(text_.size(), "the text has no top-level graph (its lines come after the kernels)");
    }
    regions_.push_back(std::move(top));
  }

  // ---- pass 2: nodes --------------------------------------------------------------------------------
  /// Builds every kernel, callees before their callers (Kahn's algorithm: no recursion on call depth).
  void buildRegions() {
    size_t nk = regions_.size() - 1;
    std::vector<std::vector<size_t>> callers(nk);
    std::vector<size_t> waiting(nk, 0);
    for (size_t r = 0; r < regions_.size(); ++r) {
      std::unordered_set<size_t> seen;
      for (auto &[callee, pos] : regions_[r].calls) {
        auto it = byName_.find(callee);
        if (it == byName_.end()) failAt(pos, "kernel @" + callee + " is not defined (no kernel @" + callee + " { ... })");
        if (r == nk || !seen.insert(it->second).second) continue;
        callers[it->second].push_back(r);
        ++waiting[r];
      }
    }
    std::vector<size_t> ready;
    for (size_t r = 0; r < nk; ++r)
      if (!waiting[r]) ready.push_back(r);
    size_t built = 0;
    while (!ready.empty()) {
      size_t r = ready.back();
      ready.pop_back();
      regions_[r].root = buildRegion(r);
      ++built;
      for (size_t c : callers[r])
        if (--waiting[c] == 0) ready.push_back(c);
    }
    if (built < nk)
      for (size_t r = 0; r < nk; ++r)
        if (waiting[r])
          failAt(regions_[r].pos, "kernel @" + regions_[r].name + " calls itself (directly or through other kernels)");
  }

  const UOp *buildRegion(size_t r) {
    Region &reg = regions_[r];
    topLevel_ = r + 1 == regions_.size();
    pos_ = reg.bodyPos;
    hasLook_ = false;
    ids_.clear();
    const UOp *last = nullptr;
    while (true) {
      Tok t = next();
      if (t.kind == Tok::Newline) continue;
      if (t.kind == Tok::End || (!topLevel_ && isPunct(t, '}'))) break;
      if (t.kind != Tok::Id) unexpected(t, "a node line (%ID = OP ...)");
      last = parseLine(t);
    }
    if (!last) failAt(reg.pos, "kernel @" + reg.name + " has no node lines");
    return last; // the region's root is its last line
  }

  uint64_t idOf(const Tok &t) {
    uint64_t v = 0;
    auto res = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (res.ec != std::errc()) failAt(t.pos, "node id %" + std::string(t.text) + " is too large");
    return v;
  }
  const UOp *node(const Tok &t) {
    auto it = ids_.find(idOf(t));
    if (it == ids_.end())
      failAt(t.pos, "%" + std::string(t.text) + " is not defined before this line (a region's lines are in "
                    "topological order; each region numbers its own nodes)");
    return it->second;
  }

  const UOp *parseLine(const Tok &idTok) {
    uint64_t id = idOf(idTok);
    if (ids_.count(id)) failAt(idTok.pos, "%" + std::string(idTok.text) + " is defined twice in this region");
    if (++nodes_ > lim_.maxNodes) failAt(idTok.pos, "too many nodes (the limit is " + std::to_string(lim_.maxNodes) + ")");
    expectPunct('=', "'=' after the node's id");
    Tok opTok = next();
    if (opTok.kind != Tok::Word) unexpected(opTok, "an op name");
    std::optional<Op> op = names().op(opTok.text);
    if (!op) failAt(opTok.pos, "unknown op " + quote(opTok.text, 60));
    // `[ARG...] [SOURCES]`: arg items are separated by spaces, sources by commas; a bare %ID or @name at this
    // level is always a source (the printer parenthesizes an arg that holds a reference).
    std::vector<const Arg *> items;
    std::vector<const UOp *> srcs;
    maxDepth_ = 0;
    while (true) {
      Tok t = next();
      if (isPunct(t, ':')) break;
      if (!srcs.empty()) {
        if (t.kind == Tok::Ellipsis) elided(t.pos);
        if (!isPunct(t, ',')) unexpected(t, "',' or ':' after a source");
        t = next();
        if (t.kind == Tok::Ellipsis) elided(t.pos);
        if (t.kind != Tok::Id && t.kind != Tok::At) unexpected(t, "a source (%ID)");
      }
      if (t.kind == Tok::At) {
        if (*op != Op::CALL || !srcs.empty())
          failAt(t.pos, "@" + std::string(t.text) + " names a kernel, which only a CALL's first source does");
        std::string n = t.quoted ? decode(t) : std::string(t.text);
        srcs.push_back(regions_[byName_.at(n)].root); // pass 1 checked that it exists, pass 2 built it first
        continue;
      }
      if (t.kind == Tok::Id) {
        if (*op == Op::CALL && srcs.empty())
          failAt(t.pos, "a CALL's first source is its body, written @name (kernel @name { ... })");
        if (srcs.size() >= lim_.maxSrcs) failAt(t.pos, "more than " + std::to_string(lim_.maxSrcs) + " sources");
        srcs.push_back(node(t));
        continue;
      }
      if (t.kind == Tok::Newline || t.kind == Tok::End) unexpected(t, "': DTYPE' (every line ends with its dtype)");
      if (items.size() >= lim_.maxArgItems) failAt(t.pos, "more than " + std::to_string(lim_.maxArgItems) + " arg items");
      items.push_back(value(t, 0, Word::None));
    }
    // several items are the elements of the arg tuple, one level down: the printer's limit holds for them too
    if (items.size() >= 2 && maxDepth_ + 1 > lim_.maxArgDepth)
      failAt(opTok.pos, "arg nested too deep (over " + std::to_string(lim_.maxArgDepth) + " levels)");
    const Arg *arg = items.empty() ? nullptr : items.size() == 1 ? items[0] : g_.ctx->argTuple(items);
    Tok dt = next();
    if (dt.kind != Tok::Word) unexpected(dt, "a dtype after ':'");
    std::optional<DType> dtype = names().dtype(dt.text);
    if (!dtype) failAt(dt.pos, "unknown dtype " + quote(dt.text, 60));
    // `[shape ...]`, `[device ...]`: informational (the shape and device follow from the graph); `tag=T`.
    const Arg *tag = nullptr;
    while (true) {
      Tok t = next();
      if (t.kind == Tok::Newline || t.kind == Tok::End) break;
      if (isPunct(t, '[')) {
        skipAnnotation(t);
        continue;
      }
      if (t.kind == Tok::Word && t.text == "tag" && t.eqFollows && !tag) {
        next(); // '='
        tag = value(next(), 0, Word::None);
        continue;
      }
      unexpected(t, "[shape ...], [device ...], tag=... or the end of the line");
    }
    const UOp *u = g_.ctx->make(*op, *dtype, srcs, arg, tag);
    ids_[id] = u;
    if (topLevel_ && id < UINT32_MAX && g_.inputIds.get(u) == UINT32_MAX) g_.inputIds[u] = static_cast<uint32_t>(id);
    return u;
  }

  void skipAnnotation(const Tok &open) {
    size_t depth = 1;
    while (depth) {
      Tok t = next();
      if (t.kind == Tok::Newline || t.kind == Tok::End) failAt(open.pos, "'[' without its ']' on the line");
      if (isPunct(t, '[')) ++depth;
      else if (isPunct(t, ']')) --depth;
    }
  }

  // ---- args ---------------------------------------------------------------------------------------
  const Arg *value(const Tok &t, unsigned depth, Word prefer) {
    Context &c = *g_.ctx;
    // the printer's depth (AsmPrinter.cpp: the node's arg is 0, a tuple's or a record's elements one more),
    // so that what reads back is what prints in full
    if (depth > lim_.maxArgDepth)
      failAt(t.pos, "arg nested too deep (over " + std::to_string(lim_.maxArgDepth) + " levels)");
    maxDepth_ = std::max(maxDepth_, depth);
    switch (t.kind) {
    case Tok::Number: return number(t);
    case Tok::String: {
      const Arg *a = c.argString(decode(t));
      if (peek().kind == Tok::Ellipsis) elided(peek().pos); // "abc"... (102 bytes)
      return a;
    }
    case Tok::Ellipsis: elided(t.pos);
    case Tok::Id: return c.argRef(node(t));
    case Tok::Word: {
      if (t.parenFollows) return t.text == "bytes" ? bytes(t) : record(t, depth);
      std::string_view w = t.text;
      auto strip = [&](std::string_view p) { return w.substr(0, p.size()) == p ? w.substr(p.size()) : w; };
      switch (asmtext::classifyWord(w, prefer)) {
      case Word::None: return nullptr;
      case Word::True: return c.argBool(true);
      case Word::False: return c.argBool(false);
      case Word::Invalid: return c.argInvalid();
      case Word::Inf: return c.argFloat(std::numeric_limits<double>::infinity());
      case Word::Nan: return c.argFloat(std::numeric_limits<double>::quiet_NaN());
      case Word::AxisType: return c.argAxisType(*axisTypeFromName(strip(asmtext::kAxisTypePrefix)));
      case Word::AddrSpace: return c.argAddrSpace(*addrSpaceFromName(strip(asmtext::kAddrSpacePrefix)));
      case Word::Op: return c.argOp(*names().op(strip(asmtext::kOpsPrefix)));
      case Word::DType: return c.argDType(*names().dtype(strip(asmtext::kDTypePrefix)));
      case Word::String: return c.argString(w);
      }
      return nullptr;
    }
    case Tok::Punct:
      if (t.text[0] == '(') return tuple(t, depth);
      break;
    default: break;
    }
    unexpected(t, "an arg value");
  }

  const Arg *number(const Tok &t) {
    std::string_view s = t.text;
    if (s.find_first_of(".eEn") != std::string_view::npos) {
      std::optional<double> d = io::parsePyFloat(s);
      if (!d) failAt(t.pos, "bad number " + quote(s, 40) + " (a float as Python writes it: 2.0, 1e-05, -inf)");
      return g_.ctx->argFloat(*d);
    }
    if (!io::validBigInt(s)) failAt(t.pos, "bad number " + quote(s, 40));
    return io::intArgFromDecimal(*g_.ctx, s);
  }

  /// `()`, `(a,)`, `(a, b)`; `(a)` is a itself (the printer writes a node's own reference arg so).
  const Arg *tuple(const Tok &open, unsigned depth) {
    std::vector<const Arg *> elems;
    Tok t = next();
    if (isPunct(t, ')')) return g_.ctx->argTuple(elems);
    const Arg *first = value(t, depth + 1, Word::None);
    t = next();
    if (isPunct(t, ')')) return first;
    elems.push_back(first);
    while (true) {
      if (t.kind == Tok::Ellipsis) elided(t.pos);
      if (!isPunct(t, ',')) unexpected(t, "',' or ')' in a tuple");
      t = next();
      if (isPunct(t, ')')) break;
      if (elems.size() >= lim_.maxArgItems)
        failAt(t.pos, "tuple has more than " + std::to_string(lim_.maxArgItems) + " items");
      elems.push_back(value(t, depth + 1, Word::None));
      t = next();
      if (isPunct(t, ')')) break;
    }
    (void)open;
    return g_.ctx->argTuple(elems);
  }

  /// `bytes(N: hex)`, `bytes(0)`.
  const Arg *bytes(const Tok &word) {
    expectPunct('(', "'('");
    Tok n = next();
    uint64_t len = 0;
    if (n.kind != Tok::Number || std::from_chars(n.text.data(), n.text.data() + n.text.size(), len).ptr !=
                                     n.text.data() + n.text.size())
      unexpected(n, "the length of the bytes");
    std::string raw;
    if (len) {
      expectPunct(':', "':' after the length of the bytes");
      while (at(pos_) == ' ') ++pos_;
      auto hex = [](char c) { return isDigit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1; };
      while (hex(at(pos_)) >= 0 && hex(at(pos_ + 1)) >= 0) {
        raw += static_cast<char>(hex(at(pos_)) * 16 + hex(at(pos_ + 1)));
        pos_ += 2;
      }
      if (text_.substr(pos_, 3) == "...") elided(pos_);
      if (raw.size() != len)
        failAt(word.pos, "bytes(" + std::to_string(len) + ": ...) holds " + std::to_string(raw.size()) + " bytes");
    }
    expectPunct(')', "')' after the bytes");
    return g_.ctx->argBytes(raw);
  }

  /// `Class(key=value, ...)`; ParamArg and BufferizeOpts also take their dtype and device without a key.
  const Arg *record(const Tok &cls, unsigned depth) {
    bool ident = cls.text[0] >= 'A' && cls.text[0] <= 'Z' && asmtext::identifier(cls.text);
    if (!ident) failAt(cls.pos, "unknown arg form " + quote(cls.text, 40) + "(...) (a dataclass name starts with a capital)");
    bool positional = cls.text == "ParamArg" || cls.text == "BufferizeOpts";
    expectPunct('(', "'('");
    std::vector<std::string> keys;
    std::vector<const Arg *> vals;
    Tok t = next();
    while (!isPunct(t, ')')) {
      std::string key;
      size_t keyPos = t.pos;
      const Arg *v;
      if ((t.kind == Tok::Word || t.kind == Tok::String) && t.eqFollows) {
        key = t.kind == Tok::Word ? std::string(t.text) : decode(t);
        next(); // '='
        v = value(next(), depth + 1, asmtext::preferFor(key));
      } else if (positional) {
        v = value(t, depth + 1, Word::None);
        key = v && v->kind == ArgKind::DType ? "dtype" : "device";
      } else {
        unexpected(t, "a field (key=value) of " + std::string(cls.text));
      }
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) failAt(keyPos, "field " + quote(key, 40) + " given twice");
      if (keys.size() >= io::kMaxRecordFields) failAt(keyPos, "a record has more than " + std::to_string(io::kMaxRecordFields) + " fields");
      keys.push_back(std::move(key));
      vals.push_back(v);
      t = next();
      if (isPunct(t, ')')) break;
      if (!isPunct(t, ',')) unexpected(t, "',' or ')' in " + std::string(cls.text) + "(...)");
      t = next();
    }
    std::vector<std::pair<std::string_view, const Arg *>> fields;
    for (size_t i = 0; i < keys.size(); ++i) fields.push_back({keys[i], vals[i]});
    try {
      return makeRecord(*g_.ctx, cls.text, std::move(fields));
    } catch (const Error &e) {
      failAt(cls.pos, e.what());
    }
  }
};

} // namespace

bool looksText(std::string_view bytes) {
  size_t i = bytes.find_first_not_of(" \t\r\n");
  if (i == std::string_view::npos) return false;
  std::string_view s = bytes.substr(i);
  return s.substr(0, 2) == "//" || s[0] == '%' || s.substr(0, 8) == "kernel @";
}

Graph readGraphText(std::string_view text, std::string_view name, const ReadLimits &limits) {
  std::string nm(name);
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) fail(nm + ": empty input (expected a uopc graph)");
  try {
    Graph g = TextReader(text, name, limits).read();
    // as the JSON and binary readers do: one form for every pass (a weak constant inside a typed op, written
    // by hand or left by a producer, commits to its operand's dtype here, not at a later re-read)
    if (limits.producerForms) normalizeProducerForms(g, nm);
    return g;
  } catch (const Error &) {
    throw;
  } catch (const std::bad_alloc &) {
    fail(nm + ": out of memory while reading the graph");
  } catch (const std::length_error &) {
    fail(nm + ": out of memory while reading the graph");
  } catch (const std::exception &e) {
    fail(nm + ": internal error while reading the graph: " + e.what());
  }
}

} // namespace uopc

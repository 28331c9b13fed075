//===- AsmPrinter.cpp - the readable text form of the IR -------------------===//
// Regions are found by one iterative walk per region (no recursion on graph depth); args nest at most
// ReadLimits::maxArgDepth deep, and the printer stops spelling them out below kMaxArgDepth.
#include "IR/AsmPrinter.h"

#include "IR/AsmSyntax.h"
#include "IR/Error.h"
#include "IR/GraphIOInternal.h"
#include "IR/Shape.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <set>
#include <optional>
#include <unordered_map>

namespace uopc {
namespace {

using asmtext::Word;

constexpr unsigned kMaxArgDepth = 64;

/// A node's args and tags may refer to other nodes: they come after its sources in the walk (as in
/// io::writeOrder), so that every node an arg names has an id in the region.
void collectRefs(const Arg *a, std::vector<const UOp *> &out) {
  if (!a || !a->hasRef) return;
  std::vector<const Arg *> stack{a};
  while (!stack.empty()) {
    const Arg *x = stack.back();
    stack.pop_back();
    if (!x || !x->hasRef) continue;
    if (x->kind == ArgKind::UOpRef) {
      out.push_back(x->ref());
      continue;
    }
    // reversed, so that refs come out in element order
    for (size_t i = x->count; i-- > 0;) stack.push_back(x->items[i]);
  }
}

std::string recordString(const Arg *a, std::string_view field) {
  const Arg *f = a && a->kind == ArgKind::Record ? a->field(field) : nullptr;
  return f && f->kind == ArgKind::String ? std::string(f->str()) : std::string();
}

} // namespace

struct AsmPrinter::Impl {
  const Graph &g;
  AsmOptions opts;
  ShapeInfo shapes;
  // Nodes whose shape or device inference threw (forms ShapeInfo does not know, such as a copy kernel's
  // COPY): a node with such a source is not asked either, so that a long chain above a failure costs
  // O(chain), not O(chain^2) re-walks.
  NodeMap<uint8_t> failed{0}; // bit 0: shape, bit 1: device
  std::unordered_map<const UOp *, int> regionOfBody;
  std::vector<size_t> callCount; ///< per region: the CALL nodes naming it
  // the entered region's numbering: (generation, id)
  NodeMap<std::pair<uint32_t, uint32_t>> ids{{0, 0}};
  uint32_t gen = 0;

  Impl(const Graph &g, AsmOptions o) : g(g), opts(o), shapes(g) {}

  int64_t id(const UOp *u) const {
    auto p = ids.get(u);
    return p.first == gen && gen != 0 ? int64_t(p.second) : -1;
  }

  /// A string, bare when it reads back as this string (not as a name or a keyword: `"ADD"`, `"None"`).
  void string(std::string &out, std::string_view s, bool allowBare, Word prefer = Word::None) {
    if (allowBare && s.size() <= opts.maxStringBytes && asmtext::bareWord(s) &&
        asmtext::classifyWord(s, prefer) == Word::String) {
      out += s;
      return;
    }
    if (s.size() <= opts.maxStringBytes) {
      io::appendJsonString(out, s);
      return;
    }
    size_t keep = std::min<size_t>(64, opts.maxStringBytes);
    while (keep > 0 && (static_cast<unsigned char>(s[keep]) & 0xC0) == 0x80) --keep; // not inside a UTF-8 char
    io::appendJsonString(out, s.substr(0, keep));
    out += "... (" + std::to_string(s.size()) + " bytes)";
  }

  /// A name of `kind`, bare when it reads back as one (`GLOBAL`), else with its kind (`AddrSpace.GLOBAL`).
  static void name(std::string &out, std::string_view n, Word kind, std::string_view prefix, Word prefer) {
    if (asmtext::classifyWord(n, prefer) != kind) out += prefix;
    out += n;
  }

  /// Appends the readable form of `a` (None for null). `top`: the node's own arg, whose tuple elements are
  /// written without parentheses, separated by spaces (`RANGE 0 LOOP`) where that reads back unambiguously.
  /// `prefer`: how the enclosing record field resolves a shared name (asmtext::preferFor).
  void arg(std::string &out, const Arg *a, unsigned depth, bool top, Word prefer = Word::None) {
    if (!a) {
      out += "None";
      return;
    }
    if (depth > kMaxArgDepth) {
      out += "...";
      return;
    }
    switch (a->kind) {
    case ArgKind::Bool: out += a->b() ? "True" : "False"; return;
    case ArgKind::Int: out += std::to_string(a->i()); return;
    case ArgKind::UInt: out += std::to_string(a->u()); return;
    case ArgKind::BigInt: out += a->str(); return;
    case ArgKind::Float: {
      char b[40];
      out.append(b, io::pyFloatRepr(a->f(), b));
      return;
    }
    case ArgKind::String: string(out, a->str(), true, prefer); return;
    case ArgKind::Invalid: out += "Invalid"; return;
    case ArgKind::OpName: name(out, opName(a->op()), Word::Op, asmtext::kOpsPrefix, prefer); return;
    case ArgKind::AxisType: name(out, axisTypeName(a->axisType()), Word::AxisType, asmtext::kAxisTypePrefix, prefer); return;
    case ArgKind::AddrSpace: name(out, addrSpaceName(a->addrSpace()), Word::AddrSpace, asmtext::kAddrSpacePrefix, prefer); return;
    case ArgKind::DType: name(out, dtypeName(a->dtype()), Word::DType, asmtext::kDTypePrefix, prefer); return;
    case ArgKind::UOpRef: {
      // The node's own arg in parentheses: a bare %ID there would read as its first source.
      int64_t i = id(a->ref());
      if (top) out += '(';
      out += i >= 0 ? "%" + std::to_string(i) : std::string("%?");
      if (top) out += ')';
      return;
    }
    case ArgKind::Bytes: {
      static const char hex[] = "0123456789abcdef";
      std::string_view s = a->str();
      out += "bytes(" + std::to_string(s.size());
      if (!s.empty()) out += ": ";
      for (size_t i = 0; i < s.size() && i < opts.maxBytes; ++i) {
        out += hex[static_cast<unsigned char>(s[i]) >> 4];
        out += hex[static_cast<unsigned char>(s[i]) & 15];
      }
      if (s.size() > opts.maxBytes) out += "...";
      out += ')';
      return;
    }
    case ArgKind::Tuple: {
      size_t n = a->count, shown = n > opts.maxTupleItems ? std::min<size_t>(8, opts.maxTupleItems) : n;
      if (top && n == 0) {
        out += "()";
        return;
      }
      // Spelled as a Python tuple where the bare form would read back as something else: one element (`5`
      // is the int, `(5,)` the tuple) or a reference among them (`%3` reads as a source).
      if (top && n == 1) top = false;
      for (size_t i = 0; top && i < n; ++i)
        if (a->items[i] && a->items[i]->kind == ArgKind::UOpRef) top = false;
      if (!top) out += '(';
      for (size_t i = 0; i < shown; ++i) {
        if (i) out += top ? " " : ", ";
        arg(out, a->items[i], depth + 1, false, prefer);
      }
      if (shown < n) out += (shown ? (top ? " " : ", ") : "") + std::string("...(") + std::to_string(n - shown) + " more)";
      else if (!top && n == 1) out += ',';
      if (!top) out += ')';
      return;
    }
    case ArgKind::Record: {
      std::string_view cls = a->str();
      out += cls;
      out += '(';
      for (uint32_t i = 0; i < a->count; ++i) {
        if (i) out += ", ";
        std::string_view k = a->fieldNames[i];
        const Arg *v = a->items[i];
        // ParamArg(slot=1, float32, CPU): the dtype and the device need no key (the reader tells them apart
        // by the value: a DType is the dtype, anything else the device)
        bool isDType = v && v->kind == ArgKind::DType;
        bool positional = (cls == "ParamArg" || cls == "BufferizeOpts") &&
                          ((k == "dtype" && isDType) || (k == "device" && !isDType));
        if (!positional) {
          if (asmtext::identifier(k)) out += k;
          else io::appendJsonString(out, k);
          out += '=';
        }
        arg(out, v, depth + 1, false, asmtext::preferFor(k));
      }
      out += ')';
      return;
    }
    }
    out += "?";
  }

  std::string dim(const UOp *d) {
    if (auto c = ShapeInfo::constDim(d)) return std::to_string(*c);
    if (d->op == Op::PARAM) {
      std::string n = recordString(d->arg, "name");
      if (!n.empty()) return n;
    }
    int64_t i = id(d);
    return i >= 0 ? "%" + std::to_string(i) : std::string("?");
  }
};

AsmPrinter::AsmPrinter(const Graph &g, const UOp *root, AsmOptions opts) : impl_(std::make_unique<Impl>(g, opts)) {
  if (!root) fail("cannot print a graph without a root");
  // One walk per region, sources first; a CALL's body is not entered but queued as a region of its own.
  NodeMap<uint32_t> seen{0}; // region index + 1 that visited the node
  std::set<std::string> used; // region names
  std::vector<std::pair<const UOp *, const UOp *>> queue; // (body, first CALL naming it)
  auto regionName = [&](const UOp *body, const UOp *call) {
    bool kernel = body->op == Op::SINK || body->op == Op::LINEAR; // (a linearized kernel: LINEAR[KernelInfo])
    std::string n = kernel ? recordString(body->arg, "name") : "";
    if (n.empty() && kernel && body->arg && body->arg->kind == ArgKind::Record &&
        body->arg->str() == "KernelInfo")
      n = "test"; // KernelInfo's default name
    if (n.empty()) n = recordString(call->arg, "name");
    if (n.empty()) { // a function that is not a kernel SINK (a copy): named after its op, "copy"
      for (char c : opName(body->op)) n += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    std::string unique = n;
    for (int k = 1; used.count(unique); ++k) unique = n + "." + std::to_string(k);
    used.insert(unique);
    return unique;
  };
  std::vector<AsmRegion> found;
  auto walk = [&](AsmRegion &r, uint32_t stamp) {
    struct Frame {
      const UOp *u;
      uint32_t next;
      std::vector<const UOp *> refs;
      size_t nextRef;
      bool refsDone;
    };
    std::vector<Frame> stack;
    stack.push_back({r.root, 0, {}, 0, false});
    seen[r.root] = stamp;
    while (!stack.empty()) {
      Frame &f = stack.back();
      const UOp *next = nullptr;
      while (!next && f.next < f.u->nsrc) {
        uint32_t i = f.next++;
        const UOp *s = f.u->srcs[i];
        if (f.u->op == Op::CALL && i == 0) continue; // the body: a region of its own
        if (seen.get(s) != stamp) next = s;
      }
      if (!next) {
        if (!f.refsDone) {
          collectRefs(f.u->arg, f.refs);
          collectRefs(f.u->tag, f.refs);
          f.refsDone = true;
        }
        while (!next && f.nextRef < f.refs.size()) {
          const UOp *s = f.refs[f.nextRef++];
          if (seen.get(s) != stamp) next = s;
        }
      }
      if (next) {
        seen[next] = stamp;
        stack.push_back({next, 0, {}, 0, false}); // invalidates f
        continue;
      }
      // kernels in the order their CALLs print
      if (f.u->op == Op::CALL && f.u->nsrc && impl_->regionOfBody.try_emplace(f.u->src(0), -1).second)
        queue.push_back({f.u->src(0), f.u});
      r.nodes.push_back(f.u);
      stack.pop_back();
    }
  };
  AsmRegion top;
  top.root = root;
  uint32_t stamp = 1;
  walk(top, stamp++);
  // Kernel regions breadth-first: those the top level calls, in order, then those they call.
  for (size_t qi = 0; qi < queue.size(); ++qi) {
    auto [body, call] = queue[qi];
    AsmRegion r;
    r.root = body;
    r.isKernel = true;
    r.name = regionName(body, call);
    impl_->regionOfBody[body] = static_cast<int>(found.size());
    walk(r, stamp++);
    found.push_back(std::move(r));
  }
  found.push_back(std::move(top));
  regions_ = std::move(found);
  // How many distinct CALLs name each region.
  impl_->callCount.assign(regions_.size(), 0);
  for (const AsmRegion &r : regions_)
    for (const UOp *u : r.nodes)
      if (u->op == Op::CALL && u->nsrc) impl_->callCount[size_t(regionOf(u->src(0)))]++;
}

AsmPrinter::~AsmPrinter() = default;

int AsmPrinter::regionOf(const UOp *body) const {
  auto it = impl_->regionOfBody.find(body);
  return it == impl_->regionOfBody.end() ? -1 : it->second;
}

void AsmPrinter::enter(size_t r) {
  Impl &m = *impl_;
  if (++m.gen == 0) {
    m.ids.clear();
    m.gen = 1;
  }
  const std::vector<const UOp *> &nodes = regions_[r].nodes;
  for (size_t i = 0; i < nodes.size(); ++i) m.ids[nodes[i]] = {m.gen, static_cast<uint32_t>(i)};
}

int64_t AsmPrinter::id(const UOp *u) const { return impl_->id(u); }

std::string AsmPrinter::argText(const UOp *u) {
  std::string out;
  if (u->arg) impl_->arg(out, u->arg, 0, true);
  return out;
}

namespace {
/// Calls `f` unless `u` or one of its sources failed before (bit `bit` of `failed`); marks `u` when it throws.
template <typename F> bool inferOnce(NodeMap<uint8_t> &failed, const UOp *u, uint8_t bit, F &&f) {
  if (failed.get(u) & bit) return false;
  for (const UOp *s : u->src())
    if (failed.get(s) & bit) {
      failed[u] |= bit;
      return false;
    }
  try {
    f();
    return true;
  } catch (const Error &) {
    failed[u] |= bit;
    return false;
  }
}
} // namespace

std::string AsmPrinter::shapeText(const UOp *u) {
  Impl &m = *impl_;
  std::string out;
  inferOnce(m.failed, u, 1, [&] {
    const std::optional<Shape> &s = m.shapes.shape(u);
    if (!s || s->empty()) return;
    for (size_t i = 0; i < s->size(); ++i) {
      if (i) out += 'x';
      out += m.dim((*s)[i]);
    }
  });
  return out;
}

std::string AsmPrinter::deviceText(const UOp *u) {
  Impl &m = *impl_;
  std::string out;
  inferOnce(m.failed, u, 2, [&] {
    const std::vector<std::string> &d = m.shapes.device(u);
    if (d.empty()) return;
    // quoted unless a plain name, so that the reader can skip the annotation whatever the device is called
    if (d.size() == 1) {
      m.string(out, d[0], true);
      return;
    }
    out = "(";
    size_t shown = d.size() > m.opts.maxTupleItems ? std::min<size_t>(8, m.opts.maxTupleItems) : d.size();
    for (size_t i = 0; i < shown; ++i) {
      if (i) out += ", ";
      m.string(out, d[i], true);
    }
    if (shown < d.size()) out += ", ...(" + std::to_string(d.size() - shown) + " more)";
    out += ")";
  });
  return out;
}

bool AsmPrinter::showsDevice(const UOp *u) {
  Impl &m = *impl_;
  bool shows = false;
  inferOnce(m.failed, u, 2, [&] {
    const std::vector<std::string> &d = m.shapes.device(u);
    if (d.empty()) return;
    size_t first = u->op == Op::CALL ? 1 : 0; // a CALL's body is not a value
    if (u->nsrc <= first || (m.failed.get(u->src(first)) & 2)) {
      shows = true;
      return;
    }
    shows = m.shapes.device(u->src(first)) != d;
  });
  return shows;
}

std::string AsmPrinter::tagText(const UOp *u) {
  std::string out;
  if (u->tag) impl_->arg(out, u->tag, 0, false);
  return out;
}

std::vector<const UOp *> AsmPrinter::refs(const UOp *u) const {
  std::vector<const UOp *> out;
  collectRefs(u->arg, out);
  collectRefs(u->tag, out);
  return out;
}

std::string AsmPrinter::operand(const UOp *user, size_t i) {
  const UOp *s = user->src(i);
  if (user->op == Op::CALL && i == 0) {
    int r = regionOf(s);
    const std::string &n = regions_[size_t(r)].name;
    if (asmtext::plainName(n)) return "@" + n;
    std::string out = "@";
    io::appendJsonString(out, n);
    return out;
  }
  int64_t k = id(s);
  return k >= 0 ? "%" + std::to_string(k) : std::string("%?");
}

std::string AsmPrinter::line(const UOp *u) {
  Impl &m = *impl_;
  std::string out = "%" + std::to_string(id(u)) + " = ";
  out += opName(u->op);
  if (u->arg) {
    out += ' ';
    m.arg(out, u->arg, 0, true);
  }
  size_t n = u->nsrc, shown = n > m.opts.maxSources ? std::min<size_t>(16, m.opts.maxSources) : n;
  for (size_t i = 0; i < shown; ++i) {
    out += i ? ", " : " ";
    out += operand(u, i);
  }
  if (shown < n) out += ", ...(" + std::to_string(n - shown) + " more)";
  out += " : ";
  out += dtypeName(u->dtype);
  std::string shape = shapeText(u);
  if (!shape.empty()) out += " [shape " + shape + "]";
  if (showsDevice(u)) out += " [device " + deviceText(u) + "]";
  if (u->tag) out += " tag=" + tagText(u);
  return out;
}

std::string AsmPrinter::print() {
  const Graph &g = impl_->g;
  size_t kernels = regions_.size() - 1, total = 0;
  for (const AsmRegion &r : regions_) total += r.nodes.size();
  std::string out = "// " + std::to_string(regions_.back().nodes.size()) + " nodes";
  if (kernels) out += ", " + std::to_string(kernels) + (kernels == 1 ? " kernel" : " kernels") + " (" +
                      std::to_string(total - regions_.back().nodes.size()) + " nodes)";
  out += g.padFill == PadFill::Invalid ? "; pad_fill=invalid" : "; pad_fill=zero";
  if (!g.stage.empty()) {
    out += "; stage=";
    if (asmtext::plainStage(g.stage)) out += g.stage;
    else io::appendJsonString(out, g.stage);
  }
  out += '\n';
  if (impl_->opts.producer && g.producerJson != "{}") {
    // one line: the JSON reader keeps it compact; a .uopb's may hold a newline between tokens
    std::string p = g.producerJson;
    if (p.find_first_of("\r\n") != std::string::npos) p = nlohmann::ordered_json::parse(p).dump();
    out += "// producer " + p + "\n";
  }
  for (size_t r = 0; r < regions_.size(); ++r) {
    const AsmRegion &reg = regions_[r];
    enter(r);
    std::string indent;
    if (reg.isKernel) {
      out += "kernel ";
      if (asmtext::plainName(reg.name)) out += "@" + reg.name;
      else {
        out += "@";
        io::appendJsonString(out, reg.name);
      }
      size_t calls = impl_->callCount[r];
      out += " {";
      if (calls > 1) out += "  // " + std::to_string(calls) + " calls";
      out += '\n';
      indent = "  ";
    }
    for (const UOp *u : reg.nodes) {
      out += indent;
      out += line(u);
      out += '\n';
    }
    if (reg.isKernel) out += "}\n";
  }
  return out;
}

std::string printGraphText(const Graph &g, const AsmOptions &opts) {
  AsmPrinter p(g, opts);
  return p.print();
}

} // namespace uopc

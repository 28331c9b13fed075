//===- JsonWriter.cpp - writes graph format v1 as JSON --------------------===//
// Hand-written into one std::string (a DOM per node would be far too slow for a million nodes).
// Output: the header on the first line, then one node per line, then the root:
//   {"format":"uopc-graph","version":1,"producer":{...},"semantics":{"pad_fill":"zero"},"nodes":[
//   {"id":0,"op":"CONST","dtype":"weakint","arg":4},
//   ...
//   ],"root":13}
#include "IR/Error.h"
#include "IR/GraphIO.h"
#include "IR/GraphIOInternal.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>
#include <new>

namespace uopc {
namespace {

class JsonWriter {
public:
  JsonWriter(std::string &out, const std::vector<uint32_t> &ids) : out_(out), ids_(ids) {}

  void num(int64_t v) {
    char b[24];
    auto r = std::to_chars(b, b + sizeof b, v);
    out_.append(b, r.ptr);
  }
  void unum(uint64_t v) {
    char b[24];
    auto r = std::to_chars(b, b + sizeof b, v);
    out_.append(b, r.ptr);
  }
  void str(std::string_view s) { io::appendJsonString(out_, s); }
  void typed(const char *type, std::string_view v) {
    out_ += "{\"$\":\"";
    out_ += type;
    out_ += "\",\"v\":";
    str(v);
    out_ += '}';
  }

  /// Writes one arg (null for None). Iterative over the nesting of tuples and records.
  void arg(const Arg *root) {
    stack_.clear();
    if (!open(root)) return;
    stack_.push_back({root, 0});
    while (!stack_.empty()) {
      Frame &f = stack_.back();
      if (f.next == f.a->count) {
        out_ += f.a->kind == ArgKind::Tuple ? ']' : '}';
        stack_.pop_back();
        continue;
      }
      uint32_t i = f.next++;
      if (f.a->kind == ArgKind::Tuple) {
        if (i) out_ += ',';
      } else {
        out_ += ',';
        str(f.a->fieldNames[i]);
        out_ += ':';
      }
      const Arg *e = f.a->items[i];
      if (open(e)) stack_.push_back({e, 0}); // invalidates f
    }
  }

private:
  std::string &out_;
  const std::vector<uint32_t> &ids_;
  struct Frame {
    const Arg *a;
    uint32_t next;
  };
  std::vector<Frame> stack_;

  /// A record is written as {"$":"<class>", fields...}: its class must read back as a record.
  static void checkRecordNames(const Arg *a) {
    std::string_view cls = a->str();
    bool ok = !cls.empty() && cls[0] >= 'A' && cls[0] <= 'Z';
    for (char ch : cls)
      ok = ok && ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_');
    for (std::string_view reserved : {"Invalid", "Ops", "AxisType", "AddrSpace", "DType", "UOp"})
      ok = ok && cls != reserved;
    if (!ok) fail("cannot write a record arg of class '" + std::string(cls) + "' (not a dataclass name)");
    for (std::string_view k : a->keys())
      if (k == "$") fail("cannot write a record arg of class '" + std::string(cls) + "' with a field named '$'");
  }

  /// Writes a scalar arg completely, or the opening of a tuple/record (returns true: push it).
  bool open(const Arg *a) {
    if (!a) {
      out_ += "null";
      return false;
    }
    switch (a->kind) {
    case ArgKind::Bool: out_ += a->b() ? "true" : "false"; return false;
    case ArgKind::Int: num(a->i()); return false;
    case ArgKind::UInt: unum(a->u()); return false;
    case ArgKind::BigInt: typed("bigint", a->str()); return false;
    case ArgKind::Float: {
      char b[40];
      size_t n = io::pyFloatRepr(a->f(), b);
      if (std::isfinite(a->f()) && !io::isIntegralFloat(a->f())) out_.append(b, n);
      else typed("float", std::string_view(b, n));
      return false;
    }
    case ArgKind::String: str(a->str()); return false;
    case ArgKind::Invalid: out_ += "{\"$\":\"Invalid\"}"; return false;
    case ArgKind::OpName: typed("Ops", opName(a->op())); return false;
    case ArgKind::AxisType: typed("AxisType", axisTypeName(a->axisType())); return false;
    case ArgKind::AddrSpace: typed("AddrSpace", addrSpaceName(a->addrSpace())); return false;
    case ArgKind::DType: typed("DType", dtypeName(a->dtype())); return false;
    case ArgKind::UOpRef: {
      const UOp *r = a->ref();
      uint32_t id = r->index < ids_.size() ? ids_[r->index] : UINT32_MAX;
      if (id == UINT32_MAX) fail("cannot write the graph: an arg refers to a node outside the graph");
      out_ += "{\"$\":\"UOp\",\"id\":";
      unum(id);
      out_ += '}';
      return false;
    }
    case ArgKind::Bytes: typed("bytes", io::base64Encode(a->str())); return false;
    case ArgKind::Tuple:
      if (a->count == 0) {
        out_ += "[]";
        return false;
      }
      out_ += '[';
      return true;
    case ArgKind::Record:
      checkRecordNames(a);
      out_ += "{\"$\":";
      str(a->str());
      if (a->count == 0) {
        out_ += '}';
        return false;
      }
      return true;
    }
    fail("cannot write an arg of unknown kind");
  }
};

} // namespace

std::string writeGraphJson(const Graph &g) {
  if (!g.root) fail("cannot write a graph without a root");
  try {
    if (!nlohmann::json::accept(g.producerJson)) fail("cannot write the graph: producer is not valid JSON");
    std::vector<const UOp *> order = io::writeOrder(g.root);
    uint32_t maxIndex = 0;
    for (const UOp *u : order) maxIndex = std::max(maxIndex, u->index);
    std::vector<uint32_t> ids(static_cast<size_t>(maxIndex) + 1, UINT32_MAX);
    for (size_t i = 0; i < order.size(); ++i) ids[order[i]->index] = static_cast<uint32_t>(i);

    std::string out;
    out.reserve(256 + order.size() * 72);
    out += "{\"format\":\"uopc-graph\",\"version\":1,\"producer\":";
    out += g.producerJson;
    out += ",\"semantics\":{\"pad_fill\":";
    out += g.padFill == PadFill::Invalid ? "\"invalid\"" : "\"zero\"";
    out += '}';
    if (!g.stage.empty()) {
      out += ",\"stage\":";
      io::appendJsonString(out, g.stage);
    }
    out += ",\"nodes\":[\n";
    JsonWriter w(out, ids);
    for (size_t i = 0; i < order.size(); ++i) {
      const UOp *u = order[i];
      out += "{\"id\":";
      w.unum(i);
      out += ",\"op\":\"";
      out += opName(u->op);
      out += "\",\"dtype\":\"";
      out += dtypeName(u->dtype);
      out += '"';
      if (u->nsrc) {
        out += ",\"src\":[";
        for (uint32_t k = 0; k < u->nsrc; ++k) {
          if (k) out += ',';
          w.unum(ids[u->srcs[k]->index]);
        }
        out += ']';
      }
      if (u->arg) {
        out += ",\"arg\":";
        w.arg(u->arg);
      }
      if (u->tag) {
        out += ",\"tag\":";
        w.arg(u->tag);
      }
      out += i + 1 < order.size() ? "},\n" : "}\n";
    }
    out += "],\"root\":";
    w.unum(ids[g.root->index]);
    out += "}\n";
    return out;
  } catch (const std::bad_alloc &) {
    fail("out of memory writing the graph");
  }
}

} // namespace uopc

//===- JsonReader.cpp - streaming reader of graph format v1 (JSON) -------===//
// The document is streamed through nlohmann::json's SAX interface: no DOM of the nodes is ever
// built. Each node is turned into a UOp (hash-consed by the Context) as soon as its object closes;
// an arg is assembled bottom-up from the events of its value with an explicit frame stack, so
// nothing here recurses on the nesting of the input (nlohmann's SAX parser is iterative too).
#include "IR/Error.h"
#include "IR/GraphIO.h"
#include "IR/GraphIOInternal.h"
#include "IR/ProducerForms.h"
#include "IR/Records.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <new>
#include <unordered_map>

namespace uopc {
namespace {

using json = nlohmann::json;

constexpr unsigned kMaxProducerDepth = 64;
constexpr unsigned kNumDTypes = 0
#define UOPC_DTYPE(Enum, Name, Size, Kind) +1
#include "IR/DTypes.def"
    ;

/// Fast name -> enum lookups (opFromName is a linear scan; a graph has a million names to look up).
struct NameTables {
  std::unordered_map<std::string, Op> ops;
  std::unordered_map<std::string, DType> dtypes;
  NameTables() {
    for (unsigned i = 0; i < kNumOps; ++i) ops.emplace(std::string(opName(static_cast<Op>(i))), static_cast<Op>(i));
    for (unsigned i = 0; i < kNumDTypes; ++i)
      dtypes.emplace(std::string(dtypeName(static_cast<DType>(i))), static_cast<DType>(i));
  }
  std::optional<Op> op(const std::string &s) const {
    auto it = ops.find(s);
    if (it != ops.end()) return it->second;
    return opFromName(s); // aliases (UNSHARD)
  }
  std::optional<DType> dtype(const std::string &s) const {
    auto it = dtypes.find(s);
    if (it != dtypes.end()) return it->second;
    return dtypeFromName(s);
  }
};

const NameTables &names() {
  static const NameTables t;
  return t;
}

/// Short rendering of a string taken from the input, for messages.
std::string quoteForMessage(std::string_view s) { return quote(s, 60); }

/// A scalar SAX event.
struct Scalar {
  enum Type : uint8_t { Null, Bool, Int, UInt, Float, Str } type;
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
  const std::string *s = nullptr; ///< Str: the string; Float: the number's text
  std::string describe() const {
    switch (type) {
    case Null: return "null";
    case Bool: return b ? "true" : "false";
    case Int: return std::to_string(i);
    case UInt: return std::to_string(u);
    case Float: return *s;
    case Str: return quoteForMessage(*s);
    }
    return "?";
  }
  const char *typeName() const {
    switch (type) {
    case Null: return "null";
    case Bool: return "a boolean";
    case Int:
    case UInt: return "an integer";
    case Float: return "a float";
    case Str: return "a string";
    }
    return "?";
  }
};

class Reader {
public:
  Reader(std::string_view name, const ReadLimits &limits, size_t textSize) : name_(name), lim_(limits) {
    // A node takes at least ~30 bytes of text: reserving from the size avoids regrowing the id table.
    size_t guess = textSize / 30 + 16;
    ids_.reserve(std::min(guess, limits.maxNodes + 1));
  }

  // ---- nlohmann SAX interface -------------------------------------------------------------------
  bool null() { return scalar(Scalar{Scalar::Null}); }
  bool boolean(bool v) {
    Scalar s{Scalar::Bool};
    s.b = v;
    return scalar(s);
  }
  bool number_integer(json::number_integer_t v) {
    Scalar s{Scalar::Int};
    s.i = v;
    return scalar(s);
  }
  bool number_unsigned(json::number_unsigned_t v) {
    if (v <= static_cast<uint64_t>(INT64_MAX)) return number_integer(static_cast<int64_t>(v));
    Scalar s{Scalar::UInt};
    s.u = v;
    return scalar(s);
  }
  bool number_float(json::number_float_t v, const std::string &text) {
    Scalar s{Scalar::Float};
    s.f = v;
    s.s = &text;
    return scalar(s);
  }
  bool string(std::string &v) {
    Scalar s{Scalar::Str};
    s.s = &v;
    return scalar(s);
  }
  bool binary(json::binary_t &) { docFail("unexpected binary value"); }
  bool start_object(std::size_t) { return open(true); }
  bool end_object() { return close(true); }
  bool start_array(std::size_t) { return open(false); }
  bool end_array() { return close(false); }
  bool key(std::string &k);
  bool parse_error(std::size_t position, const std::string &, const nlohmann::detail::exception &ex) {
    std::string msg = ex.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..." -> drop the tag
    if (!msg.empty() && msg[0] == '[') {
      size_t close = msg.find("] ");
      if (close != std::string::npos) msg.erase(0, close + 2);
    }
    fail(name_ + ": invalid JSON at byte " + std::to_string(position) + ": " + msg);
  }

  Graph finish();

private:
  enum class St : uint8_t { Start, Top, Semantics, Nodes, Node, Src, End };
  enum class Sub : uint8_t { None, Producer, Arg };
  enum TopField : uint8_t { FFormat = 1, FVersion = 2, FProducer = 4, FSemantics = 8, FStage = 16, FNodes = 32, FRoot = 64 };
  enum NodeField : uint8_t { NId = 1, NOp = 2, NDType = 4, NSrc = 8, NArg = 16, NTag = 32 };

  std::string name_;
  const ReadLimits &lim_;
  Graph g_;
  St st_ = St::Start;
  Sub sub_ = Sub::None;
  uint8_t topSeen_ = 0;
  uint8_t topKey_ = 0; // the TopField whose value comes next
  bool semSeenPadFill_ = false;
  uint64_t root_ = 0;

  // the node being read
  uint8_t nodeSeen_ = 0;
  uint8_t nodeKey_ = 0; // the NodeField whose value comes next
  bool opKnown_ = false; // op_ holds this node's op
  Op op_ = Op::NOOP;
  DType dtype_ = DType::Void;
  const Arg *arg_ = nullptr, *tag_ = nullptr;
  std::vector<uint64_t> srcIds_;
  std::vector<const UOp *> srcs_;
  std::vector<const UOp *> ids_; // id -> node

  // producer capture
  unsigned prodDepth_ = 0;

  // arg decoding: one frame per open array/object of the arg value
  struct Field {
    std::string key;
    const Arg *arg = nullptr;
    std::string str;
    bool isStr = false;
  };
  struct Frame {
    bool isObject = false;
    std::vector<const Arg *> items;
    std::vector<Field> fields;
    size_t nfields = 0;
  };
  std::vector<Frame> frames_;
  unsigned depth_ = 0; // open frames

  // ---- messages -----------------------------------------------------------------------------
  [[noreturn]] void docFail(const std::string &msg) const { fail(name_ + ": " + msg); }
  std::string nodePrefix() const {
    std::string p = name_ + ": node " + std::to_string(ids_.size());
    if (opKnown_) p += " (" + std::string(opName(op_)) + ")";
    return p + ": ";
  }
  [[noreturn]] void nodeFail(const std::string &msg) const { fail(nodePrefix() + msg); }
  [[noreturn]] void argFail(const std::string &msg) const {
    nodeFail(std::string(nodeKey_ == NTag ? "bad tag: " : "bad arg: ") + msg);
  }

  // ---- dispatch -----------------------------------------------------------------------------
  bool scalar(const Scalar &s);
  bool open(bool isObject);
  bool close(bool isObject);

  void topValue(const Scalar &s);
  void nodeValue(const Scalar &s);
  void finishNode();

  // producer
  void prodComma() {
    std::string &p = g_.producerJson;
    if (!p.empty() && p.back() != '{' && p.back() != '[' && p.back() != ':') p.push_back(',');
  }
  void prodScalar(const Scalar &s);

  // args
  void argScalar(const Scalar &s);
  void argOpen(bool isObject);
  void argClose();
  void deliver(const Arg *a);
  void deliverString(const std::string &s);
  void argDone(const Arg *a);
  const Arg *buildObject(Frame &f);
  const Arg *scalarArg(const Scalar &s);
};

bool Reader::key(std::string &k) {
  if (sub_ == Sub::Producer) {
    prodComma();
    io::appendJsonString(g_.producerJson, k);
    g_.producerJson.push_back(':');
    return true;
  }
  if (sub_ == Sub::Arg) {
    Frame &f = frames_[depth_ - 1];
    for (size_t i = 0; i < f.nfields; ++i)
      if (f.fields[i].key == k) argFail("key " + quoteForMessage(k) + " appears twice in one object");
    size_t maxFields = std::min(lim_.maxArgItems, io::kMaxRecordFields);
    if (f.nfields >= maxFields) argFail("an object has more than " + std::to_string(maxFields) + " keys");
    if (f.nfields == f.fields.size()) f.fields.emplace_back();
    Field &fl = f.fields[f.nfields++];
    fl.key = k;
    fl.arg = nullptr;
    fl.isStr = false;
    return true;
  }
  switch (st_) {
  case St::Top: {
    uint8_t f = 0;
    if (k == "format") f = FFormat;
    else if (k == "version") f = FVersion;
    else if (k == "producer") f = FProducer;
    else if (k == "semantics") f = FSemantics;
    else if (k == "stage") f = FStage;
    else if (k == "nodes") f = FNodes;
    else if (k == "root") f = FRoot;
    else
      docFail("unknown top-level field " + quoteForMessage(k) +
              " (format v1 has format, version, producer, semantics, stage, nodes, root)");
    if (topSeen_ & f) docFail("top-level field '" + k + "' appears twice");
    topSeen_ |= f;
    topKey_ = f;
    return true;
  }
  case St::Semantics:
    if (k != "pad_fill") docFail("unknown semantics field " + quoteForMessage(k) + " (format v1 knows pad_fill)");
    if (semSeenPadFill_) docFail("semantics field 'pad_fill' appears twice");
    semSeenPadFill_ = true;
    return true;
  case St::Node: {
    uint8_t f = 0;
    switch (k.size()) {
    case 2: f = k == "id" ? NId : k == "op" ? NOp : 0; break;
    case 3: f = k == "src" ? NSrc : k == "arg" ? NArg : k == "tag" ? NTag : 0; break;
    case 5: f = k == "dtype" ? NDType : 0; break;
    default: break;
    }
    if (!f) nodeFail("unknown node field " + quoteForMessage(k) + " (a node has id, op, dtype, src, arg, tag)");
    if (nodeSeen_ & f) nodeFail("field '" + k + "' appears twice");
    nodeSeen_ |= f;
    nodeKey_ = f;
    return true;
  }
  default: docFail("unexpected key " + quoteForMessage(k)); // unreachable with a conforming parser
  }
}

bool Reader::scalar(const Scalar &s) {
  if (sub_ == Sub::Producer) {
    prodScalar(s);
    return true;
  }
  if (sub_ == Sub::Arg) {
    argScalar(s);
    return true;
  }
  switch (st_) {
  case St::Start: docFail("the document must be a JSON object (a uopc graph), not " + std::string(s.typeName()));
  case St::Top: topValue(s); return true;
  case St::Semantics: {
    if (s.type == Scalar::Str && *s.s == "zero") g_.padFill = PadFill::Zero;
    else if (s.type == Scalar::Str && *s.s == "invalid") g_.padFill = PadFill::Invalid;
    else docFail("semantics.pad_fill must be \"zero\" or \"invalid\", not " + s.describe());
    return true;
  }
  case St::Nodes: docFail("node " + std::to_string(ids_.size()) + " must be an object, not " + s.typeName());
  case St::Node: nodeValue(s); return true;
  case St::Src: {
    if (s.type == Scalar::Int && s.i >= 0) {
      if (srcIds_.size() >= lim_.maxSrcs) nodeFail("more than " + std::to_string(lim_.maxSrcs) + " sources");
      srcIds_.push_back(static_cast<uint64_t>(s.i));
      return true;
    }
    if (s.type == Scalar::Int || s.type == Scalar::UInt) nodeFail("source " + s.describe() + " is not a node id");
    nodeFail("src must be a list of node ids, found " + std::string(s.typeName()) + " (" + s.describe() + ")");
  }
  case St::End: docFail("unexpected data after the document");
  }
  return true;
}

void Reader::topValue(const Scalar &s) {
  switch (topKey_) {
  case FFormat:
    if (s.type != Scalar::Str) docFail("unsupported format " + s.describe() + " (expected \"uopc-graph\")");
    if (*s.s != "uopc-graph") docFail("unsupported format " + quoteForMessage(*s.s) + " (expected \"uopc-graph\")");
    break;
  case FVersion:
    if (s.type == Scalar::Int && s.i == 1) break;
    if (s.type == Scalar::Int || s.type == Scalar::UInt)
      docFail("unsupported version " + s.describe() + " (this uopc reads version 1)");
    docFail("'version' must be an integer, not " + s.describe() + " (this uopc reads version 1)");
  case FProducer: docFail("'producer' must be an object, not " + std::string(s.typeName()));
  case FSemantics: docFail("'semantics' must be an object, not " + std::string(s.typeName()));
  case FStage:
    if (s.type != Scalar::Str) docFail("'stage' must be a string, not " + std::string(s.typeName()));
    g_.stage = *s.s;
    break;
  case FNodes: docFail("'nodes' must be a list of node objects, not " + std::string(s.typeName()));
  case FRoot:
    if (s.type != Scalar::Int || s.i < 0) docFail("'root' must be a node id, not " + s.describe());
    root_ = static_cast<uint64_t>(s.i);
    break;
  default: docFail("unexpected value");
  }
}

void Reader::nodeValue(const Scalar &s) {
  switch (nodeKey_) {
  case NId:
    if (s.type != Scalar::Int && s.type != Scalar::UInt) nodeFail("id must be an integer, not " + s.describe());
    if (s.type != Scalar::Int || static_cast<uint64_t>(s.i) != ids_.size())
      docFail("node at index " + std::to_string(ids_.size()) + " has id " + s.describe() +
              " (ids must be 0, 1, 2, ... in the order of the nodes list)");
    break;
  case NOp: {
    if (s.type != Scalar::Str) nodeFail("op must be a string, not " + s.describe());
    auto op = names().op(*s.s);
    if (!op) nodeFail("unknown op " + quoteForMessage(*s.s));
    op_ = *op;
    opKnown_ = true;
    break;
  }
  case NDType: {
    if (s.type != Scalar::Str) nodeFail("dtype must be a string, not " + s.describe());
    auto dt = names().dtype(*s.s);
    if (!dt) nodeFail("unknown dtype " + quoteForMessage(*s.s));
    dtype_ = *dt;
    break;
  }
  case NSrc: nodeFail("src must be a list of node ids, not " + s.describe());
  case NArg:
  case NTag: {
    sub_ = Sub::Arg;
    argScalar(s); // completes immediately (depth 0)
    break;
  }
  default: nodeFail("unexpected value");
  }
}

bool Reader::open(bool isObject) {
  if (sub_ == Sub::Producer) {
    if (prodDepth_ >= kMaxProducerDepth)
      docFail("'producer' nested too deep (over " + std::to_string(kMaxProducerDepth) + " levels)");
    ++prodDepth_;
    prodComma();
    g_.producerJson.push_back(isObject ? '{' : '[');
    return true;
  }
  if (sub_ == Sub::Arg) {
    argOpen(isObject);
    return true;
  }
  switch (st_) {
  case St::Start:
    if (!isObject) docFail("the document must be a JSON object (a uopc graph), not a list");
    st_ = St::Top;
    return true;
  case St::Top:
    switch (topKey_) {
    case FProducer:
      if (!isObject) docFail("'producer' must be an object, not a list");
      sub_ = Sub::Producer;
      prodDepth_ = 1;
      g_.producerJson = "{";
      return true;
    case FSemantics:
      if (!isObject) docFail("'semantics' must be an object, not a list");
      st_ = St::Semantics;
      return true;
    case FNodes:
      if (isObject) docFail("'nodes' must be a list of node objects, not an object");
      st_ = St::Nodes;
      return true;
    case FFormat: docFail(std::string("unsupported format (expected \"uopc-graph\", found ") + (isObject ? "an object" : "a list") + ")");
    case FVersion: docFail("'version' must be an integer (this uopc reads version 1)");
    case FStage: docFail("'stage' must be a string");
    case FRoot: docFail("'root' must be a node id");
    default: docFail("unexpected value");
    }
  case St::Semantics: docFail("semantics.pad_fill must be \"zero\" or \"invalid\"");
  case St::Nodes:
    if (!isObject) docFail("node " + std::to_string(ids_.size()) + " must be an object, not a list");
    if (ids_.size() >= lim_.maxNodes)
      docFail("too many nodes (the limit is " + std::to_string(lim_.maxNodes) + ")");
    st_ = St::Node;
    nodeSeen_ = 0;
    opKnown_ = false;
    arg_ = tag_ = nullptr;
    srcIds_.clear();
    return true;
  case St::Node:
    switch (nodeKey_) {
    case NSrc:
      if (isObject) nodeFail("src must be a list of node ids, not an object");
      st_ = St::Src;
      return true;
    case NArg:
    case NTag:
      sub_ = Sub::Arg;
      argOpen(isObject);
      return true;
    case NId: nodeFail("id must be an integer");
    case NOp: nodeFail("op must be a string");
    case NDType: nodeFail("dtype must be a string");
    default: nodeFail("unexpected value");
    }
  case St::Src: nodeFail("src must be a list of node ids, found a nested " + std::string(isObject ? "object" : "list"));
  case St::End: docFail("unexpected data after the document");
  }
  return true;
}

bool Reader::close(bool isObject) {
  if (sub_ == Sub::Producer) {
    g_.producerJson.push_back(isObject ? '}' : ']');
    if (--prodDepth_ == 0) sub_ = Sub::None;
    return true;
  }
  if (sub_ == Sub::Arg) {
    argClose();
    return true;
  }
  switch (st_) {
  case St::Top: st_ = St::End; return true;
  case St::Semantics: st_ = St::Top; return true;
  case St::Nodes: st_ = St::Top; return true;
  case St::Node:
    finishNode();
    st_ = St::Nodes;
    return true;
  case St::Src: st_ = St::Node; return true;
  default: docFail("unexpected end of a value");
  }
}

void Reader::finishNode() {
  if (!(nodeSeen_ & NId)) nodeFail("missing 'id'");
  if (!(nodeSeen_ & NOp)) nodeFail("missing 'op'");
  if (!(nodeSeen_ & NDType)) nodeFail("missing 'dtype'");
  const size_t id = ids_.size();
  srcs_.clear();
  for (uint64_t s : srcIds_) {
    if (s >= id)
      nodeFail("source " + std::to_string(s) + " is not defined before the node (nodes must be in topological order)");
    srcs_.push_back(ids_[s]);
  }
  const UOp *u = g_.ctx->make(op_, dtype_, srcs_, arg_, tag_);
  ids_.push_back(u);
  if (g_.inputIds.get(u) == UINT32_MAX) g_.inputIds[u] = static_cast<uint32_t>(id);
}

void Reader::prodScalar(const Scalar &s) {
  prodComma();
  std::string &p = g_.producerJson;
  switch (s.type) {
  case Scalar::Null: p += "null"; break;
  case Scalar::Bool: p += s.b ? "true" : "false"; break;
  case Scalar::Int: p += std::to_string(s.i); break;
  case Scalar::UInt: p += std::to_string(s.u); break;
  case Scalar::Float: p += *s.s; break; // the number's own text, verbatim
  case Scalar::Str: io::appendJsonString(p, *s.s); break;
  }
}

// ---- args -----------------------------------------------------------------------------------

const Arg *Reader::scalarArg(const Scalar &s) {
  Context &c = *g_.ctx;
  switch (s.type) {
  case Scalar::Null: return nullptr;
  case Scalar::Bool: return c.argBool(s.b);
  case Scalar::Int: return c.argInt(s.i);
  case Scalar::UInt: return c.argUInt(s.u);
  case Scalar::Float:
    // nlohmann turns an integer literal beyond uint64 into a float: format v1 wants a bigint there
    if (s.s->find_first_of(".eE") == std::string::npos)
      argFail("integer " + *s.s + " is out of the int64/uint64 range (write it as {\"$\":\"bigint\",\"v\":\"" + *s.s +
              "\"})");
    return c.argFloat(s.f);
  case Scalar::Str: return c.argString(*s.s);
  }
  return nullptr;
}

void Reader::argDone(const Arg *a) {
  if (nodeKey_ == NTag) tag_ = a;
  else arg_ = a;
  sub_ = Sub::None;
}

void Reader::deliver(const Arg *a) {
  if (depth_ == 0) return argDone(a);
  Frame &f = frames_[depth_ - 1];
  if (f.isObject) {
    Field &fl = f.fields[f.nfields - 1];
    fl.arg = a;
    fl.isStr = false;
    return;
  }
  if (f.items.size() >= lim_.maxArgItems) argFail("list has more than " + std::to_string(lim_.maxArgItems) + " items");
  f.items.push_back(a);
}

void Reader::deliverString(const std::string &s) {
  if (depth_ > 0 && frames_[depth_ - 1].isObject) {
    // kept as text: whether it is a string arg or the "v" of a typed object is known at the '}'
    Field &fl = frames_[depth_ - 1].fields[frames_[depth_ - 1].nfields - 1];
    fl.str = s;
    fl.isStr = true;
    return;
  }
  deliver(g_.ctx->argString(s));
}

void Reader::argScalar(const Scalar &s) {
  if (s.type == Scalar::Str) return deliverString(*s.s);
  deliver(scalarArg(s));
}

void Reader::argOpen(bool isObject) {
  if (depth_ >= lim_.maxArgDepth)
    argFail("nested too deep (over " + std::to_string(lim_.maxArgDepth) + " levels of lists/objects)");
  if (depth_ == frames_.size()) frames_.emplace_back();
  Frame &f = frames_[depth_++];
  f.isObject = isObject;
  f.items.clear();
  f.nfields = 0;
}

void Reader::argClose() {
  Frame &f = frames_[depth_ - 1];
  const Arg *a = f.isObject ? buildObject(f) : g_.ctx->argTuple(f.items);
  --depth_;
  deliver(a);
}

const Arg *Reader::buildObject(Frame &f) {
  Context &c = *g_.ctx;
  Field *type = nullptr;
  for (size_t i = 0; i < f.nfields; ++i)
    if (f.fields[i].key == "$") type = &f.fields[i];
  if (!type) argFail("an object without a \"$\" key (arg objects name their type, e.g. {\"$\":\"float\",\"v\":\"2.0\"})");
  if (!type->isStr) argFail("the \"$\" key of an object must be a string");
  const std::string &t = type->str;
  auto get = [&](const char *k) -> Field * {
    for (size_t i = 0; i < f.nfields; ++i)
      if (f.fields[i].key == k) return &f.fields[i];
    return nullptr;
  };
  // Typed scalar objects have "$" and one more key.
  auto only = [&](const char *k) {
    for (size_t i = 0; i < f.nfields; ++i)
      if (f.fields[i].key != "$" && f.fields[i].key != k)
        argFail("unexpected key " + quoteForMessage(f.fields[i].key) + " in {\"$\":\"" + t + "\"}");
  };
  auto vstr = [&]() -> const std::string & {
    only("v");
    Field *v = get("v");
    if (!v) argFail("{\"$\":\"" + t + "\"} needs a \"v\"");
    if (!v->isStr) argFail("the \"v\" of {\"$\":\"" + t + "\"} must be a string");
    return v->str;
  };
  if (t == "float") {
    const std::string &v = vstr();
    auto d = io::parsePyFloat(v);
    if (!d) argFail("bad float " + quoteForMessage(v) + " (expected Python's repr of a float, e.g. \"2.0\", \"-inf\", \"nan\")");
    return c.argFloat(*d);
  }
  if (t == "bigint") {
    const std::string &v = vstr();
    if (!io::validBigInt(v)) argFail("bad bigint " + quoteForMessage(v) + " (expected decimal digits with an optional '-')");
    return io::intArgFromDecimal(c, v);
  }
  if (t == "Invalid") {
    only("$");
    return c.argInvalid();
  }
  if (t == "Ops") {
    const std::string &v = vstr();
    auto op = names().op(v);
    if (!op) argFail("unknown op " + quoteForMessage(v) + " in {\"$\":\"Ops\"}");
    return c.argOp(*op);
  }
  if (t == "DType") {
    const std::string &v = vstr();
    auto dt = names().dtype(v);
    if (!dt) argFail("unknown dtype " + quoteForMessage(v) + " in {\"$\":\"DType\"}");
    return c.argDType(*dt);
  }
  if (t == "AxisType") {
    const std::string &v = vstr();
    auto a = axisTypeFromName(v);
    if (!a) argFail("unknown AxisType " + quoteForMessage(v));
    return c.argAxisType(*a);
  }
  if (t == "AddrSpace") {
    const std::string &v = vstr();
    auto a = addrSpaceFromName(v);
    if (!a) argFail("unknown AddrSpace " + quoteForMessage(v));
    return c.argAddrSpace(*a);
  }
  if (t == "UOp") {
    only("id");
    Field *idf = get("id");
    if (!idf) argFail("{\"$\":\"UOp\"} needs an \"id\"");
    const Arg *a = idf->isStr ? nullptr : idf->arg;
    if (!a || a->kind != ArgKind::Int || a->i() < 0)
      argFail("the \"id\" of {\"$\":\"UOp\"} must be a node id");
    if (static_cast<uint64_t>(a->i()) >= ids_.size())
      argFail("{\"$\":\"UOp\"} refers to node " + std::to_string(a->i()) +
              ", which is not defined before this node");
    return c.argRef(ids_[a->i()]);
  }
  if (t == "bytes") {
    const std::string &v = vstr();
    auto raw = io::base64Decode(v);
    if (!raw) argFail("bad base64 in {\"$\":\"bytes\"}");
    return c.argBytes(*raw);
  }
  // A dataclass: a Python class name.
  bool ident = !t.empty() && t[0] >= 'A' && t[0] <= 'Z';
  for (char ch : t)
    ident = ident && ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_');
  if (!ident)
    argFail("unknown arg type " + quoteForMessage(t) +
            " (expected float, bigint, Invalid, Ops, AxisType, AddrSpace, DType, UOp, bytes or a dataclass name)");
  std::vector<std::pair<std::string_view, const Arg *>> fields;
  fields.reserve(f.nfields);
  for (size_t i = 0; i < f.nfields; ++i) {
    Field &fl = f.fields[i];
    if (&fl == type) continue;
    fields.push_back({fl.key, fl.isStr ? c.argString(fl.str) : fl.arg});
  }
  try {
    return makeRecord(c, t, std::move(fields));
  } catch (const Error &e) {
    argFail(e.what());
  }
}

Graph Reader::finish() {
  if (st_ != St::End) docFail("unexpected end of the document");
  if (!(topSeen_ & FFormat)) docFail("missing \"format\" (expected \"uopc-graph\")");
  if (!(topSeen_ & FVersion)) docFail("missing \"version\" (this uopc reads version 1)");
  if (!(topSeen_ & FNodes)) docFail("missing \"nodes\"");
  if (!(topSeen_ & FRoot)) docFail("missing \"root\"");
  if (root_ >= ids_.size())
    docFail("root " + std::to_string(root_) + " is not a node id (the document has " + std::to_string(ids_.size()) +
            " nodes)");
  g_.root = ids_[root_];
  return std::move(g_);
}

} // namespace

Graph readGraphJson(std::string_view text, std::string_view name, const ReadLimits &limits) {
  std::string nm(name);
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
    fail(nm + ": empty input (expected a uopc graph document)");
  try {
    Reader r(name, limits, text.size());
    json::sax_parse(text.data(), text.data() + text.size(), &r);
    Graph g = r.finish();
    if (limits.producerForms) normalizeProducerForms(g, nm); // tinygrad 0.14.0's forms (IR/ProducerForms.h)
    io::checkVariableNames(g, name);
    return g;
  } catch (const Error &) {
    throw;
  } catch (const nlohmann::json::exception &e) {
    fail(nm + ": invalid JSON: " + e.what());
  } catch (const std::bad_alloc &) {
    fail(nm + ": out of memory while reading the graph");
  } catch (const std::length_error &) {
    fail(nm + ": out of memory while reading the graph");
  } catch (const std::exception &e) {
    fail(nm + ": internal error while reading the graph: " + e.what());
  }
}

} // namespace uopc

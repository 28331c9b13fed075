//===- BinaryFormat.cpp - the .uopb encoding of a graph document ----------===//
// Layout and rationale: docs/uopb.md. In short: magic "UOPB", u32 version, header strings, op and
// dtype name tables, three counts, then one stream of records (string definitions, arg definitions,
// nodes) in which everything is defined before it is used, ended by 0xFF and the root id.
// Every read is bounds-checked and every count is checked against the bytes left before anything is
// allocated for it, so a corrupt file gives an Error, never a crash or a huge allocation.
#include "IR/Error.h"
#include "IR/GraphIO.h"
#include "IR/GraphIOInternal.h"
#include "IR/ProducerForms.h"
#include "IR/Records.h"

#include <nlohmann/json.hpp>

#include <bit>
#include <cstring>
#include <new>
#include <unordered_map>
#include <unordered_set>

namespace uopc {
namespace {

constexpr uint32_t kVersion = 1;
constexpr uint8_t kTagString = 0xFD, kTagArg = 0xFE, kTagEnd = 0xFF;
static_assert(kNumOps < kTagString, "op codes must stay below the record tags");

constexpr unsigned kNumDTypes = 0
#define UOPC_DTYPE(Enum, Name, Size, Kind) +1
#include "IR/DTypes.def"
    ;
constexpr unsigned kNumAxisTypes = static_cast<unsigned>(AxisType::WEAK) + 1;
constexpr unsigned kNumAddrSpaces = static_cast<unsigned>(AddrSpace::ALU) + 1;

/// Arg kind codes of the format (fixed by docs/uopb.md, independent of the ArgKind enum's order).
enum Kind : uint8_t {
  KBool = 0,
  KInt = 1,
  KUInt = 2,
  KBigInt = 3,
  KFloat = 4,
  KString = 5,
  KInvalid = 6,
  KOps = 7,
  KAxisType = 8,
  KAddrSpace = 9,
  KDType = 10,
  KUOp = 11,
  KBytes = 12,
  KTuple = 13,
  KRecord = 14,
};

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

class BinWriter {
public:
  BinWriter(const std::vector<uint32_t> &ids, const uint8_t *opCode, const uint8_t *dtCode)
      : ids_(ids), opCode_(opCode), dtCode_(dtCode) {}
  std::string body; // the record stream
  uint64_t nargs = 0, nstrings = 0;

  static void varint(std::string &o, uint64_t v) {
    while (v >= 0x80) {
      o.push_back(static_cast<char>(v | 0x80));
      v >>= 7;
    }
    o.push_back(static_cast<char>(v));
  }
  static void bytes(std::string &o, std::string_view s) {
    varint(o, s.size());
    o.append(s);
  }

  /// The arg's table reference (0 = None), defining it (and what it needs) first when new.
  uint64_t argRef(const Arg *root) {
    if (!root) return 0;
    if (auto it = argIdx_.find(root); it != argIdx_.end()) return it->second;
    // post-order over not-yet-defined args: children are defined before their parent
    stack_.clear();
    stack_.push_back({root, 0});
    while (!stack_.empty()) {
      auto &[a, next] = stack_.back();
      if (next < a->count && (a->kind == ArgKind::Tuple || a->kind == ArgKind::Record)) {
        const Arg *e = a->items[next++];
        if (e && !argIdx_.count(e)) stack_.push_back({e, 0});
        continue;
      }
      const Arg *done = a;
      stack_.pop_back();
      if (!argIdx_.count(done)) define(done);
    }
    return argIdx_.at(root);
  }

  uint64_t stringRef(std::string_view s) {
    if (auto it = strIdx_.find(s); it != strIdx_.end()) return it->second;
    body.push_back(static_cast<char>(kTagString));
    bytes(body, s);
    strIdx_.emplace(s, nstrings);
    return nstrings++;
  }

private:
  const std::vector<uint32_t> &ids_;
  const uint8_t *opCode_, *dtCode_; // enum value -> code of the file's tables
  std::unordered_map<const Arg *, uint64_t> argIdx_;
  std::unordered_map<std::string_view, uint64_t> strIdx_;
  std::vector<std::pair<const Arg *, uint32_t>> stack_;

  void define(const Arg *a) {
    // record names are strings of the table: they must be defined before the record itself
    if (a->kind == ArgKind::Record) {
      stringRef(a->str());
      for (std::string_view k : a->keys()) stringRef(k);
    }
    std::string &o = body;
    o.push_back(static_cast<char>(kTagArg));
    switch (a->kind) {
    case ArgKind::Bool:
      o.push_back(KBool);
      o.push_back(a->b() ? 1 : 0);
      break;
    case ArgKind::Int:
      o.push_back(KInt);
      varint(o, (static_cast<uint64_t>(a->i()) << 1) ^ static_cast<uint64_t>(a->i() >> 63));
      break;
    case ArgKind::UInt:
      o.push_back(KUInt);
      varint(o, a->u());
      break;
    case ArgKind::BigInt:
      o.push_back(KBigInt);
      bytes(o, a->str());
      break;
    case ArgKind::Float: {
      o.push_back(KFloat);
      uint64_t bits = a->uval;
      for (int k = 0; k < 8; ++k) o.push_back(static_cast<char>(bits >> (8 * k)));
      break;
    }
    case ArgKind::String:
      o.push_back(KString);
      bytes(o, a->str());
      break;
    case ArgKind::Invalid: o.push_back(KInvalid); break;
    case ArgKind::OpName:
      o.push_back(KOps);
      varint(o, opCode_[static_cast<unsigned>(a->op())]);
      break;
    case ArgKind::AxisType:
      o.push_back(KAxisType);
      o.push_back(static_cast<char>(a->axisType()));
      break;
    case ArgKind::AddrSpace:
      o.push_back(KAddrSpace);
      o.push_back(static_cast<char>(a->addrSpace()));
      break;
    case ArgKind::DType:
      o.push_back(KDType);
      varint(o, dtCode_[static_cast<unsigned>(a->dtype())]);
      break;
    case ArgKind::UOpRef: {
      const UOp *r = a->ref();
      uint32_t id = r->index < ids_.size() ? ids_[r->index] : UINT32_MAX;
      if (id == UINT32_MAX) fail("cannot write the graph: an arg refers to a node outside the graph");
      o.push_back(KUOp);
      varint(o, id);
      break;
    }
    case ArgKind::Bytes:
      o.push_back(KBytes);
      bytes(o, a->str());
      break;
    case ArgKind::Tuple:
      o.push_back(KTuple);
      varint(o, a->count);
      for (const Arg *e : a->elems()) varint(o, e ? argIdx_.at(e) : 0);
      break;
    case ArgKind::Record:
      o.push_back(KRecord);
      varint(o, strIdx_.at(a->str()));
      varint(o, a->count);
      for (uint32_t i = 0; i < a->count; ++i) {
        varint(o, strIdx_.at(a->fieldNames[i]));
        varint(o, a->items[i] ? argIdx_.at(a->items[i]) : 0);
      }
      break;
    }
    argIdx_.emplace(a, ++nargs);
  }
};

//===----------------------------------------------------------------------===//
// Reader
//===----------------------------------------------------------------------===//

class BinReader {
public:
  BinReader(std::string_view bytes, std::string_view name, const ReadLimits &lim)
      : begin_(reinterpret_cast<const uint8_t *>(bytes.data())), p_(begin_), end_(begin_ + bytes.size()),
        name_(name), lim_(lim) {}

  Graph read();

private:
  const uint8_t *begin_, *p_, *end_;
  std::string name_;
  const ReadLimits &lim_;
  Graph g_;
  std::vector<Op> ops_;
  std::vector<DType> dtypes_;
  std::vector<std::string_view> strings_;
  std::vector<const Arg *> args_{nullptr}; // args_[0] = None
  std::vector<uint8_t> argDepth_{0};
  std::vector<const UOp *> ids_;   // id -> node, for the nodes made so far
  std::vector<uint64_t> hashes_;    // id -> the node's hash, known as soon as the node is decoded
  std::vector<const UOp *> srcs_;
  // Decoded records wait in a short queue before they are interned: the intern-table slots of nodes and
  // scalar args are prefetched when they are decoded, so interning them does not stall on a cache miss
  // (the bulk of a read otherwise). Hashes are content hashes, known at decode time.
  std::vector<uint64_t> argHashes_{0}; // arg ref -> the arg's hash (0 for None)
  struct Pending {
    bool isArg;
    Op op;
    DType dtype;
    ArgKind argKind;
    uint8_t small;
    uint32_t id; // node id, or arg ref
    uint32_t srcBegin, nsrc;
    uint64_t bits; // scalar arg payload
    uint32_t argRef, tagRef;
  };
  static constexpr size_t kLookahead = 16;
  std::vector<Pending> pending_;
  size_t pendingHead_ = 0;
  std::vector<uint32_t> pendingSrcs_;
  std::vector<uint64_t> srcHashes_;
  void enqueue(const Pending &p);
  void compactQueue();
  void process(const Pending &p);
  /// Interns every decoded record (before anything that needs their pointers).
  void flush();
  /// Queues a Bool, Int, UInt or Float arg.
  void scalarArg(ArgKind kind, uint8_t small, uint64_t bits);
  std::vector<const Arg *> items_;
  std::vector<std::pair<std::string_view, const Arg *>> fields_;
  const uint8_t *recStart_ = nullptr; // start of the record being read, for messages

  size_t pos() const { return static_cast<size_t>(p_ - begin_); }
  size_t left() const { return static_cast<size_t>(end_ - p_); }
  [[noreturn]] void bad(const std::string &msg) const { fail(name_ + ": " + msg); }
  [[noreturn]] void truncated() const {
    bad("truncated .uopb at byte " + std::to_string(end_ - begin_) + " (reading the item at byte " +
        std::to_string(recStart_ ? recStart_ - begin_ : pos()) + ")");
  }
  [[noreturn]] void corrupt(const std::string &msg) const {
    bad("corrupt .uopb at byte " + std::to_string(recStart_ ? recStart_ - begin_ : pos()) + ": " + msg);
  }

  uint8_t u8() {
    if (p_ == end_) truncated();
    return *p_++;
  }
  uint32_t u32() {
    if (left() < 4) truncated();
    uint32_t v = uint32_t(p_[0]) | uint32_t(p_[1]) << 8 | uint32_t(p_[2]) << 16 | uint32_t(p_[3]) << 24;
    p_ += 4;
    return v;
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
      if (p_ == end_) truncated();
      uint8_t b = *p_++;
      if (shift == 63 && b > 1) corrupt("varint overflows 64 bits");
      v |= uint64_t(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
      if (shift == 63) corrupt("varint longer than 10 bytes");
    }
  }
  /// A count of things that take at least `minBytes` each in the rest of the file.
  uint64_t count(uint64_t minBytes, const char *what) {
    uint64_t n = varint();
    if (n > left() / minBytes) corrupt(std::string(what) + " count " + std::to_string(n) + " exceeds the file size");
    return n;
  }
  std::string_view bytes(const char *what) {
    uint64_t n = varint();
    if (n > left()) truncated();
    std::string_view s(reinterpret_cast<const char *>(p_), static_cast<size_t>(n));
    p_ += n;
    return s;
  }
  std::string_view text(const char *what) {
    std::string_view s = bytes(what);
    if (!io::validUtf8(s)) corrupt(std::string(what) + " is not valid UTF-8");
    return s;
  }

  const Arg *argAt(uint64_t ref, unsigned &depth) {
    if (ref >= args_.size()) corrupt("arg reference " + std::to_string(ref) + " is not defined yet");
    depth = std::max(depth, static_cast<unsigned>(argDepth_[ref]));
    return args_[ref];
  }
  std::string_view stringAt(uint64_t ref) {
    if (ref >= strings_.size()) corrupt("string reference " + std::to_string(ref) + " is not defined yet");
    return strings_[ref];
  }

  void readArg();
  void readNode(uint8_t code);
};

Graph BinReader::read() {
  if (left() < 4 || std::memcmp(p_, "UOPB", 4) != 0) bad("bad magic (not a .uopb document)");
  p_ += 4;
  uint32_t version = u32();
  if (version != kVersion)
    bad("unsupported .uopb version " + std::to_string(version) + " (this uopc reads version " +
        std::to_string(kVersion) + ")");

  std::string_view producer = text("producer");
  {
    size_t i = producer.find_first_not_of(" \t\r\n");
    if (i == std::string_view::npos || producer[i] != '{' || !nlohmann::json::accept(producer))
      corrupt("producer is not a JSON object");
  }
  g_.producerJson.assign(producer);
  uint8_t pad = u8();
  if (pad > 1) corrupt("pad_fill code " + std::to_string(pad) + " (expected 0 or 1)");
  g_.padFill = pad ? PadFill::Invalid : PadFill::Zero;
  g_.stage.assign(text("stage"));

  uint64_t nops = count(1, "op table");
  if (nops > kTagString) corrupt("op table has " + std::to_string(nops) + " entries (at most 253)");
  for (uint64_t i = 0; i < nops; ++i) {
    std::string_view n = text("op name");
    auto op = opFromName(n);
    if (!op) corrupt("unknown op '" + std::string(n) + "' in the op table");
    ops_.push_back(*op);
  }
  uint64_t ndt = count(1, "dtype table");
  if (ndt > 256) corrupt("dtype table has " + std::to_string(ndt) + " entries (at most 256)");
  for (uint64_t i = 0; i < ndt; ++i) {
    std::string_view n = text("dtype name");
    auto dt = dtypeFromName(n);
    if (!dt) corrupt("unknown dtype '" + std::string(n) + "' in the dtype table");
    dtypes_.push_back(*dt);
  }

  uint64_t nnodes = varint(), nargs = varint(), nstrings = varint();
  // a node takes at least 5 bytes, an arg or a string definition at least 2
  uint64_t room = left();
  if (nnodes > room / 5 || nargs > room / 2 || nstrings > room / 2 || nnodes * 5 + nargs * 2 + nstrings * 2 > room)
    corrupt("declared counts (" + std::to_string(nnodes) + " nodes, " + std::to_string(nargs) + " args, " +
            std::to_string(nstrings) + " strings) exceed the file size");
  if (nnodes > lim_.maxNodes) bad("too many nodes (" + std::to_string(nnodes) + "; the limit is " + std::to_string(lim_.maxNodes) + ")");
  ids_.reserve(nnodes);
  hashes_.reserve(nnodes);
  g_.ctx->reserve(nnodes, nargs);
  args_.reserve(nargs + 1);
  argHashes_.reserve(nargs + 1);
  argDepth_.reserve(nargs + 1);
  strings_.reserve(nstrings);

  for (;;) {
    recStart_ = p_;
    uint8_t tag = u8();
    if (tag == kTagEnd) break;
    if (tag == kTagString) {
      if (strings_.size() >= nstrings) corrupt("more strings than the " + std::to_string(nstrings) + " declared");
      strings_.push_back(text("string"));
    } else if (tag == kTagArg) {
      if (args_.size() > nargs) corrupt("more args than the " + std::to_string(nargs) + " declared");
      readArg();
    } else if (tag < ops_.size()) {
      if (hashes_.size() >= nnodes) corrupt("more nodes than the " + std::to_string(nnodes) + " declared");
      readNode(tag);
    } else {
      corrupt("bad record tag " + std::to_string(tag));
    }
  }
  recStart_ = nullptr;
  flush();
  if (ids_.size() != nnodes)
    corrupt("the document has " + std::to_string(ids_.size()) + " nodes, " + std::to_string(nnodes) + " declared");
  if (args_.size() - 1 != nargs)
    corrupt("the document has " + std::to_string(args_.size() - 1) + " args, " + std::to_string(nargs) + " declared");
  if (strings_.size() != nstrings)
    corrupt("the document has " + std::to_string(strings_.size()) + " strings, " + std::to_string(nstrings) + " declared");
  uint64_t root = varint();
  if (root >= ids_.size())
    bad("root " + std::to_string(root) + " is not a node id (the document has " + std::to_string(ids_.size()) + " nodes)");
  if (p_ != end_) corrupt(std::to_string(left()) + " bytes of trailing data after the document");
  g_.root = ids_[root];
  return std::move(g_);
}

void BinReader::readArg() {
  Context &c = *g_.ctx;
  uint8_t kind = u8();
  const Arg *a = nullptr;
  unsigned depth = 0; // nesting of the children
  if (kind != KBool && kind != KInt && kind != KUInt && kind != KFloat) flush(); // interned right away
  auto small = [&](unsigned limit, const char *what) {
    uint64_t v = varint();
    if (v >= limit) corrupt(std::string("bad ") + what + " code " + std::to_string(v));
    return static_cast<unsigned>(v);
  };
  switch (kind) {
  case KBool: {
    uint8_t b = u8();
    if (b > 1) corrupt("bad bool " + std::to_string(b));
    return scalarArg(ArgKind::Bool, b, 0);
  }
  case KInt: {
    uint64_t z = varint();
    return scalarArg(ArgKind::Int, 0, (z >> 1) ^ (~(z & 1) + 1));
  }
  case KUInt: {
    uint64_t v = varint();
    return scalarArg(v <= static_cast<uint64_t>(INT64_MAX) ? ArgKind::Int : ArgKind::UInt, 0, v);
  }
  case KBigInt: {
    std::string_view s = bytes("bigint");
    if (!io::validBigInt(s)) corrupt("bad bigint digits");
    a = io::intArgFromDecimal(c, s);
    break;
  }
  case KFloat: {
    if (left() < 8) truncated();
    uint64_t bits = 0;
    for (int k = 0; k < 8; ++k) bits |= uint64_t(p_[k]) << (8 * k);
    p_ += 8;
    return scalarArg(ArgKind::Float, 0, bits);
  }
  case KString: a = c.argString(bytes("string arg")); break; // any bytes: a string arg is stored exactly
  case KInvalid: a = c.argInvalid(); break;
  case KOps: a = c.argOp(ops_.at(small(static_cast<unsigned>(ops_.size()), "op"))); break;
  case KAxisType: {
    uint8_t v = u8();
    if (v >= kNumAxisTypes) corrupt("bad AxisType code " + std::to_string(v));
    a = c.argAxisType(static_cast<AxisType>(v));
    break;
  }
  case KAddrSpace: {
    uint8_t v = u8();
    if (v >= kNumAddrSpaces) corrupt("bad AddrSpace code " + std::to_string(v));
    a = c.argAddrSpace(static_cast<AddrSpace>(v));
    break;
  }
  case KDType: a = c.argDType(dtypes_.at(small(static_cast<unsigned>(dtypes_.size()), "dtype"))); break;
  case KUOp: {
    uint64_t id = varint();
    flush();
    if (id >= ids_.size()) corrupt("a UOp arg refers to node " + std::to_string(id) + ", which is not defined yet");
    a = c.argRef(ids_[id]);
    break;
  }
  case KBytes: a = c.argBytes(bytes("bytes")); break;
  case KTuple: {
    uint64_t n = count(1, "tuple item");
    if (n > lim_.maxArgItems) bad("a tuple arg has more than " + std::to_string(lim_.maxArgItems) + " items");
    items_.clear();
    for (uint64_t i = 0; i < n; ++i) items_.push_back(argAt(varint(), depth));
    a = c.argTuple(items_);
    ++depth;
    break;
  }
  case KRecord: {
    std::string_view cls = stringAt(varint());
    uint64_t n = count(2, "record field");
    size_t maxFields = std::min(lim_.maxArgItems, io::kMaxRecordFields);
    if (n > maxFields) corrupt("a record arg has more than " + std::to_string(maxFields) + " fields");
    fields_.clear();
    for (uint64_t i = 0; i < n; ++i) {
      std::string_view k = stringAt(varint());
      fields_.push_back({k, argAt(varint(), depth)});
    }
    try {
      a = makeRecord(c, cls, fields_);
    } catch (const Error &e) {
      corrupt(std::string("bad record: ") + e.what());
    }
    ++depth;
    break;
  }
  default: corrupt("bad arg kind " + std::to_string(kind));
  }
  if (depth > lim_.maxArgDepth)
    corrupt("an arg is nested too deep (over " + std::to_string(lim_.maxArgDepth) + " levels)");
  args_.push_back(a);
  argHashes_.push_back(a ? a->hash : 0);
  argDepth_.push_back(static_cast<uint8_t>(depth));
}

void BinReader::scalarArg(ArgKind kind, uint8_t small, uint64_t bits) {
  compactQueue();
  uint64_t h = Context::scalarArgHash(kind, small, bits);
  g_.ctx->prefetchArg(h);
  uint32_t ref = static_cast<uint32_t>(args_.size());
  args_.push_back(nullptr); // set when the queue reaches it
  argHashes_.push_back(h);
  argDepth_.push_back(0);
  Pending p{};
  p.isArg = true;
  p.argKind = kind;
  p.small = small;
  p.id = ref;
  p.bits = bits;
  enqueue(p);
}

void BinReader::readNode(uint8_t code) {
  Op op = ops_[code];
  const size_t id = hashes_.size();
  auto nodeFail = [&](const std::string &msg) {
    bad("node " + std::to_string(id) + " (" + std::string(opName(op)) + "): " + msg + " (.uopb byte " +
        std::to_string(recStart_ - begin_) + ")");
  };
  uint8_t dtc = u8();
  if (dtc >= dtypes_.size()) nodeFail("bad dtype code " + std::to_string(dtc));
  uint64_t nsrc = count(1, "source");
  if (nsrc > lim_.maxSrcs) nodeFail("more than " + std::to_string(lim_.maxSrcs) + " sources");
  compactQueue();
  Pending n{};
  n.op = op;
  n.dtype = dtypes_[dtc];
  n.id = static_cast<uint32_t>(id);
  n.srcBegin = static_cast<uint32_t>(pendingSrcs_.size());
  n.nsrc = static_cast<uint32_t>(nsrc);
  srcHashes_.clear();
  for (uint64_t i = 0; i < nsrc; ++i) {
    uint64_t d = varint();
    if (d == 0 || d > id) nodeFail("source delta " + std::to_string(d) + " does not name an earlier node");
    pendingSrcs_.push_back(static_cast<uint32_t>(id - d));
    srcHashes_.push_back(hashes_[id - d]);
  }
  unsigned depth = 0;
  uint64_t ar = varint();
  if (ar >= args_.size()) nodeFail("arg reference " + std::to_string(ar) + " is not defined yet");
  uint64_t tr = varint();
  if (tr >= args_.size()) nodeFail("tag reference " + std::to_string(tr) + " is not defined yet");
  argAt(ar, depth); // depth checks only: the pointers may not exist yet
  argAt(tr, depth);
  n.argRef = static_cast<uint32_t>(ar);
  n.tagRef = static_cast<uint32_t>(tr);
  uint64_t h = Context::nodeHash(n.op, n.dtype, srcHashes_, argHashes_[ar], argHashes_[tr]);
  hashes_.push_back(h);
  g_.ctx->prefetch(h);
  enqueue(n);
}

void BinReader::compactQueue() {
  // Drop the processed front of the queue now and then, so it holds about kLookahead records, not the file.
  if (pendingHead_ < 1024) return;
  uint32_t srcShift = static_cast<uint32_t>(pendingSrcs_.size());
  for (size_t i = pendingHead_; i < pending_.size(); ++i)
    if (!pending_[i].isArg) {
      srcShift = pending_[i].srcBegin;
      break;
    }
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(pendingHead_));
  for (Pending &q : pending_)
    if (!q.isArg) q.srcBegin -= srcShift;
  pendingSrcs_.erase(pendingSrcs_.begin(), pendingSrcs_.begin() + srcShift);
  pendingHead_ = 0;
}

void BinReader::enqueue(const Pending &p) {
  pending_.push_back(p);
  if (pending_.size() - pendingHead_ > kLookahead) process(pending_[pendingHead_++]);
}

void BinReader::process(const Pending &p) {
  Context &c = *g_.ctx;
  if (p.isArg) {
    const Arg *a = nullptr;
    switch (p.argKind) {
    case ArgKind::Bool: a = c.argBool(p.small != 0); break;
    case ArgKind::Int: a = c.argInt(static_cast<int64_t>(p.bits)); break;
    case ArgKind::UInt: a = c.argUInt(p.bits); break;
    default: a = c.argFloat(std::bit_cast<double>(p.bits)); break;
    }
    args_[p.id] = a;
    return;
  }
  srcs_.clear();
  for (uint32_t i = 0; i < p.nsrc; ++i) srcs_.push_back(ids_[pendingSrcs_[p.srcBegin + i]]);
  const UOp *u = c.make(p.op, p.dtype, srcs_, args_[p.argRef], args_[p.tagRef]);
  ids_.push_back(u);
  if (g_.inputIds.get(u) == UINT32_MAX) g_.inputIds[u] = p.id;
}

void BinReader::flush() {
  while (pendingHead_ < pending_.size()) process(pending_[pendingHead_++]);
}

} // namespace

std::string writeGraphBinary(const Graph &g) {
  if (!g.root) fail("cannot write a graph without a root");
  try {
    {
      std::string_view pj = g.producerJson;
      size_t i = pj.find_first_not_of(" \t\r\n");
      if (i == std::string_view::npos || pj[i] != '{' || !nlohmann::json::accept(pj))
        fail("cannot write the graph: producer is not a JSON object");
      if (!io::validUtf8(pj) || !io::validUtf8(g.stage)) fail("cannot write the graph: header text is not UTF-8");
    }
    std::vector<const UOp *> order = io::writeOrder(g.root);
    uint32_t maxIndex = 0;
    for (const UOp *u : order) maxIndex = std::max(maxIndex, u->index);
    std::vector<uint32_t> ids(static_cast<size_t>(maxIndex) + 1, UINT32_MAX);
    for (size_t i = 0; i < order.size(); ++i) ids[order[i]->index] = static_cast<uint32_t>(i);

    // The op and dtype tables list the ops and dtypes the document uses, in enum order.
    bool opUsed[kNumOps] = {}, dtUsed[kNumDTypes] = {};
    {
      std::unordered_set<const Arg *> seen;
      std::vector<const Arg *> work;
      auto walk = [&](const Arg *a) {
        if (a && seen.insert(a).second) work.push_back(a);
        while (!work.empty()) {
          const Arg *x = work.back();
          work.pop_back();
          if (x->kind == ArgKind::OpName) opUsed[static_cast<unsigned>(x->op())] = true;
          if (x->kind == ArgKind::DType) dtUsed[static_cast<unsigned>(x->dtype())] = true;
          if (x->kind == ArgKind::Tuple || x->kind == ArgKind::Record)
            for (const Arg *e : x->elems())
              if (e && seen.insert(e).second) work.push_back(e);
        }
      };
      for (const UOp *u : order) {
        opUsed[static_cast<unsigned>(u->op)] = dtUsed[static_cast<unsigned>(u->dtype)] = true;
        walk(u->arg);
        walk(u->tag);
      }
    }
    uint8_t opCode[kNumOps] = {}, dtCode[kNumDTypes] = {};
    unsigned nOpsUsed = 0, nDtUsed = 0;
    for (unsigned i = 0; i < kNumOps; ++i)
      if (opUsed[i]) opCode[i] = static_cast<uint8_t>(nOpsUsed++);
    for (unsigned i = 0; i < kNumDTypes; ++i)
      if (dtUsed[i]) dtCode[i] = static_cast<uint8_t>(nDtUsed++);

    BinWriter w(ids, opCode, dtCode);
    w.body.reserve(order.size() * 6 + 64);
    for (size_t i = 0; i < order.size(); ++i) {
      const UOp *u = order[i];
      uint64_t ar = w.argRef(u->arg), tr = w.argRef(u->tag);
      std::string &o = w.body;
      o.push_back(static_cast<char>(opCode[static_cast<unsigned>(u->op)]));
      o.push_back(static_cast<char>(dtCode[static_cast<unsigned>(u->dtype)]));
      BinWriter::varint(o, u->nsrc);
      for (const UOp *s : u->src()) BinWriter::varint(o, i - ids[s->index]);
      BinWriter::varint(o, ar);
      BinWriter::varint(o, tr);
    }
    w.body.push_back(static_cast<char>(kTagEnd));
    BinWriter::varint(w.body, ids[g.root->index]);

    std::string out;
    out.reserve(w.body.size() + 1024 + g.producerJson.size() + g.stage.size());
    out.append("UOPB", 4);
    for (int k = 0; k < 4; ++k) out.push_back(static_cast<char>(kVersion >> (8 * k)));
    BinWriter::bytes(out, g.producerJson);
    out.push_back(g.padFill == PadFill::Invalid ? 1 : 0);
    BinWriter::bytes(out, g.stage);
    BinWriter::varint(out, nOpsUsed);
    for (unsigned i = 0; i < kNumOps; ++i)
      if (opUsed[i]) BinWriter::bytes(out, opName(static_cast<Op>(i)));
    BinWriter::varint(out, nDtUsed);
    for (unsigned i = 0; i < kNumDTypes; ++i)
      if (dtUsed[i]) BinWriter::bytes(out, dtypeName(static_cast<DType>(i)));
    BinWriter::varint(out, order.size());
    BinWriter::varint(out, w.nargs);
    BinWriter::varint(out, w.nstrings);
    out += w.body;
    return out;
  } catch (const std::bad_alloc &) {
    fail("out of memory writing the graph");
  }
}

Graph readGraphBinary(std::string_view bytes, std::string_view name, const ReadLimits &limits) {
  try {
    Graph g = BinReader(bytes, name, limits).read();
    if (limits.producerForms) normalizeProducerForms(g, std::string(name)); // tinygrad 0.14.0's forms (IR/ProducerForms.h)
    io::checkVariableNames(g, name);
    return g;
  } catch (const Error &) {
    throw;
  } catch (const std::bad_alloc &) {
    fail(std::string(name) + ": out of memory while reading the graph");
  } catch (const std::length_error &) {
    fail(std::string(name) + ": out of memory while reading the graph");
  } catch (const std::exception &e) {
    fail(std::string(name) + ": internal error while reading the graph: " + e.what());
  }
}

} // namespace uopc

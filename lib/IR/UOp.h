//===- UOp.h - hash-consed UOps and args in an arena ----------------------===//
// A UOp is immutable and interned in a Context: two structurally equal nodes (same op, dtype, sources,
// arg and tag) are the same pointer. Args are interned the same way, so comparing two nodes or two args
// is a pointer comparison. All memory lives in the Context's arena and is freed with it: nothing here
// has a destructor to run, and building a node costs no heap allocation of its own.
#pragma once

#include "IR/Types.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace uopc {

struct UOp;

/// What an Arg holds. A missing arg (Python None) is a null `const Arg *`, never an Arg.
enum class ArgKind : uint8_t {
  Bool,      ///< b()
  Int,       ///< i(): fits int64
  UInt,      ///< u(): above int64's range, fits uint64
  BigInt,    ///< str(): decimal digits of an integer outside int64/uint64
  Float,     ///< f(): any double, -0.0, inf and nan included (compared by bits)
  String,    ///< str()
  Invalid,   ///< tinygrad's Invalid constant
  OpName,    ///< op(): an op used as a value (the reduce op of REDUCE)
  AxisType,  ///< axisType()
  AddrSpace, ///< addrSpace()
  DType,     ///< dtype()
  UOpRef,    ///< ref(): a reference to another node
  Bytes,     ///< str(): raw bytes
  Tuple,     ///< elems(): a Python tuple or list (elements may be null = None)
  Record,    ///< a tinygrad dataclass: str() is the class name, keys()/elems() the non-default fields
};

/// An interned arg value. Never build one directly: use Context::arg*.
struct Arg {
  ArgKind kind;
  uint8_t small = 0;  // payload of Bool, OpName, AxisType, AddrSpace, DType
  bool hasRef = false; // this arg or one inside it is a UOpRef (so the node depends on another node)
  uint32_t count = 0; // element count (Tuple, Record)
  uint32_t len = 0;   // byte length of data (String, BigInt, Bytes, Record class name)
  union {
    int64_t ival;
    uint64_t uval;
    double fval;
    const UOp *refval;
  };
  const char *data = nullptr;               // String, BigInt, Bytes, Record class name
  const Arg *const *items = nullptr;        // Tuple elements, Record field values
  const std::string_view *fieldNames = nullptr; // Record field names
  uint64_t hash = 0;

  Arg() : ival(0) {}
  bool b() const { return small != 0; }
  int64_t i() const { return ival; }
  uint64_t u() const { return uval; }
  double f() const { return fval; }
  const UOp *ref() const { return refval; }
  Op op() const { return static_cast<Op>(small); }
  DType dtype() const { return static_cast<DType>(small); }
  uopc::AxisType axisType() const { return static_cast<uopc::AxisType>(small); }
  uopc::AddrSpace addrSpace() const { return static_cast<uopc::AddrSpace>(small); }
  std::string_view str() const { return {data, len}; }
  std::span<const Arg *const> elems() const { return {items, count}; }
  std::span<const std::string_view> keys() const { return {fieldNames, kind == ArgKind::Record ? count : 0}; }
  /// A Record's field, or null when absent (= its default).
  const Arg *field(std::string_view name) const;
  bool isInt() const { return kind == ArgKind::Int || kind == ArgKind::UInt; }
};

/// One node of the graph. Immutable; created only by Context::make.
struct UOp {
  Op op;
  DType dtype;
  uint32_t nsrc;
  uint32_t index; ///< creation order in its Context: dense, usable as a key of side tables
  const UOp *const *srcs;
  const Arg *arg; ///< null when None
  const Arg *tag; ///< null when there is no tag
  uint64_t hash;

  std::span<const UOp *const> src() const { return {srcs, nsrc}; }
  const UOp *src(size_t i) const { return srcs[i]; }
};

/// Owns every node and arg of one compilation. Not thread-safe; not copyable.
class Context {
public:
  Context();
  ~Context();
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

  /// The unique node with these fields (created if new).
  const UOp *make(Op op, DType dtype, std::span<const UOp *const> src = {}, const Arg *arg = nullptr,
                  const Arg *tag = nullptr);
  const UOp *make(Op op, DType dtype, std::initializer_list<const UOp *> src, const Arg *arg = nullptr,
                  const Arg *tag = nullptr) {
    return make(op, dtype, std::span<const UOp *const>(src.begin(), src.size()), arg, tag);
  }
  /// The hash make() gives a node with these fields, from its sources' hashes. With prefetch() it lets a
  /// reader that knows its next nodes ahead of time hide the intern table's cache misses.
  /// `argHash`/`tagHash` are the args' own hashes (0 for none).
  static uint64_t nodeHash(Op op, DType dtype, std::span<const uint64_t> srcHashes, uint64_t argHash, uint64_t tagHash);
  /// Hints that a node with this hash is about to be made.
  void prefetch(uint64_t hash) const;
  /// The hash of a payload-only arg (Bool, Int, UInt, Float: `bits` is the value's 64 bits), the same
  /// internArg computes; with prefetchArg() it lets readers hide the arg table's cache misses too.
  static uint64_t scalarArgHash(ArgKind kind, uint8_t small, uint64_t bits);
  void prefetchArg(uint64_t hash) const;
  /// A copy of `u` with other sources (u itself if they are the same).
  const UOp *withSrc(const UOp *u, std::span<const UOp *const> src);

  // Interned args.
  const Arg *argBool(bool v);
  const Arg *argInt(int64_t v);
  const Arg *argUInt(uint64_t v); ///< stored as Int when it fits int64
  const Arg *argBigInt(std::string_view digits);
  const Arg *argFloat(double v);
  const Arg *argString(std::string_view s);
  const Arg *argBytes(std::string_view raw);
  const Arg *argInvalid();
  const Arg *argOp(Op op);
  const Arg *argDType(DType dt);
  const Arg *argAxisType(AxisType a);
  const Arg *argAddrSpace(AddrSpace a);
  const Arg *argRef(const UOp *u);
  const Arg *argTuple(std::span<const Arg *const> elems);
  const Arg *argTuple(std::initializer_list<const Arg *> elems) {
    return argTuple(std::span<const Arg *const>(elems.begin(), elems.size()));
  }
  /// A record with exactly these fields, in this order. Use IR/Records.h to build known dataclasses
  /// (it drops defaults and orders fields canonically so that equal records intern to one pointer).
  const Arg *argRecord(std::string_view className, std::span<const std::pair<std::string_view, const Arg *>> fields);

  // Convenience constructors of common nodes.
  const UOp *constInt(DType dt, int64_t v) { return make(Op::CONST, dt, {}, argInt(v)); }
  const UOp *constFloat(DType dt, double v) { return make(Op::CONST, dt, {}, argFloat(v)); }
  const UOp *constBool(bool v) { return make(Op::CONST, DType::Bool, {}, argBool(v)); }

  /// Number of distinct nodes created so far; UOp::index is below it.
  size_t numNodes() const { return nodes_.size(); }
  const UOp *node(size_t index) const { return nodes_[index]; }
  /// Prepares for about this many new nodes and args (a reader that knows its counts calls it), so
  /// that the intern tables never rehash while it fills them.
  void reserve(size_t nodes, size_t args);
  /// Bytes taken by the arena and the intern tables (for benchmarks).
  size_t memoryUsage() const;

  /// Arena allocation for passes that need scratch memory living as long as the graph.
  void *allocate(size_t bytes, size_t align);
  std::string_view saveString(std::string_view s);

  /// Base of the scratch objects a Context keeps for reuse across calls (see Scratch below).
  struct ScratchBase {
    virtual ~ScratchBase() = default;
  };
  /// Counters of the work done by StampedTables leased through Scratch (tests and benchmarks): a call
  /// that touches k nodes adds about k resets, whatever the Context's size.
  struct ScratchStats {
    uint64_t slotsReset = 0; ///< slots (re)initialized on first touch in a generation
    uint64_t slotsGrown = 0; ///< slots allocated by table growth (amortized over calls)
    uint64_t leases = 0;     ///< Scratch objects handed out
    uint64_t created = 0;    ///< of which newly constructed (the rest were reused)
  };
  ScratchStats &scratchStats() { return scratchStats_; }

  /// A lease of a T (derived from ScratchBase) kept by this Context: reused across calls so that its
  /// allocations are amortized, handed back on destruction. Each live lease has an object of its own,
  /// so a call that runs while another holds a lease (a nested graphRewrite) gets a separate one.
  template <typename T> class Scratch {
  public:
    explicit Scratch(Context &c) : c_(c), p_(static_cast<T *>(c.takeScratch(key()))) {
      ++c.scratchStats_.leases;
      if (!p_) {
        p_ = new T();
        ++c.scratchStats_.created;
      }
    }
    ~Scratch() { c_.giveScratch(key(), p_); }
    Scratch(const Scratch &) = delete;
    Scratch &operator=(const Scratch &) = delete;
    T *operator->() const { return p_; }
    T &operator*() const { return *p_; }

  private:
    static const void *key() {
      static const char k = 0;
      return &k;
    }
    Context &c_;
    T *p_;
  };

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<const UOp *> nodes_;
  ScratchStats scratchStats_;
  ScratchBase *takeScratch(const void *key);
  void giveScratch(const void *key, ScratchBase *p);
  const Arg *internArg(Arg &proto, std::span<const Arg *const> items, std::span<const std::string_view> keys);
};

/// Side table keyed by node: a dense vector indexed by UOp::index. Grows on demand. It costs O(the largest
/// index it holds), which is O(nodes of the Context) for a new node: a table made afresh per call over a
/// small graph should be a StampedTable leased with Context::Scratch instead.
template <typename T> class NodeMap {
public:
  explicit NodeMap(T init = T()) : init_(std::move(init)) {}
  T &operator[](const UOp *u) {
    if (u->index >= data_.size()) data_.resize(u->index + 1, init_);
    return data_[u->index];
  }
  const T *find(const UOp *u) const { return u->index < data_.size() ? &data_[u->index] : nullptr; }
  T get(const UOp *u) const { return u->index < data_.size() ? data_[u->index] : init_; }
  void clear() { data_.clear(); }

private:
  std::vector<T> data_;
  T init_;
};

/// Side table keyed by node whose clear() is O(1), for per-call tables in a big Context: each slot S
/// carries the generation that last wrote it (a member `uint32_t gen`), and a slot of another generation
/// reads as S{} (empty). at() resets a slot on its first touch in a generation, so a call costs
/// O(nodes touched), not O(nodes of the Context); growth is amortized when the table is reused (lease
/// it with Context::Scratch). References returned by at() are invalidated by a later at() that grows.
template <typename S> class StampedTable {
public:
  /// Starts a generation: every slot reads as empty again. O(1) (O(size) once in 2^32 calls).
  void clear() {
    if (++gen_ == 0) {
      for (S &s : slots_) s.gen = 0;
      gen_ = 1;
    }
  }
  /// The slot of `u`, reset to S{} if this generation has not touched it.
  S &at(const UOp *u) {
    if (u->index >= slots_.size()) [[unlikely]]
      grow(u->index);
    S &s = slots_[u->index];
    if (s.gen != gen_) {
      s = S{};
      s.gen = gen_;
      ++resets_;
    }
    return s;
  }
  /// The slot of `u` if this generation touched it, else null. Never grows nor resets.
  const S *find(const UOp *u) const {
    if (u->index >= slots_.size()) return nullptr;
    const S &s = slots_[u->index];
    return s.gen == gen_ ? &s : nullptr;
  }
  size_t capacity() const { return slots_.size(); }
  /// Moves the counters of work done into `st` (and zeroes them).
  void flushStats(Context::ScratchStats &st) {
    st.slotsReset += resets_;
    st.slotsGrown += grown_;
    resets_ = grown_ = 0;
  }

private:
  void grow(uint32_t index) {
    size_t n = std::max<size_t>({size_t(index) + 1, slots_.size() + slots_.size() / 2, 64});
    grown_ += n - slots_.size();
    slots_.resize(n); // value-initialized: gen 0, never a current generation
  }
  std::vector<S> slots_;
  uint32_t gen_ = 1; ///< slots start at 0: empty without a clear()
  uint64_t resets_ = 0, grown_ = 0;
};

/// Every node reachable from `root`, sources before users (iterative: no recursion on depth).
std::vector<const UOp *> toposort(const UOp *root);

} // namespace uopc

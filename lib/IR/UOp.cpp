//===- UOp.cpp - the arena and the intern tables ---------------------------===//
#include "IR/UOp.h"

#include "IR/Error.h"

#include <bit>
#include <cstring>
#include <new>
#include <sys/mman.h>
#include <algorithm>
#include <cstdlib>

namespace uopc {
namespace {

inline uint64_t mix(uint64_t h, uint64_t v) {
  // splitmix-style combine: cheap and well distributed for pointer and small integer inputs
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 29);
}
inline uint64_t ptrBits(const void *p) { return reinterpret_cast<uintptr_t>(p); }
uint64_t hashBytes(const char *p, size_t n) {
  uint64_t h = 1469598103934665603ULL; // FNV-1a
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 1099511628211ULL;
  return h;
}

/// Memory for big tables and arena blocks: from 2 MiB up it is 2 MiB-aligned and marked for transparent
/// huge pages, so filling a graph of millions of nodes does not spend its time in page faults.
constexpr size_t kHuge = size_t(2) << 20;
void *bigAllocate(size_t bytes) {
  if (bytes < kHuge) return ::operator new(bytes);
  size_t rounded = (bytes + kHuge - 1) & ~(kHuge - 1);
  void *p = std::aligned_alloc(kHuge, rounded);
  if (!p) throw std::bad_alloc();
#if defined(MADV_HUGEPAGE) && defined(UOPC_HUGEPAGES)
  ::madvise(p, rounded, MADV_HUGEPAGE);
#endif
  return p;
}
void bigFree(void *p, size_t bytes) {
  if (bytes < kHuge) ::operator delete(p);
  else std::free(p);
}

/// std::allocator that takes big requests from bigAllocate.
template <typename T> struct BigAllocator {
  using value_type = T;
  BigAllocator() = default;
  template <typename U> BigAllocator(const BigAllocator<U> &) {}
  T *allocate(size_t n) { return static_cast<T *>(bigAllocate(n * sizeof(T))); }
  void deallocate(T *p, size_t n) { bigFree(p, n * sizeof(T)); }
  template <typename U> bool operator==(const BigAllocator<U> &) const { return true; }
};

/// Bump allocator: blocks that grow from 64 KiB to 2 MiB (small graphs stay small), never freed one by one.
class Arena {
public:
  ~Arena() {
    for (auto [b, size] : blocks_) bigFree(b, size);
  }
  void *allocate(size_t bytes, size_t align) {
    size_t off = (cur_ + align - 1) & ~(align - 1);
    if (blocks_.empty() || off + bytes > blockSize_) {
      size_t next = blockSize_ == 0 ? kFirstBlock : std::min(blockSize_ * 2, kHuge);
      if (bytes + align > next / 4) { // oversized: its own block, keep bumping the current one
        size_t size = bytes + align;
        char *b = static_cast<char *>(bigAllocate(size));
        total_ += size;
        blocks_.insert(blocks_.begin(), {b, size});
        return reinterpret_cast<void *>((reinterpret_cast<uintptr_t>(b) + align - 1) & ~(uintptr_t)(align - 1));
      }
      char *b = static_cast<char *>(bigAllocate(next));
      total_ += next;
      blocks_.push_back({b, next});
      blockSize_ = next;
      off = 0;
    }
    cur_ = off + bytes;
    return blocks_.back().first + off;
  }
  size_t total() const { return total_; }

private:
  static constexpr size_t kFirstBlock = size_t(64) << 10;
  std::vector<std::pair<char *, size_t>> blocks_;
  size_t cur_ = 0, blockSize_ = 0, total_ = 0;
};

/// Open-addressing set of interned pointers. Each slot keeps the hash next to the pointer, so a probe
/// only touches the object when the hashes agree (one cache miss per lookup instead of one per probe).
template <typename T> class InternTable {
public:
  InternTable() : slots_(1024) {}
  template <typename Eq> T *find(uint64_t h, Eq &&eq) const {
    size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const Slot &s = slots_[i];
      if (!s.ptr) return nullptr;
      if (s.hash == h && eq(s.ptr)) return s.ptr;
    }
  }
  void insert(T *v) {
    if ((count_ + 1) * 10 > slots_.size() * 7) rehash(slots_.size() * 2);
    place(slots_, v);
    ++count_;
  }
  /// Sizes the table for n entries up front, so that filling it never rehashes.
  void reserve(size_t n) {
    size_t want = slots_.size();
    while (n * 10 > want * 7) want *= 2;
    if (want != slots_.size()) rehash(want);
  }
  size_t bytes() const { return slots_.size() * sizeof(Slot); }
  void prefetch(uint64_t h) const { __builtin_prefetch(&slots_[h & (slots_.size() - 1)]); }

private:
  struct Slot {
    uint64_t hash = 0;
    T *ptr = nullptr;
  };
  static void place(std::vector<Slot, BigAllocator<Slot>> &slots, T *v) {
    size_t mask = slots.size() - 1;
    size_t i = v->hash & mask;
    while (slots[i].ptr) i = (i + 1) & mask;
    slots[i] = {v->hash, v};
  }
  void rehash(size_t size) {
    std::vector<Slot, BigAllocator<Slot>> bigger(size);
    for (const Slot &s : slots_)
      if (s.ptr) place(bigger, s.ptr);
    slots_.swap(bigger);
  }
  std::vector<Slot, BigAllocator<Slot>> slots_;
  size_t count_ = 0;
};

} // namespace

struct Context::Impl {
  Arena arena;
  InternTable<UOp> uops;
  InternTable<Arg> args;
  /// Scratch objects not leased now, with their type's key (a handful: one per type and nesting level).
  std::vector<std::pair<const void *, std::unique_ptr<ScratchBase>>> scratch;
};

Context::Context() : impl_(std::make_unique<Impl>()) {}
Context::~Context() = default;

Context::ScratchBase *Context::takeScratch(const void *key) {
  auto &pool = impl_->scratch;
  for (size_t i = pool.size(); i-- > 0;)
    if (pool[i].first == key) {
      ScratchBase *p = pool[i].second.release();
      pool.erase(pool.begin() + std::ptrdiff_t(i));
      return p;
    }
  return nullptr;
}
void Context::giveScratch(const void *key, ScratchBase *p) { impl_->scratch.emplace_back(key, std::unique_ptr<ScratchBase>(p)); }

void *Context::allocate(size_t bytes, size_t align) { return impl_->arena.allocate(bytes, align); }
std::string_view Context::saveString(std::string_view s) {
  char *p = static_cast<char *>(allocate(s.size() + 1, 1));
  if (!s.empty()) std::memcpy(p, s.data(), s.size());
  p[s.size()] = 0;
  return {p, s.size()};
}
void Context::reserve(size_t nodes, size_t args) {
  impl_->uops.reserve(nodes);
  impl_->args.reserve(args);
  nodes_.reserve(nodes);
}

size_t Context::memoryUsage() const {
  return impl_->arena.total() + impl_->uops.bytes() + impl_->args.bytes() + nodes_.capacity() * sizeof(void *);
}

namespace {
// A node's hash depends on its fields' hashes only (never on addresses), so a reader can compute it
// before the node's arg or sources exist.
inline uint64_t headHash(Op op, DType dtype, uint64_t argHash, uint64_t tagHash) {
  return mix(mix(static_cast<uint64_t>(op) << 8 | static_cast<uint64_t>(dtype), argHash), tagHash);
}
inline uint64_t headHash(Op op, DType dtype, const Arg *arg, const Arg *tag) {
  return headHash(op, dtype, arg ? arg->hash : 0, tag ? tag->hash : 0);
}
inline uint64_t argHashHead(ArgKind kind, uint8_t small, uint32_t count, uint32_t len, uint64_t bits) {
  return mix(mix(static_cast<uint64_t>(kind) << 8 | small, uint64_t(count) << 32 | len), bits);
}
} // namespace

uint64_t Context::scalarArgHash(ArgKind kind, uint8_t small, uint64_t bits) {
  return argHashHead(kind, small, 0, 0, bits);
}
void Context::prefetchArg(uint64_t hash) const { impl_->args.prefetch(hash); }

uint64_t Context::nodeHash(Op op, DType dtype, std::span<const uint64_t> srcHashes, uint64_t argHash, uint64_t tagHash) {
  uint64_t h = headHash(op, dtype, argHash, tagHash);
  for (uint64_t s : srcHashes) h = mix(h, s);
  return h;
}

void Context::prefetch(uint64_t hash) const { impl_->uops.prefetch(hash); }

const UOp *Context::make(Op op, DType dtype, std::span<const UOp *const> src, const Arg *arg, const Arg *tag) {
  uint64_t h = headHash(op, dtype, arg, tag);
  for (const UOp *s : src) h = mix(h, s->hash);
  auto eq = [&](const UOp *u) {
    if (u->op != op || u->dtype != dtype || u->arg != arg || u->tag != tag || u->nsrc != src.size()) return false;
    for (size_t i = 0; i < src.size(); ++i)
      if (u->srcs[i] != src[i]) return false;
    return true;
  };
  if (UOp *found = impl_->uops.find(h, eq)) return found;
  if (nodes_.size() >= UINT32_MAX) fail("too many nodes (over 2^32)");
  auto *u = static_cast<UOp *>(allocate(sizeof(UOp), alignof(UOp)));
  const UOp **srcs = nullptr;
  if (!src.empty()) {
    srcs = static_cast<const UOp **>(allocate(sizeof(UOp *) * src.size(), alignof(UOp *)));
    std::memcpy(srcs, src.data(), sizeof(UOp *) * src.size());
  }
  new (u) UOp{op, dtype, static_cast<uint32_t>(src.size()), static_cast<uint32_t>(nodes_.size()), srcs, arg, tag, h};
  impl_->uops.insert(u);
  nodes_.push_back(u);
  return u;
}

const UOp *Context::withSrc(const UOp *u, std::span<const UOp *const> src) {
  if (src.size() == u->nsrc) {
    bool same = true;
    for (size_t i = 0; i < src.size() && same; ++i) same = src[i] == u->srcs[i];
    if (same) return u;
  }
  return make(u->op, u->dtype, src, u->arg, u->tag);
}

const Arg *Context::internArg(Arg &proto, std::span<const Arg *const> items, std::span<const std::string_view> keys) {
  uint64_t h = argHashHead(proto.kind, proto.small, proto.count, proto.len, proto.uval);
  if (proto.data) h = mix(h, hashBytes(proto.data, proto.len));
  for (const Arg *a : items) h = mix(h, a ? a->hash : 0x51ed);
  for (std::string_view k : keys) h = mix(h, hashBytes(k.data(), k.size()));
  proto.hash = h;
  auto eq = [&](const Arg *a) {
    if (a->kind != proto.kind || a->small != proto.small || a->count != proto.count || a->len != proto.len ||
        a->uval != proto.uval)
      return false;
    if (proto.len && std::memcmp(a->data, proto.data, proto.len) != 0) return false;
    for (size_t i = 0; i < items.size(); ++i)
      if (a->items[i] != items[i]) return false;
    for (size_t i = 0; i < keys.size(); ++i)
      if (a->fieldNames[i] != keys[i]) return false;
    return true;
  };
  if (Arg *found = impl_->args.find(h, eq)) return found;
  auto *a = static_cast<Arg *>(allocate(sizeof(Arg), alignof(Arg)));
  new (a) Arg(proto);
  if (proto.data) a->data = saveString(std::string_view(proto.data, proto.len)).data();
  if (!items.empty()) {
    auto **it = static_cast<const Arg **>(allocate(sizeof(Arg *) * items.size(), alignof(Arg *)));
    for (size_t i = 0; i < items.size(); ++i) {
      it[i] = items[i];
      if (items[i] && items[i]->hasRef) a->hasRef = true;
    }
    a->items = it;
  }
  if (!keys.empty()) {
    auto *ks = static_cast<std::string_view *>(allocate(sizeof(std::string_view) * keys.size(), alignof(std::string_view)));
    for (size_t i = 0; i < keys.size(); ++i) new (&ks[i]) std::string_view(saveString(keys[i]));
    a->fieldNames = ks;
  }
  impl_->args.insert(a);
  return a;
}

namespace {
Arg scalarProto(ArgKind k, uint8_t small = 0) {
  Arg a;
  a.kind = k;
  a.small = small;
  return a;
}
} // namespace

const Arg *Context::argBool(bool v) {
  Arg a = scalarProto(ArgKind::Bool, v);
  return internArg(a, {}, {});
}
const Arg *Context::argInt(int64_t v) {
  Arg a = scalarProto(ArgKind::Int);
  a.ival = v;
  return internArg(a, {}, {});
}
const Arg *Context::argUInt(uint64_t v) {
  if (v <= static_cast<uint64_t>(INT64_MAX)) return argInt(static_cast<int64_t>(v));
  Arg a = scalarProto(ArgKind::UInt);
  a.uval = v;
  return internArg(a, {}, {});
}
const Arg *Context::argFloat(double v) {
  Arg a = scalarProto(ArgKind::Float);
  a.uval = std::bit_cast<uint64_t>(v);
  return internArg(a, {}, {});
}
const Arg *Context::argBigInt(std::string_view digits) {
  Arg a = scalarProto(ArgKind::BigInt);
  a.data = digits.data();
  a.len = static_cast<uint32_t>(digits.size());
  return internArg(a, {}, {});
}
const Arg *Context::argString(std::string_view s) {
  Arg a = scalarProto(ArgKind::String);
  a.data = s.empty() ? "" : s.data();
  a.len = static_cast<uint32_t>(s.size());
  return internArg(a, {}, {});
}
const Arg *Context::argBytes(std::string_view raw) {
  Arg a = scalarProto(ArgKind::Bytes);
  a.data = raw.empty() ? "" : raw.data();
  a.len = static_cast<uint32_t>(raw.size());
  return internArg(a, {}, {});
}
const Arg *Context::argInvalid() {
  Arg a = scalarProto(ArgKind::Invalid);
  return internArg(a, {}, {});
}
const Arg *Context::argOp(Op op) {
  Arg a = scalarProto(ArgKind::OpName, static_cast<uint8_t>(op));
  return internArg(a, {}, {});
}
const Arg *Context::argDType(DType dt) {
  Arg a = scalarProto(ArgKind::DType, static_cast<uint8_t>(dt));
  return internArg(a, {}, {});
}
const Arg *Context::argAxisType(AxisType v) {
  Arg a = scalarProto(ArgKind::AxisType, static_cast<uint8_t>(v));
  return internArg(a, {}, {});
}
const Arg *Context::argAddrSpace(AddrSpace v) {
  Arg a = scalarProto(ArgKind::AddrSpace, static_cast<uint8_t>(v));
  return internArg(a, {}, {});
}
const Arg *Context::argRef(const UOp *u) {
  Arg a = scalarProto(ArgKind::UOpRef);
  a.refval = u;
  a.hasRef = true;
  return internArg(a, {}, {});
}
const Arg *Context::argTuple(std::span<const Arg *const> elems) {
  Arg a = scalarProto(ArgKind::Tuple);
  a.count = static_cast<uint32_t>(elems.size());
  return internArg(a, elems, {});
}
const Arg *Context::argRecord(std::string_view className,
                              std::span<const std::pair<std::string_view, const Arg *>> fields) {
  std::vector<const Arg *> vals;
  std::vector<std::string_view> keys;
  vals.reserve(fields.size());
  keys.reserve(fields.size());
  for (auto &[k, v] : fields) {
    keys.push_back(k);
    vals.push_back(v);
  }
  Arg a = scalarProto(ArgKind::Record);
  a.data = className.data();
  a.len = static_cast<uint32_t>(className.size());
  a.count = static_cast<uint32_t>(vals.size());
  return internArg(a, vals, keys);
}

const Arg *Arg::field(std::string_view name) const {
  if (kind != ArgKind::Record) return nullptr;
  for (uint32_t i = 0; i < count; ++i)
    if (fieldNames[i] == name) return items[i];
  return nullptr;
}

namespace {
/// toposort's per-node state, in a table kept per thread: toposort has no Context to keep it in, and the
/// stamps make it valid for nodes of any Context. A call costs O(nodes reached), not O(nodes of the Context).
struct TopoSlot {
  uint32_t gen;
  uint8_t state; ///< 0 unseen, 1 on stack, 2 done
};
struct TopoScratch {
  StampedTable<TopoSlot> table;
  std::vector<std::pair<const UOp *, uint32_t>> stack;
  std::vector<const UOp *> refs;
  std::vector<const Arg *> work;
  bool busy = false;
};
} // namespace

std::vector<const UOp *> toposort(const UOp *root) {
  std::vector<const UOp *> order;
  if (!root) return order;
  thread_local TopoScratch shared;
  // toposort calls nothing that could call it back; the fallback only guards against future changes
  std::unique_ptr<TopoScratch> own;
  TopoScratch &sc = shared.busy ? *(own = std::make_unique<TopoScratch>()) : shared;
  sc.busy = true;
  struct Release {
    TopoScratch &s;
    ~Release() { s.busy = false; }
  } release{sc};
  sc.table.clear();
  auto st = [&](const UOp *u) -> uint8_t & { return sc.table.at(u).state; };
  auto &stack = sc.stack;
  auto &refs = sc.refs;
  stack.clear();
  auto collectRefs = [&](const Arg *a) {
    refs.clear();
    if (!a || !a->hasRef) return;
    auto &work = sc.work;
    work.assign(1, a);
    while (!work.empty()) {
      const Arg *x = work.back();
      work.pop_back();
      if (!x) continue;
      if (x->kind == ArgKind::UOpRef) refs.push_back(x->ref());
      for (const Arg *e : x->elems())
        if (e && e->hasRef) work.push_back(e);
    }
  };
  stack.push_back({root, 0});
  st(root) = 1;
  while (!stack.empty()) {
    auto &[u, i] = stack.back();
    // sources first, then nodes referenced from the arg
    const UOp *next = nullptr;
    while (i < u->nsrc) {
      const UOp *s = u->srcs[i++];
      if (st(s) == 0) { next = s; break; }
    }
    if (!next && u->arg && u->arg->hasRef) {
      collectRefs(u->arg);
      for (const UOp *r : refs)
        if (st(r) == 0) { next = r; break; }
    }
    if (next) {
      st(next) = 1;
      stack.push_back({next, 0});
      continue;
    }
    st(u) = 2;
    order.push_back(u);
    stack.pop_back();
  }
  return order;
}

} // namespace uopc

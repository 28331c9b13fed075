//===- OnceCopy.cpp - once steps that uopc runs itself (see OnceCopy.h) ===//
#include "Driver/OnceCopy.h"

#include "IR/Error.h"
#include "IR/Kernel.h"
#include "IR/Records.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <unordered_map>

namespace uopc {
namespace {

/// c + sum coef[r]*r over the kernel's loops.
struct Affine {
  int64_t c = 0;
  std::map<const UOp *, int64_t> coef;
};

std::optional<int64_t> intConst(const UOp *u) {
  if (u->op != Op::CONST || !isInt(u->dtype) || !u->arg || u->arg->kind != ArgKind::Int) return std::nullopt;
  return u->arg->i();
}

std::optional<Affine> scaled(const Affine &a, int64_t k) {
  Affine out;
  if (__builtin_mul_overflow(a.c, k, &out.c)) return std::nullopt;
  for (const auto &[r, v] : a.coef) {
    int64_t m;
    if (__builtin_mul_overflow(v, k, &m)) return std::nullopt;
    if (m) out.coef[r] = m;
  }
  return out;
}

std::optional<Affine> sum(const Affine &a, const Affine &b, int64_t sign) {
  std::optional<Affine> nb = scaled(b, sign);
  if (!nb) return std::nullopt;
  Affine out = a;
  if (__builtin_add_overflow(out.c, nb->c, &out.c)) return std::nullopt;
  for (const auto &[r, v] : nb->coef) {
    int64_t s;
    if (__builtin_add_overflow(out.coef[r], v, &s)) return std::nullopt;
    if (s) out.coef[r] = s;
    else out.coef.erase(r);
  }
  return out;
}

/// `idx` as an affine form in `loops`, or nullopt (iterative over its nodes: no recursion on depth).
std::optional<Affine> affineOf(const UOp *idx, const std::vector<const UOp *> &loops) {
  std::unordered_map<const UOp *, Affine> val;
  for (const UOp *u : toposort(idx)) {
    auto src = [&](size_t i) -> const Affine * {
      auto it = val.find(u->src(i));
      return it == val.end() ? nullptr : &it->second;
    };
    std::optional<Affine> v;
    if (!isInt(u->dtype)) return std::nullopt;
    if (auto k = intConst(u)) {
      v = Affine{*k, {}};
    } else if (u->op == Op::RANGE) {
      if (std::find(loops.begin(), loops.end(), u) == loops.end()) return std::nullopt;
      v = Affine{0, {{u, 1}}};
    } else if ((u->op == Op::ADD || u->op == Op::SUB) && u->nsrc == 2 && src(0) && src(1)) {
      v = sum(*src(0), *src(1), u->op == Op::ADD ? 1 : -1);
    } else if (u->op == Op::MUL && u->nsrc == 2 && src(0) && src(1)) {
      const Affine *a = src(0), *b = src(1);
      if (!b->coef.empty()) std::swap(a, b);
      if (b->coef.empty()) v = scaled(*a, b->c);
    } else if (u->op == Op::SHL && u->nsrc == 2 && src(0) && src(1) && src(1)->coef.empty() && src(1)->c >= 0 &&
               src(1)->c < 62) {
      v = scaled(*src(0), int64_t(1) << src(1)->c);
    } else if (u->op == Op::NEG && u->nsrc == 1 && src(0)) {
      v = scaled(*src(0), -1);
    } else if (u->op == Op::CAST && u->nsrc == 1 && src(0)) {
      v = *src(0); // (an index cast between integer types; the bounds are checked where the copy runs)
    }
    if (!v) return std::nullopt;
    val[u] = std::move(*v);
  }
  return val.at(idx);
}

/// The PARAM slot an ungated INDEX of a global buffer reads or writes, or -1.
int64_t bufferSlot(const UOp *index) {
  if (index->op != Op::INDEX || index->nsrc != 2) return -1;
  const UOp *p = index->src(0);
  if (p->op != Op::PARAM || p->nsrc != 1 || !p->arg || p->arg->kind != ArgKind::Record) return -1;
  ParamArg a = ParamArg::decode(p->arg);
  if (a.addrspace != AddrSpace::GLOBAL || a.slot < 0 || p->dtype != index->dtype) return -1;
  return a.slot;
}

bool checkedMul(int64_t a, int64_t b, int64_t &out) { return !__builtin_mul_overflow(a, b, &out); }

/// [lo, hi] of base + sum strides[i]*x_i over 0 <= x_i < sizes[i] (every size > 0); false on overflow.
bool indexSpan(int64_t base, const std::vector<int64_t> &strides, const std::vector<int64_t> &sizes, int64_t &lo, int64_t &hi) {
  lo = hi = base;
  for (size_t i = 0; i < sizes.size(); ++i) {
    int64_t reach;
    if (!checkedMul(strides[i], sizes[i] - 1, reach)) return false;
    if (__builtin_add_overflow(reach < 0 ? lo : hi, reach, reach < 0 ? &lo : &hi)) return false;
  }
  return true;
}

/// Calls f(source offset, destination offset) for every point of the loops `order` (outermost first) walks,
/// the innermost fastest.
template <typename F>
void walk(const AffineCopy &c, const std::vector<size_t> &order, F &&f) {
  size_t n = order.size();
  if (n == 0) return f(c.srcBase, c.dstBase);
  std::vector<int64_t> x(n, 0);
  int64_t s = c.srcBase, d = c.dstBase;
  const int64_t inner = c.sizes[order[n - 1]], ss = c.srcStrides[order[n - 1]], ds = c.dstStrides[order[n - 1]];
  while (true) {
    for (int64_t i = 0; i < inner; ++i) f(s + i * ss, d + i * ds);
    size_t k = n - 1;
    while (k-- > 0) {
      size_t l = order[k];
      s += c.srcStrides[l], d += c.dstStrides[l];
      if (++x[k] < c.sizes[l]) break;
      s -= c.srcStrides[l] * c.sizes[l], d -= c.dstStrides[l] * c.sizes[l];
      x[k] = 0;
    }
    if (k == static_cast<size_t>(-1)) return;
  }
}

} // namespace

std::optional<AffineCopy> affineCopyOf(const UOp *call) {
  const UOp *sink = kernelSink(call);
  if (!sink || sink->nsrc != 1) return std::nullopt;
  const UOp *store = sink->src(0);
  std::vector<const UOp *> loops;
  if (store->op == Op::END) {
    for (size_t i = 1; i < store->nsrc; ++i) loops.push_back(store->src(i));
    store = store->src(0);
  }
  if (store->op != Op::STORE || store->nsrc != 2) return std::nullopt;
  const UOp *to = store->src(0), *from = store->src(1);
  int64_t dst = bufferSlot(to), src = bufferSlot(from);
  if (dst < 0 || src < 0 || dst == src || to->dtype != from->dtype || dtypeSize(to->dtype) == 0) return std::nullopt;
  AffineCopy c;
  c.dstArg = static_cast<size_t>(dst);
  c.srcArg = static_cast<size_t>(src);
  c.elemBytes = dtypeSize(to->dtype);
  for (const UOp *r : loops) {
    std::optional<int64_t> n = r->op == Op::RANGE && r->nsrc >= 1 ? intConst(r->src(0)) : std::nullopt;
    if (!n || *n < 0 || std::count(loops.begin(), loops.end(), r) != 1) return std::nullopt;
    c.sizes.push_back(*n);
  }
  std::optional<Affine> d = affineOf(to->src(1), loops), s = affineOf(from->src(1), loops);
  if (!d || !s) return std::nullopt;
  c.dstBase = d->c;
  c.srcBase = s->c;
  for (const UOp *r : loops) {
    c.dstStrides.push_back(d->coef.count(r) ? d->coef.at(r) : 0);
    c.srcStrides.push_back(s->coef.count(r) ? s->coef.at(r) : 0);
  }
  return c;
}

std::vector<std::optional<AffineCopy>> onceCopies(const Schedule &s) {
  std::vector<std::optional<AffineCopy>> out(s.steps.size());
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const SchedStep &st = s.steps[i];
    if (!st.once || st.kind != SchedStep::Kind::Kernel) continue;
    std::optional<AffineCopy> c = affineCopyOf(st.call);
    if (!c || c->dstArg >= st.args.size() || c->srcArg >= st.args.size()) continue;
    // its result is the copy only when no other step writes that buffer too
    const BufRef &dst = st.args[c->dstArg];
    bool alone = true;
    for (size_t j = 0; j < s.steps.size() && alone; ++j) {
      const SchedStep &o = s.steps[j];
      if (j == i) continue;
      if (o.kind == SchedStep::Kind::Copy) alone = !(o.dst == dst);
      else if (o.kind == SchedStep::Kind::Allreduce) alone = std::find(o.dsts.begin(), o.dsts.end(), dst) == o.dsts.end();
      else
        for (size_t slot : writtenSlots(o.call)) alone &= !(slot < o.args.size() && o.args[slot] == dst);
    }
    if (alone) out[i] = std::move(c);
  }
  return out;
}

void runAffineCopy(const AffineCopy &c, std::string_view src, int64_t srcElems, int64_t dstElems,
                   const std::function<void(std::string_view)> &emit) {
  const int64_t eb = c.elemBytes;
  int64_t dstBytes;
  if (eb <= 0 || srcElems < 0 || dstElems < 0 || !checkedMul(dstElems, eb, dstBytes) ||
      static_cast<int64_t>(src.size()) / eb != srcElems || static_cast<int64_t>(src.size()) % eb)
    fail("a once step's copy does not fit its buffers");
  // the loops that move anything (a loop of one point is no loop; of none, no point)
  int64_t points = 1;
  std::vector<size_t> loops;
  for (size_t i = 0; i < c.sizes.size(); ++i) {
    if (c.sizes[i] == 0) points = 0;
    if (c.sizes[i] > 1) loops.push_back(i);
    if (!checkedMul(points, std::max<int64_t>(c.sizes[i], 1), points)) fail("a once step's copy has too many points");
  }
  constexpr size_t kChunk = size_t(1) << 20;
  if (points == 0) {
    std::string zeros(std::min<size_t>(kChunk, static_cast<size_t>(dstBytes)), '\0');
    for (int64_t left = dstBytes; left > 0; left -= static_cast<int64_t>(zeros.size()))
      emit(std::string_view(zeros).substr(0, static_cast<size_t>(std::min<int64_t>(left, static_cast<int64_t>(zeros.size())))));
    return;
  }
  std::vector<int64_t> sizes, ds, ss;
  for (size_t i : loops) sizes.push_back(c.sizes[i]), ds.push_back(c.dstStrides[i]), ss.push_back(c.srcStrides[i]);
  int64_t lo, hi;
  if (!indexSpan(c.srcBase, ss, sizes, lo, hi) || lo < 0 || hi >= srcElems)
    fail("a once step's copy reads outside its source (elements [" + std::to_string(lo) + ", " + std::to_string(hi) + "] of " +
         std::to_string(srcElems) + ")");
  if (!indexSpan(c.dstBase, ds, sizes, lo, hi) || lo < 0 || hi >= dstElems)
    fail("a once step's copy writes outside its destination (elements [" + std::to_string(lo) + ", " + std::to_string(hi) +
         "] of " + std::to_string(dstElems) + ")");

  // dense: some order of the loops walks the destination 0, 1, 2, ... (its strides a mixed radix)
  std::vector<size_t> order = loops;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return c.dstStrides[a] > c.dstStrides[b]; });
  bool dense = c.dstBase == 0 && points == dstElems;
  for (size_t k = order.size(), radix = 1; dense && k-- > 0;) {
    dense = c.dstStrides[order[k]] == static_cast<int64_t>(radix);
    radix *= static_cast<size_t>(c.sizes[order[k]]);
  }
  const char *from = src.data();
  if (dense) {
    std::string buf;
    buf.reserve(kChunk + static_cast<size_t>(eb));
    walk(c, order, [&](int64_t s, int64_t) {
      buf.append(from + s * eb, static_cast<size_t>(eb));
      if (buf.size() >= kChunk) emit(buf), buf.clear();
    });
    if (!buf.empty()) emit(buf);
    return;
  }
  // anything else: the destination whole, written in the kernel's own loop order (a later write wins)
  std::string dst(static_cast<size_t>(dstBytes), '\0');
  walk(c, loops, [&](int64_t s, int64_t d) { std::memcpy(dst.data() + d * eb, from + s * eb, static_cast<size_t>(eb)); });
  emit(dst);
}

} // namespace uopc

//===- ConcatInPlace.cpp - the `concat-in-place` pass: a concatenation's first part written where it ends ===//
// tinygrad concatenates by padding each part to the whole and adding. After optimize's seam split, a kernel
// that concatenates an intermediate IN with what it computes has a piece that copies IN, element for element,
// to the start of the buffer OUT it writes: out[i] = in[i] for every i < |IN|, its other pieces writing past
// that. DenseNet's layers are such kernels: each copies every channel of its dense block so far into a new
// buffer and adds its own 32 after them, so a block copies quadratically many channels (DenseNet-121: 53
// kernels, 4% of its run).
//
// Where the copy is the last thing done with IN, IN can *be* the start of OUT: the pass gives IN's writers and
// readers OUT in its place (their indices are below |IN|, so they touch only OUT's start) and drops the copy
// piece; the kernel then writes only its own part of OUT, whose start already holds IN. Chained (the next
// layer's IN is this layer's OUT), a dense block ends up writing one buffer. The conditions, each checked:
// - the copy piece: END(STORE(INDEX(out, e), LOAD(INDEX(in, e)))), both ungated, one index e that runs over
//   [0, |IN|) exactly once over the piece's loops (a sum of loops times the strides of a row-major walk);
// - the kernel's other pieces write only past |IN| (their store indices' range analysis);
// - OUT and IN are intermediate BUFFERs of one dtype on one device, |IN| <= |OUT|, constant sizes; OUT is
//   written by this kernel alone and read nowhere in its prior (unwritten) form;
// - the state of IN the kernel copies is IN's last: every state of IN is it or comes before it; no writer of
//   IN is a copy or a once kernel (a weight re-layout), and nothing reads IN before its first write.
// Readers of IN may still run after the kernel: it no longer writes OUT's start. Passing its IN argument on,
// now unread, keeps the kernel after IN's writers (read-after-write through that state).
// Runs after optimize (whose seam split makes the copy piece) and blocked-layout (which may change both
// indices: the copy stays an identity or is not taken), before schedule, which plans the merged buffer.
// Kernels without such a piece, and graphs of --opt-level 0 (no seam split), are unchanged.
#include "IR/Kernel.h"
#include "IR/Range.h"
#include "IR/Records.h"
#include "Passes/Passes.h"
#include "Passes/Rewrite.h"
#include "Passes/Schedule.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace uopc {
namespace {

/// A STORE piece of a kernel SINK (END(STORE, loops...) or a bare STORE) and the slot it stores to.
struct Piece {
  const UOp *end = nullptr, *store = nullptr;
  int64_t slot = -1;
};

std::optional<Piece> pieceOf(const UOp *e) {
  const UOp *st = e->op == Op::END && e->nsrc > 0 ? e->src(0) : e;
  if (st->op != Op::STORE || st->nsrc < 2 || st->src(0)->op != Op::INDEX || st->src(0)->nsrc < 2) return std::nullopt;
  const UOp *buf = st->src(0)->src(0);
  if (buf->op != Op::PARAM) return std::nullopt;
  return Piece{e, st, ParamArg::slotOf(buf->arg)};
}

std::optional<int64_t> constInt(const UOp *u) {
  if (u->op != Op::CONST || !u->arg || u->arg->kind != ArgKind::Int) return std::nullopt;
  return u->arg->i();
}

/// Whether index `e` takes every value of [0, n) exactly once over the loops `loops` (constant sizes): e is a
/// sum of loops times constants with no constant term, and sorted by stride the loops walk [0, n) row-major
/// (the smallest stride 1, each next one the one before times its loop's size). Iterative.
bool walksOnce(const UOp *e, std::span<const UOp *const> loops, int64_t n) {
  std::map<const UOp *, int64_t> coef;
  std::vector<std::pair<const UOp *, int64_t>> stack{{e, 1}};
  while (!stack.empty()) {
    auto [u, k] = stack.back();
    stack.pop_back();
    if (u->op == Op::RANGE) {
      if (__builtin_add_overflow(coef[u], k, &coef[u])) return false;
    } else if (u->op == Op::ADD && u->nsrc == 2) {
      stack.push_back({u->src(0), k});
      stack.push_back({u->src(1), k});
    } else if (u->op == Op::MUL && u->nsrc == 2) {
      auto a = constInt(u->src(0)), b = constInt(u->src(1));
      int64_t f = 0;
      if (!(b || a) || __builtin_mul_overflow(k, b ? *b : *a, &f)) return false;
      stack.push_back({b ? u->src(0) : u->src(1), f});
    } else if (auto c = constInt(u); c && *c == 0) {
      // (a zero term)
    } else {
      return false;
    }
  }
  std::vector<std::pair<int64_t, int64_t>> strides; // (stride, loop size) of the loops of more than one step
  for (const UOp *r : loops) {
    auto size = r->op == Op::RANGE && r->nsrc == 1 ? constBound(r->src(0)) : std::nullopt;
    if (!size || *size < 1 || *size > Bound(n)) return false;
    auto it = coef.find(r);
    int64_t k = it == coef.end() ? 0 : it->second;
    if (it != coef.end()) coef.erase(it);
    if (*size == 1) continue;
    if (k <= 0) return false;
    strides.push_back({k, static_cast<int64_t>(*size)});
  }
  for (auto &[r, k] : coef) // a loop the index moves with that is not the piece's
    if (k != 0) return false;
  std::sort(strides.begin(), strides.end());
  int64_t walked = 1;
  for (auto [k, size] : strides) {
    if (k != walked || walked > n / size) return false;
    walked *= size;
  }
  return walked == n;
}

bool holdsInvalid(const UOp *root) {
  for (const UOp *u : toposort(root))
    if (u->op == Op::CONST && u->arg && u->arg->kind == ArgKind::Invalid) return true;
  return false;
}

/// A BUFFER of constant size on at most one device: its element count, else nothing.
std::optional<int64_t> plainBuffer(const UOp *b) {
  if (b->op != Op::BUFFER || b->nsrc < 1) return std::nullopt;
  if (ParamArg::decode(b->arg).devices.size() > 1) return std::nullopt;
  auto n = constBound(b->src(0));
  if (!n || *n < 1 || *n > Bound(INT64_MAX)) return std::nullopt;
  return static_cast<int64_t>(*n);
}

/// One merge: kernel `call` with its copy piece dropped, and buffer `in` to be replaced by `out`.
struct Merge {
  const UOp *call = nullptr, *body = nullptr, *in = nullptr, *out = nullptr;
};

class Finder {
public:
  Finder(Context &c, const UOp *root) : c_(c), nodes_(topLevelNodes(root)) {
    for (const UOp *u : nodes_) {
      if (u->op == Op::AFTER && u->nsrc > 0) states_[stateBuffer(u)].push_back(u);
      if (u->op != Op::CALL) continue;
      std::vector<size_t> written = writtenSlots(u);
      for (size_t a = 0; a + 1 < u->nsrc; ++a) {
        const UOp *arg = u->src(a + 1);
        bool writes = std::binary_search(written.begin(), written.end(), a);
        if (writes) writers_[stateBuffer(arg)].push_back(u);
        else if (arg->op != Op::AFTER) rawReads_.insert(arg); // a read of a buffer's prior, unwritten state
      }
    }
    if (root->op == Op::SINK)
      for (const UOp *s : root->src()) held_.insert(stateBuffer(s));
  }

  std::optional<Merge> next() {
    for (const UOp *u : nodes_)
      if (auto m = tryKernel(u)) return m;
    return std::nullopt;
  }

private:
  std::optional<Merge> tryKernel(const UOp *call) {
    if (call->op != Op::CALL || call->nsrc < 2 || call->src(0)->op != Op::SINK) return std::nullopt;
    const UOp *sink = call->src(0);
    const UOp *out = call->src(1);
    auto m = plainBuffer(out);
    if (!m || rawReads_.count(out) || writers_[out] != std::vector<const UOp *>{call}) return std::nullopt;
    std::vector<Piece> pieces;
    for (const UOp *e : sink->src()) {
      auto p = pieceOf(e);
      if (!p || p->slot != 0) return std::nullopt; // (a kernel writing one buffer: its slot 0)
      pieces.push_back(*p);
    }
    for (size_t i = 0; i < pieces.size(); ++i)
      if (auto merge = tryCopy(call, pieces, i, *m)) return merge;
    return std::nullopt;
  }

  std::optional<Merge> tryCopy(const UOp *call, const std::vector<Piece> &pieces, size_t i, int64_t m) {
    if (pieces.size() < 2) return std::nullopt; // (a kernel that only copies: nothing would be left of it)
    const Piece &p = pieces[i];
    const UOp *to = p.store->src(0), *value = p.store->src(1);
    if (to->nsrc != 2 || value->op != Op::LOAD || value->nsrc < 1) return std::nullopt;
    const UOp *from = value->src(0);
    if (from->op != Op::INDEX || from->nsrc != 2 || from->src(1) != to->src(1) || from->src(0)->op != Op::PARAM)
      return std::nullopt;
    int64_t slot = ParamArg::slotOf(from->src(0)->arg);
    if (slot <= 0 || slot + 1 >= static_cast<int64_t>(call->nsrc) || from->dtype != to->dtype) return std::nullopt;
    const UOp *state = call->src(static_cast<size_t>(slot) + 1), *out = call->src(1);
    const UOp *in = stateBuffer(state);
    auto n = plainBuffer(in);
    if (state->op != Op::AFTER || !n || *n > m || in == out || held_.count(in) || rawReads_.count(in)) return std::nullopt;
    ParamArg ia = ParamArg::decode(in->arg), oa = ParamArg::decode(out->arg);
    if (ia.dtype != oa.dtype || ia.devices != oa.devices) return std::nullopt;
    // the copy writes out[0, n) once each, from in[0, n)
    if (p.end->op != Op::END || !walksOnce(to->src(1), p.end->src().subspan(1), *n)) return std::nullopt;
    // the rest write past n
    RangeInfo ri;
    for (size_t j = 0; j < pieces.size(); ++j) {
      if (j == i) continue;
      const UOp *idx = pieces[j].store->src(0)->src(1);
      if (holdsInvalid(idx) || ri.vmin(idx) < Bound(*n)) return std::nullopt;
    }
    // the state copied is IN's last, and IN's writers are kernels run every time
    for (const UOp *w : writers_[in])
      if (!kernelSink(w) || markedOnce(kernelSink(w))) return std::nullopt;
    std::unordered_set<const UOp *> before;
    for (const UOp *u : topLevelNodes(state)) before.insert(u);
    for (const UOp *s : states_[in])
      if (!before.count(s)) return std::nullopt;
    // the kernel without the copy (and without the copy's entry in its blocked reads)
    std::vector<const UOp *> kept;
    for (size_t j = 0; j < pieces.size(); ++j)
      if (j != i) kept.push_back(pieces[j].end);
    const UOp *sink = call->src(0);
    const UOp *body = c_.make(Op::SINK, sink->dtype, kept, sink->arg, sink->tag);
    bool stillRead = false;
    for (const UOp *u : toposort(body)) stillRead |= u->op == Op::PARAM && ParamArg::slotOf(u->arg) == slot;
    if (!stillRead) {
      std::vector<std::string> blocked = blockedArgs(body), left;
      for (const std::string &b : blocked)
        if (b.rfind(std::to_string(slot) + ":", 0) != 0) left.push_back(b);
      if (left.size() != blocked.size()) body = withBlockedArgs(c_, body, left);
    }
    return Merge{call, body, in, out};
  }

  Context &c_;
  std::vector<const UOp *> nodes_;
  std::unordered_map<const UOp *, std::vector<const UOp *>> states_, writers_;
  std::unordered_set<const UOp *> rawReads_, held_;
};

} // namespace

void runConcatInPlace(Graph &g, const PassContext &) {
  Context &c = *g.ctx;
  // one merge at a time, each on the graph the last one left (a chain's next copy reads what this one merged)
  while (auto m = Finder(c, g.root).next()) {
    std::vector<const UOp *> srcs(m->call->src().begin(), m->call->src().end());
    srcs[0] = m->body;
    const UOp *call = c.make(Op::CALL, m->call->dtype, srcs, m->call->arg, m->call->tag);
    g.root = substitute(c, g.root, {{m->call, call}});
    g.root = substitute(c, g.root, {{m->in, m->out}});
  }
}

} // namespace uopc

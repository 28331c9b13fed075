//===- Rewrite.cpp - the graph rewrite driver -----------------------------===//
// A port of tinygrad's RewriteContext (unified_rewrite and walk_rewrite). Work items are (node, stage,
// current form) entries on an explicit stack:
//   stage 0: (node-first rules to a fixed point, then) queue the sources;
//   stage 1: once every source has a result, rebuild on them or apply the sources-first rules; a new
//            node made either way is queued at stage 0 and linked back by a stage 2 entry;
//   stage 2: the node's result is its new form's result.
// An entry whose inputs are not ready waits in a per-node list instead of being retried.
//
// One departure from tinygrad, same results for rules without side effects: tinygrad marks a source
// "on stack" when it is queued and never queues it again, so a node whose source is still queued under
// a sibling must wait for it. Here a source is queued again while it has not started, as in a plain
// depth-first post-order: its first pop does the work, later pops are skipped. A node then finds its
// sources done when its stage 1 comes, unless one is tied up in a link to a rewrite result (2x faster
// on wide DAGs, where tinygrad's scheme makes most nodes wait). The stack holds up to one entry per edge.
#include "Passes/Rewrite.h"

#include "IR/Error.h"
#include "Passes/Schedule.h"

#include <algorithm>
#include <vector>

namespace uopc {
namespace {

constexpr uint32_t kNone = UINT32_MAX;

/// Sentinels of the node-first cache (a UOp address no Context hands out).
const UOp kSentinels[2] = {};
const UOp *const kNoRewrite = &kSentinels[0];
const UOp *const kGated = &kSentinels[1];

/// Per-node state of one graphRewrite call, split by how hot it is: every visit reads repl and the
/// flags of each source, so those live in a table of their own (16 bytes a node). Both tables are
/// generation-stamped (StampedTable) and leased from the Context, so a call costs O(nodes it touches),
/// not O(nodes of the Context), and a nested call (a rule that runs graphRewrite) gets tables of its own.
enum : uint8_t {
  kStarted = 1,  ///< stage 0 done: its result is on the way
  kWaitedOn = 2, ///< entries wait for its result (ColdState::waitHead)
};
struct HotState {
  const UOp *repl = nullptr; ///< the node's final result (tinygrad's replace dict)
  uint32_t gen = 0;
  uint8_t flags = 0;
};
struct ColdState {
  const UOp *bpm = nullptr;  ///< cached node-first result: null = not tried yet, else a result, kNoRewrite or kGated
  uint32_t waitHead = kNone; ///< entries waiting for the node's result (index into Rewriter::waits_)
  uint32_t stamp = 0;        ///< last node-first fixed-point loop that passed here (cycle check)
  uint32_t gen = 0;
};

/// FUNCTION bodies and opaque CALL bodies are not rewritten unless enterCalls (tinygrad's _OPAQUE_CALL_BODIES).
bool hasOpaqueBody(const UOp *u) {
  if (u->nsrc == 0) return false;
  if (u->op == Op::FUNCTION) return true;
  if (u->op != Op::CALL) return false;
  Op b = u->src(0)->op;
  return b == Op::SINK || b == Op::PROGRAM || b == Op::LINEAR || b == Op::COPY || b == Op::ALLREDUCE || b == Op::SLICE ||
         b == Op::CUSTOM_FUNCTION;
}

struct Entry {
  const UOp *n;   ///< the node whose result this entry works towards
  const UOp *nn;  ///< its current form
  uint32_t depth; ///< rule applications so far that made new nodes, along this chain
  uint8_t stage;
};
struct Waiter {
  Entry e;
  uint32_t next;
};

/// The tables and buffers of one graphRewrite call, kept by the Context between calls.
struct RewriteScratch : Context::ScratchBase {
  StampedTable<HotState> hot;
  StampedTable<ColdState> cold;
  std::vector<Entry> stack;
  std::vector<Waiter> waits;
  std::vector<const UOp *> tmp;
};

class Rewriter {
public:
  Rewriter(Context &ctx, const RewriteOptions &o)
      : ctx_(ctx), o_(o), start_(uint32_t(ctx.numNodes())), sc_(ctx), hot_(sc_->hot), cold_(sc_->cold),
        stack_(sc_->stack), waits_(sc_->waits), tmp_(sc_->tmp) {
    hot_.clear();
    cold_.clear();
    stack_.clear();
    waits_.clear();
  }
  ~Rewriter() {
    hot_.flushStats(ctx_.scratchStats());
    cold_.flushStats(ctx_.scratchStats());
  }
  const UOp *unified(const UOp *root);
  const UOp *walk(const UOp *root);

private:
  // these may grow their table: do not hold a reference across a call that may make nodes
  const UOp *&R(const UOp *u) { return hot_.at(u).repl; }
  uint8_t &F(const UOp *u) { return hot_.at(u).flags; }
  ColdState &C(const UOp *u) { return cold_.at(u); }
  bool isNew(const UOp *u) const { return u->index >= start_; }
  /// 1 when u's src(0) is a body kept as it is (not enterCalls), else 0: the index of the first source
  /// to rewrite. Decided per edge, not per node: the same node reached as an ordinary source elsewhere
  /// is rewritten there (tinygrad marks the body itself as its own result, which then also holds on the
  /// other paths, or not, depending on which the walk meets first).
  uint32_t keptBody(const UOp *u) const { return !o_.enterCalls && hasOpaqueBody(u) ? 1 : 0; }
  void push(const Entry &e) { stack_.push_back(e); }
  void stage0(const Entry &e);
  void stage1(const Entry &e);
  void stage2(const Entry &e);
  /// The node-first rules on u, cached; null when none applies. Sets gated when a rule gated.
  const UOp *nodeFirst(const UOp *u, bool &gated);
  void wait(const UOp *on, const Entry &e);
  void finish(const UOp *n, const UOp *result);
  void checkDepth(const UOp *n, uint32_t depth) {
    if (depth > o_.maxRewritesPerNode)
      noFixedPoint(n, "more than " + std::to_string(o_.maxRewritesPerNode) +
                          " rewrites in a row each made a new node (a rule that keeps growing the graph?)");
  }
  std::string describe(const UOp *u) const {
    if (o_.describe) return o_.describe(u);
    return "UOp #" + std::to_string(u->index) + " (" + std::string(opName(u->op)) + ")";
  }
  [[noreturn]] void noFixedPoint(const UOp *u, const std::string &why) const {
    fail("rewrite did not reach a fixed point at " + describe(u) + ": " + why);
  }

  Context &ctx_;
  const RewriteOptions &o_;
  uint32_t start_; ///< nodes with an index from here on were made during this call
  Context::Scratch<RewriteScratch> sc_;
  StampedTable<HotState> &hot_;
  StampedTable<ColdState> &cold_;
  std::vector<Entry> &stack_;
  std::vector<Waiter> &waits_;
  std::vector<const UOp *> &tmp_; ///< scratch: rewritten sources
  uint32_t freeWait_ = kNone;
  uint32_t loopStamp_ = 0;
  const UOp *lastBlocked_ = nullptr; ///< last node whose result waited for its new form's result
};

const UOp *Rewriter::nodeFirst(const UOp *u, bool &gated) {
  const UOp *c = C(u).bpm;
  if (!c) {
    bool g = false;
    const UOp *r = o_.nodeFirst->rewrite(ctx_, u, o_.user, o_.stats, &g);
    c = g ? kGated : r ? r : kNoRewrite;
    C(u).bpm = c;
  }
  gated = c == kGated;
  return c == kGated || c == kNoRewrite ? nullptr : c;
}

void Rewriter::wait(const UOp *on, const Entry &e) {
  uint32_t i;
  if (freeWait_ != kNone) {
    i = freeWait_;
    freeWait_ = waits_[i].next;
  } else {
    i = uint32_t(waits_.size());
    waits_.push_back({});
  }
  waits_[i] = {e, C(on).waitHead};
  C(on).waitHead = i;
  F(on) |= kWaitedOn;
}

void Rewriter::finish(const UOp *n, const UOp *result) {
  R(n) = result;
  if (!(F(n) & kWaitedOn)) return;
  F(n) &= uint8_t(~kWaitedOn);
  ColdState &s = C(n);
  // requeue the waiters in the order they arrived, the last one on top (tinygrad's stack.extend)
  size_t base = stack_.size();
  for (uint32_t i = s.waitHead; i != kNone;) {
    stack_.push_back(waits_[i].e);
    uint32_t next = waits_[i].next;
    waits_[i].next = freeWait_;
    freeWait_ = i;
    i = next;
  }
  s.waitHead = kNone;
  std::reverse(stack_.begin() + base, stack_.end());
}

void Rewriter::stage0(const Entry &e) {
  const UOp *n = e.n;
  // a node already on its way (queued again as a source, or as some rule's result) needs no second
  // pass: whoever queued it waits for its result. Only a cycle keeps it from arriving (then the stack
  // runs dry without a result for the root, and unified() reports it).
  if (F(n) & kStarted) return;
  F(n) |= kStarted;
  if (o_.stats) ++o_.stats->nodesVisited;
  const UOp *nn = n;
  uint32_t depth = e.depth;
  if (o_.nodeFirst) {
    uint32_t stamp = ++loopStamp_;
    for (;;) {
      if (C(nn).stamp == stamp) noFixedPoint(n, "node-first rules cycle through " + describe(nn));
      C(nn).stamp = stamp;
      bool gated = false;
      const UOp *r = nodeFirst(nn, gated);
      if (gated) return finish(n, nn); // keep it and do not descend (tinygrad's BottomUpGate)
      if (!r) break;
      if (isNew(r)) checkDepth(n, ++depth);
      nn = r;
    }
  }
  push({n, nn, depth, 1});
  // an opaque body stays as it is under this node: it is not queued (see keptBody)
  for (uint32_t i = nn->nsrc, first = keptBody(nn); i-- > first;) {
    const UOp *x = nn->src(i);
    if (!(F(x) & kStarted)) push({x, x, isNew(x) ? depth : 0, 0});
  }
}

void Rewriter::stage1(const Entry &e) {
  tmp_.clear();
  bool same = true;
  const uint32_t kept = keptBody(e.nn);
  if (kept) tmp_.push_back(e.nn->src(0));
  for (uint32_t i = kept; i < e.nn->nsrc; ++i) {
    const UOp *x = e.nn->src(i);
    const UOp *r = R(x);
    if (!r) return wait(x, e);
    tmp_.push_back(r);
    same = same && r == x;
  }
  const UOp *next;
  if (same) {
    next = o_.sourcesFirst ? o_.sourcesFirst->rewrite(ctx_, e.nn, o_.user, o_.stats) : nullptr;
    if (!next) return finish(e.n, e.nn);
  } else {
    next = ctx_.make(e.nn->op, e.nn->dtype, tmp_, e.nn->arg, e.nn->tag);
  }
  uint32_t depth = e.depth;
  if (isNew(next)) checkDepth(e.n, ++depth);
  push({e.n, next, depth, 2});
  push({next, next, depth, 0});
}

void Rewriter::stage2(const Entry &e) {
  if (const UOp *r = R(e.nn)) return finish(e.n, r);
  lastBlocked_ = e.n;
  wait(e.nn, e);
}

const UOp *Rewriter::unified(const UOp *root) {
  push({root, root, 0, 0});
  while (!stack_.empty()) {
    Entry e = stack_.back();
    stack_.pop_back();
    if (R(e.n)) continue;
    if (e.stage == 0) stage0(e);
    else if (e.stage == 1) stage1(e);
    else stage2(e);
  }
  if (const UOp *r = R(root)) return r;
  noFixedPoint(lastBlocked_ ? lastBlocked_ : root, "its rewrite result depends on itself (the rules cycle)");
}

const UOp *Rewriter::walk(const UOp *root) {
  push({root, root, 0, 0});
  while (!stack_.empty()) {
    Entry e = stack_.back();
    stack_.pop_back();
    const UOp *n = e.n;
    if (R(n)) continue;
    if (e.stage == 0) {
      if (o_.stats) ++o_.stats->nodesVisited;
      if (o_.nodeFirst) {
        bool gated = false;
        const UOp *r = nodeFirst(n, gated);
        if (gated || r) { // a result is used as it is: no traversal into it
          R(n) = gated ? n : r;
          continue;
        }
      }
      push({n, n, 0, 1});
      for (uint32_t i = n->nsrc, first = keptBody(n); i-- > first;)
        if (!R(n->src(i))) push({n->src(i), n->src(i), 0, 0});
    } else {
      tmp_.clear();
      const uint32_t kept = keptBody(n);
      if (kept) tmp_.push_back(n->src(0));
      for (uint32_t i = kept; i < n->nsrc; ++i) {
        const UOp *x = n->src(i), *r = R(x);
        tmp_.push_back(r ? r : x);
      }
      const UOp *nn = ctx_.withSrc(n, tmp_);
      if (o_.sourcesFirst)
        if (const UOp *r = o_.sourcesFirst->rewrite(ctx_, nn, o_.user, o_.stats)) nn = r;
      R(n) = nn;
    }
  }
  return R(root);
}

struct SubstituteSlot {
  const UOp *to = nullptr;
  uint32_t gen = 0;
};
struct SubstituteScratch : Context::ScratchBase {
  StampedTable<SubstituteSlot> table;
};

} // namespace

const UOp *graphRewrite(Context &ctx, const UOp *root, const RewriteOptions &opts) {
  if (!root || (!opts.sourcesFirst && !opts.nodeFirst)) return root;
  Rewriter rw(ctx, opts);
  return opts.walk ? rw.walk(root) : rw.unified(root);
}

const UOp *graphRewrite(Context &ctx, const UOp *root, const RuleSet &rules, RewriteMode mode, void *user) {
  RewriteOptions o;
  (mode == RewriteMode::SourcesFirst ? o.sourcesFirst : o.nodeFirst) = &rules;
  o.user = user;
  return graphRewrite(ctx, root, o);
}

const UOp *substitute(Context &ctx, const UOp *root, const std::unordered_map<const UOp *, const UOp *> &map,
                      bool enterCalls) {
  Context::Scratch<SubstituteScratch> sc(ctx);
  StampedTable<SubstituteSlot> &table = sc->table;
  table.clear();
  bool any = false;
  for (const auto &[from, to] : map)
    if (from != to) {
      table.at(from).to = to;
      any = true;
    }
  table.flushStats(ctx.scratchStats());
  if (!any) return root;
  static const RuleSet lookup{
      rule(var(), [](Match &m) { // x -> map[x]
        const SubstituteSlot *s = m.user<StampedTable<SubstituteSlot>>().find(m.root());
        return s ? s->to : nullptr;
      }),
  };
  RewriteOptions o;
  o.nodeFirst = &lookup;
  o.user = &table;
  o.walk = true;
  o.enterCalls = enterCalls;
  return graphRewrite(ctx, root, o);
}

const UOp *substitute(Context &ctx, const UOp *root,
                      std::initializer_list<std::pair<const UOp *const, const UOp *>> map, bool enterCalls) {
  return substitute(ctx, root, std::unordered_map<const UOp *, const UOp *>(map), enterCalls);
}

const UOp *rebuildBottomUp(Context &ctx, const UOp *root,
                           const std::function<const UOp *(const UOp *u, std::span<const UOp *const> srcs)> &f) {
  std::unordered_map<const UOp *, const UOp *> now;
  std::vector<const UOp *> srcs;
  for (const UOp *u : toposort(root)) {
    bool changed = false;
    srcs.assign(u->src().begin(), u->src().end());
    for (const UOp *&s : srcs)
      if (auto it = now.find(s); it != now.end()) {
        s = it->second;
        changed = true;
      }
    const UOp *n = f(u, srcs);
    if (!n) n = changed ? ctx.withSrc(u, srcs) : u;
    if (n != u) now[u] = n;
  }
  auto it = now.find(root);
  return it == now.end() ? root : it->second;
}

void rewriteKernelBodies(Graph &g, const std::function<const UOp *(const UOp *call)> &f) {
  Context &c = *g.ctx;
  std::unordered_map<const UOp *, const UOp *> now;
  for (const UOp *u : toposort(g.root)) {
    std::vector<const UOp *> srcs;
    for (const UOp *s : u->src()) {
      auto it = now.find(s);
      srcs.push_back(it == now.end() ? s : it->second);
    }
    if (u->op == Op::CALL && u->nsrc > 0 && u->src(0)->op == Op::SINK) srcs[0] = f(u);
    const UOp *n = c.withSrc(u, srcs);
    if (n != u) now[u] = n;
  }
  auto it = now.find(g.root);
  if (it == now.end()) return;
  // the schedule's plan still holds (the top level is the same up to kernel bodies): its CALLs are the new ones
  if (const Schedule *old = currentSchedule(g)) {
    auto plan = std::make_shared<Schedule>(*old);
    auto moved = [&](const UOp *u) {
      auto m = now.find(u);
      return m == now.end() ? u : m->second;
    };
    for (const UOp *&call : plan->calls) call = moved(call);
    for (SchedStep &st : plan->steps) st.call = moved(st.call);
    for (SchedKernel &k : plan->kernels) k.call = moved(k.call);
    for (SchedBuffer &b : plan->buffers) b.node = moved(b.node);
    plan->root = it->second;
    g.schedule = std::move(plan);
  }
  g.root = it->second;
}

} // namespace uopc

//===- Pattern.cpp - building, compiling and matching patterns ------------===//
#include "Passes/Pattern.h"

#include "IR/Error.h"

#include <bit>

namespace uopc {

OpMask OpMask::all() {
  OpMask m;
  for (unsigned i = 0; i < kNumOps; ++i) m.set(static_cast<Op>(i));
  return m;
}

//===----------------------------------------------------------------------===//
// Building patterns
//===----------------------------------------------------------------------===//

namespace {
std::shared_ptr<PatNode> copyOf(const Pat &p) { return std::make_shared<PatNode>(p.node()); }
uint32_t dtypeBit(DType dt) { return uint32_t(1) << unsigned(dt); }

/// Same pattern (predicates compared by identity): var("x") + var("x") then needs one source order only.
bool samePat(const PatNode &a, const PatNode &b) {
  if (&a == &b) return true;
  if (a.isAnyOf != b.isAnyOf || a.anyOp != b.anyOp || a.ops.w[0] != b.ops.w[0] || a.ops.w[1] != b.ops.w[1] ||
      a.dtypes != b.dtypes || a.name != b.name || a.srcKind != b.srcKind || a.srcs.size() != b.srcs.size() ||
      a.argTest != b.argTest || a.argPtr != b.argPtr || a.num.isInt != b.num.isInt || a.num.i != b.num.i ||
      !(a.num.d == b.num.d) || a.argPred != b.argPred || a.tagPred != b.tagPred)
    return false;
  for (size_t i = 0; i < a.srcs.size(); ++i)
    if (!samePat(a.srcs[i].node(), b.srcs[i].node())) return false;
  return true;
}
} // namespace

Pat pat(OpMask ops) {
  auto n = std::make_shared<PatNode>();
  n->anyOp = false;
  n->ops = ops;
  return Pat(std::move(n));
}
Pat pat(std::initializer_list<Op> ops) {
  OpMask m;
  for (Op op : ops) m.set(op);
  return pat(m);
}
Pat pat(bool (*group)(Op)) {
  OpMask m;
  for (unsigned i = 0; i < kNumOps; ++i)
    if (group(static_cast<Op>(i))) m.set(static_cast<Op>(i));
  return pat(m);
}
Pat var(std::string_view name) {
  auto n = std::make_shared<PatNode>();
  n->name = std::string(name);
  return Pat(std::move(n));
}
Pat anyOf(std::initializer_list<Pat> alternatives) {
  auto n = std::make_shared<PatNode>();
  n->isAnyOf = true;
  n->srcs.assign(alternatives.begin(), alternatives.end());
  return Pat(std::move(n));
}

Pat Pat::fromNum(bool isInt, int64_t i, double d) { return pat(Op::CONST).withNum(isInt, i, d); }
Pat Pat::withNum(bool isInt, int64_t i, double d) const {
  auto n = copyOf(*this);
  n->argTest = PatNode::ArgTest::Num;
  n->num = PatNum{isInt, i, d};
  return Pat(std::move(n));
}
Pat Pat::named(std::string_view name) const {
  auto n = copyOf(*this);
  n->name = std::string(name);
  return Pat(std::move(n));
}
Pat Pat::dtype(DType dt) const {
  auto n = copyOf(*this);
  n->dtypes = dtypeBit(dt);
  return Pat(std::move(n));
}
Pat Pat::dtype(std::initializer_list<DType> dts) const {
  auto n = copyOf(*this);
  n->dtypes = 0;
  for (DType dt : dts) n->dtypes |= dtypeBit(dt);
  return Pat(std::move(n));
}
Pat Pat::withSrc(Srcs kind, std::vector<Pat> srcs) const {
  if (node_->isAnyOf) fail("anyOf() patterns take no sources; give them to the alternatives");
  auto n = copyOf(*this);
  // (x, x) in either order is one order: skip the second, identical attempt (tinygrad's all_same)
  if (kind == Srcs::Either && samePat(*srcs[0].node_, *srcs[1].node_)) kind = Srcs::Exact;
  n->srcKind = kind;
  n->srcs = std::move(srcs);
  return Pat(std::move(n));
}
Pat Pat::arg(const Arg *a) const {
  auto n = copyOf(*this);
  n->argTest = PatNode::ArgTest::Ptr;
  n->argPtr = a;
  return Pat(std::move(n));
}
Pat Pat::argIf(std::function<bool(const Arg *)> pred) const {
  auto n = copyOf(*this);
  n->argTest = PatNode::ArgTest::Pred;
  n->argPred = std::make_shared<const std::function<bool(const Arg *)>>(std::move(pred));
  return Pat(std::move(n));
}
Pat Pat::tagIf(std::function<bool(const Arg *)> pred) const {
  auto n = copyOf(*this);
  n->tagPred = std::make_shared<const std::function<bool(const Arg *)>>(std::move(pred));
  return Pat(std::move(n));
}
Pat Pat::cast(DType dt) const { return pat(Op::CAST).dtype(dt).src(*this); }

Pat alu(Op op, std::initializer_list<Pat> srcs) {
  std::vector<Pat> v(srcs);
  auto n = copyOf(pat(op));
  if (isComparison(op)) n->dtypes = dtypeBit(DType::Bool);
  else if (!v.empty()) n->dtypes = v.back().node().dtypes;
  bool either = v.size() == 2 && isCommutative(op) && !samePat(v[0].node(), v[1].node());
  n->srcKind = either ? Pat::Srcs::Either : Pat::Srcs::Exact;
  n->srcs = std::move(v);
  return Pat(std::move(n));
}

bool argEqualsNum(const Arg *a, const PatNum &n) {
  if (!a) return false;
  switch (a->kind) {
  case ArgKind::Int: return n.isInt ? a->i() == n.i : double(a->i()) == n.d;
  case ArgKind::UInt: return n.isInt ? false : double(a->u()) == n.d; // UInt args are above int64's range
  case ArgKind::Float: return n.isInt ? a->f() == double(n.i) : a->f() == n.d;
  case ArgKind::Bool: return n.isInt ? int64_t(a->b()) == n.i : double(a->b()) == n.d;
  default: return false;
  }
}

//===----------------------------------------------------------------------===//
// Compiling rules
//===----------------------------------------------------------------------===//

namespace {

/// Flattens a pattern tree into r.pats: a node's children are contiguous, so a source list is a range.
struct Compiler {
  CompiledRule &r;

  int8_t slotFor(const std::string &name) {
    for (size_t i = 0; i < r.names.size(); ++i)
      if (r.names[i] == name) return int8_t(i);
    if (r.names.size() == kMaxCaptures)
      fail("rule at " + r.location + " uses more than " + std::to_string(kMaxCaptures) + " capture names");
    r.names.push_back(name);
    return int8_t(r.names.size() - 1);
  }

  void fill(uint32_t idx, const PatNode &n) {
    CPat c;
    c.ops = n.anyOp ? OpMask::all() : n.ops;
    c.dtypes = n.dtypes;
    c.slot = n.name.empty() ? -1 : slotFor(n.name);
    c.isAnyOf = n.isAnyOf;
    c.srcKind = n.srcKind;
    c.argTest = n.argTest;
    c.argPtr = n.argPtr;
    c.num = n.num;
    c.argPred = n.argPred.get();
    c.tagPred = n.tagPred.get();
    c.first = uint32_t(r.pats.size());
    c.count = uint32_t(n.srcs.size());
    r.pats.resize(r.pats.size() + n.srcs.size()); // reserve the children's range before filling it
    c.hasNames = c.slot >= 0;
    for (uint32_t i = 0; i < c.count; ++i) {
      fill(c.first + i, n.srcs[i].node());
      const CPat &child = r.pats[c.first + i];
      c.det = c.det && child.det;
      c.hasNames = c.hasNames || child.hasNames;
      // a child that binds nothing only has to match somehow: its alternatives cannot affect the others
      c.childrenGreedy = c.childrenGreedy && (child.det || !child.hasNames);
    }
    c.det = c.det && !c.isAnyOf && c.srcKind != Pat::Srcs::Either;
    r.pats[idx] = c;
  }

  OpMask topOps(uint32_t idx) const {
    const CPat &c = r.pats[idx];
    if (!c.isAnyOf) return c.ops;
    OpMask m;
    for (uint32_t i = 0; i < c.count; ++i) {
      OpMask a = topOps(c.first + i);
      m.w[0] |= a.w[0];
      m.w[1] |= a.w[1];
    }
    return m;
  }
};

std::string locationOf(const std::source_location &loc) {
  std::string_view file = loc.file_name();
  if (auto slash = file.rfind('/'); slash != std::string_view::npos) file.remove_prefix(slash + 1);
  return std::string(file) + ":" + std::to_string(loc.line());
}

} // namespace

Rule rule(const Pat &p, RewriteFn fn, std::source_location loc) {
  auto r = std::make_shared<CompiledRule>();
  r->location = locationOf(loc);
  if (!fn) fail("rule at " + r->location + " has no rewrite function");
  r->fn = std::move(fn);
  r->keep = p.shared();
  Compiler comp{*r};
  r->pats.resize(1);
  comp.fill(0, p.node());
  r->topOps = comp.topOps(0);
  // tinygrad's early_reject: a node can only match when its sources include every op that a direct
  // source pattern names alone (srcEach is left out: it also matches a node with no sources)
  const CPat &top = r->pats[0];
  if (!top.isAnyOf && top.srcKind != Pat::Srcs::Any && top.srcKind != Pat::Srcs::Each)
    for (uint32_t i = 0; i < top.count; ++i) {
      const CPat &c = r->pats[top.first + i];
      if (!c.isAnyOf && std::popcount(c.ops.w[0]) + std::popcount(c.ops.w[1]) == 1) {
        r->earlyReject.w[0] |= c.ops.w[0];
        r->earlyReject.w[1] |= c.ops.w[1];
      }
    }
  return Rule(std::move(r));
}

//===----------------------------------------------------------------------===//
// Matching
//===----------------------------------------------------------------------===//

namespace {
/// A borrowed `bool()` callable: the continuation of a match ("the rest of the pattern matched, go on").
struct Cont {
  void *obj = nullptr;
  bool (*fn)(void *) = [](void *) { return true; };
  Cont() = default;
  template <typename F> explicit Cont(F &f) : obj(&f), fn([](void *o) { return (*static_cast<F *>(o))(); }) {}
  bool operator()() const { return fn(obj); }
};
} // namespace

/// Backtracking matcher over a flat pattern. Every function returns true when the continuation accepted
/// (the search is over) and otherwise leaves the captures as it found them.
struct PatMatcher {
  const CPat *pats;
  Match &m;

  bool node(uint32_t pi, const UOp *u, Cont k) {
    const CPat &p = pats[pi];
    if (!p.ops.test(u->op)) return false;
    if (p.dtypes && !((p.dtypes >> unsigned(u->dtype)) & 1)) return false;
    switch (p.argTest) {
    case PatNode::ArgTest::None: break;
    case PatNode::ArgTest::Ptr:
      if (u->arg != p.argPtr) return false;
      break;
    case PatNode::ArgTest::Num:
      if (!argEqualsNum(u->arg, p.num)) return false;
      break;
    case PatNode::ArgTest::Pred:
      if (!(*p.argPred)(u->arg)) return false;
      break;
    }
    if (p.tagPred && !(*p.tagPred)(u->tag)) return false;
    if (!p.isAnyOf) {
      if ((p.srcKind == Pat::Srcs::Exact || p.srcKind == Pat::Srcs::Either) && u->nsrc != p.count) return false;
      if (p.srcKind == Pat::Srcs::Prefix && u->nsrc < p.count) return false;
    }
    uint8_t mark = m.ntrail_;
    if (p.slot >= 0 && !m.bind(uint8_t(p.slot), u)) return false;
    bool ok = false;
    if (p.isAnyOf) {
      for (uint32_t i = 0; i < p.count && !ok; ++i) ok = node(p.first + i, u, k);
    } else {
      switch (p.srcKind) {
      case Pat::Srcs::Any: ok = k(); break;
      case Pat::Srcs::Exact:
      case Pat::Srcs::Prefix: ok = p.childrenGreedy ? greedy(p, u, false) && k() : srcs(p, u, 0, false, k); break;
      case Pat::Srcs::Either: {
        uint8_t mark2 = m.ntrail_;
        ok = p.childrenGreedy ? greedy(p, u, false) && k() : srcs(p, u, 0, false, k);
        if (!ok) {
          m.undo(mark2);
          ok = p.childrenGreedy ? greedy(p, u, true) && k() : srcs(p, u, 0, true, k);
        }
        break;
      }
      case Pat::Srcs::Each: ok = p.childrenGreedy ? greedyEach(p, u) && k() : each(p, u, 0, k); break;
      }
    }
    if (!ok) m.undo(mark);
    return ok;
  }

  /// Children that match in at most one way: match them in turn, no continuation needed.
  bool greedy(const CPat &p, const UOp *u, bool swap) {
    for (uint32_t i = 0; i < p.count; ++i)
      if (!node(p.first + i, u->src(swap ? 1 - i : i), Cont())) return false;
    return true;
  }
  bool greedyEach(const CPat &p, const UOp *u) {
    for (uint32_t i = 0; i < u->nsrc; ++i)
      if (!node(p.first, u->src(i), Cont())) return false;
    return true;
  }
  bool srcs(const CPat &p, const UOp *u, uint32_t i, bool swap, Cont k) {
    if (i == p.count) return k();
    auto next = [&] { return srcs(p, u, i + 1, swap, k); };
    return node(p.first + i, u->src(swap ? 1 - i : i), Cont(next));
  }
  bool each(const CPat &p, const UOp *u, uint32_t i, Cont k) {
    if (i == u->nsrc) return k();
    auto next = [&] { return each(p, u, i + 1, k); };
    return node(p.first, u->src(i), Cont(next));
  }
};

const UOp *Match::operator[](std::string_view name) const {
  if (!rule_) fail("Match::operator[] outside a rule");
  for (size_t i = 0; i < rule_->names.size(); ++i)
    if (rule_->names[i] == name) return slots_[i];
  fail("rule at " + rule_->location + " has no capture named '" + std::string(name) + "'");
}

const UOp *Match::constLike(const UOp *like, int64_t v) const {
  switch (dtypeKind(like->dtype)) {
  case DTypeKind::Float: return ctx_.constFloat(like->dtype, double(v));
  case DTypeKind::Bool: return ctx_.make(Op::CONST, like->dtype, {}, ctx_.argBool(v != 0));
  default: return ctx_.constInt(like->dtype, v);
  }
}
const UOp *Match::constLikeFloat(const UOp *like, double v) const {
  switch (dtypeKind(like->dtype)) {
  case DTypeKind::Float: return ctx_.constFloat(like->dtype, v);
  case DTypeKind::Bool: return ctx_.make(Op::CONST, like->dtype, {}, ctx_.argBool(v != 0));
  default: return ctx_.constInt(like->dtype, int64_t(v));
  }
}

//===----------------------------------------------------------------------===//
// Rule sets
//===----------------------------------------------------------------------===//

RuleSet::RuleSet(std::initializer_list<Rule> rules) {
  for (const Rule &r : rules) rules_.push_back(r.rule_);
  reindex();
}
RuleSet &RuleSet::add(const Rule &r) {
  rules_.push_back(r.rule_);
  reindex();
  return *this;
}
RuleSet &RuleSet::add(const RuleSet &more) {
  rules_.insert(rules_.end(), more.rules_.begin(), more.rules_.end());
  reindex();
  return *this;
}

void RuleSet::reindex() {
  // a counting sort by op over each rule's set bits (a rule names few ops; every rule set is indexed once
  // per process, so this is start-up time): each op's rules in rule order
  auto eachOp = [](const OpMask &m, auto &&f) {
    for (unsigned k = 0; k < 2; ++k)
      for (uint64_t bits = m.w[k]; bits; bits &= bits - 1) {
        unsigned op = k * 64 + unsigned(__builtin_ctzll(bits));
        if (op < kNumOps) f(op);
      }
  };
  std::array<uint32_t, kNumOps + 1> count{};
  for (const auto &r : rules_) eachOp(r->topOps, [&](unsigned op) { ++count[op]; });
  uint32_t total = 0;
  for (unsigned op = 0; op < kNumOps; ++op) offsets_[op] = total, total += count[op];
  offsets_[kNumOps] = total;
  index_.assign(total, nullptr);
  std::array<uint32_t, kNumOps + 1> next = offsets_;
  for (const auto &r : rules_) eachOp(r->topOps, [&](unsigned op) { index_[next[op]++] = r.get(); });
}

const UOp *RuleSet::rewrite(Context &ctx, const UOp *u, void *user, RewriteStats *stats) const {
  bool gated = false;
  const UOp *r = rewrite(ctx, u, user, stats, &gated);
  if (gated) fail("a rule called Match::gate() outside node-first rewriting");
  return r;
}

const UOp *RuleSet::rewrite(Context &ctx, const UOp *u, void *user, RewriteStats *stats, bool *gated) const {
  auto rules = rulesFor(u->op);
  if (rules.empty()) return nullptr;
  OpMask srcOps;
  bool haveSrcOps = false;
  Match m(ctx, u, user);
  for (const CompiledRule *r : rules) {
    if (!r->earlyReject.empty()) {
      if (!haveSrcOps) {
        for (const UOp *s : u->src()) srcOps.set(s->op);
        haveSrcOps = true;
      }
      if (!r->earlyReject.subsetOf(srcOps)) continue;
    }
    if (stats) ++stats->rulesTried;
    m.rule_ = r;
    m.undo(0);
    const UOp *out = nullptr;
    auto done = [&] {
      out = r->fn(m);
      return out != nullptr || m.gated_;
    };
    PatMatcher{r->pats.data(), m}.node(0, u, Cont(done));
    if (m.gated_) {
      *gated = true;
      return nullptr;
    }
    if (out && out != u) {
      if (stats) ++stats->rewrites;
      return out;
    }
  }
  return nullptr;
}

} // namespace uopc

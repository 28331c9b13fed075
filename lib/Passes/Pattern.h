//===- Pattern.h - a UPat-like pattern DSL and rule sets over UOps ---------===//
// The C++ counterpart of tinygrad's UPat/PatternMatcher: a rule is one row, pattern -> rewrite function,
//
//   RuleSet identities{
//       rule(var("x") + 0, [](Match &m) { return m["x"]; }),                       // x+0 -> x
//       rule(var("x") * 1, [](Match &m) { return m["x"]; }),                       // x*1 -> x
//       rule(floordiv(var("x"), var("x")), [](Match &m) { return m.constLike(m["x"], 1); }), // x//x -> 1
//   };
//   const UOp *r = identities.rewrite(ctx, node); // null: no rule applied
//
// and rule sets compose with `+`. Operators on patterns map one to one to ops: `a + b` is ADD, `a - b` is
// SUB, `-a` is NEG, `a < b` is CMPLT (tinygrad's UPat spells x-y as x+(-y) and -x as x*-1: port such rows
// with explicit patterns). Commutative ops (isCommutative) match their two sources in either order.
// A plain number is a constant pattern: `var("x") + 0` matches x+0 for a CONST 0 of any dtype, int or float.
//
// A rule is compiled when it is built: capture names become slots of a fixed array (at most kMaxCaptures
// per rule) and the pattern tree a flat array, so matching allocates nothing. A RuleSet indexes its rules
// by the ops their top pattern accepts, so rewriting a node only tries the rules for its op.
#pragma once

#include "IR/UOp.h"

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace uopc {

/// A set of ops (kNumOps fits 128 bits).
struct OpMask {
  uint64_t w[2] = {0, 0};
  void set(Op op) { w[unsigned(op) >> 6] |= uint64_t(1) << (unsigned(op) & 63); }
  bool test(Op op) const { return (w[unsigned(op) >> 6] >> (unsigned(op) & 63)) & 1; }
  bool subsetOf(const OpMask &o) const { return (w[0] & ~o.w[0]) == 0 && (w[1] & ~o.w[1]) == 0; }
  bool empty() const { return (w[0] | w[1]) == 0; }
  static OpMask all();
};

struct PatNode;
struct CompiledRule;

/// Counters a rewrite can fill in (for tests and benchmarks).
struct RewriteStats {
  uint64_t nodesVisited = 0; ///< nodes graphRewrite processed
  uint64_t rulesTried = 0;   ///< rules whose pattern was run against a node (after dispatch and early reject)
  uint64_t rewrites = 0;     ///< rule applications that returned a replacement
};

/// A pattern: an immutable value (shared, cheap to copy). Build one with pat/var/cvar/cst and the
/// operators below, refine it with the methods; each method returns a new pattern.
class Pat {
public:
  /// A constant pattern: a CONST whose value equals v as Python's == would (0 matches 0, 0.0, -0.0
  /// and False). Implicit, so that `var("x") * 1` reads like tinygrad.
  template <typename T>
    requires(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>)
  Pat(T v) : Pat(std::is_floating_point_v<T> ? fromNum(false, 0, double(v)) : fromNum(true, int64_t(v), 0)) {}

  /// Binds the matched node to `name`. A name used twice in a rule must bind the same node.
  Pat named(std::string_view name) const;
  /// Only nodes of this dtype / one of these dtypes.
  Pat dtype(DType dt) const;
  Pat dtype(std::initializer_list<DType> dts) const;
  /// Exactly these sources, in this order.
  template <typename... P> Pat src(const P &...ps) const { return withSrc(Srcs::Exact, {Pat(ps)...}); }
  /// At least these sources: they match the first ones, more may follow (tinygrad's allow_any_len).
  template <typename... P> Pat srcPrefix(const P &...ps) const { return withSrc(Srcs::Prefix, {Pat(ps)...}); }
  /// Any number of sources (none included), each matching `p` (tinygrad's src=UPat).
  Pat srcEach(const Pat &p) const { return withSrc(Srcs::Each, {p}); }
  /// Two sources, matched as (a, b) and, failing that, as (b, a).
  Pat srcEither(const Pat &a, const Pat &b) const { return withSrc(Srcs::Either, {a, b}); }
  /// The arg is exactly this interned pointer (null: the node has no arg).
  Pat arg(const Arg *a) const;
  /// The arg satisfies `pred` (which gets null for a node without arg).
  Pat argIf(std::function<bool(const Arg *)> pred) const;
  /// The arg is a number (Int, UInt, Float or Bool) equal to v as Python's == would.
  template <typename T>
    requires std::is_arithmetic_v<T>
  Pat argNum(T v) const {
    return std::is_floating_point_v<T> ? withNum(false, 0, double(v)) : withNum(true, int64_t(v), 0);
  }
  /// The tag satisfies `pred` (null when the node has no tag).
  Pat tagIf(std::function<bool(const Arg *)> pred) const;

  /// CAST of this pattern to dt.
  Pat cast(DType dt) const;

  const PatNode &node() const { return *node_; }
  const std::shared_ptr<const PatNode> &shared() const { return node_; }
  explicit Pat(std::shared_ptr<const PatNode> n) : node_(std::move(n)) {}

  enum class Srcs : uint8_t { Any, Exact, Prefix, Each, Either };

private:
  static Pat fromNum(bool isInt, int64_t i, double d);
  Pat withSrc(Srcs kind, std::vector<Pat> srcs) const;
  Pat withNum(bool isInt, int64_t i, double d) const;
  std::shared_ptr<const PatNode> node_;
};

/// A number as a pattern sees it (tinygrad compares args with Python's ==).
struct PatNum {
  bool isInt = true;
  int64_t i = 0;
  double d = 0;
};

/// The build-time form of a pattern. Rules compile it into a flat array (see CompiledRule).
struct PatNode {
  bool isAnyOf = false; ///< alternatives in `srcs`: the first that matches (then the next, on backtracking)
  bool anyOp = true;
  OpMask ops;
  uint32_t dtypes = 0; ///< bit per DType; 0 = any
  std::string name;
  Pat::Srcs srcKind = Pat::Srcs::Any;
  std::vector<Pat> srcs;
  enum class ArgTest : uint8_t { None, Ptr, Num, Pred } argTest = ArgTest::None;
  const Arg *argPtr = nullptr;
  PatNum num;
  std::shared_ptr<const std::function<bool(const Arg *)>> argPred, tagPred;
};

/// A node with one of these ops (no constraint on its sources).
Pat pat(OpMask ops);
inline Pat pat(Op op) {
  OpMask m;
  m.set(op);
  return pat(m);
}
Pat pat(std::initializer_list<Op> ops);
/// A node whose op satisfies `group`, e.g. pat(isBinary) (tinygrad's UPat(GroupOp.Binary)).
Pat pat(bool (*group)(Op));
/// Any node, bound to `name` when it is not empty (UPat.var).
Pat var(std::string_view name = {});
inline Pat var(std::string_view name, DType dt) { return var(name).dtype(dt); }
inline Pat var(std::string_view name, std::initializer_list<DType> dts) { return var(name).dtype(dts); }
/// Any CONST (UPat.cvar).
inline Pat cvar(std::string_view name = {}) { return pat(Op::CONST).named(name); }
inline Pat cvar(std::string_view name, DType dt) { return cvar(name).dtype(dt); }
/// A CONST equal to v (cst(0) matches int 0 and float 0.0), of dtype dt when given.
template <typename T>
  requires std::is_arithmetic_v<T>
Pat cst(T v) {
  return pat(Op::CONST).argNum(v);
}
template <typename T>
  requires std::is_arithmetic_v<T>
Pat cst(T v, DType dt) {
  return cst(v).dtype(dt);
}
/// The first of these patterns that matches (UPat.any).
Pat anyOf(std::initializer_list<Pat> alternatives);

/// The pattern of an ALU op over these sources, as tinygrad's UPat.alu builds it: commutative binary ops
/// match either source order; the dtype constraint is the last source's (bool for comparisons).
Pat alu(Op op, std::initializer_list<Pat> srcs);
inline Pat operator+(const Pat &a, const Pat &b) { return alu(Op::ADD, {a, b}); }
inline Pat operator-(const Pat &a, const Pat &b) { return alu(Op::SUB, {a, b}); }
inline Pat operator*(const Pat &a, const Pat &b) { return alu(Op::MUL, {a, b}); }
inline Pat operator&(const Pat &a, const Pat &b) { return alu(Op::AND, {a, b}); }
inline Pat operator|(const Pat &a, const Pat &b) { return alu(Op::OR, {a, b}); }
inline Pat operator^(const Pat &a, const Pat &b) { return alu(Op::XOR, {a, b}); }
inline Pat operator<<(const Pat &a, const Pat &b) { return alu(Op::SHL, {a, b}); }
inline Pat operator>>(const Pat &a, const Pat &b) { return alu(Op::SHR, {a, b}); }
inline Pat operator<(const Pat &a, const Pat &b) { return alu(Op::CMPLT, {a, b}); }
inline Pat operator-(const Pat &a) { return alu(Op::NEG, {a}); }
inline Pat max(const Pat &a, const Pat &b) { return alu(Op::MAX, {a, b}); }
inline Pat ne(const Pat &a, const Pat &b) { return alu(Op::CMPNE, {a, b}); }
inline Pat eq(const Pat &a, const Pat &b) { return alu(Op::CMPEQ, {a, b}); }
inline Pat floordiv(const Pat &a, const Pat &b) { return alu(Op::FLOORDIV, {a, b}); }
inline Pat floormod(const Pat &a, const Pat &b) { return alu(Op::FLOORMOD, {a, b}); }
inline Pat where(const Pat &c, const Pat &t, const Pat &f) { return alu(Op::WHERE, {c, t, f}); }

/// Most distinct capture names one rule may use.
inline constexpr unsigned kMaxCaptures = 16;

/// What a rewrite function sees: the captures, the node matched, the Context and the user context.
class Match {
public:
  Match(Context &ctx, const UOp *root, void *user) : ctx_(ctx), root_(root), user_(user) {}
  /// The node bound to `name` (null when it sits in an alternative that did not match). Throws Error
  /// when the rule has no such name: that is a typo in the rule.
  const UOp *operator[](std::string_view name) const;
  /// The node the rule's top pattern matched.
  const UOp *root() const { return root_; }
  Context &ctx() const { return ctx_; }
  /// The user context given to graphRewrite / RuleSet::rewrite, as a T.
  template <typename T> T &user() const { return *static_cast<T *>(user_); }
  /// A CONST of like's dtype with value v (float, bool or int arg by dtype): tinygrad's const_like.
  const UOp *constLike(const UOp *like, int64_t v) const;
  const UOp *constLikeFloat(const UOp *like, double v) const;
  /// Node-first rewriting only: keep this node as it is and do not visit its sources (tinygrad's
  /// BottomUpGate). Returns null, so `return m.gate();` reads naturally.
  const UOp *gate() {
    gated_ = true;
    return nullptr;
  }
  bool gated() const { return gated_; }

private:
  friend class RuleSet;
  friend struct PatMatcher;
  bool bind(uint8_t slot, const UOp *u) {
    if (slots_[slot]) return slots_[slot] == u;
    slots_[slot] = u;
    trail_[ntrail_++] = slot;
    return true;
  }
  void undo(uint8_t mark) {
    while (ntrail_ > mark) slots_[trail_[--ntrail_]] = nullptr;
  }
  Context &ctx_;
  const UOp *root_;
  void *user_;
  const CompiledRule *rule_ = nullptr;
  bool gated_ = false;
  uint8_t ntrail_ = 0;
  std::array<uint8_t, kMaxCaptures> trail_{};
  std::array<const UOp *, kMaxCaptures> slots_{};
};

/// A rewrite function: the replacement, or null for "no rewrite" (returning the matched node is also no
/// rewrite, as in tinygrad).
using RewriteFn = std::function<const UOp *(Match &)>;

/// One row of a rule table. Build with rule().
class Rule {
public:
  explicit Rule(std::shared_ptr<const CompiledRule> r) : rule_(std::move(r)) {}
  const CompiledRule &compiled() const { return *rule_; }

private:
  friend class RuleSet;
  std::shared_ptr<const CompiledRule> rule_;
};

/// pattern -> fn. The pattern is compiled now; throws Error when it uses more than kMaxCaptures names.
Rule rule(const Pat &p, RewriteFn fn, std::source_location loc = std::source_location::current());

/// An ordered list of rules, indexed by op (tinygrad's PatternMatcher). Copying shares the rules.
class RuleSet {
public:
  RuleSet() { reindex(); }
  RuleSet(std::initializer_list<Rule> rules);
  RuleSet &add(const Rule &r);
  RuleSet &add(const RuleSet &more);
  friend RuleSet operator+(const RuleSet &a, const RuleSet &b) { return RuleSet(a).add(b); }

  /// Tries the rules for u's op in order; the first non-null result other than u, or null.
  const UOp *rewrite(Context &ctx, const UOp *u, void *user = nullptr, RewriteStats *stats = nullptr) const;
  /// Same; sets *gated and returns null when a rule called Match::gate().
  const UOp *rewrite(Context &ctx, const UOp *u, void *user, RewriteStats *stats, bool *gated) const;

  /// The rules a node of this op tries, in order (those naming op and those accepting any op).
  std::span<const CompiledRule *const> rulesFor(Op op) const {
    return {index_.data() + offsets_[unsigned(op)], index_.data() + offsets_[unsigned(op) + 1]};
  }
  size_t size() const { return rules_.size(); }

private:
  void reindex();
  std::vector<std::shared_ptr<const CompiledRule>> rules_;
  std::array<uint32_t, kNumOps + 1> offsets_{};
  std::vector<const CompiledRule *> index_;
};

/// One node of a compiled pattern: a flat array entry whose children lie at [first, first+count).
struct CPat {
  OpMask ops;          ///< all ops when the pattern accepts any op
  uint32_t dtypes = 0; ///< 0 = any
  int8_t slot = -1;    ///< capture slot, -1 = unnamed
  bool isAnyOf = false;
  bool det = true;            ///< matches in at most one way (no alternative at or below it)
  bool hasNames = false;      ///< a capture at or below it
  bool childrenGreedy = true; ///< every child is det or binds nothing: match them one by one, no backtracking
  Pat::Srcs srcKind = Pat::Srcs::Any;
  PatNode::ArgTest argTest = PatNode::ArgTest::None;
  uint32_t first = 0, count = 0;
  const Arg *argPtr = nullptr;
  PatNum num;
  const std::function<bool(const Arg *)> *argPred = nullptr, *tagPred = nullptr;
};

/// A rule ready to match: the flat pattern, the capture names by slot, and what dispatch needs.
struct CompiledRule {
  std::vector<CPat> pats; ///< pats[0] is the top pattern
  std::vector<std::string> names;
  OpMask topOps;      ///< ops the top pattern accepts: the RuleSet index
  OpMask earlyReject; ///< ops some source must have (the single ops of direct source patterns)
  RewriteFn fn;
  std::shared_ptr<const PatNode> keep; ///< owns the predicates the flat pattern points to
  std::string location;                ///< file:line of the rule, for messages
};

/// Whether a CONST/any arg equals a number as Python's == would (exposed for tests and rules).
bool argEqualsNum(const Arg *a, const PatNum &n);

} // namespace uopc

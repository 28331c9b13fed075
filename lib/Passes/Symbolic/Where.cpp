//===- Where.cpp - WHERE folding, Invalid gates and gated LOAD/STORE ------===//
// Invalid ("no data here") poisons a value: ALU ops move inside the gate `cond.where(x, Invalid)` so that
// the Invalid reaches the INDEX of a LOAD/STORE, where an always-false gate folds the access away
// (tinygrad's pm_data_invalid). A leftover Invalid becomes 0 only in the final codegen step
// (removeInvalidRules). At a fixed point of these rules an Invalid is only ever the false branch of an
// outermost gate, so gate conditions never evaluate to Invalid themselves.
#include "Passes/Symbolic/Internal.h"

#include <algorithm>
#include <unordered_set>

namespace uopc::sym {
namespace {

/// cond ? x : Invalid, capturing cond, x and i.
Pat invalidGate() { return where(var("cond"), var("x"), invalidPat("i")); }
/// p, or a CAST of p (tinygrad's or_casted).
Pat orCasted(const Pat &p) { return anyOf({p, pat(Op::CAST).src(p)}); }
/// INDEX(buf, Invalid, ...), possibly cast.
Pat invalidIndex() { return orCasted(pat(Op::INDEX).srcPrefix(var(), invalidPat())); }
Pat loadOf(const Pat &index) { return pat(Op::LOAD).srcPrefix(index); }

OpMask opsWhere(bool (*pred)(Op)) {
  OpMask m;
  for (unsigned i = 0; i < kNumOps; ++i)
    if (pred(Op(i))) m.set(Op(i));
  return m;
}
bool isUnaryOrBitcast(Op op) { return isUnary(op) || op == Op::BITCAST; }
bool isUnaryOrCast(Op op) { return isUnary(op) || op == Op::CAST || op == Op::BITCAST; }

V invalidOf(S &s, DType dt) { return s.wrap(makeInvalid(s.ctx(), dt)); }
V noop(S &s) { return s.wrap(s.ctx().make(Op::NOOP, DType::Void)); }

// ---- Invalid propagation --------------------------------------------------------------------------
V invalidLikeRoot(S &s) { return invalidOf(s, s.root().dt()); }
V invalidLikeA(S &s) { return invalidOf(s, s["a"].dt()); }
V unaryIntoGate(S &s) { return s["cond"].where(s.root().with({s["x"]}), invalidLikeRoot(s)); }
V binaryIntoGateL(S &s) { return s["cond"].where(s["x"].alu(s.root().op(), s["y"]), invalidLikeRoot(s)); }
V binaryIntoGateR(S &s) { return s["cond"].where(s["y"].alu(s.root().op(), s["x"]), invalidLikeRoot(s)); }
V gateOfCondition(S &s) { return s["cond"].where(s["x"].where(s["a"], s["b"]), invalidLikeA(s)); }
V invalidToFalseBranch(S &s) {
  return isInvalidConst(s["val"]) ? s["i"] : s["cond"].lnot().where(s["val"], s["i"]);
}
V liftGateFromTrue(S &s) {
  if (isInvalidConst(s["c"])) return nullptr;
  return (s["a"].lnot() | s["cond"]).where(s["a"].where(s["x"], s["c"]), s["i"]);
}
V liftGateFromFalse(S &s) {
  if (isInvalidConst(s["b"])) return nullptr;
  return (s["a"] | s["cond"]).where(s["a"].where(s["b"], s["x"]), s["i"]);
}
V loadOfInvalid(S &s) {
  V r = s.root();
  return r->nsrc > 1 ? r.src(1) : r.k(0);
}

// ---- WHERE folding -------------------------------------------------------------------------------
V keepVal(S &s) { return s["val"]; }
V keepX(S &s) { return s["x"]; }
V notX(S &s) { return s["x"].lnot(); }
V andGate(S &s) { return (s["a"] & s["b"]).where(s["c"], s["d"]); }
V orGate(S &s) { return (s["a"] | s["b"]).where(s["c"], s["d"]); }
V selectTF(S &s) { return s["c"].where(s["t"], s["f"]); }
V swapOnNot(S &s) { return isInvalidConst(s["f"]) ? V() : s["cond"].where(s["f"], s["t"]); }

V constGate(S &s) {
  const Arg *a = s["gate"]->arg;
  if (!a || (a->kind != ArgKind::Bool && !a->isInt())) return nullptr;
  bool taken = a->kind == ArgKind::Bool ? a->b() : a->i() != 0;
  return taken ? s["c0"] : s["c1"];
}

/// tinygrad's fold_where_closure: in cond.where(t, f), uses of cond are True within t and False within f.
V foldWhereClosure(S &s) {
  V cond = s["cond"], t = s["t"], f = s["f"];
  if (cond->op == Op::CONST) return nullptr;
  if (!reaches(t, cond, 512) && !reaches(f, cond, 512)) return nullptr;
  for (const UOp *u : {cond.u, t.u, f.u}) // INDEX gates belong to the valid/store machinery
    if (mayContain(u, Op::INDEX, 512)) return nullptr;
  const UOp *nt = replaceNodes(s.ctx(), t, {{cond.u, s.ctx().constBool(true)}});
  const UOp *nf = replaceNodes(s.ctx(), f, {{cond.u, s.ctx().constBool(false)}});
  if (nt == t && nf == f) return nullptr;
  return cond.where(s.wrap(nt), s.wrap(nf));
}

bool constPair(S &s, const char *a, const char *b) { return s[a]->op == Op::CONST && s[b]->op == Op::CONST; }

/// op(c ? t : f, c ? tt : ff) -> c ? op(t, tt) : op(f, ff) when one pair of branches is constant.
V combineWheres(S &s) {
  if (!constPair(s, "t", "tt") && !constPair(s, "f", "ff")) return nullptr;
  Op op = s.root().op();
  return s["c"].where(s["t"].alu(op, s["tt"]), s["f"].alu(op, s["ff"]));
}

V combineWheresAdd(S &s) {
  if (!constPair(s, "t", "tt") && !constPair(s, "f", "ff")) return nullptr;
  return s["y"] + s["c"].where(s["t"] + s["tt"], s["f"] + s["ff"]);
}

// ---- LOAD/STORE ------------------------------------------------------------------------------------
/// INDEX(buf, idx, ...) with its index gated by cond: INDEX(buf, cond.where(idx, Invalid), ...).
V gatedIndex(S &s, V index, V cond) {
  std::vector<const UOp *> src(index->src().begin(), index->src().end());
  src[1] = s.wrap(src[1]).valid(cond);
  return s.wrap(s.ctx().withSrc(index, src));
}
V storeUnderGate(S &s) { return s.root().with({gatedIndex(s, s["index"], s["gate"]), s["alt"]}); }
V storeUnderCond(S &s) { return s.root().with({gatedIndex(s, s["index"], s["cond"]), s["val"]}); }
/// tinygrad's pm_move_where_on_load: a read selected by a condition is made under it, with the other
/// branch as the load's alternative. The read then carries the condition as its gate, which is what lets
/// the emitters drop bounds checks the condition implies (a padded read: the pad mask bounds the index).
V loadUnderCond(S &s, V cond) {
  V index = s["index"];
  if (index->nsrc < 2 || index->dtype == DType::Void || index->src(0)->op != Op::PARAM || isInvalidConst(s["z"]))
    return nullptr;
  // (a condition on the value read itself, relu's 0 < x[i] ? x[i] : 0, bounds no index: under it the read
  // would only be made twice, once for the condition and once gated by it)
  if (reaches(cond, index, 4096, true)) return nullptr;
  return s.wrap(s.ctx().make(Op::LOAD, index->dtype, {gatedIndex(s, index, cond), s["z"]}));
}
V loadUnderTrue(S &s) { return loadUnderCond(s, s["c"]); }
V loadUnderFalse(S &s) { return loadUnderCond(s, s["c"].lnot()); }
/// c ? f(...) : z, where some clauses k of the AND c are conditions on indices alone (no read in them):
/// each read in f, or in c's other clauses, whose index may leave its buffer is made under k as well
/// (x[i] -> x[i if k] or 0; a gated read's gate gains k). Where k fails the result is z whatever those
/// reads give, so no result changes. Only reads whose index k bounds into the buffer or simplifies are
/// made under it. A pad's mask around a function of the padded value, a convolution
/// over relu(x) with zero padding, (k & 0 < x[i]) ? x[i] : 0 once the two selects merge, then bounds the
/// index: its bounds check goes, and with it the Invalid lanes the check brought into the accumulators
/// (that convolution, 64 -> 64 channels at 56x56, one thread: 54 ms before, 5 after; the one before it,
/// reading its padded input directly, 1.0 ms), and the optimizer's interior piece can prove k away.
V readsUnderCond(S &s) {
  V c = s["c"];
  if (c.dt() != DType::Bool || isInvalidConst(s["z"])) return nullptr;
  std::vector<const UOp *> ks, data;
  for (const UOp *k : splitUOp(c, Op::AND)) (mayContain(k, Op::INDEX, 4096) ? data : ks).push_back(k);
  if (ks.empty()) return nullptr;
  std::vector<const UOp *> nodes = localToposort(s["x"]);
  for (const UOp *d : data)
    for (const UOp *u : localToposort(d)) nodes.push_back(u);
  if (nodes.size() > 1024) return nullptr;
  V k = s.wrap(uprod(s.ctx(), ks));
  // a gate that has k's clauses, or to which they add nothing: the valid rules drop a clause that the others
  // imply, so a gate that once had k may no longer show it (k = 0 < (r + 32) % 33 beside 0 < r and 0 < r - 1,
  // r < 10: RetinaNet's upsampled feature map), and gating such a read by k again would only be undone again
  // (the rules cycled): the gated index under k as well simplifying back to itself is the test
  auto gatedByK = [&](const UOp *index) {
    const std::vector<const UOp *> gs = splitUOp(index->src(1)->src(0), Op::AND);
    if (std::all_of(ks.begin(), ks.end(), [&](const UOp *k) { return std::find(gs.begin(), gs.end(), k) != gs.end(); }))
      return true;
    return simplifyWith(s.ctx(), gatedIndex(s, s.wrap(index), k).u, symRules(), &s.sym) ==
           simplifyWith(s.ctx(), index, symRules(), &s.sym);
  };
  std::unordered_set<const UOp *> loaded; // the reads a LOAD makes (with its alternative)
  for (const UOp *u : nodes)
    if (u->op == Op::LOAD && u->nsrc >= 1) loaded.insert(u->src(0));
  std::unordered_map<const UOp *, const UOp *> map;
  for (const UOp *r : nodes) {
    if (map.count(r) || r->op != Op::INDEX || r->nsrc != 2 || r->dtype == DType::Void || r->src(0)->op != Op::PARAM) continue;
    const UOp *idx = r->src(1), *gate = nullptr;
    if (idx->op == Op::WHERE && isInvalidConst(idx->src(2))) gate = idx->src(0), idx = idx->src(1);
    if (gate ? !loaded.count(r) || gatedByK(r) : loaded.count(r) > 0) continue;
    std::optional<int64_t> n = intConst(r->src(0)->src(0));
    if (!n) continue;
    // worth it where k bounds an index that may leave the buffer, or makes it simpler (the div/mod that
    // the flattened view of a padded tensor leaves, which k shows to be the identity)
    bool inBounds = s.vmin(idx) >= Bound(0) && s.vmax(idx) < Bound(*n);
    if (inBounds && localToposort(uopGivenValid(s.sym, s.ctx(), k, idx, false)).size() >= localToposort(idx).size()) continue;
    V under = gatedIndex(s, s.wrap(r), k);
    map[r] = gate ? under : s.ctx().make(Op::LOAD, r->dtype, {under, mkConst(s.ctx(), r->dtype, 0)});
  }
  if (map.empty()) return nullptr;
  const UOp *x = replaceNodes(s.ctx(), s["x"], map);
  if (data.empty() && x->op == Op::LOAD && x->nsrc == 2 && x->src(1) == s["z"]) return s.wrap(x); // c?x[i if c] or z:z
  return s.wrap(replaceNodes(s.ctx(), c, map)).where(s.wrap(x), s["z"]);
}

// ---- removing Invalid ------------------------------------------------------------------------------
V gateToZero(S &s) { return s["w"].with({s["cond"], s["x"], s["x"].k(0)}); }
V stackInvalidToZero(S &s) {
  V st = s.root();
  std::vector<const UOp *> src(st->src().begin(), st->src().end());
  bool any = false;
  for (const UOp *&x : src)
    if (isInvalidConst(x)) x = mkConst(s.ctx(), x->dtype, 0), any = true;
  return any ? s.wrap(s.ctx().withSrc(st, src)) : V();
}

} // namespace

const RuleSet &whereSimpleRules() {
  static const RuleSet rules{
      srule(where(var(), var("val"), var("val")), keepVal),                             // c?v:v -> v
      srule(where(cvar("gate"), var("c0"), var("c1")), constGate),                      // True?a:b -> a, False?a:b -> b
      srule(where(var("a"), where(var("b"), var("c"), var("d")), var("d")), andGate),   // a?(b?c:d):d -> (a&b)?c:d
      srule(where(var("a"), var("c"), where(var("b"), var("c"), var("d"))), orGate),    // a?c:(b?c:d) -> (a|b)?c:d
      srule(where(boolean("x"), cst(1, DType::Bool), cst(0, DType::Bool)), keepX),      // x?True:False -> x
      srule(where(boolean("x"), cst(0, DType::Bool), cst(1, DType::Bool)), notX),       // x?False:True -> !x
  };
  return rules;
}

const RuleSet &whereRules() {
  static const Pat cTF = where(var("c"), var("t"), var("f")), cTTFF = where(var("c"), var("tt"), var("ff"));
  static const RuleSet rules{
      srule(where(ne(boolean("cond"), cst(1, DType::Bool)), var("t"), var("f")), swapOnNot), // !c?t:f -> c?f:t
      srule(where(boolean("cond"), var("t"), var("f")), foldWhereClosure), // c?t(c):f(c) -> c?t(True):f(False)
      srule(pat(isBinary).src(cTF, cTTFF), combineWheres), // (c?t:f) op (c?tt:ff) -> c?(t op tt):(f op ff)
      srule((var("y") + cTF) + cTTFF, combineWheresAdd), // y+(c?t:f)+(c?tt:ff) -> y+c?(t+tt):(f+ff)
      srule(where(var("c"), var("t"), cst(0)) + where(var("c"), cst(0), var("f")), selectTF), // (c?t:0)+(c?0:f)
  };
  return rules;
}

const RuleSet &memoryRules() {
  static const Pat index = pat(Op::INDEX).named("index"), store = pat(Op::STORE);
  static const Pat orOld = where(var("gate"), var("alt"), loadOf(index));
  static const Pat gated = where(var("cond"), var("val"), invalidPat());
  static const RuleSet rules{
      srule(store.src(index, loadOf(index)), noop),                                     // x[i] = x[i] -> NOOP
      srule(store.src(index, orOld), storeUnderGate),                                   // x[i]=g?a:x[i] -> x[i if g]=a
      srule(store.src(var(), invalidPat()), noop),                                      // x[i] = Invalid -> NOOP
      srule(store.src(index, gated), storeUnderCond),                                   // x[i] = c?v:I -> x[i if c] = v
      srule(where(var("c"), index, cvar("z")), loadUnderTrue),                          // c?x[i]:z -> x[i if c] or z
      srule(where(var("c"), cvar("z"), index), loadUnderFalse),                         // c?z:x[i] -> x[i if !c] or z
      srule(where(var("c"), var("x"), cvar("z")), readsUnderCond),                       // c?f(x[i]):z -> c?f(x[i if c]):z
  };
  return rules;
}

} // namespace uopc::sym

namespace uopc {
using namespace sym;

const RuleSet &dataInvalidRules() {
  static const RuleSet rules{
      srule(pat(opsWhere(isUnaryOrBitcast)).src(invalidPat()), invalidLikeRoot),        // op(I) -> I
      srule(pat(opsWhere(isUnaryOrCast)).src(invalidGate()), unaryIntoGate),            // op(c?x:I) -> c?op(x):I
      srule(pat(isBinary).src(invalidGate(), var("y")), binaryIntoGateL),               // (c?x:I) op y -> c?(x op y):I
      srule(pat(isBinary).src(var("y"), invalidGate()), binaryIntoGateR),               // y op (c?x:I) -> c?(y op x):I
      srule(pat(isBinary).srcEither(invalidPat(), var()), invalidLikeRoot),             // I op y -> I (comparisons too)
      srule(where(invalidPat(), var("a"), var()), invalidLikeA),                        // I?a:b -> I
      srule(where(invalidGate(), var("a"), var("b")), gateOfCondition),                 // (c?x:I)?a:b -> c?(x?a:b):I
      srule(where(var("cond"), invalidPat(), var("val")), invalidToFalseBranch),        // c?I:v -> !c?v:I
      srule(where(var("a"), invalidGate(), var("c")), liftGateFromTrue), // a?(c?x:I):y -> (!a|c)?(a?x:y):I
      srule(where(var("a"), var("b"), invalidGate()), liftGateFromFalse), // a?b:(c?x:I) -> (a|c)?(a?b:x):I
      // ** a gated LOAD/STORE whose gate is always false folds **
      srule(pat(Op::STORE).src(invalidIndex(), var()), noop),                           // store to I -> NOOP
      srule(loadOf(invalidIndex()), loadOfInvalid),                                     // load from I -> alt (or 0)
  };
  return rules;
}

const RuleSet &removeInvalidRules() {
  static const RuleSet rules{
      srule(where(var("cond"), var("x"), invalidPat()).named("w"), gateToZero),         // c?x:I -> c?x:0
      srule(pat(Op::STACK), stackInvalidToZero), // STACK(.., I, ..) -> STACK(.., 0, ..)
  };
  return rules;
}

} // namespace uopc

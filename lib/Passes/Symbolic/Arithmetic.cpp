//===- Arithmetic.cpp - identities, canonical forms and combining terms ---===//
// tinygrad's self folding, zero folding, "combine terms", two-stage ALU folding and constant motion.
// Reassociating rules are limited to integers (they are exact modulo 2^n, not under float rounding), and
// rules that combine constants only apply when the constants fold (a weakint product leaving int64 does
// not), so that no unfoldable constant op is left behind for another rule to move back.
#include "IR/ScalarOps.h"
#include "Passes/Symbolic/Internal.h"

#include <cmath>

namespace uopc::sym {
namespace {

V keepX(S &s) { return s["x"]; }
V keepBase(S &s) { return s["base"]; }
V zeroLikeX(S &s) { return s["x"].k(0); }
V oneIfNonZero(S &s) { return s.nonZero(s["x"]) ? s["x"].k(1) : V(); }
V negX(S &s) { return -s["x"]; }
V andXY(S &s) { return s["x"] & s["y"]; }
V orXY(S &s) { return s["x"] | s["y"]; }
V trueLikeRoot(S &s) { return s.root().kBool(true); }
V twiceX(S &s) { return s["x"].dt() == DType::Bool ? V() : s["x"] * 2; }
V yPlusTwiceX(S &s) { return s["y"] + s["x"] * 2; }

/// The SUB and NEG of the graph format in tinygrad's spelling. On bool, SUB is x!=y and NEG is the
/// identity (python_alu's -True is truthy, and so is the interpreter's). CMPEQ is kept as it is: it is
/// one node where tinygrad's !(x!=y) is two, and later passes match on it (x == _device_num).
V subCanonical(S &s) { return s["x"].dt() == DType::Bool ? s["x"].ne(s["y"]) : s["x"] - s["y"]; }
V negCanonical(S &s) { return s["x"].dt() == DType::Bool ? s["x"] : -s["x"]; }

/// mask keeps every bit at or above k (tinygrad: mask | ((1 << k) - 1) == -1, read in the dtype's width).
bool maskKeepsHighBits(DType dt, int64_t mask, int64_t k) {
  unsigned width = dt == DType::WeakInt ? 64 : dtypeSize(dt) * 8;
  if (k < 0 || k >= int64_t(width)) return false;
  uint64_t low = k == 0 ? 0 : (uint64_t(1) << k) - 1;
  return interp::wrapInt(dt, uint64_t(mask) | low) == interp::wrapInt(dt, ~uint64_t(0));
}

V shrOfMask(S &s) {
  auto mask = intConst(s["mask"]), k = intConst(s["k"]);
  if (!mask || !k || !maskKeepsHighBits(s["x"].dt(), *mask, *k)) return nullptr;
  return s["x"] >> *k;
}

V divOfMask(S &s) {
  auto mask = intConst(s["mask"]), c = intConst(s["c"]);
  if (!mask || !c || *c <= 0 || (*c & (*c - 1)) != 0) return nullptr;
  int64_t k = 0;
  while ((int64_t(1) << k) < *c) ++k;
  return maskKeepsHighBits(s["x"].dt(), *mask, k) ? s["x"] / s["c"] : V();
}

/// tinygrad's simplify_pow on a float x ** constant c: c < 0 -> (1/x) ** -c; c == 0 -> 1; c = n + 0.5 ->
/// x ** n * sqrt(x); an integer c -> y * y (* x when c is odd), y = x ** (c // 2). So x ** 3 is (x * x) * x,
/// as tinygrad computes it, and no libm pow call is left in a kernel (a GPT block's GELU: its matmul
/// epilogue 2x faster). Exponents beyond 2^31 in size (or not finite) stay POW.
/// Beyond tinygrad: c = n + 0.25 -> x ** n * sqrt(sqrt(x)) and c = n + 0.75 -> x ** n * (sqrt(x) *
/// sqrt(sqrt(x))), within 2 ulp of pow and vectorized (local response normalization's x ** 0.75: Inception
/// v1's two LRN kernels on C 433 -> 220 and 1150-1210 -> 460-475 us, 2 threads, where libm's powf left the
/// 55-wide rows' tails scalar: docs/targets.md); x = -inf, the one input where the square roots' NaN is not pow's value, gives pow's +inf.
V powOfConst(S &s) {
  V x = s["x"];
  const Arg *a = s["c"]->arg;
  if (!isFloat(x.dt()) || !a || (a->kind != ArgKind::Float && a->kind != ArgKind::Int)) return nullptr;
  double e = a->kind == ArgKind::Float ? a->f() : double(a->i());
  if (!(std::fabs(e) <= 2147483648.0)) return nullptr;
  auto pw = [&](V b, double v) { return b.alu(Op::POW, x.wrap(s.ctx().constFloat(x.dt(), v))); };
  if (e < 0) return pw(x.alu(Op::RECIPROCAL), -e);
  if (e == 0) return x.k(1);
  if (std::trunc(e - 0.5) + 0.5 == e) return pw(x, e - 0.5) * x.alu(Op::SQRT);
  double q = e - std::trunc(e);
  if (q == 0.25 || q == 0.75) {
    V sq = x.alu(Op::SQRT), r = sq.alu(Op::SQRT);
    if (q == 0.75) r = sq * r;
    auto k = [&](double v) { return x.wrap(s.ctx().constFloat(x.dt(), v)); };
    return x.alu(Op::CMPNE, k(-INFINITY)).where(pw(x, std::trunc(e)) * r, k(INFINITY));
  }
  if (std::trunc(e) != e) return nullptr;
  V y = pw(x, std::floor(e / 2));
  return std::fmod(e, 2) == 1 ? y * y * x : y * y * x.k(1);
}

V boolAndConst(S &s) {
  const Arg *a = s["c"]->arg;
  return a && a->kind == ArgKind::Bool ? (a->b() ? s["x"] : s["c"]) : V();
}

V boolOrConst(S &s) {
  const Arg *a = s["c"]->arg;
  return a && a->kind == ArgKind::Bool ? (a->b() ? s["c"] : s["x"]) : V();
}

/// tinygrad's commutative flip: weakint ADD/MUL/MAX/XOR/AND/OR get their sources in canonical order.
V flipCommutative(S &s) {
  V r = s.root();
  return canonicalCompare(r->src(1), r->src(0)) < 0 ? r.with({r->src(1), r->src(0)}) : V();
}

/// `a op b` on two constants, folded; a null V when it cannot be (then the rule does not apply).
V kf(S &s, Op op, const UOp *a, const UOp *b) { return s.wrap(foldConsts(s.ctx(), op, a, b)); }
V kf(S &s, Op op, const UOp *a, int64_t b) { return kf(s, op, a, mkConst(s.ctx(), a->dtype, b)); }
/// [y +] x * c, or no rewrite when c did not fold.
V mulBy(V x, V c) { return c.u ? x * c : V(); }
V plusMulBy(V y, V x, V c) { return c.u ? y + x * c : V(); }

V combineXX(S &s) { return mulBy(s["x"], kf(s, Op::ADD, s["c0"], s["c1"])); }
V combineYXX(S &s) { return plusMulBy(s["y"], s["x"], kf(s, Op::ADD, s["c0"], s["c1"])); }
V combineXPlusXC(S &s) { return mulBy(s["x"], kf(s, Op::ADD, s["c"], 1)); }
V combineYXPlusXC(S &s) { return plusMulBy(s["y"], s["x"], kf(s, Op::ADD, s["c"], 1)); }
V negSumConst(S &s) {
  V c = kf(s, Op::MUL, s["c"], -1);
  return c.u ? -s["x"] + c : V();
}
V distributeConst(S &s) {
  V yc = kf(s, Op::MUL, s["y"], s["c"]);
  return yc.u ? s["y"] * s["x"] + yc : V();
}

/// (x op c1) op c2 -> x op (c1 op c2) for an associative op.
V twoStage(S &s) {
  V c = kf(s, s.root().op(), s["c1"], s["c2"]);
  return c.u ? s["x"].alu(s.root().op(), c) : V();
}

V moveAddConst(S &s) { return s["y"]->op == Op::CONST ? V() : (s["x"] + s["y"]) + s["c1"]; }
V moveMulConst(S &s) { return s["y"]->op == Op::CONST ? V() : (s["x"] * s["y"]) * s["c1"]; }
V negSum(S &s) { return -s["x"] + -s["y"]; }
V distributeSum(S &s) { return s["x"] * s["c"] + s["y"] * s["c"]; }

} // namespace

const RuleSet &canonicalFormRules() {
  static const RuleSet rules{
      srule(pat(Op::SUB).src(var("x"), var("y")), subCanonical),                        // x-y -> x+y*-1
      srule(pat(Op::NEG).src(var("x")), negCanonical),                                  // -x -> x*-1
  };
  return rules;
}

const RuleSet &arithmeticSimpleRules() {
  static const RuleSet rules{
      // ** self folding **
      srule(var("x") + 0, keepX),                                                       // x+0 -> x
      srule(var("x") * 1, keepX),                                                       // x*1 -> x
      srule(intOrBool("x") ^ 0, keepX),                                                 // x^0 -> x
      srule(floordiv(anyInt("x"), var("x")), oneIfNonZero),                             // x//x -> 1 (x != 0)
      srule(floordiv(anyInt("x"), 1), keepX),                                           // x//1 -> x
      srule(floordiv(anyInt("x"), -1), negX),                                           // x//-1 -> -x
      srule((intOrBool("x") ^ var("y")) ^ var("y"), keepX),                             // (x^y)^y -> x
      srule(floormod(floormod(anyInt(), var("y")).named("base"), var("y")), keepBase),  // (x%y)%y -> x%y
      srule(boolean("x") & cvar("c"), boolAndConst),                                    // x&True -> x, x&False -> False
      srule(boolean("x") | cvar("c"), boolOrConst),                                     // x|True -> True, x|False -> x
      srule(pat({Op::AND, Op::OR, Op::MAX}).src(var("x"), var("x")), keepX),            // x&x, x|x, max(x,x) -> x
      srule(pat(Op::TRUNC).src(intOrBool("x")), keepX),                                 // trunc(int x) -> x
      // ** zero folding **
      srule(floormod(anyInt("x"), var("x")), zeroLikeX),                                // x%x -> 0
      srule(intOrBool("x") ^ var("x"), zeroLikeX),                                      // x^x -> 0
      srule(intOrBool("x") & 0, zeroLikeX),                                             // x&0 -> 0
      srule(anyInt("x") * 0, zeroLikeX), // x*0 -> 0 (not floats: NaN, inf)
      srule((anyInt("x") & cvar("mask")) >> cvar("k"), shrOfMask), // (x&m)>>k -> x>>k, m has bits >= k
      srule(floordiv(anyInt("x") & cvar("mask"), cvar("c")), divOfMask),                // (x&m)//2^k -> x//2^k, same
      // ** pow **
      srule(alu(Op::POW, {var("x"), cvar("c")}), powOfConst),                           // x ** c (tinygrad's simplify_pow)
      // ** bool arithmetic is logic (keeps the numeric rules off it) **
      srule(boolean("x") * boolean("y"), andXY),                                        // x*y -> x&y
      srule(boolean("x") + boolean("y"), orXY),                                         // x+y -> x|y
      srule(max(boolean("x"), boolean("y")), orXY),                                     // max(x,y) -> x|y
  };
  return rules;
}

const RuleSet &commutativeRules() {
  static const Pat weakCommutative = pat({Op::ADD, Op::MUL, Op::MAX, Op::XOR, Op::AND, Op::OR}).dtype(DType::WeakInt);
  static const RuleSet rules{
      srule(weakCommutative.src(var(), var()), flipCommutative), // a op b -> b op a, b sorts first
  };
  return rules;
}

const RuleSet &arithmeticRules() {
  static const RuleSet rules{
      // ** boolean algebra **
      srule(boolean("x") | ne(boolean("x"), cst(1)), trueLikeRoot),                     // x|!x -> True
      // ** combine terms **
      srule(anyInt("x") * cvar("c0") + var("x") * cvar("c1"), combineXX),               // x*c0+x*c1 -> x*(c0+c1)
      srule((var("y") + anyInt("x") * cvar("c0")) + var("x") * cvar("c1"), combineYXX), // (y+x*c0)+x*c1 -> y+x*(c0+c1)
      srule(anyInt("x") + var("x") * cvar("c"), combineXPlusXC),                        // x+x*c -> x*(c+1)
      srule((var("y") + anyInt("x")) + var("x") * cvar("c"), combineYXPlusXC),          // (y+x)+x*c -> y+x*(c+1)
      srule((var("y") + anyInt("x") * cvar("c")) + var("x"), combineYXPlusXC),          // (y+x*c)+x -> y+x*(c+1)
      srule(var("x") + var("x"), twiceX),                                               // x+x -> x*2 (exact on floats)
      srule((var("y") + anyInt("x")) + var("x"), yPlusTwiceX),                          // (y+x)+x -> y+x*2
      srule(cst(-1) * (anyInt("x") + cvar("c")), negSumConst),                          // -(x+c) -> -x+(-c)
      srule(cvar("y") * (weak("x") + cvar("c")), distributeConst),                      // y*(x+c) -> y*x+y*c
      // ** two stage ALU folding **
      srule((anyInt("x") + cvar("c1")) + cvar("c2"), twoStage),                         // (x+c1)+c2 -> x+(c1+c2)
      srule((anyInt("x") * cvar("c1")) * cvar("c2"), twoStage),                         // (x*c1)*c2 -> x*(c1*c2)
      srule((intOrBool("x") & cvar("c1")) & cvar("c2"), twoStage),                      // (x&c1)&c2 -> x&(c1&c2)
      srule((intOrBool("x") | cvar("c1")) | cvar("c2"), twoStage),                      // (x|c1)|c2 -> x|(c1|c2)
      srule(max(max(anyInt("x"), cvar("c1")), cvar("c2")), twoStage), // max(max(x,c1),c2) -> max(x,max(c1,c2))
      // ** constants move to the end **
      srule((anyInt("x") + cvar("c1")) + var("y"), moveAddConst),                       // (x+c1)+y -> (x+y)+c1
      srule((anyInt("x") * cvar("c1")) * var("y"), moveMulConst),                       // (x*c1)*y -> (x*y)*c1
  };
  return rules;
}

const RuleSet &distributeRules() {
  static const RuleSet rules{
      srule(cst(-1) * (anyInt("x") + anyInt("y")), negSum),                             // -(x+y) -> -x+-y
      srule((weak("x") + var("y")) * cvar("c"), distributeSum),                         // (x+y)*c -> x*c+y*c
  };
  return rules;
}

} // namespace uopc::sym

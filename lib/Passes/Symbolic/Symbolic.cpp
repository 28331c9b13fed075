//===- Symbolic.cpp - the composed rule sets and the simplify entry points ===//
// The order of the groups follows tinygrad (symbolic_simple, then symbolic, then sym): the first rule that
// applies to a node wins, so Invalid propagation comes before the folds that could drop a gate.
#include "IR/Records.h"
#include "Passes/Rewrite.h"
#include "Passes/Symbolic/Internal.h"

namespace uopc {

using namespace sym;

const RuleSet &symbolicSimple() {
  static const RuleSet rules = dataInvalidRules()      // Invalid moves towards the LOAD/STORE it gates
                               + canonicalFormRules()  // SUB and NEG in tinygrad's spelling
                               + arithmeticSimpleRules() + divModSimpleRules() + compareSimpleRules() +
                               constFoldRules() + castSimpleRules() + whereSimpleRules();
  return rules;
}

const RuleSet &symbolicRules() {
  static const RuleSet rules = symbolicSimple() + commutativeRules() + arithmeticRules() + whereRules() +
                               compareRules() + castRules() + divModRules();
  return rules;
}

const RuleSet &simplifyValidRules() { return simplifyValidRulesImpl(); }

const RuleSet &symRules() {
  static const RuleSet rules =
      symbolicRules() + simplifyValidRules() + castLateRules() + memoryRules() + distributeRules() +
      sym::reduceCollapseRules();
  return rules;
}

const UOp *makeVariable(Context &ctx, std::string_view name, int64_t vmin, int64_t vmax, DType dt) {
  ParamArg p;
  p.slot = -1;
  p.dtype = dt;
  p.vminVmax = {vmin, vmax};
  p.name = std::string(name);
  const UOp *empty = ctx.make(Op::STACK, DType::Void);
  return ctx.make(Op::PARAM, dt, {empty}, p.encode(ctx));
}

const UOp *makeInvalid(Context &ctx, DType dt) { return ctx.make(Op::CONST, dt, {}, ctx.argInvalid()); }

bool isInvalidConst(const UOp *u) { return u->op == Op::CONST && u->arg && u->arg->kind == ArgKind::Invalid; }

const UOp *simplifyWith(Context &ctx, const UOp *u, const RuleSet &rules, SymbolicCtx *sctx) {
  if (u->op == Op::CONST) return u;
  SymbolicCtx local;
  return graphRewrite(ctx, u, rules, RewriteMode::SourcesFirst, sctx ? sctx : &local);
}

const UOp *simplify(Context &ctx, const UOp *u, SymbolicCtx *sctx) {
  return simplifyWith(ctx, u, symbolicRules(), sctx);
}

const UOp *substituteAndSimplify(Context &ctx, const UOp *root, const std::unordered_map<const UOp *, const UOp *> &map,
                                 SymbolicCtx *sctx) {
  return simplify(ctx, substitute(ctx, root, map), sctx);
}

const UOp *bindVariables(Context &ctx, const UOp *root, const std::unordered_map<std::string, int64_t> &values,
                         SymbolicCtx *sctx) {
  std::unordered_map<const UOp *, const UOp *> map;
  for (const UOp *u : toposort(root)) {
    const UOp *var = u->op == Op::BIND && u->nsrc ? u->src(0) : u;
    if (var->op != Op::PARAM || !var->arg || !isInt(var->dtype)) continue;
    const Arg *name = var->arg->field("name");
    if (!name || name->kind != ArgKind::String || !var->arg->field("vmin_vmax")) continue;
    if (auto it = values.find(std::string(name->str())); it != values.end())
      map[u] = mkConst(ctx, var->dtype, it->second);
  }
  return map.empty() ? root : substituteAndSimplify(ctx, root, map, sctx);
}

} // namespace uopc

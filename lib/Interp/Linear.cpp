//===- Linear.cpp - running a linearized kernel's items (see Linear.h) -------===//
#include "Interp/Linear.h"

#include "IR/Error.h"
#include "IR/Kernel.h"
#include "IR/Range.h"
#include "IR/Records.h"
#include "IR/ScalarOps.h"
#include "Interp/Evaluator.h"

#include <unordered_map>

namespace uopc::interp {
namespace {

struct Slot {
  Word w = 0;
  bool invalid = false;
};

struct Machine {
  const Graph &g;
  const std::vector<Array *> &bufs;
  const std::map<std::string, int64_t> &vars;
  int64_t deviceNum;
  std::span<const UOp *const> items;
  std::vector<size_t> match; ///< RANGE <-> END, IF <-> ENDIF positions
  std::unordered_map<const UOp *, Slot> val;
  struct Acc {
    Word w = 0;
    bool poisoned = false;
  };
  struct Accs {
    std::vector<Acc> slots;         ///< one per lane (IR/Kernel.h's accumulatorLanes), one for none
    std::vector<const UOp *> lanes;
    std::vector<int64_t> strides;
  };
  std::unordered_map<const UOp *, Accs> acc;
  std::unordered_map<const UOp *, std::vector<const UOp *>> lanesOf; ///< per REDUCE, computed once

  /// REDUCE r's accumulator for its lanes' current values.
  Acc &slot(const UOp *r) {
    auto it = acc.find(r);
    if (it == acc.end()) error(r, "used before its REDUCE item");
    Accs &a = it->second;
    int64_t k = 0;
    for (size_t i = 0; i < a.lanes.size(); ++i) {
      auto v = val.find(a.lanes[i]);
      if (v == val.end()) error(r, "a lane of its accumulator is read outside that lane's loop");
      k += asInt(v->second.w) * a.strides[i];
    }
    if (k < 0 || k >= static_cast<int64_t>(a.slots.size())) error(r, "an accumulator lane outside its range");
    return a.slots[static_cast<size_t>(k)];
  }
  Word gidx = 0, lidx = 0; ///< this thread's coordinates (a kernel linearized for a grid)
  std::unordered_map<const UOp *, std::vector<Word>> shared; ///< this block's shared BUFFERs

  /// The words INDEX u reads or writes: a bound buffer's, or the block's shared BUFFER's.
  std::vector<Word> &wordsOf(const UOp *u) {
    const UOp *p = u->src(0);
    if (const UOp *b = blockBufferOf(p)) {
      auto it = shared.find(b);
      if (it == shared.end()) error(u, "a block's shared BUFFER used before its item");
      return it->second;
    }
    if (p->op != Op::PARAM || isScalarParam(p)) error(u, "INDEX of something other than a buffer PARAM or a block's shared BUFFER");
    size_t slot = static_cast<size_t>(ParamArg::slotOf(p->arg));
    if (slot >= bufs.size() || !bufs[slot]) error(u, "INDEX of an unbound slot");
    return bufs[slot]->words;
  }

  [[noreturn]] void error(const UOp *u, const std::string &m) const { fail(g.describe(u) + ": " + m); }

  /// Pairs every RANGE with its END and every IF with its ENDIF.
  void matchScopes() {
    match.assign(items.size(), 0);
    std::vector<size_t> open;
    for (size_t i = 0; i < items.size(); ++i) {
      Op op = items[i]->op;
      if (op == Op::RANGE || op == Op::IF) open.push_back(i);
      if (op == Op::END || op == Op::ENDIF) {
        if (open.empty() || (items[open.back()]->op == Op::RANGE) != (op == Op::END) ||
            (op == Op::END && (items[i]->nsrc != 1 || items[i]->src(0) != items[open.back()])))
          error(items[i], "closes no open " + std::string(op == Op::END ? "loop" : "IF") + " of the LINEAR items");
        match[open.back()] = i, match[i] = open.back();
        open.pop_back();
      }
    }
    if (!open.empty()) error(items[open.back()], "is never closed in the LINEAR items");
  }

  Slot get(const UOp *u) {
    switch (u->op) {
    case Op::CONST: {
      const Arg *a = u->arg;
      switch (a ? a->kind : ArgKind::Invalid) {
      case ArgKind::Invalid: return {0, true};
      case ArgKind::Bool: return {intToWord(u->dtype, a->b() ? 1 : 0), false};
      case ArgKind::Int: return {intToWord(u->dtype, a->i()), false};
      case ArgKind::UInt: return {uintToWord(u->dtype, a->u()), false};
      case ArgKind::Float: return {floatToWord(u->dtype, a->f()), false};
      default: error(u, "unsupported CONST");
      }
    }
    case Op::PARAM: {
      if (!isScalarParam(u)) error(u, "a buffer PARAM must be read through INDEX");
      ParamArg pa = ParamArg::decode(u->arg);
      if (pa.name && *pa.name == "_device_num") return {intToWord(u->dtype, deviceNum), false};
      if (!pa.name || !vars.count(*pa.name)) error(u, "unbound variable");
      return {intToWord(u->dtype, vars.at(*pa.name)), false};
    }
    case Op::REDUCE: {
      const Acc &a = slot(u);
      Word w = isFloatDType(u->dtype) ? fromDouble(roundFloat(u->dtype, asDouble(a.w))) : a.w;
      return {w, a.poisoned};
    }
    default: break;
    }
    auto it = val.find(u);
    if (it == val.end()) error(u, "used before the item that computes it (the LINEAR order is broken)");
    return it->second;
  }

  /// An access by INDEX u: its element number, or nullopt where the index, a gate or the bounds say no.
  std::optional<size_t> access(const UOp *u) {
    const std::vector<Word> &words = wordsOf(u);
    Slot i = get(u->src(1));
    bool ok = !i.invalid;
    for (const UOp *gte : u->src().subspan(2)) {
      Slot c = get(gte);
      ok = ok && !c.invalid && c.w != 0;
    }
    int64_t j = asInt(i.w);
    if (!ok || j < 0 || j >= static_cast<int64_t>(words.size())) return std::nullopt;
    return static_cast<size_t>(j);
  }

  Slot value(const UOp *u) {
    switch (u->op) {
    case Op::SPECIAL: return {u->arg->str() == "gidx0" ? gidx : lidx, false};
    case Op::INDEX: {
      auto j = access(u);
      if (!j) return {0, true};
      return {wordsOf(u)[*j], false};
    }
    case Op::BUFFER: { // a block's shared memory: made once per block (zeros; a GPU's is undefined)
      size_t size = 0;
      if (u->nsrc)
        if (auto n = constBound(u->src(0)); n && *n >= 1 && *n <= 1024) size = static_cast<size_t>(*n);
      if (!blockBufferOf(u) || !size) error(u, "expected a block's shared BUFFER of 1..1024 elements");
      if (!shared.count(u)) shared[u].assign(size, 0);
      return {0, false};
    }
    case Op::LOAD: {
      Slot v = get(u->src(0));
      if (v.invalid) return u->nsrc > 1 ? get(u->src(1)) : Slot{0, true};
      return v;
    }
    case Op::WHERE: {
      Slot c = get(u->src(0));
      if (c.invalid) return {0, true};
      return get(u->src(c.w ? 1 : 2));
    }
    case Op::CUSTOM: case Op::CUSTOMI:
      error(u, "the interpreter does not support " + std::string(opName(u->op)) + " nodes (their arg is C code)");
    default: break;
    }
    if (!isElementwise(u->op) || u->nsrc == 0 || u->nsrc > 3) error(u, "the interpreter cannot run this item");
    Word ws[3] = {0, 0, 0};
    for (size_t k = 0; k < u->nsrc; ++k) {
      Slot s = get(u->src(k));
      if (s.invalid) return {0, true};
      ws[k] = s.w;
    }
    DType in = u->src(0)->dtype;
    if (u->op == Op::CAST) return {castWord(in, u->dtype, ws[0]), false};
    if (u->op == Op::BITCAST) return {bitcastWord(in, u->dtype, ws[0]), false};
    if (!aluSupported(u->op, in)) error(u, "op not defined on " + std::string(dtypeName(in)));
    return {aluWord(u->op, u->dtype, in, ws), false};
  }

  void store(const UOp *st) {
    const UOp *ix = st->src(0);
    if (ix->op != Op::INDEX) error(st, "expected STORE(INDEX(PARAM, i), value)");
    Slot v = get(st->src(1));
    Slot i = get(ix->src(1));
    if (v.invalid || i.invalid) return;
    for (const UOp *gte : ix->src().subspan(2)) {
      Slot c = get(gte);
      if (c.invalid || c.w == 0) return;
    }
    std::vector<Word> &words = wordsOf(ix);
    int64_t j = asInt(i.w);
    if (j < 0 || j >= static_cast<int64_t>(words.size()))
      error(st, "store index " + std::to_string(j) + " outside a buffer of " + std::to_string(words.size()));
    words[static_cast<size_t>(j)] = v.w;
  }

  /// Runs items [from, to).
  void run(size_t from, size_t to) {
    struct Loop {
      size_t at;
      int64_t i, n;
    };
    std::vector<Loop> loops;
    for (size_t pc = from; pc < to; ++pc) {
      const UOp *u = items[pc];
      switch (u->op) {
      case Op::RANGE: {
        Slot n = get(u->src(0));
        if (n.invalid) error(u, "a loop of Invalid size");
        if (asInt(n.w) <= 0) {
          pc = match[pc];
          break;
        }
        loops.push_back({pc, 0, asInt(n.w)});
        val[u] = {intToWord(u->dtype, 0), false};
        break;
      }
      case Op::END: {
        Loop &l = loops.back();
        if (++l.i < l.n) {
          val[items[l.at]] = {intToWord(items[l.at]->dtype, l.i), false};
          pc = l.at;
        } else {
          loops.pop_back();
        }
        break;
      }
      case Op::IF: {
        Slot c = get(u->src(0));
        if (c.invalid || c.w == 0) pc = match[pc];
        break;
      }
      case Op::ENDIF: break;
      case Op::PREFETCH: break; // (a hint to the cache: nothing to compute)
      case Op::BARRIER: error(u, "a BARRIER inside a loop or an IF, or in a kernel not linearized for a grid");
      case Op::REDUCE: {
        Op op = u->arg->elems()[0]->op();
        auto l = lanesOf.find(u);
        if (l == lanesOf.end()) l = lanesOf.emplace(u, accumulatorLanes(u)).first;
        Accs a;
        a.lanes = l->second;
        int64_t n = laneCount(a.lanes), stride = n;
        for (const UOp *r : a.lanes) a.strides.push_back(stride /= static_cast<int64_t>(*constBound(r->src(0))));
        a.slots.assign(static_cast<size_t>(n), Acc{reduceIdentity(op, u->dtype), false});
        acc[u] = std::move(a);
        break;
      }
      case Op::STORE:
        if (u->src(0)->op == Op::REDUCE) {
          const UOp *r = u->src(0);
          if (!acc.count(r)) error(u, "an accumulation before its REDUCE item");
          Acc &a = slot(r);
          Slot x = get(u->src(1));
          if (x.invalid) a.poisoned = true;
          else a.w = reduceStep(r->arg->elems()[0]->op(), r->dtype, a.w, x.w);
        } else {
          store(u);
        }
        break;
      default:
        if ((u->op == Op::CUSTOM || u->op == Op::CUSTOMI) && u->dtype == DType::Void)
          error(u, "the interpreter does not support CUSTOM statements (their arg is C code)");
        val[u] = value(u);
        break;
      }
    }
  }
};

} // namespace

void runLinearKernel(const Graph &g, const UOp *linear, const std::vector<Array *> &bufs,
                     const std::map<std::string, int64_t> &vars, int64_t deviceNum) {
  Machine m{g, bufs, vars, deviceNum, linearItems(linear), {}, {}, {}, {}, 0, 0, {}};
  m.matchScopes();
  // a kernel linearized for a grid: every thread of its launch, last to first (as --grid-on-host)
  auto launch = linearLaunch(linear);
  if (!launch) {
    m.run(0, m.items.size());
    return;
  }
  auto [blocks, threads] = *launch;
  if (blocks < 1 || threads < 1 || blocks > (int64_t(1) << 31) / threads) fail("a kernel's launch is not a grid of 1..2^31 threads");
  // the stretches between the BARRIERs at the top of the items: each runs on every thread of a block
  // before the next begins (a GPU's threads meet at each barrier)
  std::vector<size_t> cuts{0};
  size_t depth = 0;
  for (size_t i = 0; i < m.items.size(); ++i) {
    Op op = m.items[i]->op;
    if (op == Op::RANGE || op == Op::IF) ++depth;
    if (op == Op::END || op == Op::ENDIF) --depth;
    if (op == Op::BARRIER) {
      if (depth) m.error(m.items[i], "a BARRIER inside a loop or an IF (every thread must reach it)");
      cuts.push_back(i + 1);
    }
  }
  cuts.push_back(m.items.size());
  for (int64_t blk = blocks; blk-- > 0;) {
    m.shared.clear();
    for (size_t k = 0; k + 1 < cuts.size(); ++k)
      for (int64_t l = threads; l-- > 0;) {
        m.gidx = static_cast<Word>(blk), m.lidx = static_cast<Word>(l);
        m.val.clear();
        m.acc.clear();
        m.run(cuts[k], cuts[k + 1] - (k + 2 < cuts.size() ? 1 : 0));
      }
  }
}

} // namespace uopc::interp

//===- Linearize.cpp - the `linearize` pass: the order a kernel is rendered in ===//
// Runs last, on lower-index's output. Every kernel CALL(SINK[KernelInfo], bufs...) becomes
// CALL(LINEAR[KernelInfo](SINK, items...), bufs...): the SINK as it was, then one ordered list that says
// where every value is computed and which loops run. The targets render the items in order, one loop
// over the list each; they place nothing, choose no loop and analyze no range.
//
// The items:
//   RANGE r            opens `for (r = 0; r < r.src0; r++)` (its size is computed before it)
//   END(r)             closes the innermost open loop, r's
//   IF(cond), ENDIF(IF) run the items between them only where cond holds (a GPU thread guard)
//   SPECIAL            a thread coordinate: gidx0 (the block, of src0 blocks) and lidx0 (the thread in it)
//   REDUCE u           defines u's accumulator, set to its op's identity; with lanes (the UPCAST ranges
//                      u depends on, IR/Kernel.h's accumulatorLanes) one accumulator per lane
//   STORE(u, x)        with u a REDUCE: acc(u) = acc(u) <op> x (invalid x poisons the result); with
//                      lanes, the accumulator of the lanes' current values
//   STORE(INDEX(buf, i, gates...), v)  writes v where i, the gates and v are valid
//   BUFFER (addrspace LOCAL)  a GPU block's shared memory (group-reduce's), at the top of the items
//   BARRIER            every thread of the block has done the items before it (at the top of the thread,
//                      after the stores to shared memory it waits for; GPU grids only)
//   PREFETCH(INDEX(buf, i))  a hint that buf[i] is read soon (CPU: a register tile's weight stream or input,
//                      at the top of its reduction loop: Linearize/Prefetch.h); i may lie past the buffer
//   CUSTOM of dtype void  a statement (C only)
//   any other node     its value, computed here from items before it (a REDUCE's value is its
//                      accumulator once its loops have closed)
// CONST and PARAM nodes are not items: they are spelled where they are used. A node may appear more
// than once (a value needed again in a later loop over the same RANGE is computed again there); every
// use of a value follows a definition of it in an enclosing open loop, so "the latest definition" is
// always the one a use means.
//
// Placement (what the C and LLVM emitters each decided before): a node is computed in the innermost open
// loop among the ranges it depends on, so a value that does not depend on an inner loop is hoisted out of
// it (and, CPU, a costly value of a store that moves with inner lanes only, outside an outer lane loop, first
// becomes an accumulator with those lanes: Linearize/Lanes.h), and a REDUCE that does not depend on a store
// loop runs once per outer iteration; a REDUCE gets its accumulator and its own loops at its level (CPU: a
// reduction range cut at a concatenation's seams, one loop per piece updating the one accumulator). A REDUCE with lanes (UPCAST ranges, which the optimizer
// puts innermost) gets them inside its own loops: for k { for lane { acc[lane] += x } }, so each value
// that does not move with a lane (a matmul's A[i, k] across j's lanes) is loaded once for all of them. A store runs in its END's ranges, then any other range its
// operands use, by range number; a store over the same loops (and GPU threads) as the store before it
// runs in that store's loop nest, unless a store reads a buffer another writes (storesMayRace): outputs
// computed together (kernel-split) compute what they share once per element. On a CPU, a store whose outer
// loops are the store before's outer loops runs inside those (the pieces of a split inner loop, one after the
// other for each iteration of the outer one).
//
// GPU targets (PassTarget::gpuGrid: ptx, llvm --grid-on-host, or linearize{grid=1}): every item runs on
// each thread of a launch. Per store, its END's GLOBAL ranges (which the gpu-map pass chose: see
// GpuMap.cpp) come from the global thread id instead of loops (outermost first): they are replaced by
// gid / stride % size, gid = gidx0 * local + lidx0; its other ranges stay loops inside the thread. A store
// that needs fewer threads than the launch runs under IF(gid < its threads). A kernel with no GLOBAL
// range runs on one thread. The launch is recorded in the IR: gidx0's size is the number of blocks, lidx0's
// the threads per block. A kernel with block ranges (gpu-map's LOCAL and GROUP_REDUCE, one size L) runs one
// block of L threads per element of its GLOBAL ranges: those come from gidx0, the block ranges from lidx0;
// its barriers are placed first (see barriers()).
// Precondition: codegen (and lower-index) ran. Copies and the top-level graph are left as they are.
#include "IR/Error.h"
#include "IR/Kernel.h"
#include "IR/Range.h"
#include "IR/Records.h"
#include "IR/Work.h"
#include "Passes/Linearize/Lanes.h"
#include "Passes/Linearize/Prefetch.h"
#include "Passes/Passes.h"
#include "Passes/Rewrite.h"
#include "Passes/Symbolic/Symbolic.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace uopc {
namespace {

[[noreturn]] void failAt(const UOp *u, const std::string &msg) {
  fail("linearize: UOp #" + std::to_string(u->index) + " (" + std::string(opName(u->op)) + "): " + msg);
}

using linearize::isScalarParam;

/// A scope of the output: the function, a loop (key: its RANGE) or a GPU thread (key: gidx0, with an
/// optional guard).
struct Block {
  const UOp *key = nullptr;
  const UOp *cond = nullptr;
  struct Item {
    const UOp *node = nullptr;
    std::unique_ptr<Block> child;
  };
  std::vector<Item> items;
  /// The child being filled (new items go before it; null: at the end). A pointer, not an index: items
  /// placed at an outer level while inner loops are open go before those loops and shift them.
  Block *openChild = nullptr;
  std::unordered_set<const UOp *> memo;

  /// Where new items go: before the open child, else at the end.
  size_t openIndex() const {
    if (!openChild) return items.size();
    for (size_t i = items.size(); i-- > 0;)
      if (items[i].child.get() == openChild) return i;
    return items.size();
  }
  void add(const UOp *u) {
    Item it{u, nullptr};
    items.insert(items.begin() + static_cast<long>(openIndex()), std::move(it));
  }
};

struct Linearizer {
  Context &c;
  bool gpu = false;
  int64_t maxBlock = 256;
  std::unordered_map<const UOp *, std::vector<const UOp *>> freeRanges; // sorted by pointer; SPECIALs too
  std::vector<Block *> stack;
  std::vector<Block *> openSaved; ///< per open scope, its parent's open child before it

  // GPU: the launch and its thread coordinates
  const UOp *gidx = nullptr, *lidx = nullptr, *gid = nullptr;
  int64_t launchThreads = 1;
  int64_t gidCount = 1; ///< the values gid takes: every thread's, or (blocks) the block's
  /// A kernel with block ranges (gpu-map's blocks): L, the threads of a block (0: none), and what every
  /// store's GLOBAL and block ranges become (the same for every store: gidx and lidx)
  int64_t block = 0;
  std::unordered_map<const UOp *, const UOp *> blockSub;

  explicit Linearizer(Context &ctx) : c(ctx) {}

  /// The ranges (and thread coordinates) each node under root depends on, for nodes not seen yet.
  void analyze(const UOp *root) {
    for (const UOp *u : toposort(root)) {
      if (freeRanges.count(u)) continue;
      std::vector<const UOp *> rs;
      if (u->op == Op::RANGE || u->op == Op::SPECIAL) rs.push_back(u);
      for (const UOp *s : u->src()) {
        auto &sr = freeRanges[s];
        rs.insert(rs.end(), sr.begin(), sr.end());
      }
      if (u->op == Op::REDUCE || u->op == Op::END)
        for (const UOp *r : u->src().subspan(1)) rs.erase(std::remove(rs.begin(), rs.end(), r), rs.end());
      std::sort(rs.begin(), rs.end());
      rs.erase(std::unique(rs.begin(), rs.end()), rs.end());
      freeRanges[u] = std::move(rs);
    }
  }

  // ---- scopes -------------------------------------------------------------------------------------
  /// The innermost open scope among the ranges u depends on, less `except` (a REDUCE's lanes).
  size_t targetOf(const UOp *u, std::span<const UOp *const> except = {}) {
    const auto &rs = freeRanges.at(u);
    for (size_t j = stack.size(); j-- > 1;)
      if (std::binary_search(rs.begin(), rs.end(), stack[j]->key) &&
          std::find(except.begin(), except.end(), stack[j]->key) == except.end())
        return j;
    return 0;
  }
  void openScope(const UOp *key, const UOp *cond) {
    Block *b = stack.back();
    auto child = std::make_unique<Block>();
    child->key = key;
    child->cond = cond;
    if (key->op == Op::RANGE) child->memo.insert(key);
    Block *ch = child.get();
    size_t pos = b->openIndex();
    b->items.insert(b->items.begin() + static_cast<long>(pos), Block::Item{nullptr, std::move(child)});
    openSaved.push_back(b->openChild);
    b->openChild = ch;
    stack.push_back(ch);
  }
  void openLoop(const UOp *r) {
    if (r->op != Op::RANGE) failAt(r, "a loop over a non-RANGE");
    emit(r->src(0));
    openScope(r, nullptr);
  }
  void closeScope() {
    stack.pop_back();
    Block *b = stack.back();
    b->openChild = openSaved.back();
    openSaved.pop_back();
  }

  // ---- values -------------------------------------------------------------------------------------
  bool placed(const UOp *u) {
    if (u->op == Op::CONST || u->op == Op::PARAM) return true; // spelled where used
    for (size_t j = stack.size(); j-- > 0;)
      if (stack[j]->memo.count(u)) return true;
    return false;
  }
  /// The sources computed before u (REDUCE: none, its body goes inside its own loops; INDEX: not the buffer).
  static std::span<const UOp *const> operands(const UOp *u) {
    switch (u->op) {
    case Op::REDUCE: case Op::CONST: case Op::PARAM: case Op::RANGE: case Op::SPECIAL: return {};
    case Op::INDEX: return u->src().subspan(1);
    default: return u->src();
    }
  }
  /// Places u, its operands first, in an explicit post-order walk (no recursion on graph depth).
  void emit(const UOp *u) {
    if (placed(u)) return;
    std::vector<std::pair<const UOp *, size_t>> work{{u, 0}};
    std::unordered_set<const UOp *> onPath{u};
    while (!work.empty()) {
      auto &[x, next] = work.back();
      auto ops = operands(x);
      if (next < ops.size()) {
        const UOp *s = ops[next++];
        if (!placed(s) && onPath.insert(s).second) work.push_back({s, 0});
        continue;
      }
      const UOp *done = x;
      work.pop_back();
      onPath.erase(done);
      if (!placed(done)) place(done);
    }
  }
  void place(const UOp *u) {
    if (u->op == Op::RANGE) failAt(u, "a RANGE used outside its loop");
    if (u->op == Op::STORE || u->op == Op::END || u->op == Op::SINK) failAt(u, "a statement used as a value");
    if (u->op == Op::INDEX && !blockBufferOf(u->src(0)) && (u->src(0)->op != Op::PARAM || isScalarParam(u->src(0))))
      failAt(u, "INDEX of something other than a buffer PARAM or a block's shared BUFFER");
    if (u->op == Op::BARRIER || u->op == Op::AFTER || u->op == Op::BUFFER)
      failAt(u, "a barrier or shared buffer used as a value (only an INDEX of it reads one)");
    if (u->op != Op::REDUCE) {
      size_t t = targetOf(u);
      stack[t]->add(u);
      stack[t]->memo.insert(u);
      return;
    }
    // the accumulator at u's level, less its lanes (one slot per lane: IR/Kernel.h), then its loops
    // there (before any loop open at that level), then the lanes inside them: a register tile
    std::vector<const UOp *> lanes = accumulatorLanes(u);
    size_t t = targetOf(u, lanes);
    for (size_t j = 1; j <= t; ++j)
      if (std::find(lanes.begin(), lanes.end(), stack[j]->key) != lanes.end())
        failAt(u, "an accumulator lane (UPCAST range #" + std::to_string(stack[j]->key->index) +
                      ") is a loop around a range the REDUCE depends on: lanes must be the innermost loops");
    laneCount(lanes); // (refuses a lane of non-constant size)
    stack[t]->add(u);
    std::vector<Block *> tail(stack.begin() + static_cast<long>(t) + 1, stack.end());
    std::vector<Block *> tailSaved(openSaved.begin() + static_cast<long>(t), openSaved.end());
    stack.resize(t + 1);
    openSaved.resize(t);
    auto ranges = u->src().subspan(1);
    // the REDUCEs whose loops update u's accumulator, in order: u itself, or (CPU) one per piece of a reduction
    // range cut at a concatenation's seams (seamPieces), the ranges before the cut one opened once around them
    size_t cutAt = 0;
    std::vector<const UOp *> pieces{u};
    for (size_t k = 0; k < ranges.size() && !gpu && splitSeams && pieces.size() == 1; ++k)
      if (std::vector<int64_t> cuts = linearize::seamsOf(c, u->src(0), ranges[k], freeRanges); !cuts.empty())
        cutAt = k, pieces = seamPieces(u, k, cuts);
    for (size_t k = 0; k < cutAt; ++k) {
      openLoop(ranges[k]);
      if (k == 0 && !gpu) prefetch(u, lanes);
    }
    for (const UOp *p : pieces) {
      auto own = p->src().subspan(1);
      for (size_t k = cutAt; k < own.size(); ++k) {
        openLoop(own[k]);
        if (k == 0 && !gpu) prefetch(p, lanes);
      }
      for (const UOp *r : lanes) openLoop(r);
      emit(p->src(0));
      stack.back()->add(c.make(Op::STORE, DType::Void, {u, p->src(0)}));
      for (size_t k = cutAt; k < own.size() + lanes.size(); ++k) closeScope();
    }
    for (size_t k = 0; k < cutAt; ++k) closeScope();
    stack.insert(stack.end(), tail.begin(), tail.end());
    openSaved.insert(openSaved.end(), tailSaved.begin(), tailSaved.end());
    stack[t]->memo.insert(u);
  }

  /// REDUCE u's pieces at its reduction range k's seams `cuts` (linearize::seamsOf): per piece [lo, hi) a REDUCE
  /// like u over a range of hi - lo iterations in range k's place, its body u's with that range at lo + it,
  /// simplified (the select of the piece's part folded to one read).
  std::vector<const UOp *> seamPieces(const UOp *u, size_t k, std::vector<int64_t> cuts) {
    const UOp *r = u->src(1 + k);
    cuts.insert(cuts.begin(), 0);
    cuts.push_back(static_cast<int64_t>(*constBound(r->src(0))));
    SymbolicCtx sc;
    std::vector<const UOp *> pieces;
    for (size_t p = 0; p + 1 < cuts.size(); ++p) {
      int64_t lo = cuts[p], hi = cuts[p + 1];
      const UOp *piece = rangeLike(c, r, hi - lo, nextRange++, std::nullopt);
      const UOp *at = lo ? c.make(Op::ADD, r->dtype, {piece, c.constInt(r->dtype, lo)}) : piece;
      std::vector<const UOp *> src(u->src().begin(), u->src().end());
      src[0] = simplifyWith(c, substitute(c, u->src(0), {{r, at}}), symRules(), &sc);
      src[1 + k] = piece;
      pieces.push_back(c.make(Op::REDUCE, u->dtype, src, u->arg, u->tag));
      analyze(pieces.back());
    }
    return pieces;
  }

  // ---- statements ---------------------------------------------------------------------------------
  /// The loops a statement runs in: its END's ranges (less those mapped to threads), then every other
  /// range its operands use, by range number.
  std::vector<const UOp *> statementLoops(const UOp *e, std::span<const UOp *const> ops,
                                          const std::vector<const UOp *> &mapped) {
    std::vector<const UOp *> loops;
    if (e->op == Op::END)
      for (const UOp *r : e->src().subspan(1)) {
        if (r->op != Op::RANGE) failAt(e, "END of a non-RANGE");
        if (std::find(mapped.begin(), mapped.end(), r) == mapped.end() && !isBlockRange(r)) loops.push_back(r);
      }
    std::vector<const UOp *> extra;
    for (const UOp *x : ops)
      for (const UOp *r : freeRanges.at(x))
        if (r->op == Op::RANGE && std::find(loops.begin(), loops.end(), r) == loops.end() &&
            std::find(extra.begin(), extra.end(), r) == extra.end())
          extra.push_back(r);
    std::sort(extra.begin(), extra.end(), [](const UOp *a, const UOp *b) { return rangeNumber(a) < rangeNumber(b); });
    loops.insert(loops.end(), extra.begin(), extra.end());
    return loops;
  }

  struct StorePlan {
    std::vector<const UOp *> mapped; ///< END ranges from the thread id, outermost first
    int64_t threads = 1;
  };

  /// The values of `mapped` ranges (outermost first) from thread id `id`, innermost fastest: id / stride %
  /// size, each in its range's own dtype (a weakint range stays weakint: its users' dtypes must not change).
  void fromThreadId(const std::vector<const UOp *> &mapped, const UOp *id, std::unordered_map<const UOp *, const UOp *> &sub) {
    const UOp *rest = id;
    for (size_t k = mapped.size(); k-- > 0;) {
      const UOp *r = mapped[k];
      const UOp *n = c.constInt(id->dtype, static_cast<int64_t>(*constBound(r->src(0))));
      const UOp *v = k == 0 ? rest : c.make(Op::CMOD, id->dtype, {rest, n});
      if (k) rest = c.make(Op::CDIV, id->dtype, {rest, n});
      sub[r] = r->dtype == id->dtype ? v : c.make(Op::CAST, r->dtype, {v});
    }
  }

  void statement(const UOp *e, const StorePlan &plan) {
    const UOp *st = e->op == Op::END ? e->src(0) : e;
    if ((st->op == Op::CUSTOM || st->op == Op::CUSTOMI) && st->dtype == DType::Void) { // (a void CUSTOMI: the C target refuses it)
      closeShared();
      std::vector<const UOp *> loops = statementLoops(e, st->src(), {});
      for (const UOp *r : loops) openLoop(r);
      for (const UOp *x : st->src()) emit(x);
      stack.back()->add(st);
      for (size_t k = 0; k < loops.size(); ++k) closeScope();
      return;
    }
    if (st->op != Op::STORE || st->src(0)->op != Op::INDEX || st->src(0)->src(0)->op != Op::PARAM)
      failAt(e, "expected END(STORE(INDEX(PARAM, i), value), ranges...)");
    const UOp *guard = nullptr;
    if (gpu) {
      // the mapped ranges from gid (blocks: from gidx and lidx, the same for every store)
      std::unordered_map<const UOp *, const UOp *> sub = blockSub;
      if (!block) fromThreadId(plan.mapped, gid, sub);
      if (!sub.empty()) st = substitute(c, st, sub);
      analyze(st);
      if (plan.threads < gidCount) {
        guard = c.make(Op::CMPLT, DType::Bool, {gid, c.constInt(gid->dtype, plan.threads)});
        analyze(guard);
      }
    }
    const UOp *ix = st->src(0);
    const UOp *ops[] = {ix, st->src(1)};
    std::vector<const UOp *> loops = statementLoops(e, ops, plan.mapped);
    // a store over the same loops (and GPU threads) as the one before runs in its loop nest: a kernel
    // computing several outputs together computes what they share once per element
    // On a CPU, a store whose outer loops are the last one's outermost loops runs in those too, its other loops
    // inside them: the pieces of a loop split inside the thread loop (an interior and its borders, a tile's
    // rest rows) run one after the other for each channel tile, so that the tile's weights come from memory
    // once for all of them, not once a piece (no store reads what another writes: the order is free)
    size_t common = 0;
    if (!gpu && shareLoops && shared && shared->guard == guard && shared->mapped == plan.mapped)
      while (common < shared->loops.size() && common < loops.size() && shared->loops[common] == loops[common]) ++common;
    if (common > 0 && (common < shared->loops.size() || common < loops.size())) {
      for (size_t k = common; k < shared->loops.size(); ++k) closeScope();
      for (size_t k = common; k < loops.size(); ++k) openLoop(loops[k]);
      shared->loops = loops;
    } else if (!shareLoops || !shared || shared->loops != loops || shared->guard != guard || shared->mapped != plan.mapped) {
      closeShared();
      if (gpu) {
        if (guard) emit(guard);
        openScope(gidx, guard);
      }
      for (const UOp *r : loops) openLoop(r);
      shared = SharedNest{loops, guard, plan.mapped};
    }
    for (const UOp *x : ix->src().subspan(1)) emit(x);
    emit(st->src(1));
    stack.back()->add(st);
  }

  /// The loop nest (and GPU thread scope) the last store ran in, left open for the next store.
  struct SharedNest {
    std::vector<const UOp *> loops;
    const UOp *guard = nullptr;
    std::vector<const UOp *> mapped;
  };
  std::optional<SharedNest> shared;
  bool shareLoops = false; ///< no store reads what another writes (storesMayRace): stores may share a loop nest
  void closeShared() {
    if (!shared) return;
    for (size_t k = 0; k < shared->loops.size(); ++k) closeScope();
    if (gpu) closeScope();
    shared.reset();
  }

  /// Each store whose outermost loop has few iterations (under 16: a convolution's blocks of 64 of 192
  /// output channels, 3), whose next loop is a plain loop of constant size the store moves along and whose
  /// reductions all run inside that loop (a register tile's, not a layernorm's row statistics): the two
  /// become one loop over their product (a fresh range number), the outer counter its quotient, the inner
  /// its remainder, so that the threads share out many iterations, not few (3 over 2 threads: one third of
  /// the time one thread idles; Inception v1 and v2 had 13-15% of their work in such kernels). Each piece of
  /// a split kernel on its own (threadLoop lays them end to end). Other stores unchanged.
  /// `single`: loops of one iteration too (a pad's copy whose channels are all one upcast: SqueezeNet's 16 of
  /// 16, 1 x 57 x 57), for a kernel the threads could not split otherwise.
  const UOp *fuseShortOuterLoops(const UOp *body, bool single = false) {
    auto plain = [](const UOp *u) {
      return u->op == Op::RANGE && u->nsrc == 1 && u->arg && u->arg->kind == ArgKind::Tuple && u->arg->count >= 2 &&
             u->arg->elems()[0]->kind == ArgKind::Int && u->arg->elems()[1]->kind == ArgKind::AxisType &&
             u->arg->elems()[1]->axisType() == AxisType::LOOP;
    };
    int64_t next = 0;
    for (const UOp *u : toposort(body))
      if (u->op == Op::RANGE && u->arg && u->arg->kind == ArgKind::Tuple && u->arg->count >= 1 &&
          u->arg->elems()[0]->kind == ArgKind::Int)
        next = std::max(next, u->arg->elems()[0]->i() + 1);
    std::vector<const UOp *> ends;
    std::map<std::pair<const UOp *, const UOp *>, const UOp *> fusedOf; // (outer, next) -> the fused loop
    bool changed = false;
    for (const UOp *e : body->src()) {
      ends.push_back(e);
      // (again while the fused loop is still short: a group's 2 blocks of 3 channel tiles, then the rows)
      while (ends.back()->op == Op::END && ends.back()->nsrc >= 3) {
        const UOp *cur = ends.back(), *r = cur->src(1), *r2 = cur->src(2), *st = cur->src(0);
        if (!plain(r) || !plain(r2) || st->op != Op::STORE || st->src(0)->op != Op::INDEX) break;
        auto n = constBound(r->src(0)), m = constBound(r2->src(0));
        if (!n || !m || *n < (single ? 1 : 2) || *n >= 16 || *m < 2 || Bound(*n) * *m > INT32_MAX) break;
        analyze(st); // (a store fused once already is new)
        const std::vector<const UOp *> &moves = freeRanges.at(st->src(0)->src(1));
        if ((*n > 1 && !std::binary_search(moves.begin(), moves.end(), r)) || !std::binary_search(moves.begin(), moves.end(), r2))
          break;
        // a register tile's store: its reductions run inside the next loop (one computed per row of a
        // layernorm and read along its columns would run again for every column); or a store with no
        // reduction (a pad's or a concatenation's copy: nothing is computed again)
        bool tile = false, inside = true, reduces = false;
        for (const UOp *u : toposort(st->src(1)))
          if (u->op == Op::REDUCE) {
            const auto &fr = freeRanges.at(u);
            tile = reduces = true;
            inside = inside && std::binary_search(fr.begin(), fr.end(), r2);
          }
        if ((!tile && reduces) || !inside) break;
        DType dt = r->dtype;
        const UOp *&f = fusedOf[{r, r2}];
        if (!f) {
          std::vector<const Arg *> elems(r->arg->elems().begin(), r->arg->elems().end());
          elems[0] = c.argInt(next++);
          f = c.make(Op::RANGE, dt, {c.constInt(dt, static_cast<int64_t>(*n * *m))}, c.argTuple(elems), r->tag);
        }
        const UOp *mm = c.constInt(dt, static_cast<int64_t>(*m));
        const UOp *fused = substitute(c, st, {{r, c.make(Op::CDIV, dt, {f, mm})}, {r2, c.make(Op::CMOD, dt, {f, mm})}});
        std::vector<const UOp *> src{fused, f};
        src.insert(src.end(), cur->src().begin() + 3, cur->src().end());
        ends.back() = c.make(Op::END, cur->dtype, src, cur->arg, cur->tag);
        changed = true;
      }
    }
    if (!changed) return body;
    const UOp *out = c.make(body->op, body->dtype, ends, body->arg, body->tag);
    analyze(out);
    return out;
  }

  /// CPU threads: the kernel's outermost loop, split across threads by the runner, when every store of the
  /// kernel runs in the same constant outer range and its index depends on it, nothing races, and the work is at least
  /// minWork (ops + loads + stores). That RANGE becomes AxisType THREAD (its iterations [lo, hi) are the function's
  /// last two arguments): each output element is computed by the same code in the same order whichever
  /// thread runs it, so results are bitwise the same for every thread count.
  /// A kernel whose stores run in loops of their own (the optimizer's pieces of a split outermost loop: a
  /// concatenation's parts) gets one THREAD loop per piece, laid end to end (threadOffset): the runner
  /// splits their total, each piece running its share of it.
  const UOp *threadLoop(const UOp *body, int64_t minWork) {
    // (short outer loops fused only in a kernel the threads split: fuseShortOuterLoops)
    const UOp *split = threadLoopOf(body, minWork);
    if (split == body) { // (an outer loop of one iteration: the next one split instead, where that splits)
      const UOp *fused = fuseShortOuterLoops(body, true);
      if (fused == body) return body;
      const UOp *fusedSplit = threadLoopOf(fused, minWork);
      return fusedSplit == fused ? body : fusedSplit;
    }
    const UOp *fused = fuseShortOuterLoops(body);
    return fused == body ? split : threadLoopOf(fused, minWork);
  }

  const UOp *threadLoopOf(const UOp *body, int64_t minWork) {
    if (body->nsrc < 1) return body;
    std::vector<const UOp *> outer; // each store's outermost loop, distinct, in order
    int64_t total = 0;
    for (const UOp *e : body->src()) {
      if (e->op != Op::END || e->nsrc < 2) return body;
      const UOp *r = e->src(1);
      if (r->op != Op::RANGE || !r->arg || r->arg->kind != ArgKind::Tuple || r->arg->count < 2) return body;
      auto n = constBound(r->src(0));
      if (!n || *n < 1 || *n > INT32_MAX) return body;
      // the store runs in r's loop, its outermost, and writes where r says (a loop of one iteration, a
      // border piece's, runs on one thread whatever it writes)
      const UOp *st = e->src(0);
      if (st->op != Op::STORE || st->src(0)->op != Op::INDEX || st->src(0)->src(0)->op != Op::PARAM) return body;
      const auto &indexRanges = freeRanges.at(st->src(0)->src(1));
      if (*n > 1 && !std::binary_search(indexRanges.begin(), indexRanges.end(), r)) return body;
      if (std::find(outer.begin(), outer.end(), r) == outer.end()) {
        outer.push_back(r);
        total += static_cast<int64_t>(*n);
      }
    }
    if (total < 2 || total > INT32_MAX) return body;
    if (storesMayRace(body)) return body;
    // the work, store by store (pieces of a split loop share their reduction ranges, and the work model
    // places a shared range once: in the whole kernel every piece's reductions would count as the first's);
    // per piece too: the work of one iteration of its loop (its stores' work over its trip count) goes in its
    // THREAD range, so that the runner gives each thread a like share of the work, not of the iterations
    // (threadWork: a channel cut's 31 tiles of 32 channels and its 104 rest rows of one channel laid end to
    // end, split by iterations, left the second thread 0.8% of the work)
    int64_t work = 0;
    std::map<const UOp *, int64_t> pieceWork;
    for (const UOp *e : body->src()) {
      KernelWork w = kernelWork(c.make(Op::SINK, body->dtype, {e}));
      auto ops = w.ops.constant(), loads = w.loads.constant(), stores = w.stores.constant();
      if (!ops || !loads || !stores) return body;
      // (stores count too: a pad's copy, 115 K stores of 100 K loads and no operation, ran on one thread,
      // 35-41 us each of DenseNet-121's 28x28 ones)
      int64_t storeWork = std::min<int64_t>(*ops, INT64_MAX / 4) + std::min<int64_t>(*loads, INT64_MAX / 4) +
                          std::min<int64_t>(*stores, INT64_MAX / 4);
      work = std::min<int64_t>(INT64_MAX / 4, work + storeWork);
      int64_t &pw = pieceWork[e->src(1)];
      pw = std::min<int64_t>(INT64_MAX / 4, pw + storeWork);
    }
    if (work < minWork) return body;
    std::unordered_map<const UOp *, const UOp *> to;
    int64_t offset = 0;
    for (const UOp *r : outer) {
      const UOp *t = withAxisType(c, r, AxisType::THREAD);
      if (outer.size() > 1) { // (one loop: no offset field, as before)
        std::vector<const Arg *> elems(t->arg->elems().begin(), t->arg->elems().begin() + 2);
        elems.push_back(c.argInt(offset));
        int64_t n = static_cast<int64_t>(*constBound(r->src(0)));
        elems.push_back(c.argInt(std::clamp<int64_t>(pieceWork[r] / n, 1, kMaxThreadWork)));
        t = c.make(Op::RANGE, t->dtype, t->src(), c.argTuple(elems), t->tag);
      }
      to[r] = t;
      offset += static_cast<int64_t>(*constBound(r->src(0)));
    }
    // per store: a piece's outermost loop may be another piece's inner loop (the split loop's neighbours)
    std::vector<const UOp *> ends;
    for (const UOp *e : body->src()) ends.push_back(substitute(c, e, {{e->src(1), to.at(e->src(1))}}));
    const UOp *out = c.make(body->op, body->dtype, ends, body->arg, body->tag);
    analyze(out);
    return out;
  }

  /// The launch, and per store the ranges its thread id gives: its END's GLOBAL ranges (the gpu-map pass
  /// chose them), outermost first. A GLOBAL range must be of a constant size and move the store's index
  /// (else two threads would write one element), in a kernel whose stores do not race.
  std::vector<StorePlan> planGrid(const UOp *body) {
    const bool serial = storesMayRace(body);
    std::vector<StorePlan> plans;
    int64_t threads = 1;
    for (const UOp *e : body->src()) {
      StorePlan p;
      if (e->op == Op::END)
        for (const UOp *r : e->src().subspan(1)) {
          if (!isGlobalRange(r)) continue;
          const UOp *st = e->src(0);
          if (serial) failAt(r, "a GLOBAL range in a kernel whose stores may race (it must run on one thread)");
          auto n = constBound(r->src(0));
          if (!n || *n < 1 || *n > INT32_MAX / p.threads)
            failAt(r, "a GLOBAL range needs a constant size, and a store at most 2^31 - 1 threads");
          if (st->op != Op::STORE || st->src(0)->op != Op::INDEX ||
              !std::binary_search(freeRanges.at(st->src(0)->src(1)).begin(), freeRanges.at(st->src(0)->src(1)).end(), r))
            failAt(r, "a GLOBAL range its store's index does not depend on (its threads would write one element)");
          p.mapped.push_back(r);
          p.threads *= static_cast<int64_t>(*n);
        }
      threads = std::max(threads, p.threads);
      plans.push_back(std::move(p));
    }
    std::vector<const UOp *> blockRanges;
    for (const UOp *u : toposort(body)) {
      if (u->op == Op::REDUCE)
        for (const UOp *r : u->src().subspan(1))
          if (isBlockRange(r)) failAt(u, "a REDUCE over a block range (GROUP_REDUCE): the group-reduce pass lowers it, before linearize");
      if (!isBlockRange(u)) continue;
      auto n = constBound(u->src(0));
      if (!n || *n < 1 || *n > maxBlock || (block && *n != block))
        failAt(u, "a block range needs a constant size, at most the target's threads per block, the same for every block range of the kernel");
      block = static_cast<int64_t>(*n);
      blockRanges.push_back(u);
    }
    if (block) {
      if (serial) failAt(body, "block ranges in a kernel whose stores may race");
      for (const StorePlan &p : plans)
        if (p.mapped != plans[0].mapped)
          failAt(body, "block ranges in a kernel whose stores are not all on the same GLOBAL ranges");
      if (threads > INT32_MAX / block) failAt(body, "block ranges: more than 2^31 - 1 threads");
    }
    int64_t local = block ? block : std::min<int64_t>(threads, maxBlock);
    int64_t global = block ? threads : (threads + local - 1) / local;
    launchThreads = global * local;
    gidCount = block ? global : launchThreads;
    gidx = c.make(Op::SPECIAL, DType::Int64, {c.constInt(DType::Int64, global)}, c.argString("gidx0"));
    lidx = c.make(Op::SPECIAL, DType::Int64, {c.constInt(DType::Int64, local)}, c.argString("lidx0"));
    // The thread id and its division into the mapped ranges in int32 where every thread's id fits (a
    // 64-bit division by a constant is a 64-bit multiply-high on a GPU, several 32-bit instructions), each
    // range's value then cast to its dtype. Only these: the ranges stay 64-bit index arithmetic that does
    // not wrap, which LLVM strength-reduces into pointer increments; all index math narrowed to int32 (as
    // tinygrad's pm_lower_index_dtype) lost that, and ptxas no longer unrolled sp_mm_512's reduction loop.
    const UOp *l32 = c.make(Op::CAST, DType::Int32, {lidx});
    if (block) { // the block's GLOBAL ranges from gidx (a block per element), the block ranges from lidx
      gid = c.make(Op::CAST, DType::Int32, {gidx});
      if (!plans.empty()) fromThreadId(plans[0].mapped, gid, blockSub);
      for (const UOp *u : blockRanges) blockSub[u] = u->dtype == DType::Int32 ? l32 : c.make(Op::CAST, u->dtype, {lidx});
    } else if (global * local - 1 <= INT32_MAX) {
      const UOp *g32 = c.make(Op::CAST, DType::Int32, {gidx});
      gid = c.make(Op::ADD, DType::Int32, {c.make(Op::MUL, DType::Int32, {g32, c.constInt(DType::Int32, local)}), l32});
    } else {
      gid = c.make(Op::ADD, DType::Int64, {c.make(Op::MUL, DType::Int64, {gidx, c.constInt(DType::Int64, local)}), lidx});
    }
    analyze(gid);
    analyze(lidx);
    return plans;
  }

  /// The blocks as one list: a loop is RANGE, its items, END(RANGE); a guarded thread IF ... ENDIF.
  static std::vector<const UOp *> flatten(Context &c, const Block &top) {
    std::vector<const UOp *> out;
    std::vector<std::pair<const Block *, size_t>> work{{&top, 0}};
    std::vector<const UOp *> ifs;
    while (!work.empty()) {
      auto &[b, i] = work.back();
      if (i == b->items.size()) {
        if (b->key && b->key->op == Op::RANGE) out.push_back(c.make(Op::END, DType::Void, {b->key}));
        else if (b->cond) {
          out.push_back(c.make(Op::ENDIF, DType::Void, {ifs.back()}));
          ifs.pop_back();
        }
        work.pop_back();
        continue;
      }
      const Block::Item &it = b->items[i++];
      if (it.node) {
        out.push_back(it.node);
        continue;
      }
      const Block *ch = it.child.get();
      if (ch->key->op == Op::RANGE) out.push_back(ch->key);
      else if (ch->cond) {
        ifs.push_back(c.make(Op::IF, DType::Void, {ch->cond}));
        out.push_back(ifs.back());
      }
      work.push_back({ch, 0});
    }
    return out;
  }

  int64_t threadMinWork = -1; ///< CPU: the least work split across threads (-1: never)
  int64_t prefetchAhead = 0;  ///< CPU: how many bytes ahead a register tile's weight stream is prefetched (0: none)
  int64_t chunksAhead = 0;    ///< CPU: how many chunks ahead a register tile's input is prefetched (0: none)
  bool planesAhead = false;   ///< CPU: a register tile's input in planes prefetched a few steps ahead
  bool nextSlabs = false;     ///< CPU: a weight stream's next slab prefetched over the rows that reuse the current one
  bool splitSeams = true;     ///< CPU: a reduction range cut at a concatenation's seams (seamsOf)
  int64_t nextRange = 0;      ///< the number the next RANGE made here takes (above every range of the kernel)

  /// At the top of REDUCE u's outermost reduction loop (CPU): PREFETCH items for what Linearize/Prefetch.h's
  /// rules choose, each index placed first: the weight stream, then an input by blocks, then one in planes.
  void prefetch(const UOp *u, const std::vector<const UOp *> &lanes) {
    linearize::PrefetchSite site{c, u, lanes, freeRanges, {}};
    for (const Block *b : stack)
      if (b->key) site.open.push_back(b->key);
    std::vector<linearize::Prefetch> all;
    auto add = [&](std::vector<linearize::Prefetch> v) { all.insert(all.end(), v.begin(), v.end()); };
    if (prefetchAhead > 0) {
      std::vector<linearize::Prefetch> streams = linearize::weightStreams(site, prefetchAhead);
      add(streams);
      if (nextSlabs) add(linearize::nextSlabs(site, streams));
    }
    if (chunksAhead > 0) add(linearize::blockChunks(site, chunksAhead));
    if (planesAhead) add(linearize::planeSteps(site));
    for (const auto &[x, i] : all) {
      analyze(i);
      emit(i);
      stack.back()->add(c.make(Op::PREFETCH, DType::Void, {c.make(Op::INDEX, x->dtype, {x->src(0), i})}));
    }
  }

  /// A kernel with blocks: its BARRIERs first, in order, each after the stores it waits for, at the top
  /// of the thread (every thread of a block reaches each). What comes after a barrier computes again
  /// what it needs: nothing placed before one is used after it (a target that runs a block's threads one
  /// after the other, --grid-on-host, runs each stretch between barriers as a loop of its own).
  void barriers(const UOp *body) {
    std::vector<const UOp *> stores;
    for (const UOp *e : body->src()) stores.push_back(substitute(c, e->op == Op::END ? e->src(0) : e, blockSub));
    const UOp *all = c.make(Op::SINK, DType::Void, stores);
    analyze(all);
    for (const UOp *b : toposort(all)) {
      if (b->op != Op::BARRIER) continue;
      openScope(gidx, nullptr);
      for (const UOp *st : b->src()) {
        if (st->op != Op::STORE || st->src(0)->op != Op::INDEX || !blockBufferOf(st->src(0)->src(0)))
          failAt(b, "a BARRIER after something other than a store to a block's shared BUFFER");
        for (const UOp *x : st->src(0)->src().subspan(1)) emit(x);
        emit(st->src(1));
        stack.back()->add(st);
      }
      stack.back()->add(b);
      closeScope();
      stack[0]->memo.clear();
    }
  }

  const UOp *run(const UOp *body) {
    analyze(body);
    if (!gpu)
      for (const UOp *u : toposort(body))
        if (isBlockRange(u) || blockBufferOf(u)) failAt(u, "a GPU block's range or shared memory in a kernel linearized into loops (linearize without grid)");
    if (!gpu && threadMinWork >= 0) body = threadLoop(body, threadMinWork);
    if (!gpu) {
      const UOp *hoisted = linearize::hoistLaneInvariants(c, body, freeRanges);
      if (hoisted != body) analyze(body = hoisted);
    }
    for (const UOp *x : toposort(body))
      if (x->op == Op::RANGE) nextRange = std::max(nextRange, rangeNumber(x) + 1);
    Block top;
    stack = {&top};
    std::vector<StorePlan> plans;
    if (gpu) {
      plans = planGrid(body);
      for (const UOp *u : toposort(body)) // the block's shared memory, first
        if (blockBufferOf(u) == u) top.add(u);
      emit(gidx); // the launch is in the items even where no store needs the thread id
      emit(lidx);
      if (block) barriers(body);
    }
    shareLoops = body->nsrc > 1 && !storesMayRace(body);
    for (size_t k = 0; k < body->nsrc; ++k) statement(body->src(k), gpu ? plans[k] : StorePlan{});
    closeShared();
    std::vector<const UOp *> srcs{body};
    std::vector<const UOp *> items = flatten(c, top);
    srcs.insert(srcs.end(), items.begin(), items.end());
    return c.make(Op::LINEAR, DType::Void, srcs, body->arg);
  }
};

/// Each buffer read's index that is a sum with terms that move with a lane (an UPCAST range: the targets
/// unroll those loops) rebuilt with those terms last, the others first in their order:
/// ((base + r*32) + k1) + k2 becomes ((base + k1) + k2) + r*32. The sum of the terms that do not move with a
/// lane is then one value, computed outside the lanes' loop, and each lane's address that value plus a
/// constant (a displacement): GCC, given the lane term first, kept one partial sum per lane of a register tile
/// (13 or 14 of them for a row of pixels), spilled them to the stack and reloaded them every reduction step.
/// Integer sums, so the value is the same.
const UOp *laneTermsLast(Context &c, const UOp *body) {
  std::unordered_map<const UOp *, bool> moves; // (whether a node depends on a lane range)
  std::unordered_map<const UOp *, const UOp *> sub;
  std::unordered_set<const UOp *> reduced; // (the ranges a REDUCE reduces)
  std::vector<const UOp *> nodes = toposort(body);
  std::unordered_set<const UOp *> stored; // (a store's INDEX: once a tile, left as it is)
  for (const UOp *u : nodes) {
    if (u->op == Op::REDUCE)
      for (size_t i = 1; i < u->nsrc; ++i) reduced.insert(u->src(i));
    if (u->op == Op::STORE) stored.insert(u->src(0));
  }
  for (const UOp *u : nodes) {
    bool m = isUpcastRange(u);
    for (const UOp *x : u->src()) m = m || moves[x];
    moves[u] = m;
    if (u->op != Op::INDEX || u->nsrc < 2 || u->src(0)->op != Op::PARAM || !moves[u->src(1)] || u->src(1)->op != Op::ADD ||
        stored.count(u))
      continue;
    // (not a window's read, along two reduction loops or more: the C compiler unrolls its columns too, and the
    // rest of the sum, which moves with them, was then one partial sum a column, computed again for the gate's
    // test: DenseNet-121's 3x3 and 7x7 convolutions 0.3-0.8% slower)
    size_t along = 0;
    for (const UOp *x : toposort(u->src(1))) along += reduced.count(x);
    if (along > 1) continue;
    // the sum's terms, left to right (a left-leaning or any other tree of ADDs of the index's dtype)
    const UOp *idx = u->src(1);
    std::vector<const UOp *> terms, stack{idx};
    while (!stack.empty()) {
      const UOp *x = stack.back();
      stack.pop_back();
      if (x->op == Op::ADD && x->dtype == idx->dtype && x->nsrc == 2) {
        stack.push_back(x->src(1));
        stack.push_back(x->src(0));
      } else {
        terms.push_back(x);
      }
    }
    auto firstLane = std::find_if(terms.begin(), terms.end(), [&](const UOp *t) { return moves[t]; });
    if (std::none_of(firstLane, terms.end(), [&](const UOp *t) { return !moves[t]; })) continue; // (already last)
    std::stable_partition(terms.begin(), terms.end(), [&](const UOp *t) { return !moves[t]; });
    const UOp *sum = terms[0];
    for (size_t i = 1; i < terms.size(); ++i) sum = c.make(Op::ADD, idx->dtype, {sum, terms[i]});
    std::vector<const UOp *> src(u->src().begin(), u->src().end());
    src[1] = sum;
    sub[u] = c.make(Op::INDEX, u->dtype, src, u->arg, u->tag);
  }
  return sub.empty() ? body : substitute(c, body, sub);
}

} // namespace

void runLinearize(Graph &g, const PassContext &pc) {
  Context &c = *g.ctx;
  bool gpu = pc.target.gpuGrid;
  if (auto grid = pc.option("grid"); !grid.empty()) {
    if (grid != "0" && grid != "1") fail("pass 'linearize': option grid=" + std::string(grid) + " is not 0 or 1");
    gpu = grid == "1";
  }
  // CPU threads (see threadLoop): off with threads=0; the least work worth a split
  // (on by default whatever this machine has: the kernel may be split, the runner chooses how many threads)
  bool threads = pc.intOption("threads", 1, 0, 1) == 1;
  int64_t minWork = pc.intOption("thread-min-work", int64_t(1) << 15, 0, INT64_MAX);
  // a register tile's weight stream prefetched this many bytes ahead (Linearize/Prefetch.h weightStreams; 0: none)
  int64_t prefetch = pc.intOption("prefetch", 4096, 0, int64_t(1) << 20);
  // a register tile's input prefetched this many chunks ahead (blockChunks; 0: none)
  int64_t chunks = pc.intOption("prefetch-chunks", 2, 0, 64);
  // a register tile's input in planes prefetched a few steps ahead (planeSteps; 0: not)
  bool planes = pc.intOption("prefetch-planes", 1, 0, 1) == 1;
  // a register tile's weight stream's next slab prefetched over the rows that reuse this one (nextSlabs; 0: not)
  bool slabs = pc.intOption("prefetch-next", 1, 0, 1) == 1;
  // a reduction range cut at a concatenation's seams (seamsOf; 0: not). On LLVM too since its index `or`s are
  // marked disjoint through their terms (Targets/LLVM/Machines.cpp MarkDisjointOrs): before, the SLP vectorizer
  // took a seam piece's weights, `(r << 4 | c) | 4096`, for scalar loads (SqueezeNet, LLVM, 2 threads,
  // alternating: 3.30 -> 3.11 ms with the cut, where it had been 3.4 -> 4.0 without that fix)
  bool seams = pc.intOption("seams", 1, 0, 1) == 1;
  // a buffer index's terms that move with a lane last (laneTermsLast; 0: as they are). CPU only; not by
  // default on LLVM, which reassociates the sums itself: no network ran faster, and ShuffleNet's grouped 1x1
  // convolutions (k9, k12, k15, k18) took 43 -> 88-102 us each (2 threads, alternating)
  bool laneLast = pc.intOption("lane-terms-last", pc.target.name == "llvm" ? 0 : 1, 0, 1) == 1 && !gpu;
  rewriteKernelBodies(g, [&](const UOp *call) {
    Linearizer l(c);
    l.gpu = gpu;
    l.threadMinWork = threads ? minWork : -1;
    l.prefetchAhead = prefetch;
    l.chunksAhead = chunks;
    l.planesAhead = planes;
    l.nextSlabs = slabs;
    l.splitSeams = seams;
    l.maxBlock = pc.target.gpuGrid ? std::max<int64_t>(1, pc.target.maxThreadsPerBlock) : 256;
    return l.run(laneLast ? laneTermsLast(c, call->src(0)) : call->src(0));
  });
}

} // namespace uopc


//===- Opts.cpp - the optimize pass's opts read from text, a kernel's shape ===//
#include "Passes/Optimize/Opts.h"

#include "IR/Error.h"
#include "IR/Kernel.h"
#include "IR/Range.h"
#include "Passes/Rewrite.h"

#include <algorithm>
#include <charconv>
#include <unordered_set>

namespace uopc::optimize {
/// "upcast:A:N", "split:A:LO:HI", "partial:R:N", "unroll:R:N", "block:A:N", "pack:S", "relayout:A:S" or
/// "merge:A" -> Opt; throws Error
/// naming the text otherwise.
Opt parseOpt(std::string_view t) {
  auto bad = [&]() -> Opt {
    fail("pass 'optimize': opt '" + std::string(t) +
         "' is not upcast:AXIS:AMOUNT, split:AXIS:LO:HI, partial:RAXIS:AMOUNT, unroll:RAXIS:AMOUNT, block:AXIS:SIZE, "
         "pack:SLOT, relayout:AXIS:SLOT or merge:AXIS");
  };
  Opt o;
  size_t colon = t.find(':');
  std::string_view kind = t.substr(0, colon);
  const std::string_view *name = std::find(std::begin(Opt::kNames), std::end(Opt::kNames), kind);
  if (colon == std::string_view::npos || name == std::end(Opt::kNames)) return bad();
  o.kind = static_cast<Opt::Kind>(name - std::begin(Opt::kNames));
  std::vector<int64_t> nums;
  for (std::string_view rest = t.substr(colon + 1);;) {
    size_t c = rest.find(':');
    std::string_view f = rest.substr(0, c);
    int64_t x = -1;
    auto [ptr, ec] = std::from_chars(f.data(), f.data() + f.size(), x);
    if (f.empty() || ec != std::errc() || ptr != f.data() + f.size() || x < 0 || x > INT32_MAX) return bad();
    nums.push_back(x);
    if (c == std::string_view::npos) break;
    rest = rest.substr(c + 1);
  }
  if (nums.size() != (o.kind == Opt::Split ? 3u : o.kind == Opt::Pack || o.kind == Opt::Merge ? 1u : 2u) || nums[0] > 64) return bad();
  o.axis = static_cast<size_t>(nums[0]);
  if (o.kind == Opt::Pack || o.kind == Opt::Merge) return o;
  o.amount = nums[1];
  if (o.kind != Opt::Split && (o.amount < 1 || (o.kind != Opt::Block && o.amount > 4096))) return bad();
  if (o.kind == Opt::Split) {
    o.hi = nums[2];
    if (o.amount >= o.hi) return bad();
  }
  return o;
}

/// opts=NAME/OPT/OPT;NAME -> {NAME: [opts]}.
std::map<std::string, std::vector<Opt>, std::less<>> parseHandOpts(std::string_view text) {
  std::map<std::string, std::vector<Opt>, std::less<>> out;
  while (!text.empty()) {
    size_t semi = text.find(';');
    std::string_view entry = text.substr(0, semi);
    text = semi == std::string_view::npos ? std::string_view() : text.substr(semi + 1);
    size_t slash = entry.find('/');
    std::string name(entry.substr(0, slash));
    if (name.empty()) fail("pass 'optimize': opts entry '" + std::string(entry) + "' names no kernel");
    if (out.count(name)) fail("pass 'optimize': kernel '" + name + "' is given opts twice");
    std::vector<Opt> &opts = out[name];
    while (slash != std::string_view::npos) {
      entry = entry.substr(slash + 1);
      slash = entry.find('/');
      opts.push_back(parseOpt(entry.substr(0, slash)));
    }
  }
  return out;
}

/// Whether x's value depends on node r (r is in its cone).
bool dependsOn(const UOp *x, const UOp *r) {
  for (const UOp *u : toposort(x))
    if (u == r) return true;
  return false;
}

const UOp *mergedLoops(Context &c, const UOp *x, const UOp *ry, const UOp *rx, int64_t h, int64_t w, const UOp *&merged) {
  DType dt = ry->dtype;
  merged = c.make(Op::RANGE, dt, {c.constInt(dt, h * w)}, ry->arg, ry->tag);
  const UOp *wc = c.constInt(dt, w);
  return substitute(c, x, {{ry, c.make(Op::FLOORDIV, dt, {merged, wc})}, {rx, c.make(Op::FLOORMOD, dt, {merged, wc})}});
}

std::optional<Shape> shapeOf(const UOp *sink) {
  if (sink->op != Op::SINK || sink->nsrc != 1 || sink->src(0)->op != Op::END) return std::nullopt;
  Shape s;
  s.end = sink->src(0);
  s.store = s.end->src(0);
  if (s.store->op != Op::STORE || s.store->src(0)->op != Op::INDEX || s.store->src(0)->src(0)->op != Op::PARAM)
    return std::nullopt;
  for (const UOp *r : s.end->src().subspan(1)) {
    auto n = r->op == Op::RANGE && r->nsrc == 1 && !isUpcastRange(r) && !isThreadRange(r) ? constBound(r->src(0))
                                                                                           : std::nullopt;
    if (!n || *n < 1 || *n > INT32_MAX) return std::nullopt;
    s.axes.push_back(r);
    s.sizes.push_back(static_cast<int64_t>(*n));
  }
  for (const UOp *u : toposort(s.store->src(1)))
    if (u->op == Op::REDUCE) {
      s.reduces.push_back(u);
      for (const UOp *r : u->src().subspan(1))
        if (std::find(s.reduceRanges.begin(), s.reduceRanges.end(), r) == s.reduceRanges.end()) s.reduceRanges.push_back(r);
    }
  std::sort(s.reduceRanges.begin(), s.reduceRanges.end(), [](const UOp *a, const UOp *b) { return rangeNumber(a) < rangeNumber(b); });
  std::unordered_set<const UOp *> seenReads;
  for (const UOp *red : s.reduces)
    for (const UOp *x : toposort(red->src(0))) {
      // nested: only a REDUCE that does not move with the outer one's loops (linearize hoists it)
      if (x != red && x->op == Op::REDUCE)
        for (const UOp *r : red->src().subspan(1))
          if (dependsOn(x, r)) return std::nullopt;
      if (x->op == Op::INDEX && x->nsrc >= 2 && x->src(0)->op == Op::PARAM && seenReads.insert(x).second)
        s.reads.push_back(x);
    }
  return s;
}

} // namespace uopc::optimize

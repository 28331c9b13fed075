//===- Optimize.cpp - the `optimize` pass: register tiles for reductions ---===//
// Runs after codegen, before lower-index and linearize, on CPU targets. Per kernel it chooses a list of
// opts in the spirit of tinygrad's (Opt(UPCAST, axis, amount)), applies them to the kernel SINK and
// records them in its KernelInfo's applied_opts, so that `--print-after=optimize`, the manifest and a
// later run with the same opts given by hand all say what was done.
//
// The one opt so far, "upcast:AXIS:AMOUNT": the kernel's output loop AXIS (its position among its END's
// ranges) of constant size N, AMOUNT dividing N, becomes a loop of N/AMOUNT (the same range number) and
// an UPCAST range of AMOUNT lanes (a new number, after every range of the kernel): r -> r_o * AMOUNT +
// r_u, the lanes innermost. linearize then gives every REDUCE that depends on a lane one accumulator per
// lane, and runs its reduction loops outside the lanes (IR/Kernel.h): a register tile, e.g. a matmul's
//   for k { for u < 8 { a = A[i*8+u, k]; for v < 16 { acc[u][v] += a * B[k, j*16+v] } } }
// where A is loaded once for 16 lanes and B once for 8: the C and LLVM compilers unroll the lane loops
// and vectorize the unit-stride one. Every output element is still reduced in the same order, so the
// results are bitwise those of the loops without opts.
//
// The choice (level 2, the default), per kernel that is one store over constant output loops with
// REDUCEs (none nested in another's body) whose buffer reads all have constant strides in its loops:
//   - the vector axis: the output loop along which the most reads of the reductions are consecutive
//     (stride 1; every other read stride 0 or 1), upcast by two vectors (16 float32 lanes on AVX2), or
//     one when that does not divide it;
//   - the reuse axis: another output loop along which a consecutive read of the vector axis does not
//     move (stride 0: it is reused across that loop's lanes), upcast by 8, 4 or 2;
//   - at most 128 accumulator lanes per REDUCE (16 AVX2 registers of float32).
// Level 0 or 1 leaves kernels as they are (1 is reserved for cheaper choices). The option
// opts=NAME/OPT/OPT;NAME2 gives a kernel's opts by hand instead (none for NAME2), as tinygrad's
// opts_to_apply; kernels not named get the level's choice. GPU targets: no opts yet.
#include "IR/Error.h"
#include "IR/Kernel.h"
#include "IR/Range.h"
#include "IR/Records.h"
#include "Passes/Passes.h"
#include "Passes/Rewrite.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <unordered_set>

namespace uopc {
namespace {

struct Opt {
  size_t axis = 0;
  int64_t amount = 1;
  std::string text() const { return "upcast:" + std::to_string(axis) + ":" + std::to_string(amount); }
};

/// "upcast:A:N" -> Opt; throws Error naming the text otherwise.
Opt parseOpt(std::string_view t) {
  auto bad = [&]() -> Opt { fail("pass 'optimize': opt '" + std::string(t) + "' is not upcast:AXIS:AMOUNT"); };
  if (!t.starts_with("upcast:")) return bad();
  std::string_view rest = t.substr(7);
  size_t colon = rest.find(':');
  if (colon == std::string_view::npos) return bad();
  int64_t axis = -1, amount = 0;
  auto p1 = std::from_chars(rest.data(), rest.data() + colon, axis);
  auto p2 = std::from_chars(rest.data() + colon + 1, rest.data() + rest.size(), amount);
  if (p1.ec != std::errc() || p1.ptr != rest.data() + colon || p2.ec != std::errc() ||
      p2.ptr != rest.data() + rest.size() || axis < 0 || axis > 64 || amount < 1 || amount > 4096)
    return bad();
  return {static_cast<size_t>(axis), amount};
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

/// A kernel the opts apply to: SINK(END(STORE(INDEX(buffer, i), value), output ranges...)).
struct Shape {
  const UOp *end = nullptr, *store = nullptr;
  std::vector<const UOp *> axes; ///< the END's ranges
  std::vector<int64_t> sizes;
  std::vector<const UOp *> reduces, reads; ///< the REDUCEs of the value; the buffer reads of their bodies
};

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
    if (u->op == Op::REDUCE) s.reduces.push_back(u);
  std::unordered_set<const UOp *> seenReads;
  for (const UOp *red : s.reduces)
    for (const UOp *x : toposort(red->src(0))) {
      if (x != red && x->op == Op::REDUCE) return std::nullopt; // nested: not yet
      if (x->op == Op::INDEX && x->nsrc >= 2 && x->src(0)->op == Op::PARAM && seenReads.insert(x).second)
        s.reads.push_back(x);
    }
  return s;
}

/// The opts of level 2 for kernel shape s (see the file comment).
std::vector<Opt> chooseOpts(const Shape &s, const PassTarget &target) {
  if (s.reduces.empty() || s.reads.empty()) return {};
  // strides[read][axis]
  std::vector<std::vector<std::optional<int64_t>>> strides;
  for (const UOp *rd : s.reads) {
    strides.emplace_back();
    for (const UOp *r : s.axes) strides.back().push_back(indexStride(rd->src(1), r, /*throughSelect=*/true));
  }
  std::vector<bool> used(s.axes.size(), false); // some reduction depends on the axis
  for (size_t a = 0; a < s.axes.size(); ++a)
    for (size_t k = 0; k < s.reads.size(); ++k) used[a] = used[a] || strides[k][a] != std::optional<int64_t>(0);
  size_t elem = 4;
  for (const UOp *red : s.reduces) elem = std::max<size_t>(elem, dtypeSize(red->dtype));
  int64_t vec = std::max<int64_t>(1, (target.vectorBytes > 0 ? target.vectorBytes : 16) / static_cast<int64_t>(elem));
  // the vector axis
  std::optional<size_t> va;
  size_t best = 0;
  for (size_t a = 0; a < s.axes.size(); ++a) {
    if (!used[a] || s.sizes[a] % vec) continue;
    size_t ones = 0;
    bool ok = true;
    for (size_t k = 0; k < s.reads.size(); ++k) {
      if (!strides[k][a] || (*strides[k][a] != 0 && *strides[k][a] != 1)) ok = false;
      else ones += *strides[k][a] == 1;
    }
    if (ok && ones > best) best = ones, va = a;
  }
  if (!va) return {};
  int64_t vAmount = s.sizes[*va] % (2 * vec) == 0 ? 2 * vec : vec;
  // the reuse axis: a consecutive read along va does not move along it
  std::optional<size_t> ra;
  for (size_t a = 0; a < s.axes.size() && !ra; ++a) {
    if (a == *va || !used[a] || s.sizes[a] % 2) continue;
    for (size_t k = 0; k < s.reads.size(); ++k)
      if (strides[k][*va] == std::optional<int64_t>(1) && strides[k][a] == std::optional<int64_t>(0) &&
          std::all_of(strides[k].begin(), strides[k].end(), [](auto x) { return x.has_value(); }))
        ra = a;
  }
  std::vector<Opt> opts;
  int64_t budget = 128 / vAmount;
  if (ra)
    for (int64_t amt : {8, 4, 2})
      if (amt <= budget && s.sizes[*ra] % amt == 0) {
        opts.push_back({*ra, amt});
        break;
      }
  opts.push_back({*va, vAmount}); // last: the highest range number, the innermost lanes
  return opts;
}

struct Optimizer {
  Context &c;

  /// Applies opts to kernel SINK `sink` (its shape s); throws Error naming the kernel for an opt that
  /// does not fit it.
  const UOp *apply(const UOp *sink, const Shape &s, const std::vector<Opt> &opts, const std::string &name) {
    int64_t next = 0;
    for (const UOp *u : toposort(sink))
      if (u->op == Op::RANGE) next = std::max(next, rangeNumber(u) + 1);
    std::vector<const UOp *> axes = s.axes, lanes;
    std::vector<int64_t> sizes = s.sizes;
    std::unordered_map<const UOp *, const UOp *> sub;
    std::vector<bool> done(axes.size(), false);
    std::vector<const Arg *> texts;
    for (const Opt &o : opts) {
      auto bad = [&](const std::string &why) {
        fail("pass 'optimize': kernel " + name + ": opt " + o.text() + ": " + why);
      };
      if (o.axis >= axes.size()) bad("the kernel has " + std::to_string(axes.size()) + " output loops");
      if (done[o.axis]) bad("that loop is upcast already");
      if (sizes[o.axis] % o.amount) bad(std::to_string(o.amount) + " does not divide its " + std::to_string(sizes[o.axis]) + " iterations");
      done[o.axis] = true;
      texts.push_back(c.argString(o.text()));
      if (o.amount == 1) continue;
      const UOp *r = axes[o.axis];
      DType dt = r->dtype;
      std::vector<const Arg *> elems(r->arg->elems().begin(), r->arg->elems().end());
      const UOp *outer = c.make(Op::RANGE, dt, {c.constInt(dt, sizes[o.axis] / o.amount)}, r->arg, r->tag);
      elems[0] = c.argInt(next++);
      elems[1] = c.argAxisType(AxisType::UPCAST);
      const UOp *lane = c.make(Op::RANGE, dt, {c.constInt(dt, o.amount)}, c.argTuple(elems), r->tag);
      // (a loop upcast whole leaves no outer loop of one iteration)
      sub[r] = o.amount == sizes[o.axis] ? lane : c.make(Op::ADD, dt, {c.make(Op::MUL, dt, {outer, c.constInt(dt, o.amount)}), lane});
      axes[o.axis] = o.amount == sizes[o.axis] ? nullptr : outer;
      lanes.push_back(lane);
    }
    std::erase(axes, nullptr);
    const UOp *store = sub.empty() ? s.store : substitute(c, s.store, sub);
    std::vector<const UOp *> endSrc{store};
    endSrc.insert(endSrc.end(), axes.begin(), axes.end());
    endSrc.insert(endSrc.end(), lanes.begin(), lanes.end());
    const UOp *end = c.make(Op::END, s.end->dtype, endSrc, s.end->arg, s.end->tag);
    // KernelInfo: the same fields, applied_opts added
    std::vector<std::pair<std::string_view, const Arg *>> fields;
    const Arg *info = sink->arg;
    if (info && info->kind == ArgKind::Record)
      for (size_t k = 0; k < info->count; ++k)
        if (info->keys()[k] != "applied_opts") fields.emplace_back(info->keys()[k], info->elems()[k]);
    fields.emplace_back("applied_opts", c.argTuple(texts));
    return c.make(Op::SINK, sink->dtype, {end}, makeRecord(c, "KernelInfo", fields), sink->tag);
  }
};

std::string nameOf(const UOp *sink) {
  const Arg *n = sink->arg && sink->arg->kind == ArgKind::Record ? sink->arg->field("name") : nullptr;
  return n && n->kind == ArgKind::String ? std::string(n->str()) : "";
}

} // namespace

void runOptimize(Graph &g, const PassContext &pc) {
  int64_t level = pc.intOption("level", 2, 0, 2);
  auto hand = parseHandOpts(pc.option("opts"));
  if (pc.target.gpuGrid && hand.empty()) return;
  Optimizer o{*g.ctx};
  std::set<std::string, std::less<>> seen;
  rewriteKernelBodies(g, [&](const UOp *call) {
    const UOp *sink = call->src(0);
    std::string name = nameOf(sink);
    seen.insert(name);
    auto it = hand.find(name);
    auto s = shapeOf(sink);
    if (it != hand.end()) {
      if (it->second.empty()) return sink;
      if (!s) fail("pass 'optimize': kernel " + name + " is not one store over constant loops: no opts apply to it");
      return o.apply(sink, *s, it->second, name);
    }
    if (level < 2 || !s || pc.target.gpuGrid) return sink;
    std::vector<Opt> opts = chooseOpts(*s, pc.target);
    return opts.empty() ? sink : o.apply(sink, *s, opts, name);
  });
  for (const auto &[name, opts] : hand)
    if (!seen.count(name)) fail("pass 'optimize': opts for kernel '" + name + "', which the graph does not have");
}

} // namespace uopc

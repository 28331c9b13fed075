//===- Rewrite.h - graph_rewrite: apply a RuleSet to a whole graph ---------===//
// tinygrad's graph_rewrite (RewriteContext.unified_rewrite / walk_rewrite at d1c3ae0f91) over hash-consed
// UOps. Iterative with an explicit stack, so graph depth is bounded by memory, not by the C++ stack;
// memoized per call in side tables keyed by UOp::index, so each node is rewritten once per call.
//
// Two orders, one per tinygrad flag:
//  - RewriteMode::SourcesFirst (tinygrad's default, bottom_up=False): rewrite a node's sources first,
//    rebuild the node on the rewritten sources, then apply the rules to it. A rule's result is itself
//    rewritten the same way (its new sources included) until no rule applies: the fixed point.
//  - RewriteMode::NodeFirst (bottom_up=True): apply the rules to a node before its sources, repeatedly
//    until none applies, then descend into the sources of the result; when sources change, the rebuilt
//    node goes through the rules again.
//
// What is not rewritten:
//  - nodes referenced from args (ArgKind::UOpRef): they are not sources, so they are kept as they are
//    (a pass that must rewrite them rebuilds the arg itself);
//  - the body (src[0]) of FUNCTION, and of CALL when it is a SINK, PROGRAM, LINEAR, COPY, ALLREDUCE, SLICE or
//    CUSTOM_FUNCTION, unless enterCalls is set (tinygrad's enter_calls=False). This holds for the edge from
//    the call to its body: the same node reached as an ordinary source of another node is rewritten there
//    (tinygrad records the body as its own result, which leaks to the other paths when the walk meets the
//    call first).
//
// Cost: O(nodes the call touches), whatever the Context's size. The side tables are generation-stamped
// dense tables (StampedTable, 16 + 24 bytes a node) that the Context keeps between calls (Context::Scratch):
// starting a call is O(1), and their growth to the Context's size is paid once, not per call. A rewrite
// function that calls graphRewrite (or substitute) gets a table set of its own, so nesting is safe; the
// Context keeps one set per nesting depth reached. Context::scratchStats() counts the slots touched.
//
// A rule set that never settles (a -> b -> a, or x -> f(x) forever) throws
// Error("rewrite did not reach a fixed point at ...") rather than hanging: see maxRewritesPerNode.
#pragma once

#include "IR/Graph.h"
#include "Passes/Pattern.h"

#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>

namespace uopc {

/// Which of a node and its sources the rules see first (see the file comment).
enum class RewriteMode : uint8_t {
  SourcesFirst, ///< tinygrad graph_rewrite(bottom_up=False), the default
  NodeFirst,    ///< tinygrad graph_rewrite(bottom_up=True)
};

/// Everything graphRewrite can take; the short overload below covers the common case.
struct RewriteOptions {
  /// Rules applied after a node's sources are rewritten (tinygrad's pm). May be null.
  const RuleSet *sourcesFirst = nullptr;
  /// Rules applied to a node before its sources (tinygrad's bpm). May be null. With both rule sets a
  /// node first goes through these, then its sources, then sourcesFirst.
  const RuleSet *nodeFirst = nullptr;
  /// Passed to every rewrite function as Match::user().
  void *user = nullptr;
  /// One pass without fixed point (tinygrad's walk=True, MLIR's walk driver): nodeFirst rules are tried
  /// once on each original node, and a result is used as it is, not visited; otherwise the node is rebuilt
  /// on its rewritten sources and sourcesFirst rules are tried once on that.
  bool walk = false;
  /// Also rewrite FUNCTION/CALL bodies.
  bool enterCalls = false;
  /// Bound on rules that keep growing the graph: how many rule applications (or rebuilds) in a row may
  /// each make a node that did not exist when the call started, counted along the chain of results from
  /// one input node. Rules that cycle through nodes (a -> b -> a) need no bound: they are caught when
  /// the cycle closes. Either way graphRewrite throws Error("rewrite did not reach a fixed point at ...").
  uint32_t maxRewritesPerNode = 1000;
  /// Filled in when not null.
  RewriteStats *stats = nullptr;
  /// Names a node in error messages (Graph::describe in a pass); default "UOp #<index> (OP)".
  std::function<std::string(const UOp *)> describe;
};

/// Rewrites the graph under `root` with `rules` to a fixed point; returns the new root (root itself
/// when nothing changed). Nodes are built in `ctx`, so unchanged parts are shared with the input.
const UOp *graphRewrite(Context &ctx, const UOp *root, const RuleSet &rules,
                        RewriteMode mode = RewriteMode::SourcesFirst, void *user = nullptr);
/// The general form: pm and bpm together, walk mode, limits, statistics.
const UOp *graphRewrite(Context &ctx, const UOp *root, const RewriteOptions &opts);

/// Replaces every occurrence of a key under `root` by its value and rebuilds the users (tinygrad's
/// UOp.substitute, walk form). A key is looked up on the original nodes, before their sources are
/// replaced; values are inserted as they are and are not searched for keys, so {x: x+1} is fine and
/// {a: b, b: c} maps a to b (tinygrad's default, walk=False, would chain a to c and cannot do {x: x+1}).
/// So a value that contains another key keeps that key reachable: when replacing several nodes that
/// depend on each other (a CALL and a later CALL that reads it through AFTER), build each value on the
/// already substituted graph, or substitute again.
/// Bodies of calls are left alone unless enterCalls.
const UOp *substitute(Context &ctx, const UOp *root, const std::unordered_map<const UOp *, const UOp *> &map,
                      bool enterCalls = false);
const UOp *substitute(Context &ctx, const UOp *root,
                      std::initializer_list<std::pair<const UOp *const, const UOp *>> map, bool enterCalls = false);

/// Rebuilds the graph under `root` bottom-up, in toposort order (iterative): each node becomes f(u, srcs),
/// srcs its sources as already rebuilt, or, where f returns nullptr, u on those sources (u itself when none
/// changed). Returns what root became. The walk of the per-kernel passes that rewrite node by node
/// (commit-weak, decompose, group-reduce, gpu-map's blocks). Bodies of calls are sources like any other.
const UOp *rebuildBottomUp(Context &ctx, const UOp *root,
                           const std::function<const UOp *(const UOp *u, std::span<const UOp *const> srcs)> &f);

/// Gives every kernel CALL(SINK, ...) under g.root the body f(call) (f may return the SINK as it is) and
/// rebuilds the users of what changed; copies and the rest of the graph keep their nodes. What the
/// per-kernel passes (codegen, lower-index, linearize) have in common. A current Graph::schedule stays current
/// (its CALLs become the new ones).
void rewriteKernelBodies(Graph &g, const std::function<const UOp *(const UOp *call)> &f);

} // namespace uopc

//===- AsmPrinter.h - the readable text form of the IR ---------------------===//
// One line per node, SSA-style, in topological order (sources first), for people to read and diff:
//
//   kernel @r_4_33 {
//     %0 = CONST 132 : weakint
//     %1 = PARAM ParamArg(slot=0, float32, CPU) %0 : float32 [shape 132] [device CPU]
//     ...
//     %9 = SINK KernelInfo(name=r_4_33, axis_types=(LOOP, REDUCE)) %8 : void
//   }
//   %0 = CONST 4 : weakint
//   %12 = ADD %10, %11 : float32 [shape 4x33]
//   %20 = CALL CallInfo() @r_4_33, %13, %14 : void
//
// A line is `%ID = OP [ARG] [SOURCES] : DTYPE [shape AxB] [device D] [tag=T]`. Every CALL body (a kernel
// SINK, or any function) is a region printed once, before the graph, as `kernel @name { ... }` with its own
// numbering from %0; the CALL names it `@name` in place of its first source. Hash-consing makes identical
// kernels one body, so a 12-layer model prints each distinct kernel once. The text is a pure function of
// the graph's structure (never of pointers or creation order): the same graph prints the same bytes.
// It reads back (readGraphText, IR/GraphIO.h) when nothing was elided (AsmOptions::full()): reading it and
// printing again gives the same bytes, so a pass's lit test can start from the text its pass receives.
// Every word is printed so that it reads back as what it is (`"ADD"` is a string, `ADD` an op). JSON
// (writeGraphJson) stays the interchange format. docs/ir-text.md has the details.
#pragma once

#include "IR/Graph.h"

#include <cstdint>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace uopc {

/// Limits of what is spelled out; the rest is elided with a count (and the text no longer reads back).
struct AsmOptions {
  size_t maxTupleItems = 16;  ///< a longer arg tuple prints its first 8 elements and "...(N more)"
  size_t maxStringBytes = 96; ///< a longer string prints its first 64 bytes and "... (N bytes)"
  size_t maxSources = 32;     ///< a node with more sources prints its first 16 and "...(N more)"
  size_t maxBytes = 16;       ///< a longer bytes arg prints its first 16 bytes and "..."
  bool producer = false;      ///< a `// producer {...}` line after the header (the document's producer object)

  /// Nothing elided and the producer printed: the text reads back as the graph it was printed from
  /// (readGraphText), byte for byte when printed again. `--dump-dir` text and `--print-ir-full` use it.
  static AsmOptions full() {
    AsmOptions o;
    o.maxTupleItems = o.maxStringBytes = o.maxSources = o.maxBytes = SIZE_MAX;
    o.producer = true;
    return o;
  }
};

/// A region of the text form: the top-level graph, or one CALL body.
struct AsmRegion {
  const UOp *root = nullptr;        ///< the top-level root, or the body (CALL src 0)
  bool isKernel = false;            ///< a CALL body (printed as `kernel @name { ... }`)
  std::string name;                 ///< kernels: unique among the regions ("r_4_33", "r_4_33.1", ...)
  std::vector<const UOp *> nodes;   ///< sources first; the root last; local id = position
};

/// Splits a graph into regions and prints nodes in its text form. Build it once per graph; it caches
/// shapes and devices of every node it prints.
class AsmPrinter {
public:
  explicit AsmPrinter(const Graph &g, AsmOptions opts = {}) : AsmPrinter(g, g.root, opts) {}
  /// The graph under `root`, a node of g's Context (an earlier root of g: the viewer prints every pass's).
  AsmPrinter(const Graph &g, const UOp *root, AsmOptions opts = {});
  ~AsmPrinter();
  AsmPrinter(const AsmPrinter &) = delete;
  AsmPrinter &operator=(const AsmPrinter &) = delete;

  /// The kernel regions in the order their CALLs print (those of the top level, then those the kernels
  /// call, breadth first), then the top level (always last).
  const std::vector<AsmRegion> &regions() const { return regions_; }
  /// The region of a CALL body, or -1 when `body` is none.
  int regionOf(const UOp *body) const;

  /// Numbers the nodes of region `r` (0..n-1): the id/line/arg texts below refer to this region until
  /// the next call.
  void enter(size_t r);
  /// The local id of `u` in the entered region, or -1 when it is not in it.
  int64_t id(const UOp *u) const;

  /// The whole text form: a header comment, every kernel region, then the top level.
  std::string print();
  /// One node's line (no indentation, no newline), in the entered region.
  std::string line(const UOp *u);
  /// The parts of a line: the arg ("" when None; a top-level tuple's elements separated by spaces),
  /// the shape ("4x33"; "" when the node has no shape or a scalar one) and the device ("" when none).
  std::string argText(const UOp *u);
  std::string shapeText(const UOp *u);
  std::string deviceText(const UOp *u);
  /// The tag's text ("" when none).
  std::string tagText(const UOp *u);
  /// The nodes `u`'s arg and tag refer to, in order.
  std::vector<const UOp *> refs(const UOp *u) const;
  /// True when `u` prints its device: it has one and its first source has another (or it has none).
  bool showsDevice(const UOp *u);
  /// How a source of `user` is spelled: `@name` for a CALL's body, else `%ID`.
  std::string operand(const UOp *user, size_t srcIndex);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<AsmRegion> regions_;
};

/// The text form of the graph reachable from g.root (AsmPrinter::print).
std::string printGraphText(const Graph &g, const AsmOptions &opts = {});

} // namespace uopc

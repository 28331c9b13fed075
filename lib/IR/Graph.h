//===- Graph.h - one function graph and its document metadata -------------===//
#pragma once

#include "IR/UOp.h"

#include <memory>
#include <string>

namespace uopc {

struct Schedule; // Passes/Schedule.h

/// What a PAD node fills with (document field semantics.pad_fill).
enum class PadFill : uint8_t { Zero, Invalid };

/// A graph document: the nodes (in a Context), the root, and the header fields of format v1.
struct Graph {
  std::unique_ptr<Context> ctx = std::make_unique<Context>();
  const UOp *root = nullptr;

  std::string producerJson = "{}"; ///< the producer object, compact JSON text, kept verbatim
  PadFill padFill = PadFill::Zero;
  std::string stage;               ///< empty when the document has none

  /// The `schedule` pass's plan of this graph (Passes/Schedule.h: order, buffers, memory): built by that pass
  /// only, kept current by the passes that rewrite nothing but kernel bodies (rewriteKernelBodies); it
  /// describes the graph while its `root` is this graph's root (currentSchedule()). Null before the pass ran.
  std::shared_ptr<const Schedule> schedule;

  /// Node -> id in the file the graph was read from (UINT32_MAX for nodes made later), for messages.
  NodeMap<uint32_t> inputIds{UINT32_MAX};

  /// "node 12 (ADD)" for a node read from the input, "new node (ADD)" for one a pass made.
  std::string describe(const UOp *u) const;
};

} // namespace uopc

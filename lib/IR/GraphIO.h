//===- GraphIO.h - reading and writing graph documents --------------------===//
// Two encodings of the same document: JSON (format v1, schemas/uop-graph.schema.json) and the binary
// .uopb (docs/uopb.md); and the text form people read (IR/AsmPrinter.h, docs/ir-text.md), which reads
// back too. Readers detect the encoding from the content, never from the file name.
// Every problem with the input throws Error with one message naming the node id where there is one.
#pragma once

#include "IR/Graph.h"

#include <string>
#include <string_view>

namespace uopc {

/// Limits that keep absurd input from exhausting the machine; each violation is an Error.
struct ReadLimits {
  size_t maxNodes = 1u << 26;     ///< 67M nodes
  size_t maxSrcs = 1u << 20;      ///< sources of one node
  unsigned maxArgDepth = 64;      ///< nesting of arg tuples/records
  size_t maxArgItems = 1u << 24;  ///< elements of one arg tuple
  size_t maxFileBytes = size_t(4) << 30; ///< readGraphFile: the most bytes of a file (checked before reading it whole)
  /// Rewrite tinygrad 0.14.0's forms to format v1's (IR/ProducerForms.h). Off only where a test needs the
  /// document exactly as written.
  bool producerForms = true;
};

/// Reads a JSON, .uopb or text document (detected by content). `name` is used in messages.
Graph readGraph(std::string_view bytes, std::string_view name = "<input>", const ReadLimits &limits = {});
/// Reads a file; throws Error when it cannot be read.
Graph readGraphFile(const std::string &path, const ReadLimits &limits = {});

Graph readGraphJson(std::string_view text, std::string_view name = "<input>", const ReadLimits &limits = {});
Graph readGraphBinary(std::string_view bytes, std::string_view name = "<input>", const ReadLimits &limits = {});
/// Reads the text form as AsmPrinter prints it (with AsmOptions::full(), or any text that elides nothing):
/// printing the graph again gives the same bytes. Hand-written text may number nodes freely (each id defined
/// once, before its uses). Like JSON and .uopb it gets the producer forms' rewrite (IR/ProducerForms.h: a
/// no-op on what uopc prints; hand-written weak constants inside typed ops commit), so that one graph is one
/// graph in every encoding. An elided value, a malformed line or an undefined id is an Error naming
/// NAME:LINE:COL.
Graph readGraphText(std::string_view text, std::string_view name = "<input>", const ReadLimits &limits = {});

/// Writes the graph reachable from g.root as JSON: nodes in topological order, ids 0..n-1, one node a
/// line. Deterministic: the same graph gives the same bytes.
std::string writeGraphJson(const Graph &g);
/// Writes the same document in the .uopb encoding.
std::string writeGraphBinary(const Graph &g);

/// True when the bytes start like a .uopb document.
bool looksBinary(std::string_view bytes);
/// True when the bytes start (after white space) like the text form: "//", '%' or "kernel @".
bool looksText(std::string_view bytes);

/// Structural equality of two documents' graphs: same node set (compared by structure, independent
/// of node order and ids), same root, same header fields. On inequality `why` says where they differ.
bool sameGraph(const Graph &a, const Graph &b, std::string *why = nullptr);

} // namespace uopc

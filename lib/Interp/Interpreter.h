//===- Interpreter.h - the reference interpreter for tensor-level graphs ---===//
// Evaluates a function graph directly on the CPU, node by node, materializing every value as a dense
// array: slow and simple on purpose, it is the yardstick every pass is checked against. It follows
// tinygrad's meaning of each op at the corpus commit, multi-device forms included: a value lives on one
// or several devices, and a MULTI value is sharded along one axis (tinygrad's UOp.axis), with one
// evaluation per device where `_device_num` appears.
#pragma once

#include "IR/Graph.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace uopc {

/// A buffer slot of the function, as its PARAMs declare it.
struct SlotInfo {
  int64_t slot = -1;
  DType dtype = DType::Void;
  int64_t numel = 0;                ///< elements per device
  std::vector<std::string> devices; ///< one entry per device; a PARAM without a device has one "" entry
};

/// What one evaluation starts from.
struct InterpInputs {
  /// slot -> raw little-endian bytes, one string per device of the slot. Slots not given start zeroed.
  std::map<int64_t, std::vector<std::string>> buffers;
  /// Symbolic variables (scalar PARAMs with a name) by name.
  std::map<std::string, int64_t> vars;
};

/// Final contents of every buffer slot: slot -> raw bytes per device.
using InterpOutputs = std::map<int64_t, std::vector<std::string>>;

/// The buffer slots (PARAMs with slot >= 0 and a size) reachable from the root, by slot number, with
/// sizes evaluated under `vars`. Throws Error when two PARAMs of one slot disagree.
std::vector<SlotInfo> bufferSlots(const Graph &g, const std::map<std::string, int64_t> &vars);

/// The names of the symbolic variables (scalar PARAMs with slot >= 0) reachable from the root.
std::vector<std::string> graphVariables(const Graph &g);
/// tinygrad 0.14.0's positional names of those variables: "p<slot>" -> the variable's name, for each one whose
/// name differs and whose p<slot> no other variable has (uopc-run --var accepts either).
std::map<std::string, std::string> graphVariableAliases(const Graph &g);

/// Evaluates the graph once. Throws Error for a graph it cannot evaluate, naming the node
/// ("node 12 (THREEFRY): ..."), and for inputs of the wrong size.
///
/// Semantics worth knowing:
///  - a PARAM read directly gives the buffer as it was before any STORE of the evaluation; AFTER(x, ...)
///    reads x's buffer as it is once its dependencies ran (nodes run in topological order);
///  - STORE writes through movement ops on its target (RESHAPE, SHRINK, PAD, ..., MULTI); elements that
///    are Invalid, or that a PAD of the target adds, are not written (tinygrad's gated store);
///  - PAD fills 0, or Invalid in graphs with pad_fill "invalid" (bool pads always fill false); Invalid
///    poisons ALU ops and REDUCE lanes (reduce-identity makes Invalid along a reduced axis the identity),
///    and contributes the identity to ALLREDUCE;
///  - `_device_num` (a scalar PARAM, slot -1) takes the values 0..vmax, one per device, so a graph after
///    multi-lower evaluates once per device; a COPY of such a value to one device takes, per element,
///    the first device where it is valid.
InterpOutputs interpret(const Graph &g, const InterpInputs &inputs);

/// What `uopc-run --interpret` does, minus flag parsing.
struct RunRequest {
  std::string graphPath;
  std::string pipeline = "verify";
  /// slot -> files, one per device, in the order of the slot's devices.
  std::map<int64_t, std::vector<std::string>> inputFiles, outputFiles;
  std::map<std::string, int64_t> vars;
};
/// Parses "SLOT=FILE[,FILE...]"; throws Error on a malformed spec.
std::pair<int64_t, std::vector<std::string>> parseSlotFiles(const std::string &spec);
/// Parses "NAME=VALUE"; throws Error on a malformed spec.
std::pair<std::string, int64_t> parseVarBinding(const std::string &spec);
/// Reads the graph, runs the pipeline on it, loads the inputs (a missing or wrongly sized file is an
/// Error), interprets, and writes the requested outputs.
void runInterpret(const RunRequest &request);

} // namespace uopc

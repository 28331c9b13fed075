//===- GraphIOInternal.h - helpers shared by the graph readers/writers ---===//
// Private to lib/IR/{GraphIO,JsonReader,JsonWriter,BinaryFormat}.cpp; not part of the public API.
#pragma once

#include "IR/Graph.h"
#include "IR/UOp.h"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace uopc::io {

/// Most keys of one arg object (a dataclass record): far above any real dataclass, low enough that the
/// duplicate-key checks (quadratic) stay cheap on hostile input.
inline constexpr size_t kMaxRecordFields = 4096;

/// Appends `s` as a JSON string literal (quotes included). Control characters are escaped; valid UTF-8
/// is copied; a byte that is not part of valid UTF-8 is written as \u00XX (its Latin-1 reading), so the
/// output is always valid JSON.
void appendJsonString(std::string &out, std::string_view s);

/// Python's repr() of a float: shortest round-trip digits, scientific notation when the decimal
/// exponent is below -4 or at least 16 ("1e-05", "1e+16"), ".0" for integral values, "inf", "-inf",
/// "nan", "-0.0". Writes at most 32 chars to `out`, returns the length.
size_t pyFloatRepr(double v, char *out);
/// Parses a float written like Python's repr (decimal, optional exponent, "inf", "-inf", "nan").
/// Returns nullopt for anything else or a finite value out of double range.
std::optional<double> parsePyFloat(std::string_view s);
/// True when a finite double has no fractional part (so format v1 writes it as {"$":"float"}).
bool isIntegralFloat(double v);

/// Validates a bigint literal: optional '-', decimal digits without leading zeros, not "-0".
bool validBigInt(std::string_view s);
/// The arg for an integer given as decimal text: argInt/argUInt when it fits, else argBigInt.
const Arg *intArgFromDecimal(Context &ctx, std::string_view digits);

/// Refuses a graph (Error naming `where` and the node) whose variable (a scalar weakint PARAM) has a name
/// that is not an identifier of at most kMaxVariableName characters: the name is written into kernel
/// sources and their signature comment, the manifest reads only such names, and a C argument is made of it.
/// Every reader calls it on the graph it returns.
void checkVariableNames(const Graph &g, std::string_view where);
inline constexpr size_t kMaxVariableName = 200;

/// Standard base64 with '=' padding (Python's base64.b64encode).
std::string base64Encode(std::string_view raw);
/// Strict decoding; nullopt for a bad length, a bad character or misplaced padding.
std::optional<std::string> base64Decode(std::string_view text);

/// True when `s` is well-formed UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
bool validUtf8(std::string_view s);

/// The order the writers emit nodes in: toposort(root) (sources in order, then nodes an arg refers to),
/// extended so that a node a tag refers to also comes before the node carrying the tag.
std::vector<const UOp *> writeOrder(const UOp *root);

} // namespace uopc::io

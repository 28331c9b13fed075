//===- Error.h - the one error type of uopc -------------------------------===//
// Bad input is normal input: every problem with a graph, a flag or a file is reported by throwing
// uopc::Error with one clear message (naming the node where there is one). The driver catches it,
// prints "uopc: error: <message>" and exits 1. Nothing else is thrown on purpose.
//
// Text the user did not write in the command line's own words (a name from a graph, a manifest or a
// safetensors file; a flag's value) goes into a message through quote(): one line, escaped, shortened.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace uopc {

class Error : public std::runtime_error {
public:
  explicit Error(const std::string &msg) : std::runtime_error(msg) {}
};

/// Throws Error(msg); for call sites that read better as a statement.
[[noreturn]] inline void fail(const std::string &msg) { throw Error(msg); }

/// The most bytes of an untrusted text a message quotes (quote()'s default).
inline constexpr size_t kMaxQuoted = 200;

/// Untrusted text for a message: in single quotes, on one line and safe to print on a terminal. Quotes,
/// backslashes, control characters (newline, ESC, ...), C1 controls and bytes that are not UTF-8 are
/// escaped (\', \\, \n, \x1b); valid UTF-8 text stays as it is. A text longer than `max` bytes is cut there
/// and followed by "... (N bytes)".
std::string quote(std::string_view s, size_t max = kMaxQuoted);

/// A whole message as a tool prints it: control characters other than newline and tab escaped, so that
/// nothing in it reaches the terminal as an escape sequence (quote() is what keeps a name on one line).
std::string printable(std::string_view message);

} // namespace uopc

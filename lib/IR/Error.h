//===- Error.h - the one error type of uopc -------------------------------===//
// Bad input is normal input: every problem with a graph, a flag or a file is reported by throwing
// uopc::Error with one clear message (naming the node where there is one). The driver catches it,
// prints "uopc: error: <message>" and exits 1. Nothing else is thrown on purpose.
#pragma once

#include <stdexcept>
#include <string>

namespace uopc {

class Error : public std::runtime_error {
public:
  explicit Error(const std::string &msg) : std::runtime_error(msg) {}
};

/// Throws Error(msg); for call sites that read better as a statement.
[[noreturn]] inline void fail(const std::string &msg) { throw Error(msg); }

} // namespace uopc

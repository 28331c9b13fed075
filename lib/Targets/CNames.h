//===- CNames.h - untrusted names in generated C: identifiers, comments, strings, file names ===//
// A graph's names (its kernels', variables' and parameters', its devices') come from whoever wrote the
// graph. Each context of generated C text they reach has one function here, and nothing else writes them:
// an identifier (sanitizeCName for the kernels' symbols and variable arguments, cIdentifier for the
// library's struct fields), a comment (cComment), a string literal (cStringLiteral), a header's file name
// (isSystemHeaderName). What these refuse or rewrite is whatever would change what the output means: a C or
// C++ keyword, a macro of the headers the output includes (or a compiler predefines, `linux`), a comment
// end, a line break.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace uopc {

/// The longest identifier the C names here produce (C11 promises 63 significant characters; the cut keeps a
/// hash of what it cut).
inline constexpr size_t kMaxCName = 64;

/// [A-Za-z_][A-Za-z0-9_]*.
bool isCIdentifier(std::string_view s);

/// True for a name a C or C++ compiler would not take as an ordinary identifier in uopc's output: a C11,
/// C23 or C++20 keyword; a macro (or type) of the headers the output includes (stdbool, stddef, stdint,
/// math, string) or that a program commonly includes before it (limits, float, stdio, stdlib, errno,
/// assert, complex); gcc's predefined `linux`, `unix`, `i386`; a reserved identifier (`__x`, `_X`).
bool isReservedCName(std::string_view s);

/// `name` as a C identifier that is safe as a file name too: returned as it is when it is an identifier of at
/// most kMaxCName characters that isReservedCName refuses not; otherwise [A-Za-z0-9_] only (others become
/// '_'), "k_" first when it would start with a digit or '_', cut to kMaxCName - 9 characters and followed by
/// '_' and a hash of the whole name, so that two names differing only after the cut (or in the characters
/// made '_') stay distinct.
std::string sanitizeCName(std::string_view name);

/// `name` as one C identifier among others the caller keeps distinct (the library's struct fields):
/// [A-Za-z0-9_] only (others become '_'), cut to kMaxCName characters, `prefix` (which starts with a letter)
/// first when it would not start with a letter, '_' after it when isReservedCName.
std::string cIdentifier(std::string_view name, std::string_view prefix);

/// Text for the inside of a /* */ comment: on one line, no comment start or end ("/*", "*/" are spaced),
/// no trigraph ("??"), control characters and bytes >= 0x80 as \xNN.
std::string cComment(std::string_view s);

/// A C string literal (quotes included) holding exactly the bytes of `s`: '"' and '\\' escaped, every byte
/// outside printable ASCII (and '?', against trigraphs) as an octal escape.
std::string cStringLiteral(std::string_view s);

/// True when NAME.h is the name of a C11, POSIX or common system header (`math`, `unistd`, `pthread`, ...,
/// compared without case): a library of that name would hide the system's from a program built with -I DIR.
bool isSystemHeaderName(std::string_view name);

} // namespace uopc

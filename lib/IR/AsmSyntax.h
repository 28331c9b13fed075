//===- AsmSyntax.h - the words of the text form, shared by its printer and reader -===//
// Private to lib/IR/{AsmPrinter,TextReader}.cpp. The printer writes a name or a string bare only when the
// reader's classification of that word gives back what was printed; both ask classifyWord, so the two
// cannot drift apart.
#pragma once

#include <cstdint>
#include <string_view>

namespace uopc::asmtext {

/// What a bare word of an arg reads back as.
enum class Word : uint8_t { None, True, False, Invalid, Inf, Nan, AxisType, AddrSpace, Op, DType, String };

/// The prefixes that name a word's kind when the bare word would read back as another kind
/// (`AddrSpace.GLOBAL` where `GLOBAL` alone is an AxisType, `Ops.REDUCE` where `REDUCE` is one).
inline constexpr std::string_view kOpsPrefix = "Ops.", kAxisTypePrefix = "AxisType.",
                                  kAddrSpacePrefix = "AddrSpace.", kDTypePrefix = "dtypes.";

/// True for a word the lexer reads as one bare word: `[A-Za-z_][A-Za-z0-9_.:]*`.
bool bareWord(std::string_view s);

/// What the bare word `w` (bareWord(w)) reads back as. Unqualified names that several kinds share resolve
/// to `prefer` when it is one of them, else in the order AxisType, AddrSpace, Op, DType; a word that names
/// nothing is a String. The printer prefers AddrSpace in a record's `addrspace` field (the only place an
/// AddrSpace appears), so `addrspace=LOCAL` needs no prefix.
Word classifyWord(std::string_view w, Word prefer = Word::None);

/// The preference for the value of a record field named `key`.
inline Word preferFor(std::string_view key) { return key == "addrspace" ? Word::AddrSpace : Word::None; }

/// A name printed bare after '@' (a kernel region's), else quoted: `[A-Za-z0-9_.]+`.
bool plainName(std::string_view s);

/// A record field key printed bare before '=' (else quoted): an identifier.
bool identifier(std::string_view s);

/// A stage printed as it is at the end of the header line (else quoted): `[A-Za-z0-9_.:+/-]+`.
bool plainStage(std::string_view s);

} // namespace uopc::asmtext

//===- AsmSyntax.cpp - the words of the text form --------------------------===//
#include "IR/AsmSyntax.h"

#include "IR/Types.h"

namespace uopc::asmtext {
namespace {
bool alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool digit(char c) { return c >= '0' && c <= '9'; }
} // namespace

bool bareWord(std::string_view s) {
  if (s.empty() || !alpha(s[0])) return false;
  for (char c : s)
    if (!(alpha(c) || digit(c) || c == '.' || c == ':')) return false;
  return true;
}

Word classifyWord(std::string_view w, Word prefer) {
  if (w == "None") return Word::None;
  if (w == "True") return Word::True;
  if (w == "False") return Word::False;
  if (w == "Invalid") return Word::Invalid;
  if (w == "inf") return Word::Inf;
  if (w == "nan") return Word::Nan;
  auto strip = [&](std::string_view prefix) {
    return w.size() > prefix.size() && w.substr(0, prefix.size()) == prefix ? w.substr(prefix.size()) : std::string_view();
  };
  if (std::string_view n = strip(kAxisTypePrefix); !n.empty() && axisTypeFromName(n)) return Word::AxisType;
  if (std::string_view n = strip(kAddrSpacePrefix); !n.empty() && addrSpaceFromName(n)) return Word::AddrSpace;
  if (std::string_view n = strip(kOpsPrefix); !n.empty() && opFromName(n)) return Word::Op;
  if (std::string_view n = strip(kDTypePrefix); !n.empty() && dtypeFromName(n)) return Word::DType;
  bool axis = axisTypeFromName(w).has_value(), addr = addrSpaceFromName(w).has_value();
  bool op = opFromName(w).has_value(), dt = dtypeFromName(w).has_value();
  if (prefer == Word::AddrSpace && addr) return Word::AddrSpace;
  if (axis) return Word::AxisType;
  if (addr) return Word::AddrSpace;
  if (op) return Word::Op;
  if (dt) return Word::DType;
  return Word::String;
}

bool plainName(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(alpha(c) || digit(c) || c == '.')) return false;
  return true;
}

bool identifier(std::string_view s) {
  if (s.empty() || !alpha(s[0])) return false;
  for (char c : s)
    if (!(alpha(c) || digit(c))) return false;
  return true;
}

bool plainStage(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(alpha(c) || digit(c) || c == '.' || c == ':' || c == '+' || c == '/' || c == '-')) return false;
  return s.find("//") == std::string_view::npos;
}

} // namespace uopc::asmtext

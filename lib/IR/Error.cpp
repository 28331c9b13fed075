//===- Error.cpp - untrusted text in messages -----------------------------===//
#include "IR/Error.h"

#include <cstdint>
#include <cstdio>

namespace uopc {
namespace {

/// The length of the UTF-8 sequence at s[i] when it is valid and not a C1 control (U+0080..U+009F), else 0.
size_t printableUtf8(std::string_view s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
  if (!n || i + n > s.size()) return 0;
  uint32_t cp = c & (0x7f >> n);
  for (size_t k = 1; k < n; ++k) {
    unsigned char d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (d & 0x3f);
  }
  bool overlong = (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
  if (overlong || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp < 0xa0)) return 0;
  return n;
}

void hexEscape(std::string &out, unsigned char c) {
  char b[8];
  std::snprintf(b, sizeof b, "\\x%02x", c);
  out += b;
}

} // namespace

std::string quote(std::string_view s, size_t max) {
  std::string out = "'";
  size_t i = 0;
  for (; i < s.size() && i < max;) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      size_t n = printableUtf8(s, i);
      if (n && i + n <= max) out.append(s.substr(i, n)), i += n;
      else if (n) break; // (a character the cut would split)
      else hexEscape(out, c), ++i;
      continue;
    }
    if (c == '\'' || c == '\\') out += '\\', out += static_cast<char>(c);
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) hexEscape(out, c);
    else out += static_cast<char>(c);
    ++i;
  }
  out += "'";
  if (i < s.size()) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

std::string printable(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  for (size_t i = 0; i < message.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(message[i]);
    // (0xc2 0x80..0x9f: a C1 control in UTF-8, which a terminal may take as CSI)
    bool c1 = c == 0xc2 && i + 1 < message.size() && static_cast<unsigned char>(message[i + 1]) < 0xa0 &&
              static_cast<unsigned char>(message[i + 1]) >= 0x80;
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) hexEscape(out, c);
    else if (c1) hexEscape(out, c), hexEscape(out, static_cast<unsigned char>(message[++i]));
    else out += static_cast<char>(c);
  }
  return out;
}

} // namespace uopc

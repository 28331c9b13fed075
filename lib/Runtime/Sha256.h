//===- Sha256.h - SHA-256 (FIPS 180-4), self-contained ---------------------===//
// The kernel cache's content hash (Runner.cpp): a cryptographic hash, so that no crafted kernel set
// can be made to collide with another's cached object. Small and dependency-free (LLVM's SHA256 may only
// be used inside lib/Targets, and libcrypto is not a build dependency).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace uopc {

class Sha256 {
public:
  Sha256();
  void update(const void *data, size_t n);
  void update(std::string_view s) { update(s.data(), s.size()); }
  /// The digest; the object must not be updated afterwards.
  std::array<uint8_t, 32> final();
  /// The digest as 64 lowercase hex digits.
  std::string hexFinal();

  static std::string hex(std::string_view data) {
    Sha256 h;
    h.update(data);
    return h.hexFinal();
  }

private:
  void block(const uint8_t *p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t used_ = 0;
  uint64_t total_ = 0;
};

} // namespace uopc

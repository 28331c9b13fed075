// SHA-256 (lib/Runtime/Sha256.h, the kernel cache's key) against FIPS 180-4 / NIST test vectors.
#include "Runtime/Sha256.h"

#include <catch2/catch.hpp>

#include <string>

using namespace uopc;

TEST_CASE("SHA-256 matches the NIST vectors", "[sha256]") {
  CHECK(Sha256::hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(Sha256::hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(Sha256::hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(Sha256::hex(std::string(1000000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("SHA-256 gives the same digest however the input is split", "[sha256]") {
  std::string msg;
  for (int i = 0; i < 300; ++i) msg += static_cast<char>(i * 7 + 3);
  std::string whole = Sha256::hex(msg);
  for (size_t cut : {0, 1, 55, 56, 63, 64, 65, 127, 128, 299}) {
    Sha256 h;
    h.update(msg.substr(0, cut));
    h.update(msg.substr(cut));
    CHECK(h.hexFinal() == whole);
  }
  CHECK(Sha256::hex(msg.substr(0, 299)) != whole);
}

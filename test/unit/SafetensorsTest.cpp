// uopc-run's safetensors reader and writer (Runtime/Safetensors.h).
#include "Runtime/Safetensors.h"
#include "IR/Error.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace uopc;
namespace fs = std::filesystem;

namespace {

std::string tempPath(const std::string &name) {
  return (fs::temp_directory_path() / ("uopc-st-test-" + std::to_string(getpid()) + "-" + name)).string();
}

void writeRaw(const std::string &path, const std::string &bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

std::string withHeader(const std::string &json, const std::string &data) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>((json.size() >> (8 * i)) & 0xff);
  return out + json + data;
}

} // namespace

TEST_CASE("safetensors round-trips tensors by name", "[safetensors]") {
  std::string p = tempPath("rt.safetensors");
  std::map<std::string, safetensors::Tensor> in;
  in["w@0"] = {"F32", {2}, std::string("\0\0\x80?\0\0\0@", 8)};
  in["b"] = {"I8", {3}, std::string("\x01\x02\x03", 3)};
  in["empty"] = {"F16", {0}, ""};
  safetensors::writeFile(p, in);
  auto out = safetensors::readFile(p);
  REQUIRE(out.size() == 3);
  CHECK(out.at("w@0").dtype == "F32");
  CHECK(out.at("w@0").data == in["w@0"].data);
  CHECK(out.at("b").shape == std::vector<int64_t>{3});
  CHECK(out.at("empty").data.empty());
  // the header is 8-byte aligned, as the format recommends
  std::ifstream f(p, std::ios::binary);
  unsigned char n[8];
  f.read(reinterpret_cast<char *>(n), 8);
  CHECK(n[0] % 8 == 0);
  std::remove(p.c_str());
}

TEST_CASE("malformed safetensors files are refused with one message", "[safetensors]") {
  std::string p = tempPath("bad.safetensors");
  auto refuses = [&](const std::string &bytes, const std::string &part) {
    writeRaw(p, bytes);
    try {
      safetensors::readFile(p);
      FAIL("accepted: " << part);
    } catch (const Error &e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(part) != std::string::npos);
    }
  };
  refuses("abc", "shorter than its 8-byte header size");
  refuses(withHeader("{", ""), "the header is not JSON");
  refuses(std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) + "{}", "exceeds the file");
  refuses(withHeader("[]", ""), "not a JSON object");
  refuses(withHeader(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "abcd"), "4 bytes for 2 F32 elements");
  refuses(withHeader(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})", "abcd"), "leave the data");
  refuses(withHeader(R"({"x":{"dtype":"Q7","shape":[1],"data_offsets":[0,1]}})", "a"), "which uopc does not know");
  refuses(withHeader(R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", ""), "shape entries must be integers");
  refuses(withHeader(R"({"x":{"dtype":"F32"}})", ""), "needs dtype, shape and data_offsets");
  std::remove(p.c_str());
  CHECK_THROWS_AS(safetensors::readFile(tempPath("missing")), Error);
  CHECK(safetensors::codeOf("bfloat16") == "BF16");
  CHECK_THROWS_AS(safetensors::codeOf("weakint"), Error);
}

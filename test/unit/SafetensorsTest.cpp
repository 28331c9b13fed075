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
  refuses(std::string("\x10\0\0\0\0\0\0\0", 8) + "{}", "exceeds the file");
  refuses(std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) + "{}", "more than the format's limit of 100000000 bytes");
  refuses(withHeader("[]", ""), "the header does not start with '{'");
  refuses(withHeader("{} []", ""), "the header is not JSON");
  refuses(withHeader(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "abcd"), "4 bytes for 2 F32 elements");
  refuses(withHeader(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})", "abcd"), "leave the data");
  refuses(withHeader(R"({"x":{"dtype":"Q7","shape":[1],"data_offsets":[0,1]}})", "a"), "which uopc does not know");
  refuses(withHeader(R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", ""), "shape entries must be integers");
  refuses(withHeader(R"({"x":{"dtype":"F32"}})", ""), "needs dtype, shape and data_offsets");
  // what the format forbids (issue 30): a name twice, overlapping or gapped data, bytes no tensor holds
  refuses(withHeader(R"({"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"x":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})", "ab"),
          "the header names 'x' twice");
  refuses(withHeader(R"({"__metadata__":{},"__metadata__":{}})", ""), "the header names '__metadata__' twice");
  refuses(withHeader(R"({"x":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}})", "a"), "has the key 'dtype' twice");
  refuses(withHeader(R"({"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"y":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})", "abc"),
          "tensor 'y': data_offsets [1, 3] overlap another tensor's bytes");
  refuses(withHeader(R"({"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"y":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", "ab"),
          "overlap another tensor's bytes");
  refuses(withHeader(R"({"x":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})", "ab"),
          "tensor 'x': data_offsets [1, 2] leave bytes [0, 1) of the data to no tensor");
  refuses(withHeader(R"({"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", "ab"), "the data has 2 bytes, the tensors cover 1");
  refuses(withHeader(R"({})", "ab"), "the data has 2 bytes, the tensors cover 0");
  refuses(withHeader(R"({"__metadata__":{"a":1}})", ""), "__metadata__ must map names to strings; 'a' is a number");
  refuses(withHeader(R"({"x":[1]})", ""), "tensor 'x' is an array, not an object");
  refuses(withHeader(R"({"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}})", "a"), "data_offsets must be [begin, end]");
  refuses(withHeader(R"({"x":{"dtype":"U8","shape":[1.5],"data_offsets":[0,1]}})", "a"), "shape entries must be integers >= 0");
  refuses(withHeader(R"({"x":{"dtype":"U8","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,1]}})", "a"), "shape too large");
  // a name with control characters is quoted on one line
  refuses(withHeader("{\"a\\u001b[31m\\nb\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,1]}}", "a"),
          "tensor 'a\\x1b[31m\\nb': 1 bytes for 2 U8 elements");
  std::remove(p.c_str());
  CHECK_THROWS_AS(safetensors::readFile(tempPath("missing")), Error);
  CHECK(safetensors::codeOf("bfloat16") == "BF16");
  CHECK_THROWS_AS(safetensors::codeOf("weakint"), Error);
}

TEST_CASE("safetensors: what the format allows is read", "[safetensors]") {
  std::string p = tempPath("ok.safetensors");
  // unaligned offsets, zero-size tensors anywhere, fields the format does not define, padding spaces
  writeRaw(p, withHeader(R"({"__metadata__":{"format":"pt"},"b":{"dtype":"U8","shape":[3],"data_offsets":[2,5],"extra":{"k":[1,{"k":2}]}},)"
                         R"("e":{"dtype":"F32","shape":[0,4],"data_offsets":[2,2]},"a":{"dtype":"I16","shape":[1],"data_offsets":[0,2]}}   )",
                         "\x01\x02xyz"));
  auto t = safetensors::readFile(p);
  REQUIRE(t.size() == 3);
  CHECK(t.at("a").data == "\x01\x02");
  CHECK(t.at("b").data == "xyz");
  CHECK(t.at("e").data.empty());
  CHECK(t.at("e").shape == std::vector<int64_t>{0, 4});
  std::remove(p.c_str());
}

TEST_CASE("safetensors: only the header and the tensors asked for are read", "[safetensors]") {
  // 8 GiB of data in a sparse file: a reader that copied the file would need 8 GiB, this one reads the
  // header and then the 4 bytes asked for
  std::string p = tempPath("big.safetensors");
  uint64_t big = uint64_t(8) << 30;
  std::string header = R"({"small":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"big":{"dtype":"U8","shape":[)" +
                       std::to_string(big) + R"(],"data_offsets":[4,)" + std::to_string(big + 4) + "]}}";
  writeRaw(p, withHeader(header, "abcd"));
  fs::resize_file(p, 8 + header.size() + 4 + big);
  safetensors::Reader r(p);
  CHECK(r.tensors().size() == 2);
  CHECK(r.tensors().at("big").end == big + 4);
  CHECK(r.read("small") == "abcd");
  std::remove(p.c_str());
}

TEST_CASE("safetensors: a header over 100 MB is refused before it is read", "[safetensors]") {
  // a 200 MB header (a sparse file): refused from its 8-byte size, without reading or parsing it
  std::string p = tempPath("huge-header.safetensors");
  uint64_t n = 200'000'000;
  std::string size;
  for (int i = 0; i < 8; ++i) size += static_cast<char>((n >> (8 * i)) & 0xff);
  writeRaw(p, size + "{");
  fs::resize_file(p, 8 + n);
  try {
    safetensors::Reader r(p);
    FAIL("accepted");
  } catch (const Error &e) {
    CHECK(std::string(e.what()).find("the header size 200000000 is more than the format's limit of 100000000 bytes") != std::string::npos);
  }
  std::remove(p.c_str());
}

TEST_CASE("safetensors: parseHeader checks a header held in memory", "[safetensors]") {
  auto t = safetensors::parseHeader(R"({"x":{"dtype":"BOOL","shape":[],"data_offsets":[0,1]}})", 1, "mem");
  REQUIRE(t.size() == 1);
  CHECK(t.at("x").shape.empty());
  CHECK_THROWS_AS(safetensors::parseHeader(R"({"x":{"dtype":"BOOL","shape":[],"data_offsets":[0,1]}})", 2, "mem"), Error);
  CHECK_THROWS_AS(safetensors::parseHeader("", 0, "mem"), Error);
}

TEST_CASE("safetensors files are written atomically", "[safetensors]") {
  // the old file stays whole when the new one cannot be written; a symlink is replaced, its target kept
  std::string dir = tempPath("atomic");
  fs::create_directories(dir);
  std::string target = dir + "/target", link = dir + "/link.safetensors";
  writeRaw(target, "keep me");
  fs::create_symlink(target, link);
  std::map<std::string, safetensors::Tensor> in;
  in["x"] = {"U8", {1}, "z"};
  safetensors::writeFile(link, in);
  CHECK(!fs::is_symlink(link));
  CHECK(safetensors::readFile(link).at("x").data == "z");
  std::ifstream f(target);
  std::string kept((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  CHECK(kept == "keep me");
  CHECK_THROWS_AS(safetensors::writeFile(dir + "/no-such-dir/x.safetensors", in), Error);
  fs::remove_all(dir);
}

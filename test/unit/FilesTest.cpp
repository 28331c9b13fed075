// Output files written whole or not at all (IR/Files.h).
#include "IR/Error.h"
#include "IR/Files.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace uopc;
namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void put(const std::string &path, const std::string &bytes) { std::ofstream(path, std::ios::binary) << bytes; }

} // namespace

TEST_CASE("writeFileAtomic replaces what is at the path, never writes through it", "[files]") {
  std::string dir = (fs::temp_directory_path() / ("uopc-files-test-" + std::to_string(::getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  SECTION("a new file, then its replacement") {
    writeFileAtomic(dir + "/a", "one");
    writeFileAtomic(dir + "/a", "two");
    CHECK(slurp(dir + "/a") == "two");
  }
  SECTION("a symlink is replaced, its target kept") {
    put(dir + "/target", "keep");
    fs::create_symlink("target", dir + "/link");
    writeFileAtomic(dir + "/link", "new");
    CHECK(!fs::is_symlink(dir + "/link"));
    CHECK(slurp(dir + "/link") == "new");
    CHECK(slurp(dir + "/target") == "keep");
  }
  SECTION("a dangling symlink is replaced") {
    fs::create_symlink("nowhere", dir + "/dangling");
    writeFileAtomic(dir + "/dangling", "x");
    CHECK(!fs::is_symlink(dir + "/dangling"));
    CHECK(!fs::exists(dir + "/nowhere"));
  }
  SECTION("a hard link's other name keeps the old contents") {
    put(dir + "/h1", "old");
    fs::create_hard_link(dir + "/h1", dir + "/h2");
    writeFileAtomic(dir + "/h1", "new");
    CHECK(slurp(dir + "/h1") == "new");
    CHECK(slurp(dir + "/h2") == "old");
  }
  SECTION("the replaced file's permissions stay") {
    put(dir + "/private", "secret");
    ::chmod((dir + "/private").c_str(), 0600);
    writeFileAtomic(dir + "/private", "new secret");
    struct stat st {};
    REQUIRE(::stat((dir + "/private").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
  }
  SECTION("a device is written in place, a directory refused, a missing folder refused") {
    writeFileAtomic("/dev/null", "nothing");
    CHECK(fs::is_character_file("/dev/null"));
    CHECK_THROWS_AS(writeFileAtomic(dir, "x"), Error);
    CHECK_THROWS_AS(writeFileAtomic(dir + "/no/such/dir", "x"), Error);
    CHECK_THROWS_AS(writeFileAtomic("", "x"), Error);
  }
  // no temporary file is left behind
  for (const auto &e : fs::directory_iterator(dir)) CHECK(e.path().filename().string().find("uopc-tmp") == std::string::npos);
  fs::remove_all(dir);
}

// The C build of uopc --tune's candidates (Runtime/KernelCache.h, buildKernelObject): a build given seconds
// stops its compilers when they run past them, the compiler driver's children too, and fails; one given none
// waits. The compiler is a script ($UOPC_CC) that starts a child (as gcc starts cc1) and sleeps.
#include "IR/Error.h"
#include "Runtime/KernelCache.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace uopc;
namespace fs = std::filesystem;

namespace {
// a scratch directory with kernel k.c and a compiler script that sleeps `seconds` in a child, then fails
struct SlowCompiler {
  fs::path dir;
  std::string oldCc, oldTmp;
  bool hadCc = false, hadTmp = false;
  explicit SlowCompiler(int seconds) {
    std::string tmpl = (fs::temp_directory_path() / "uopc-build-test-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()));
    dir = tmpl;
    std::ofstream(dir / "k.c") << "void k(float *o) { o[0] = 1.0f; }\n";
    fs::path cc = dir / "slow-cc";
    // (the child shell's $0 names this directory, so that the test finds its own child and no other's)
    // (and it leaves a file in its TMPDIR, as a killed cc1 leaves its ccXXXXXX.s: the build's own directory)
    std::ofstream(cc) << "#!/bin/sh\necho > \"$TMPDIR/ccleft.s\"\n/bin/sh -c 'sleep " << seconds << "' " << dir.string()
                      << "/child\nexit 1\n";
    ::chmod(cc.c_str(), 0700);
    if (const char *old = std::getenv("UOPC_CC")) oldCc = old, hadCc = true;
    ::setenv("UOPC_CC", cc.c_str(), 1);
    fs::create_directory(dir / "tmp");
    if (const char *old = std::getenv("TMPDIR")) oldTmp = old, hadTmp = true;
    ::setenv("TMPDIR", (dir / "tmp").c_str(), 1);
  }
  ~SlowCompiler() {
    if (hadCc) ::setenv("UOPC_CC", oldCc.c_str(), 1);
    else ::unsetenv("UOPC_CC");
    if (hadTmp) ::setenv("TMPDIR", oldTmp.c_str(), 1);
    else ::unsetenv("TMPDIR");
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  // whether the compiler's child shell still runs (its command line names this directory's "child")
  bool childLeft() const {
    std::error_code ec;
    for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
      std::ifstream f(it->path() / "cmdline");
      std::string cmd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      if (cmd.find(dir.string() + "/child") != std::string::npos) return true;
    }
    return false;
  }
};
} // namespace

TEST_CASE("a candidate's build past its seconds is stopped, its compiler's children too", "[kernelcache]") {
  SlowCompiler cc(30);
  auto t0 = std::chrono::steady_clock::now();
  std::string what;
  try {
    buildKernelObject(cc.dir, {"k.c"}, "", "native", cc.dir, 0.5);
  } catch (const Error &e) {
    what = e.what();
  }
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(what.find("took more than the 0.5 s it was given: stopped") != std::string::npos);
  CHECK(took < 10);
  CHECK_FALSE(cc.childLeft());
  // the compiler's temporary file went with the build's working directory, not into this process's TMPDIR
  CHECK_FALSE(fs::exists(cc.dir / "tmp" / "ccleft.s"));
  CHECK(fs::is_empty(cc.dir / "tmp"));
}

TEST_CASE("a build given no seconds waits for its compiler", "[kernelcache]") {
  SlowCompiler cc(1);
  auto t0 = std::chrono::steady_clock::now();
  std::string what;
  try {
    buildKernelObject(cc.dir, {"k.c"}, "", "native", cc.dir);
  } catch (const Error &e) {
    what = e.what();
  }
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(what.find("the C compiler failed") != std::string::npos); // (the script exits 1 after its sleep)
  CHECK(took >= 1.0);
}

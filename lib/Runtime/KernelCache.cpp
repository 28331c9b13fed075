//===- KernelCache.cpp - C kernels compiled once into a per-user cache of shared objects ===//
#include "Runtime/KernelCache.h"

#include "IR/Error.h"
#include "Runtime/ManifestModel.h"
#include "Runtime/Sha256.h"
#include "Targets/CTarget.h"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <iomanip>
#include <optional>
#include <sstream>
#include <cstdio>
#include <deque>
#include <fstream>
#include <thread>
#include <vector>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace uopc {

namespace {

std::string readWhole(const std::string &path, const std::string &what) { return manifest::readBounded(path, what); }

/// Creates `path` (which must not exist: O_EXCL, and O_NOFOLLOW so no planted link is followed), mode 0600.
void writeNewFile(const std::string &path, std::string_view bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) fail("cannot create '" + path + "': " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      ::close(fd);
      fail("error while writing '" + path + "': " + std::strerror(errno));
    }
    done += static_cast<size_t>(w);
  }
  if (::close(fd) != 0) fail("error while writing '" + path + "': " + std::strerror(errno));
}

/// The kernel cache directory, created 0700 when missing, and checked before use: a real directory (not a
/// symbolic link), owned by this user, writable by no one else. Anything else is refused: a shared or
/// planted directory could hold objects someone else wrote.
fs::path openKernelCache() {
  fs::path dir = kernelCacheDir();
  std::error_code ec;
  if (dir.has_parent_path() && !fs::exists(dir.parent_path(), ec)) {
    // the cache's parent ($XDG_CACHE_HOME or ~/.cache): owner-only, as XDG asks, when uopc-run creates it
    fs::create_directories(dir.parent_path(), ec);
    if (ec) fail("cannot create the kernel cache '" + dir.string() + "': " + ec.message());
    ::chmod(dir.parent_path().c_str(), 0700);
  }
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    fail("cannot create the kernel cache '" + dir.string() + "': " + std::strerror(errno));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) fail("cannot use the kernel cache '" + dir.string() + "': " + std::strerror(errno));
  if (S_ISLNK(st.st_mode)) fail("refusing the kernel cache '" + dir.string() + "': it is a symbolic link");
  if (!S_ISDIR(st.st_mode)) fail("refusing the kernel cache '" + dir.string() + "': it is not a directory");
  if (st.st_uid != ::geteuid())
    fail("refusing the kernel cache '" + dir.string() + "': it is owned by uid " + std::to_string(st.st_uid) +
         ", not by this user (uid " + std::to_string(::geteuid()) + ")");
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    fail("refusing the kernel cache '" + dir.string() + "': it is writable by others (mode " +
         [&] {
           char b[8];
           std::snprintf(b, sizeof b, "%04o", unsigned(st.st_mode & 07777));
           return std::string(b);
         }() +
         ")");
  return dir;
}

/// False when `so` is not in the cache; true when it is a regular file of this user that no one else can
/// write. Anything else there (a link, another user's file, a group- or world-writable one) is refused:
/// loading it would run code uopc-run did not build.
bool trustedCachedObject(const fs::path &so) {
  struct stat st {};
  if (::lstat(so.c_str(), &st) != 0) {
    if (errno == ENOENT) return false;
    fail("cannot use the cached kernels '" + so.string() + "': " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) fail("refusing the cached kernels '" + so.string() + "': not a regular file");
  if (st.st_uid != ::geteuid())
    fail("refusing the cached kernels '" + so.string() + "': owned by uid " + std::to_string(st.st_uid) +
         ", not by this user (uid " + std::to_string(::geteuid()) + ")");
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    fail("refusing the cached kernels '" + so.string() + "': writable by others");
  return true;
}

/// SHA-256 of the parts, each prefixed by its length (no two part lists hash alike): the cache key of a
/// compiled kernel set, a cryptographic hash so that no crafted kernel set collides with another's object.
struct Hasher {
  Sha256 sha;
  void add(std::string_view s) {
    uint64_t n = s.size();
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
    sha.update(len, sizeof len);
    sha.update(s);
  }
  std::string hex() { return sha.hexFinal(); }
};

/// A compiler process: its pid and the log its output goes to.
struct Job {
  pid_t pid;
  fs::path log;
};

/// Starts `argv` with stdout and stderr into a new file `log`, in this process's environment but with TMPDIR
/// `tmpdir` where one is given.
Job spawn(std::vector<std::string> argv, const fs::path &log, const std::string &tmpdir = "") {
  std::vector<char *> cargv;
  for (std::string &a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<std::string> env;
  std::vector<char *> cenv;
  if (!tmpdir.empty()) {
    for (char **e = environ; *e; ++e)
      if (std::strncmp(*e, "TMPDIR=", 7) != 0) env.push_back(*e);
    env.push_back("TMPDIR=" + tmpdir);
    for (std::string &e : env) cenv.push_back(e.data());
    cenv.push_back(nullptr);
  }
  pid_t pid;
  int rc = posix_spawnp(&pid, cargv[0], &fa, nullptr, cargv.data(), tmpdir.empty() ? environ : cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) fail("cannot run the C compiler '" + argv[0] + "': " + std::strerror(rc));
  return {pid, log};
}

/// Fails with `job`'s log (shortened) unless its wait status says it succeeded.
void checkExit(const Job &job, int status, const fs::path &dir) {
  std::error_code ec;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string msg = fs::exists(job.log, ec) ? readWhole(job.log.string(), "compiler log") : "";
    if (msg.size() > 2000) msg = msg.substr(0, 2000) + "...";
    fail("the C compiler failed on the kernels of '" + dir.string() + "':\n" + msg);
  }
}

/// When the compilers must be done (uopc --tune's candidates: what is left of a kernel's share of the budget),
/// or none.
using Deadline = std::optional<std::chrono::steady_clock::time_point>;

/// Kills process `pid` and its descendants (the compiler driver's cc1 and as, which would go on running, orphaned,
/// were only the driver killed): the driver stopped first, so that it starts no other, then each generation found
/// in /proc by its parent, the driver last.
void killTree(pid_t pid) {
  ::kill(pid, SIGSTOP);
  std::vector<pid_t> tree{pid};
  for (size_t i = 0; i < tree.size(); ++i) { // (iterative: the tree's generations in turn)
    std::error_code ec;
    for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.empty() || !std::all_of(name.begin(), name.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) continue;
      std::ifstream stat(it->path() / "stat");
      std::string line;
      if (!std::getline(stat, line)) continue;
      size_t close = line.rfind(')'); // (after the command's name, which may hold spaces and parentheses)
      if (close == std::string::npos) continue;
      std::istringstream rest(line.substr(close + 1));
      char state = 0;
      long ppid = 0;
      if (rest >> state >> ppid && ppid == tree[i]) tree.push_back(static_cast<pid_t>(std::stol(name)));
    }
  }
  for (size_t i = tree.size(); i-- > 0;) ::kill(tree[i], SIGKILL);
}

/// Kills every job of `running` and waits for them (no compiler outlives its working directory), then fails: the
/// build ran past its deadline.
[[noreturn]] void stopAll(std::deque<Job> &running, double seconds) {
  for (const Job &j : running) killTree(j.pid);
  for (const Job &j : running) {
    int ignored = 0;
    while (waitpid(j.pid, &ignored, 0) < 0 && errno == EINTR) {
    }
  }
  running.clear();
  std::ostringstream msg;
  msg << "the C compiler took more than the " << std::fixed << std::setprecision(1) << seconds << " s it was given: stopped";
  fail(msg.str());
}

/// Waits for whichever of `running` ends first and removes it; on its failure, waits for the others too
/// (no compiler outlives its working directory), then fails with its log. (The first to end, not the oldest:
/// with two cores, SqueezeNet's second tile unit ended 0.08 s before the first, and its core stayed idle.)
/// Past `deadline` it stops them all and fails.
void finishAny(std::deque<Job> &running, const fs::path &dir, const Deadline &deadline = {}, double seconds = 0) {
  for (;;) {
    for (auto it = running.begin(); it != running.end(); ++it) {
      int status = 0;
      pid_t r = waitpid(it->pid, &status, WNOHANG);
      if (r == 0 || (r < 0 && errno == EINTR)) continue;
      if (r < 0) status = -1; // (cannot wait for it: a failure)
      Job job = *it;
      running.erase(it);
      try {
        checkExit(job, status, dir);
      } catch (const Error &) {
        for (const Job &j : running) {
          int ignored = 0;
          while (waitpid(j.pid, &ignored, 0) < 0 && errno == EINTR) {
          }
        }
        running.clear();
        throw;
      }
      return;
    }
    if (deadline && std::chrono::steady_clock::now() >= *deadline) stopAll(running, seconds);
    struct timespec pause{0, 1000000}; // 1 ms
    nanosleep(&pause, nullptr);
  }
}

/// Waits for all of `running`, each checked; the first failure is thrown after all ended (or were stopped at the
/// deadline).
void finishAll(std::deque<Job> &running, const fs::path &dir, const Deadline &deadline = {}, double seconds = 0) {
  std::string failure;
  while (!running.empty()) try {
      finishAny(running, dir, deadline, seconds);
    } catch (const Error &e) {
      if (failure.empty()) failure = e.what();
    }
  if (!failure.empty()) fail(failure);
}

/// The name of a kernel file as a #line directive may spell it (messages only): characters a C string or a
/// terminal could misread become '_'.
std::string lineName(const std::string &f) {
  std::string out;
  for (char ch : f) out += (std::isalnum(static_cast<unsigned char>(ch)) || std::strchr("._/-:", ch)) ? ch : '_';
  return out;
}

/// Whether the C emitter marked this kernel for -O2 (kBuildAtO2Line, among its first lines).
bool buildsAtO2(std::string_view text) {
  std::string_view head = text.substr(0, std::min<size_t>(text.size(), 4096));
  size_t end = head.find("#include");
  return head.substr(0, end).find(std::string("\n") + kBuildAtO2Line + "\n") != std::string_view::npos;
}

/// Compiles `files` (relative to `dir`, with the bytes `texts` the cache key hashed) and `entry` for `cpu`
/// into `so` inside the checked `cache`. The kernels of each optimization level go into as many translation
/// units as the machine has cores (at most 16), each the concatenation of a share of the files, balanced by size (largest first, each
/// to the lightest unit; the C emitter guards its helpers so that a unit defines each once): one compiler
/// per core, not one per kernel, whose start-up and headers cost a network of fifty kernels a second of CPU
/// (ResNet-50: 5.5 s of CPU in 48 compilers). The kernels marked for -O2 (register tiles, kBuildAtO2Line) go
/// into units of their own, built at -O2. Then one link. What is compiled is the text that was hashed.
void build(const fs::path &cache, const fs::path &so, const std::string &key, const std::vector<std::string> &files,
           const std::vector<std::string> &texts, const std::string &entry, const std::string &cpu, const fs::path &dir,
           double seconds = 0) {
  const Deadline deadline = seconds > 0 ? Deadline(std::chrono::steady_clock::now() +
                                                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds)))
                                        : Deadline();
  // a private working directory (mkdtemp: 0700, a fresh name) inside the checked cache directory
  std::string work = (cache / (key.substr(0, 16) + ".tmp-XXXXXX")).string();
  if (!mkdtemp(work.data())) fail("cannot create a working directory in the kernel cache '" + cache.string() + "': " + std::strerror(errno));
  struct RemoveWork {
    std::string dir;
    ~RemoveWork() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } removeWork{work};
  unsigned cores = std::thread::hardware_concurrency();
  size_t jobs = std::max<size_t>(1, std::min<size_t>(cores ? cores : 1, 16));
  // the units: the files of each optimization level (kTileOptFlags where the prelude says so, else
  // kKernelOptFlags) apart, up to `jobs` units each, largest file first, each into that level's unit with
  // the fewest bytes so far
  struct Unit {
    std::string text;
    bool o2 = false;
  };
  std::vector<size_t> order(files.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return texts[a].size() > texts[b].size(); });
  std::vector<Unit> units;
  for (bool o2 : {false, true}) {
    std::vector<size_t> level;
    for (size_t i : order)
      if (buildsAtO2(texts[i]) == o2) level.push_back(i);
    size_t first = units.size();
    units.resize(first + std::min(jobs, level.size()), Unit{"", o2});
    for (size_t i : level) {
      Unit &u = *std::min_element(units.begin() + static_cast<std::ptrdiff_t>(first), units.end(),
                                  [](const Unit &a, const Unit &b) { return a.text.size() < b.text.size(); });
      u.text += "#line 1 \"" + lineName(files[i]) + "\"\n" + texts[i] + "\n";
    }
  }
  // the largest units start first (the compilers run `jobs` at a time)
  std::stable_sort(units.begin(), units.end(), [](const Unit &a, const Unit &b) { return a.text.size() > b.text.size(); });
  std::vector<fs::path> sources;
  std::vector<bool> atO2;
  for (size_t u = 0; u < units.size(); ++u) {
    sources.push_back(fs::path(work) / ("unit" + std::to_string(u) + ".c"));
    writeNewFile(sources.back().string(), units[u].text);
    atO2.push_back(units[u].o2);
  }
  // the entry points in a unit of their own (they declare the kernels with void * parameters)
  sources.push_back(fs::path(work) / "entry.c");
  writeNewFile(sources.back().string(), entry);
  atO2.push_back(false);
  fs::path tmpSo = fs::path(work) / "kernels.so";
  // compile
  std::vector<std::string> common{cCompiler()};
  for (const char *f : kKernelCFlags)
    if (std::string_view(f) != "-shared") common.push_back(f);
  common.push_back("-march=" + cpu);
  std::vector<fs::path> objects;
  std::deque<Job> running;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (running.size() >= jobs) finishAny(running, dir, deadline, seconds);
    objects.push_back(fs::path(work) / ("k" + std::to_string(i) + ".o"));
    std::vector<std::string> argv = common;
    if (i + 1 == sources.size()) argv.insert(argv.end(), std::begin(kEntryOptFlags), std::end(kEntryOptFlags));
    else if (atO2[i]) argv.insert(argv.end(), std::begin(kTileOptFlags), std::end(kTileOptFlags));
    else argv.insert(argv.end(), std::begin(kKernelOptFlags), std::end(kKernelOptFlags));
    argv.insert(argv.end(), {"-c", sources[i].string(), "-o", objects.back().string()});
    // (a build that may be stopped keeps the compilers' temporary files in its working directory, removed after:
    // a killed cc1 leaves its ccXXXXXX.s behind in TMPDIR)
    running.push_back(spawn(argv, fs::path(work) / ("cc" + std::to_string(i) + ".log"), deadline ? work : ""));
  }
  // (every job is waited for, even after one failed: no compiler outlives its working directory)
  finishAll(running, dir, deadline, seconds);
  // link
  std::vector<std::string> link{cCompiler(), "-shared", "-o", tmpSo.string()};
  for (const fs::path &o : objects) link.push_back(o.string());
  link.push_back("-lm");
#if defined(__GLIBC__) && defined(__x86_64__)
  link.push_back("-lmvec"); // the vector exp2f/log2f/sinf/powf a kernel's SimdMath declarations call
#endif
  std::deque<Job> linking{spawn(link, fs::path(work) / "link.log", deadline ? work : "")};
  finishAll(linking, dir, deadline, seconds);
  std::error_code ec;
  // owner-only permissions whatever the umask (a group- or world-writable object would be refused)
  if (::chmod(tmpSo.c_str(), 0700) != 0) fail("cannot store the compiled kernels: chmod '" + tmpSo.string() + "': " + std::strerror(errno));
  fs::rename(tmpSo, so, ec);
  if (ec) fail("cannot store the compiled kernels in '" + so.string() + "': " + ec.message());
}

} // namespace

std::string cCompiler() {
  const char *cc = std::getenv("UOPC_CC");
  // (cc, gcc on Debian: clang 14 builds the channel tile's convolutions faster, ResNet-50's 3x3 one in 1.95
  // ms where gcc 12 takes 3.2, but kernels whose accumulators track Invalid lanes 5 to 25 times slower:
  // VGG-19's first convolutions, 8.6 -> 209 ms)
  return cc && *cc ? cc : "cc";
}

std::string kernelCacheDir() {
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x) return (fs::path(x) / "uopc").string();
  if (const char *h = std::getenv("HOME"); h && *h) return (fs::path(h) / ".cache" / "uopc").string();
  // no home directory: a per-user directory in the temporary directory (checked like any other)
  std::error_code ec;
  fs::path tmp = fs::temp_directory_path(ec);
  if (ec) tmp = "/tmp";
  return (tmp / ("uopc-cache-" + std::to_string(::geteuid()))).string();
}

fs::path cachedKernelObject(const fs::path &dir, const std::vector<std::string> &files, const std::string &entry,
                            const std::string &cpu) {
  Hasher h;
  h.add("uopc-run kernels v5"); // v2: the kernels compiled in units of several files; v3: -O2 units apart;
  // v4: no -O3; v5: the entry points at -O0
  h.add(cCompiler());
  for (const char *f : kKernelCFlags) h.add(f);
  for (const char *f : kTileOptFlags) h.add(std::string("tile ") + f);
  for (const char *f : kKernelOptFlags) h.add(std::string("other ") + f);
  for (const char *f : kEntryOptFlags) h.add(std::string("entry ") + f);
  h.add("-march=" + cpu);
  h.add(entry);
  std::vector<std::string> texts;
  for (const std::string &f : files) {
    texts.push_back(readWhole((dir / f).string(), "kernel source"));
    h.add(f);
    h.add(texts.back());
  }
  fs::path cache = openKernelCache();
  std::string key = h.hex();
  fs::path so = cache / (key + ".so");
  if (!trustedCachedObject(so)) {
    build(cache, so, key, files, texts, entry, cpu, dir);
    if (!trustedCachedObject(so)) fail("the compiled kernels vanished from the cache '" + so.string() + "'");
  }
  return so;
}

std::string kernelTrampoline(size_t index, const std::string &symbol, size_t nbufs, size_t nvars) {
  std::string params, call;
  for (size_t a = 0; a < nbufs + nvars; ++a) {
    bool var = a >= nbufs;
    params += std::string(a ? ", " : "") + (var ? "int64_t" : "void *");
    call += std::string(a ? ", " : "") + (var ? "v[" + std::to_string(a - nbufs) + "]" : "b[" + std::to_string(a) + "]");
  }
  return "extern void " + symbol + "(" + (params.empty() ? "void" : params) + ");\nvoid uopc_entry_" +
         std::to_string(index) + "(void **b, const int64_t *v) { (void)b; (void)v; " + symbol + "(" + call + "); }\n";
}

fs::path buildKernelObject(const fs::path &dir, const std::vector<std::string> &files, const std::string &entry,
                           const std::string &cpu, const fs::path &into, double seconds) {
  std::vector<std::string> texts;
  for (const std::string &f : files) texts.push_back(readWhole((dir / f).string(), "kernel source"));
  fs::path so = into / "kernels.so";
  build(into, so, "candidate-kernels", files, texts, entry, cpu, dir, seconds);
  return so;
}

} // namespace uopc

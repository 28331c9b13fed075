//===- Files.cpp - output files written whole or not at all ---------------===//
#include "IR/Files.h"

#include "IR/Error.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

namespace uopc {
namespace {

/// Writes all of `bytes` to fd; false (errno set) on failure.
bool writeAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

[[noreturn]] void cannotWrite(const std::string &path, int err) {
  fail("cannot write " + quote(path) + ": " + std::strerror(err));
}

} // namespace

void writeFileAtomic(const std::string &path, std::string_view bytes) {
  if (path.empty()) fail("an empty output file name");
  struct stat st {};
  bool exists = ::lstat(path.c_str(), &st) == 0;
  if (exists && S_ISLNK(st.st_mode) && ::stat(path.c_str(), &st) != 0) exists = false; // (a dangling link)
  if (exists && S_ISDIR(st.st_mode)) fail("cannot write " + quote(path) + ": it is a directory");
  if (exists && !S_ISREG(st.st_mode)) { // a device, a pipe, a terminal: nothing to replace
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) cannotWrite(path, errno);
    bool ok = writeAll(fd, bytes);
    int err = errno;
    ::close(fd);
    if (!ok) cannotWrite(path, err);
    return;
  }
  // the temporary file: beside the target (same file system, so the rename is atomic), a name of its own
  std::string dir = path.substr(0, path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  std::string base = path.substr(dir.size());
  std::string suffix = ".uopc-tmp-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}() & 0xffffff);
  std::string tmp = base.size() + suffix.size() <= 255 ? path + suffix : dir + suffix;
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) cannotWrite(path, errno);
  bool ok = writeAll(fd, bytes);
  int err = errno;
  // the file it replaces keeps its permissions (a 0600 output stays 0600)
  if (ok && exists && S_ISREG(st.st_mode) && ::fchmod(fd, st.st_mode & 07777) != 0) ok = false, err = errno;
  if (::close(fd) != 0 && ok) ok = false, err = errno;
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) ok = false, err = errno;
  if (!ok) {
    ::unlink(tmp.c_str());
    cannotWrite(path, err);
  }
}

namespace {
/// The directory of the running executable with a trailing '/' ("" when /proc/self/exe cannot be read).
std::string ownDirectory() {
  std::string path(4096, '\0');
  ssize_t n = readlink("/proc/self/exe", path.data(), path.size());
  if (n <= 0 || static_cast<size_t>(n) >= path.size()) return "";
  path.resize(static_cast<size_t>(n));
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}
} // namespace

std::string pluginPath(const char *envVar, const std::string &file) {
  if (const char *env = std::getenv(envVar); env && *env) return env;
  std::string dir = ownDirectory(), path = dir + file;
  if (access(path.c_str(), F_OK) != 0 && !dir.empty())
    if (std::string installed = dir + "../lib/uopc/" + file; access(installed.c_str(), F_OK) == 0) return installed;
  return path;
}

} // namespace uopc

//===- OutputDir.cpp - atomic output directories --------------------------===//
#include "Driver/OutputDir.h"

#include "IR/Error.h"

#include <filesystem>
#include <fstream>
#include <random>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace uopc {
namespace {

std::string uniqueSuffix() {
  return std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}() & 0xffffff);
}

void writeWhole(const fs::path &p, std::string_view bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (!f) fail("cannot write '" + p.string() + "'");
}

} // namespace

/// True when `entry` (a file name in DEST's parent) is a staging or replaced directory of DEST
/// (`<base>.uopc-tmp-<pid>-<n>` / `<base>.uopc-old-<pid>-<n>`) whose process is gone.
static bool staleSibling(const std::string &base, const std::string &entry) {
  for (const char *kind : {".uopc-tmp-", ".uopc-old-"}) {
    std::string prefix = base + kind;
    if (entry.size() <= prefix.size() || entry.compare(0, prefix.size(), prefix) != 0) continue;
    std::string rest = entry.substr(prefix.size());
    size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string::npos || dash > 10) return false;
    for (size_t i = 0; i < rest.size(); ++i)
      if (i != dash && !std::isdigit(static_cast<unsigned char>(rest[i]))) return false;
    long pid = std::stol(rest.substr(0, dash));
    if (pid <= 0) return false;
    return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
  }
  return false;
}

OutputDir::OutputDir(std::string dest, bool force) : dest_(std::move(dest)), force_(force) {
  while (dest_.size() > 1 && dest_.back() == '/') dest_.pop_back();
  if (dest_.empty()) fail("empty output directory name");
  fs::path d(dest_);
  if (d.filename() == "." || d.filename() == ".." || d == "/")
    fail("output directory '" + dest_ + "' must name a directory of its own");
  std::error_code ec;
  fs::file_status st = fs::symlink_status(d, ec);
  if (fs::exists(st) && !fs::is_directory(st)) fail("output path '" + dest_ + "' exists and is not a directory");
  if (fs::exists(st)) checkReplaceable();
  fs::path parent = d.parent_path();
  if (!parent.empty()) {
    // remember which parents this run creates (to remove them again if it fails)
    for (fs::path p = parent; !p.empty() && !fs::exists(fs::symlink_status(p, ec)); p = p.parent_path()) {
      createdParents_.push_back(p.string());
      if (p == p.parent_path()) break;
    }
    fs::create_directories(parent, ec);
    if (ec) {
      createdParents_.clear();
      fail("cannot create '" + parent.string() + "': " + ec.message());
    }
  }
  // staging and replaced directories a killed run left behind for this destination
  std::string base = d.filename().string();
  fs::path dir = parent.empty() ? fs::path(".") : parent;
  for (fs::directory_iterator it(dir, ec), e; !ec && it != e; it.increment(ec)) {
    std::string name = it->path().filename().string();
    std::error_code rm;
    if (staleSibling(base, name) && it->symlink_status(rm).type() == fs::file_type::directory) fs::remove_all(it->path(), rm);
  }
  staging_ = dest_ + ".uopc-tmp-" + uniqueSuffix();
  fs::create_directory(staging_, ec);
  if (ec) {
    removeCreatedParents();
    fail("cannot create '" + staging_ + "': " + ec.message());
  }
  try {
    writeWhole(fs::path(staging_) / kMarker, "uopc output directory: uopc -o replaces it\n");
  } catch (...) {
    fs::remove_all(staging_, ec);
    removeCreatedParents();
    throw;
  }
}

void OutputDir::checkReplaceable() const {
  if (force_) return;
  std::error_code ec;
  fs::path d(dest_);
  if (fs::exists(d / kMarker, ec)) return;
  if (fs::is_empty(d, ec) && !ec) return;
  // an output of an earlier uopc (before the marker): its manifest says so
  fs::path m = d / "manifest.json";
  if (fs::is_regular_file(m, ec) && fs::file_size(m, ec) < (64u << 20)) {
    std::ifstream f(m, std::ios::binary);
    std::string head(256, '\0');
    f.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<size_t>(f.gcount()));
    if (head.find("\"format\": \"uopc-manifest\"") != std::string::npos) return;
  }
  fail("output directory '" + dest_ + "' exists and is not a uopc output (no " + kMarker +
       " marker); uopc -o replaces only its own outputs: remove it, choose another directory, or pass --force");
}

void OutputDir::removeCreatedParents() {
  std::error_code ec;
  for (const std::string &p : createdParents_) // deepest first; only while empty
    if (!fs::remove(p, ec) || ec) break;
  createdParents_.clear();
}

OutputDir::~OutputDir() {
  if (!committed_) {
    std::error_code ec;
    fs::remove_all(staging_, ec);
    removeCreatedParents();
  }
}

std::string OutputDir::path(std::string_view relPath) {
  fs::path rel(relPath);
  if (rel.empty() || rel.is_absolute()) fail("bad output file name '" + std::string(relPath) + "'");
  for (const fs::path &part : rel)
    if (part == ".." || part == ".") fail("bad output file name '" + std::string(relPath) + "'");
  fs::path full = fs::path(staging_) / rel;
  std::error_code ec;
  fs::create_directories(full.parent_path(), ec);
  if (ec) fail("cannot create '" + full.parent_path().string() + "': " + ec.message());
  return full.string();
}

void OutputDir::write(std::string_view relPath, std::string_view bytes) { writeWhole(path(relPath), bytes); }

void OutputDir::commit() {
  std::error_code ec;
  fs::file_status st = fs::symlink_status(dest_, ec);
  if (fs::exists(st)) {
    if (!fs::is_directory(st)) fail("output path '" + dest_ + "' exists and is not a directory");
    checkReplaceable(); // again: it may have changed while uopc compiled
    // one atomic step: the new output takes DEST's name, the old one the staging name
    if (::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, dest_.c_str(), RENAME_EXCHANGE) == 0) {
      committed_ = true;
      std::string old = dest_ + ".uopc-old-" + uniqueSuffix();
      if (::rename(staging_.c_str(), old.c_str()) != 0) old = staging_;
      fs::remove_all(old, ec);
      return;
    }
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
      fail("cannot replace '" + dest_ + "': " + std::strerror(errno));
    // a file system without RENAME_EXCHANGE: move the old output aside, then the new one in
    std::string old = dest_ + ".uopc-old-" + uniqueSuffix();
    fs::rename(dest_, old, ec);
    if (ec) fail("cannot replace '" + dest_ + "': " + ec.message());
    fs::rename(staging_, dest_, ec);
    if (ec) {
      fs::rename(old, dest_, ec);
      fail("cannot move output into '" + dest_ + "'");
    }
    committed_ = true;
    fs::remove_all(old, ec);
    return;
  }
  if (::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, dest_.c_str(), RENAME_NOREPLACE) != 0) {
    if (errno == EEXIST) fail("cannot move output into '" + dest_ + "': it appeared while uopc compiled");
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
      fail("cannot move output into '" + dest_ + "': " + std::strerror(errno));
    fs::rename(staging_, dest_, ec);
    if (ec) fail("cannot move output into '" + dest_ + "': " + ec.message());
  }
  committed_ = true;
}

std::string readFile(const std::string &path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) fail("'" + path + "' is a directory");
  std::ifstream f(path, std::ios::binary);
  if (!f) fail("cannot open '" + path + "'");
  std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) fail("cannot read '" + path + "'");
  return data;
}

} // namespace uopc

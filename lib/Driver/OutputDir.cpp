//===- OutputDir.cpp - atomic output directories --------------------------===//
#include "Driver/OutputDir.h"

#include "IR/Error.h"

#include <filesystem>
#include <fstream>
#include <random>
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

OutputDir::OutputDir(std::string dest) : dest_(std::move(dest)) {
  while (dest_.size() > 1 && dest_.back() == '/') dest_.pop_back();
  if (dest_.empty()) fail("empty output directory name");
  fs::path d(dest_);
  std::error_code ec;
  if (fs::exists(d, ec) && !fs::is_directory(d, ec)) fail("output path '" + dest_ + "' exists and is not a directory");
  fs::path parent = d.parent_path();
  if (!parent.empty()) {
    fs::create_directories(parent, ec);
    if (ec) fail("cannot create '" + parent.string() + "': " + ec.message());
  }
  staging_ = dest_ + ".uopc-tmp-" + uniqueSuffix();
  fs::create_directory(staging_, ec);
  if (ec) fail("cannot create '" + staging_ + "': " + ec.message());
}

OutputDir::~OutputDir() {
  if (!committed_) {
    std::error_code ec;
    fs::remove_all(staging_, ec);
  }
}

void OutputDir::write(std::string_view relPath, std::string_view bytes) {
  fs::path rel(relPath);
  if (rel.empty() || rel.is_absolute()) fail("bad output file name '" + std::string(relPath) + "'");
  for (const fs::path &part : rel)
    if (part == ".." || part == ".") fail("bad output file name '" + std::string(relPath) + "'");
  fs::path full = fs::path(staging_) / rel;
  std::error_code ec;
  fs::create_directories(full.parent_path(), ec);
  if (ec) fail("cannot create '" + full.parent_path().string() + "': " + ec.message());
  writeWhole(full, bytes);
}

void OutputDir::commit() {
  std::error_code ec;
  std::string old;
  if (fs::exists(dest_, ec)) {
    old = dest_ + ".uopc-old-" + uniqueSuffix();
    fs::rename(dest_, old, ec);
    if (ec) fail("cannot replace '" + dest_ + "': " + ec.message());
  }
  fs::rename(staging_, dest_, ec);
  if (ec) {
    if (!old.empty()) fs::rename(old, dest_, ec);
    fail("cannot move output into '" + dest_ + "'");
  }
  committed_ = true;
  if (!old.empty()) fs::remove_all(old, ec);
}

void writeFileAtomic(const std::string &path, std::string_view bytes) {
  std::string tmp = path + ".uopc-tmp-" + uniqueSuffix();
  try {
    writeWhole(tmp, bytes);
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    fail("cannot write '" + path + "'");
  }
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

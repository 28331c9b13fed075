//===- Params.cpp - the weights of a library: plan, blob, assembler and C writers (see Params.h) ===//
#include "Driver/Params.h"

#include "IR/Error.h"
#include "Runtime/Safetensors.h"
#include "Targets/CNames.h"
#include "Targets/CTarget.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <tuple>
#include <unistd.h>

namespace uopc {

using manifest::Manifest;
using manifest::Param;
using manifest::Ref;
using manifest::Role;
using manifest::Step;

// ---- XXH64 (https://github.com/Cyan4973/xxHash, doc/xxhash_spec.md), seed 0 ----
namespace {
constexpr uint64_t P1 = 0x9E3779B185EBCA87ULL, P2 = 0xC2B2AE3D27D4EB4FULL, P3 = 0x165667B19E3779F9ULL,
                   P4 = 0x85EBCA77C2B2AE63ULL, P5 = 0x27D4EB2F165667C5ULL;
uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
uint64_t read64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t read32(const unsigned char *p) { return uint64_t(p[0]) | uint64_t(p[1]) << 8 | uint64_t(p[2]) << 16 | uint64_t(p[3]) << 24; }
uint64_t round1(uint64_t acc, uint64_t in) { return rotl(acc + in * P2, 31) * P1; }
uint64_t merge(uint64_t h, uint64_t v) { return (h ^ round1(0, v)) * P1 + P4; }
} // namespace

void Xxh64::update(std::string_view bytes) {
  auto p = reinterpret_cast<const unsigned char *>(bytes.data());
  size_t n = bytes.size();
  total_ += n;
  auto stripe = [&](const unsigned char *s) {
    for (int i = 0; i < 4; ++i) v_[i] = round1(v_[i], read64(s + 8 * i));
  };
  if (used_) {
    size_t take = std::min(n, 32 - used_);
    std::memcpy(buf_ + used_, p, take);
    used_ += take, p += take, n -= take;
    if (used_ < 32) return;
    stripe(buf_);
    used_ = 0;
  }
  for (; n >= 32; p += 32, n -= 32) stripe(p);
  std::memcpy(buf_, p, n);
  used_ = n;
}

uint64_t Xxh64::digest() const {
  uint64_t h = total_ >= 32 ? merge(merge(merge(merge(rotl(v_[0], 1) + rotl(v_[1], 7) + rotl(v_[2], 12) + rotl(v_[3], 18), v_[0]),
                                                v_[1]),
                                          v_[2]),
                                    v_[3])
                            : P5;
  h += total_;
  const unsigned char *p = buf_;
  size_t n = used_;
  for (; n >= 8; p += 8, n -= 8) h = rotl(h ^ round1(0, read64(p)), 27) * P1 + P4;
  if (n >= 4) h = rotl(h ^ (read32(p) * P1), 23) * P2 + P3, p += 4, n -= 4;
  for (; n > 0; ++p, --n) h = rotl(h ^ (*p * P5), 11) * P1;
  h ^= h >> 33, h *= P2, h ^= h >> 29, h *= P3, h ^= h >> 32;
  return h;
}

std::string xxh64CSource(const std::string &N) {
  std::string s = R"(/* XXH64 (xxHash's 64-bit hash, seed 0) of n bytes: the check of a params file */
static uint64_t N_rotl_(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static uint64_t N_r64_(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
static uint64_t N_round_(uint64_t acc, uint64_t in) { return N_rotl_(acc + in * 0xC2B2AE3D27D4EB4FULL, 31) * 0x9E3779B185EBCA87ULL; }
static uint64_t N_merge_(uint64_t h, uint64_t v) { return (h ^ N_round_(0, v)) * 0x9E3779B185EBCA87ULL + 0x85EBCA77C2B2AE63ULL; }
static uint64_t N_xxh64_(const unsigned char *p, size_t n) {
  const uint64_t P1 = 0x9E3779B185EBCA87ULL, P2 = 0xC2B2AE3D27D4EB4FULL, P3 = 0x165667B19E3779F9ULL,
                 P4 = 0x85EBCA77C2B2AE63ULL, P5 = 0x27D4EB2F165667C5ULL;
  uint64_t h, total = n;
  if (n >= 32) {
    uint64_t v1 = P1 + P2, v2 = P2, v3 = 0, v4 = 0 - P1;
    for (; n >= 32; p += 32, n -= 32) {
      v1 = N_round_(v1, N_r64_(p));
      v2 = N_round_(v2, N_r64_(p + 8));
      v3 = N_round_(v3, N_r64_(p + 16));
      v4 = N_round_(v4, N_r64_(p + 24));
    }
    h = N_rotl_(v1, 1) + N_rotl_(v2, 7) + N_rotl_(v3, 12) + N_rotl_(v4, 18);
    h = N_merge_(N_merge_(N_merge_(N_merge_(h, v1), v2), v3), v4);
  } else {
    h = P5;
  }
  h += total;
  for (; n >= 8; p += 8, n -= 8) h = N_rotl_(h ^ N_round_(0, N_r64_(p)), 27) * P1 + P4;
  if (n >= 4) {
    h = N_rotl_(h ^ ((uint64_t)(p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24) * P1), 23) * P2 + P3;
    p += 4, n -= 4;
  }
  for (; n > 0; ++p, --n) h = N_rotl_(h ^ (*p * P5), 11) * P1;
  h ^= h >> 33, h *= P2, h ^= h >> 29, h *= P3, h ^= h >> 32;
  return h;
}
)";
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 2, "N_") == 0 && (i == 0 || !std::isalnum(static_cast<unsigned char>(s[i - 1])))) {
      out += N + "_";
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

// ---- the plan ----
namespace {

std::string paramName(const Param &p) { return p.name ? *p.name : "slot" + std::to_string(p.slot); }
int64_t roundUp64(int64_t n) { return (n + 63) / 64 * 64; }

} // namespace

bool isFunctionArgument(const std::string &name) {
  return name.size() > 5 && name.compare(0, 5, "input") == 0 &&
         std::all_of(name.begin() + 5, name.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

bool marksWeights(const Manifest &m) {
  return std::any_of(m.params.begin(), m.params.end(), [](const Param &q) { return q.weight; });
}

bool isCallersData(const Param &p, bool marked) {
  return isFunctionArgument(paramName(p)) || (marked && !p.weight && p.role == Role::Input);
}

ParamsPlan planParams(const Manifest &m, const safetensors::Reader &reader, const std::vector<std::optional<AffineCopy>> &copies,
                      const std::string &flag, const std::string &N) {
  const std::string &file = reader.path();
  std::map<std::string, std::pair<size_t, size_t>> byTensor; // tensor name -> (param, device)
  for (size_t i = 0; i < m.params.size(); ++i)
    for (size_t d = 0; d < m.params[i].devices.size(); ++d) {
      std::string n = paramName(m.params[i]);
      byTensor[m.params[i].devices.size() == 1 ? n : n + "@" + std::to_string(d)] = {i, d};
    }
  if (reader.tensors().empty()) fail(flag + ": '" + file + "' holds no tensor");
  std::map<size_t, std::vector<std::string>> names; // baked param -> its tensor per device ("" missing)
  bool marked = marksWeights(m);
  for (const auto &[name, t] : reader.tensors()) {
    auto it = byTensor.find(name);
    if (it == byTensor.end()) fail(flag + ": tensor " + quote(name) + " of '" + file + "' names no parameter of the graph");
    const Param &p = m.params[it->second.first];
    std::string pname = paramName(p);
    if (isCallersData(p, marked) || p.role == Role::Inout) continue;
    if (p.role == Role::Output) fail(flag + ": tensor " + quote(name) + " names an output of the graph");
    std::string want = safetensors::codeOf(std::string(dtypeName(p.dtype)));
    uint64_t bytes = t.end - t.begin;
    if (t.dtype != want || bytes != static_cast<uint64_t>(p.bytes))
      fail(flag + ": tensor " + quote(name) + " is " + t.dtype + " of " + std::to_string(bytes) + " bytes; parameter " +
           quote(pname) + " is " + want + " of " + std::to_string(p.bytes) + " bytes per device");
    std::vector<std::string> &v = names[it->second.first];
    v.resize(p.devices.size());
    v[it->second.second] = name;
  }
  if (names.empty())
    fail(flag + ": '" + file + "' bakes nothing in: its " + std::to_string(reader.tensors().size()) +
         " tensor(s) are all the caller's (the function's arguments input0, input1, ..., inputs the graph does not mark "
         "as weights, and inout state)");
  ParamsPlan plan;
  for (const auto &[i, v] : names) {
    const Param &p = m.params[i];
    for (size_t d = 0; d < p.devices.size(); ++d)
      if (v[d].empty())
        fail(flag + ": '" + file + "' holds some devices of parameter " + quote(paramName(p)) + " but not " +
             quote(paramName(p) + "@" + std::to_string(d)));
    plan.baked.insert(i);
  }

  // once steps uopc runs itself: a known copy of a baked parameter into an intermediate of its element size
  std::vector<BakedTensor> folded;
  for (size_t i = 0; i < m.steps.size(); ++i) {
    const Step &s = m.steps[i];
    if (!s.once || !s.isKernel() || i >= copies.size() || !copies[i]) continue;
    const AffineCopy &c = *copies[i];
    if (c.srcArg >= s.args.size() || c.dstArg >= s.args.size()) continue;
    const Ref &src = s.args[c.srcArg], &dst = s.args[c.dstArg];
    if (!src.isParam || !plan.baked.count(src.index) || dst.isParam) continue;
    const manifest::Buffer &b = m.buffers[dst.index];
    if (b.symbolicSize || dtypeSize(b.dtype) != c.elemBytes || dtypeSize(m.params[src.index].dtype) != c.elemBytes) continue;
    plan.folded.insert(i);
    BakedTensor t;
    t.tensor = names[src.index][src.dev];
    t.param = src.index;
    t.device = src.dev;
    t.step = i;
    t.dtype = b.dtype;
    t.numel = b.numel;
    t.bytes = b.bytes;
    t.symbol = N + "_once" + std::to_string(i);
    t.label = t.tensor + " re-laid out by " + s.kernel;
    folded.push_back(std::move(t));
  }
  // the baked parameters a step that still runs reads (the others only fed folded steps: not stored)
  std::set<std::pair<size_t, size_t>> used;
  for (size_t i = 0; i < m.steps.size(); ++i) {
    if (plan.folded.count(i)) continue;
    const Step &s = m.steps[i];
    std::vector<Ref> refs = s.isCopy() ? std::vector<Ref>{s.src, s.dst} : s.args;
    if (s.isAllreduce()) {
      refs = s.srcs;
      refs.insert(refs.end(), s.dsts.begin(), s.dsts.end());
    }
    for (const Ref &r : refs)
      if (r.isParam && plan.baked.count(r.index)) used.insert({r.index, r.dev});
  }
  for (const auto &[i, d] : used) {
    const Param &p = m.params[i];
    BakedTensor t;
    t.tensor = names[i][d];
    t.param = i;
    t.device = d;
    t.dtype = p.dtype;
    t.numel = p.numel;
    t.bytes = p.bytes;
    t.symbol = N + "_w" + std::to_string(i) + "_" + std::to_string(d);
    t.label = t.tensor;
    plan.tensors.push_back(std::move(t));
  }
  plan.tensors.insert(plan.tensors.end(), folded.begin(), folded.end());
  // a parameter's tensor, then what is computed from it (one read serves both)
  std::stable_sort(plan.tensors.begin(), plan.tensors.end(), [](const BakedTensor &a, const BakedTensor &b) {
    return std::tuple(a.param, a.device, a.step.has_value(), a.step.value_or(0)) <
           std::tuple(b.param, b.device, b.step.has_value(), b.step.value_or(0));
  });
  int64_t at = kBlobHeaderBytes;
  for (BakedTensor &t : plan.tensors) {
    t.offset = roundUp64(at);
    if (__builtin_add_overflow(t.offset, t.bytes, &at)) fail(flag + ": the weights do not fit in a file");
  }
  plan.blobBytes = at;
  return plan;
}

void forEachTensorBytes(const ParamsPlan &plan, const Manifest &m, const safetensors::Reader &reader,
                        const std::vector<std::optional<AffineCopy>> &copies,
                        const std::function<void(size_t, std::string_view)> &emit) {
  std::string name, data; // the tensor last read: a parameter's tensor and its re-layouts come one after the other
  for (size_t k = 0; k < plan.tensors.size(); ++k) {
    const BakedTensor &t = plan.tensors[k];
    if (name != t.tensor) {
      data.clear();
      data.shrink_to_fit(); // (at most one tensor in memory)
      data = reader.read(t.tensor);
      name = t.tensor;
    }
    if (!t.step) {
      emit(k, data);
      continue;
    }
    bool any = false;
    runAffineCopy(*copies[*t.step], data, m.params[t.param].numel, t.numel, [&](std::string_view piece) {
      any = true;
      emit(k, piece);
    });
    if (!any) emit(k, {});
  }
}

// ---- writers ----
namespace {

/// A file written in order through one descriptor; every failure is an Error naming it.
class OutFile {
public:
  explicit OutFile(const std::string &path) : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0) fail("cannot create '" + path + "': " + std::strerror(errno));
  }
  ~OutFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  void write(std::string_view b) { writeAt(b, -1); }
  /// pwrite at `offset` (>= 0) or a write at the end.
  void writeAt(std::string_view b, int64_t offset) {
    const char *p = b.data();
    size_t n = b.size();
    while (n > 0) {
      ssize_t w = offset >= 0 ? ::pwrite(fd_, p, std::min<size_t>(n, size_t(1) << 30), static_cast<off_t>(offset))
                              : ::write(fd_, p, std::min<size_t>(n, size_t(1) << 30));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) fail("cannot write '" + path_ + "': " + std::strerror(w < 0 ? errno : EIO));
      p += w, n -= static_cast<size_t>(w);
      if (offset >= 0) offset += w;
    }
  }
  void close() {
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail("cannot write '" + path_ + "': " + std::strerror(errno));
  }

private:
  std::string path_;
  int fd_ = -1;
};

void put64(std::string &s, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) s[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

} // namespace

void writeParamsBlob(const std::string &path, ParamsPlan &plan, const Manifest &m, const safetensors::Reader &reader,
                     const std::vector<std::optional<AffineCopy>> &copies) {
  OutFile f(path);
  std::string header(kBlobHeaderBytes, '\0');
  f.write(header); // (rewritten with the size and the checksum at the end)
  Xxh64 h;
  int64_t at = kBlobHeaderBytes;
  static const std::string zeros(64, '\0');
  forEachTensorBytes(plan, m, reader, copies, [&](size_t k, std::string_view piece) {
    const BakedTensor &t = plan.tensors[k];
    if (at < t.offset) { // the padding before a tensor
      std::string_view pad(zeros.data(), static_cast<size_t>(t.offset - at));
      h.update(pad);
      f.write(pad);
      at = t.offset;
    }
    h.update(piece);
    f.write(piece);
    at += static_cast<int64_t>(piece.size());
    if (at > t.offset + t.bytes) fail("'" + path + "': tensor " + quote(t.tensor) + " came out longer than its buffer");
  });
  if (at != plan.blobBytes) fail("'" + path + "': wrote " + std::to_string(at) + " bytes, not " + std::to_string(plan.blobBytes));
  plan.hash = h.digest();
  std::memcpy(header.data(), kBlobMagic, 8);
  put64(header, 8, static_cast<uint64_t>(plan.blobBytes));
  put64(header, 16, plan.hash);
  put64(header, 24, plan.tensors.size());
  f.writeAt(header, 0);
  f.close();
}

std::string paramsAssembler(const ParamsPlan &plan, const std::string &N, const std::string &binName) {
  std::string s = "/* " + N + "_params.S: the weights of " + N + ".c as binary data, each a 64-byte aligned read-only symbol\n"
                  " * taken from " + binName + " with .incbin (GNU as, clang; ELF). Build it where .incbin finds the .bin:\n"
                  " * cc -c -I DIR DIR/" + N + "_params.S (or cc -c " + N + "_params.S in DIR). Written by uopc --emit library. */\n"
                  "\t.section .rodata\n";
  for (const BakedTensor &t : plan.tensors) {
    s += "/* " + cComment(t.label) + ": " + std::string(dtypeName(t.dtype)) + "[" + std::to_string(t.numel) + "] */\n";
    s += "\t.balign 64\n\t.globl " + t.symbol + "\n\t.hidden " + t.symbol + "\n\t.type " + t.symbol + ", %object\n\t.size " +
         t.symbol + ", " + std::to_string(std::max<int64_t>(t.bytes, 1)) + "\n" + t.symbol + ":\n";
    if (t.bytes > 0)
      s += "\t.incbin \"" + binName + "\", " + std::to_string(t.offset) + ", " + std::to_string(t.bytes) + "\n";
    else
      s += "\t.byte 0\n";
  }
  s += "\t.section .note.GNU-stack,\"\",%progbits\n";
  return s;
}

void writeParamsC(std::FILE *out, const std::string &path, const ParamsPlan &plan, const Manifest &m,
                  const safetensors::Reader &reader, const std::vector<std::optional<AffineCopy>> &copies) {
  auto put = [&](std::string_view s) {
    if (std::fwrite(s.data(), 1, s.size(), out) != s.size()) fail("cannot write '" + path + "': " + std::strerror(errno));
  };
  static const auto kDecimal = [] {
    std::array<std::string, 256> d;
    for (int i = 0; i < 256; ++i) d[static_cast<size_t>(i)] = std::to_string(i);
    return d;
  }();
  size_t current = SIZE_MAX;
  int64_t written = 0; // bytes of the current tensor so far
  std::string text;
  auto finish = [&]() {
    if (current == SIZE_MAX) return;
    put(written == 0 ? "    0\n}};\n" : "\n}};\n");
  };
  forEachTensorBytes(plan, m, reader, copies, [&](size_t k, std::string_view piece) {
    if (k != current) {
      finish();
      current = k, written = 0;
      const BakedTensor &t = plan.tensors[k];
      int64_t n = std::max<int64_t>(t.bytes, 1), size = static_cast<int64_t>(dtypeSize(t.dtype));
      put("/* " + cComment(t.label) + ": " + std::string(dtypeName(t.dtype)) + "[" + std::to_string(t.numel) + "] */\n" +
          "static const union { _Alignas(64) unsigned char bytes[" + std::to_string(n) + "]; " + cStorageType(t.dtype) +
          " elems[" + std::to_string(std::max<int64_t>(n / size, 1)) + "]; } " + t.symbol + " = {{\n");
    }
    for (size_t at = 0; at < piece.size(); at += size_t(1) << 20) { // (about 4 MB of text at a time)
      text.clear();
      for (unsigned char b : piece.substr(at, size_t(1) << 20)) {
        if (written > 0) text += ',';
        if (written % 24 == 0) text += written ? "\n    " : "    ";
        text += kDecimal[b];
        ++written;
      }
      put(text);
    }
  });
  finish();
}

} // namespace uopc

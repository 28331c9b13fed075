//===- Safetensors.cpp - uopc-run --inputs/--outputs FILE.safetensors -----===//
#include "Runtime/Safetensors.h"

#include "IR/Error.h"
#include "IR/Files.h"
#include "IR/Records.h"
#include "Runtime/ManifestModel.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace uopc::safetensors {
namespace {

using Json = nlohmann::json;

struct Code {
  const char *dtype, *code;
  unsigned size;
};
constexpr Code kCodes[] = {
    {"float64", "F64", 8}, {"float32", "F32", 4}, {"float16", "F16", 2}, {"bfloat16", "BF16", 2},
    {"int64", "I64", 8},   {"int32", "I32", 4},   {"int16", "I16", 2},   {"int8", "I8", 1},
    {"uint64", "U64", 8},  {"uint32", "U32", 4},  {"uint16", "U16", 2},  {"uint8", "U8", 1},
    {"bool", "BOOL", 1},   {"fp8e4m3", "F8_E4M3", 1}, {"fp8e5m2", "F8_E5M2", 1},
};

unsigned sizeOfCode(const std::string &code) {
  for (const Code &c : kCodes)
    if (code == c.code) return c.size;
  return 0;
}

std::string readWhole(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path + ": cannot open");
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) fail(path + ": cannot read");
  return ss.str();
}

/// Reads exactly n bytes at `offset`; false when the file ends first or a read fails.
bool preadAll(int fd, char *out, uint64_t n, uint64_t offset) {
  while (n > 0) {
    ssize_t got = ::pread(fd, out, std::min<uint64_t>(n, uint64_t(1) << 30), static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    out += got, n -= static_cast<uint64_t>(got), offset += static_cast<uint64_t>(got);
  }
  return true;
}

/// The header's SAX handler (nlohmann::json::sax_parse): builds the entries as it reads, no JSON tree.
/// Depth 1 is the header object, depth 2 a tensor (or the metadata), depth 3 a shape or data_offsets array.
class HeaderParser {
public:
  HeaderParser(uint64_t dataBytes, const std::string &where) : dataBytes_(dataBytes), where_(where) {}
  std::map<std::string, TensorInfo> tensors;

  [[noreturn]] void bad(const std::string &why) const { fail(where_ + ": not a safetensors file: " + why); }

  bool null() { return scalar("null"); }
  bool boolean(bool) { return scalar("a boolean"); }
  bool number_integer(Json::number_integer_t v) {
    if (v >= 0) return number_unsigned(static_cast<uint64_t>(v));
    return scalar("a negative number");
  }
  bool number_unsigned(Json::number_unsigned_t v) {
    if (skip_) return true;
    if (depth_ == 3 && field_ == "shape") {
      cur_.shape.push_back(static_cast<int64_t>(std::min<uint64_t>(v, INT64_MAX)));
      if (v > INT64_MAX || (v && numel_ > UINT64_MAX / v)) bad(tensorWhere() + ": shape too large");
      numel_ *= v;
      return true;
    }
    if (depth_ == 3 && field_ == "data_offsets") {
      if (offsets_ >= 2) bad(tensorWhere() + ": data_offsets must be [begin, end]");
      (offsets_++ ? cur_.end : cur_.begin) = v;
      return true;
    }
    return scalar("a number");
  }
  bool number_float(Json::number_float_t, const Json::string_t &) { return scalar("a fractional number"); }
  bool string(Json::string_t &v) {
    if (skip_) return true;
    if (depth_ == 2 && meta_) return true;
    if (depth_ == 2 && field_ == "dtype") {
      if (!sizeOfCode(v)) bad(tensorWhere() + " has dtype " + quote(v) + ", which uopc does not know");
      cur_.dtype = v, seen_ |= 1;
      return true;
    }
    return scalar("a string");
  }
  bool binary(Json::binary_t &) { return scalar("binary data"); }

  bool start_object(std::size_t) {
    if (skip_) return ++skip_, true;
    if (depth_ == 0) return depth_ = 1, true;
    if (depth_ == 1) {
      depth_ = 2, cur_ = TensorInfo{}, seen_ = 0, numel_ = 1, offsets_ = 0, field_.clear();
      fields_.clear();
      return true;
    }
    if (depth_ == 2 && !meta_ && !known()) return skip_ = 1, true; // (a field the format does not define)
    return scalar("an object");
  }
  bool key(Json::string_t &k) {
    if (skip_) return true;
    if (depth_ == 1) {
      if (k == "__metadata__" ? sawMeta_ : tensors.count(k) > 0) bad("the header names " + quote(k) + " twice");
      meta_ = k == "__metadata__";
      sawMeta_ |= meta_;
      name_ = k;
      return true;
    }
    if (!fields_.insert(k).second)
      bad((meta_ ? std::string("__metadata__") : tensorWhere()) + " has the key " + quote(k) + " twice");
    field_ = k;
    return true;
  }
  bool end_object() {
    if (skip_) return --skip_, true;
    if (depth_ == 2) {
      depth_ = 1;
      if (!meta_) finishTensor();
      return true;
    }
    depth_ = 0;
    return true;
  }
  bool start_array(std::size_t) {
    if (skip_) return ++skip_, true;
    if (depth_ == 2 && !meta_ && (field_ == "shape" || field_ == "data_offsets")) {
      seen_ |= field_ == "shape" ? 2 : 4;
      return depth_ = 3, true;
    }
    if (depth_ == 2 && !meta_ && !known()) return skip_ = 1, true;
    return scalar("an array");
  }
  bool end_array() {
    if (skip_) return --skip_, true;
    depth_ = 2;
    return true;
  }
  bool parse_error(std::size_t position, const std::string &, const Json::exception &e) {
    bad("the header is not JSON (at byte " + std::to_string(position) + "): " + quote(e.what()));
  }

  /// After the parse: the tensors' ranges tile the data.
  void checkLayout() const {
    std::vector<std::pair<std::pair<uint64_t, uint64_t>, const std::string *>> ranges;
    for (const auto &[name, t] : tensors) ranges.push_back({{t.begin, t.end}, &name});
    std::sort(ranges.begin(), ranges.end());
    uint64_t at = 0;
    for (const auto &[r, name] : ranges) {
      if (r.first < at)
        bad("tensor " + quote(*name) + ": data_offsets [" + std::to_string(r.first) + ", " + std::to_string(r.second) +
            "] overlap another tensor's bytes");
      if (r.first > at)
        bad("tensor " + quote(*name) + ": data_offsets [" + std::to_string(r.first) + ", " + std::to_string(r.second) +
            "] leave bytes [" + std::to_string(at) + ", " + std::to_string(r.first) + ") of the data to no tensor");
      at = r.second;
    }
    if (at != dataBytes_)
      bad("the data has " + std::to_string(dataBytes_) + " bytes, the tensors cover " + std::to_string(at));
  }

private:
  uint64_t dataBytes_;
  const std::string &where_;
  int depth_ = 0, skip_ = 0;
  bool meta_ = false, sawMeta_ = false;
  std::string name_, field_;
  std::set<std::string> fields_; ///< the keys of the open tensor (or the metadata)
  TensorInfo cur_;
  unsigned seen_ = 0; ///< 1 dtype, 2 shape, 4 data_offsets
  uint64_t numel_ = 1;
  int offsets_ = 0;

  std::string tensorWhere() const { return "tensor " + quote(name_); }
  bool known() const { return field_ == "dtype" || field_ == "shape" || field_ == "data_offsets"; }
  /// A scalar (or an object, an array) where the format has none: skipped inside a field it does not define.
  bool scalar(const char *what) {
    if (skip_) return true;
    if (depth_ == 0) bad("the header is not a JSON object");
    if (depth_ == 1) bad(std::string(meta_ ? "__metadata__" : tensorWhere()) + " is " + what + ", not an object");
    if (meta_) bad("__metadata__ must map names to strings; " + quote(field_) + " is " + what);
    if (depth_ == 2 && !known()) return true;
    if (field_ == "shape") bad(tensorWhere() + ": shape entries must be integers >= 0");
    if (field_ == "data_offsets") bad(tensorWhere() + ": data_offsets must be integers >= 0");
    bad(tensorWhere() + ": " + field_ + " is " + what);
  }
  void finishTensor() {
    if (seen_ != 7 || offsets_ != 2) bad(tensorWhere() + " needs dtype, shape and data_offsets [begin, end]");
    uint64_t b = cur_.begin, e = cur_.end, bytes = 0;
    if (b > e || e > dataBytes_)
      bad(tensorWhere() + ": data_offsets [" + std::to_string(b) + ", " + std::to_string(e) + "] leave the data (" +
          std::to_string(dataBytes_) + " bytes)");
    if (__builtin_mul_overflow(numel_, uint64_t(sizeOfCode(cur_.dtype)), &bytes) || e - b != bytes)
      bad(tensorWhere() + ": " + std::to_string(e - b) + " bytes for " + std::to_string(numel_) + " " + cur_.dtype +
          " elements");
    tensors.emplace(name_, std::move(cur_));
  }
};

} // namespace

std::string codeOf(const std::string &dtype) {
  for (const Code &c : kCodes)
    if (dtype == c.dtype) return c.code;
  fail("dtype " + dtype + " has no safetensors code");
}

std::map<std::string, TensorInfo> parseHeader(std::string_view header, uint64_t dataBytes, const std::string &where) {
  HeaderParser p(dataBytes, where);
  if (header.empty() || header[0] != '{') p.bad("the header does not start with '{'");
  Json::sax_parse(header.begin(), header.end(), &p);
  p.checkLayout();
  return std::move(p.tensors);
}

Reader::Reader(const std::string &path) : path_(path) {
  auto bad = [&](const std::string &why) { fail(path + ": not a safetensors file: " + why); };
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) fail(path + ": cannot open: " + std::strerror(errno));
  try {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) fail(path + ": cannot read: " + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) fail(path + ": is not a regular file");
    uint64_t size = static_cast<uint64_t>(st.st_size);
    unsigned char n8[8];
    if (size < 8 || !preadAll(fd_, reinterpret_cast<char *>(n8), 8, 0)) bad("shorter than its 8-byte header size");
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | n8[i];
    if (n > kMaxHeaderBytes)
      bad("the header size " + std::to_string(n) + " is more than the format's limit of " + std::to_string(kMaxHeaderBytes) +
          " bytes");
    if (n > size - 8) bad("the header size " + std::to_string(n) + " exceeds the file");
    std::string header(n, '\0');
    if (!preadAll(fd_, header.data(), n, 8)) fail(path + ": cannot read its header");
    dataStart_ = 8 + n;
    tensors_ = parseHeader(header, size - 8 - n, path);
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

Reader::~Reader() {
  if (fd_ >= 0) ::close(fd_);
}

std::string Reader::read(const std::string &name) const {
  const TensorInfo &t = tensors_.at(name);
  std::string out(t.end - t.begin, '\0');
  if (!preadAll(fd_, out.data(), out.size(), dataStart_ + t.begin))
    fail(path_ + ": cannot read the bytes of tensor " + quote(name) + " (was the file cut short?)");
  return out;
}

std::map<std::string, Tensor> readFile(const std::string &path) {
  Reader r(path);
  std::map<std::string, Tensor> out;
  for (const auto &[name, t] : r.tensors()) out[name] = {t.dtype, t.shape, r.read(name)};
  return out;
}

void writeFile(const std::string &path, const std::map<std::string, Tensor> &tensors) {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  h["__metadata__"] = {{"producer", "uopc-run"}};
  uint64_t off = 0;
  for (const auto &[name, t] : tensors) {
    h[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {off, off + t.data.size()}}};
    off += t.data.size();
  }
  std::string header = h.dump();
  while ((8 + header.size()) % 8) header += ' ';
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>((uint64_t(header.size()) >> (8 * i)) & 0xff);
  out += header;
  for (const auto &[name, t] : tensors) out += t.data;
  writeFileAtomic(path, out);
}

std::vector<ParamBinding> manifestParams(const std::string &manifestPath) {
  std::vector<ParamBinding> out;
  for (const manifest::Param &p : manifest::readFile(manifestPath).params) {
    ParamBinding b;
    b.slot = p.slot;
    b.dtype = std::string(dtypeName(p.dtype));
    b.role = std::string(manifest::roleName(p.role));
    b.numel = p.numel;
    b.bytes = p.bytes;
    b.devices = p.devices.size();
    b.name = p.name.value_or("slot" + std::to_string(p.slot));
    b.shape = p.shape;
    out.push_back(std::move(b));
  }
  return out;
}

void bindInputs(const std::string &manifestPath, const std::string &file,
                const std::map<int64_t, std::vector<std::string>> &given,
                std::map<int64_t, std::vector<InputRegion>> &regions) {
  Reader tensors(file);
  for (const ParamBinding &p : manifestParams(manifestPath)) {
    if (p.role == "output" || given.count(p.slot)) continue;
    std::vector<InputRegion> files;
    for (size_t d = 0; d < p.devices; ++d) {
      std::string name = p.tensorName(d);
      auto it = tensors.tensors().find(name);
      if (it == tensors.tensors().end())
        fail("--inputs " + file + ": no tensor " + quote(name) + " (slot " + std::to_string(p.slot) + ", " + p.dtype + ", " +
             std::to_string(p.numel) + " elements per device)");
      if (it->second.dtype != codeOf(p.dtype))
        fail("--inputs " + file + ": tensor " + quote(name) + " is " + it->second.dtype + ", slot " + std::to_string(p.slot) +
             " holds " + p.dtype + " (" + codeOf(p.dtype) + ")");
      uint64_t bytes = it->second.end - it->second.begin;
      if (bytes != static_cast<uint64_t>(p.bytes))
        fail("--inputs " + file + ": tensor " + quote(name) + " has " + std::to_string(bytes) + " bytes, slot " +
             std::to_string(p.slot) + " holds " + std::to_string(p.bytes) + " per device");
      const std::vector<int64_t> &shape = it->second.shape;
      if (p.shape && shape != *p.shape && shape != std::vector<int64_t>{p.numel})
        fail("--inputs " + file + ": tensor " + quote(name) + " has the shape " + dimsText(shape) + ", slot " +
             std::to_string(p.slot) + " takes " + dimsText(*p.shape) + " (or " + dimsText({p.numel}) + ")");
      files.push_back({file, tensors.fileOffset(name), bytes, nullptr});
    }
    regions[p.slot] = files;
  }
}

std::vector<ParamBinding> bindOutputs(const std::string &manifestPath, const std::string &dir,
                                      std::map<int64_t, std::vector<std::string>> &outputFiles) {
  std::vector<ParamBinding> out;
  for (const ParamBinding &p : manifestParams(manifestPath)) {
    if (p.role == "input" || outputFiles.count(p.slot)) continue;
    std::vector<std::string> files;
    for (size_t d = 0; d < p.devices; ++d)
      files.push_back(dir + "/out.slot" + std::to_string(p.slot) + ".dev" + std::to_string(d) + ".bin");
    outputFiles[p.slot] = files;
    out.push_back(p);
  }
  return out;
}

void packOutputs(const std::vector<ParamBinding> &params, const std::map<int64_t, std::vector<std::string>> &outputFiles,
                 const std::string &file) {
  std::map<std::string, Tensor> tensors;
  for (const ParamBinding &p : params) {
    const std::vector<std::string> &files = outputFiles.at(p.slot);
    for (size_t d = 0; d < files.size(); ++d) {
      Tensor t{codeOf(p.dtype), p.shape ? *p.shape : std::vector<int64_t>{p.numel}, readWhole(files[d])};
      if (!tensors.emplace(p.tensorName(d), std::move(t)).second)
        fail("--outputs " + file + ": two parameters are both named " + quote(p.tensorName(d)));
    }
  }
  writeFile(file, tensors);
}

} // namespace uopc::safetensors

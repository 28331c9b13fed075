//===- Safetensors.h - uopc-run --inputs/--outputs FILE.safetensors -------===//
// The safetensors format (huggingface): an 8-byte little-endian header size N, N bytes of JSON
// {"NAME": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, ..., "__metadata__": {...}},
// then the tensors' bytes (offsets relative to the end of the header).
//
// Binding to a manifest: a parameter is named by its PARAM's name (manifest `name`, which
// uopc_tinygrad.export fills in; `slot<N>` for a parameter without one). A parameter on one device is the tensor NAME; on several devices each
// device's shard (or copy) is its own tensor, NAME@0, NAME@1, ... in the order of the parameter's devices.
// Written tensors have shape [numel] (elements per device); the reader checks the dtype and the byte count,
// not the shape. One reader serves uopc-run --inputs and uopc --embed-params (Driver/Library.cpp), with the
// same checks and messages.
#pragma once

#include "Runtime/Runner.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace uopc::safetensors {

/// The most bytes of a header (the format's reference reader's limit): a larger one is refused before
/// anything of it is read.
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;

/// One tensor of a header: its dtype code, shape and bytes [begin, end) in the data that follows the header.
struct TensorInfo {
  std::string dtype; ///< safetensors code: F32, F16, BF16, F64, I8..I64, U8..U64, BOOL, F8_E4M3, F8_E5M2
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

/// Parses and checks a header (the JSON after the 8-byte size) for `dataBytes` bytes of data after it, as
/// the format states: a JSON object starting with '{' (trailing spaces allowed), no key twice (in any
/// object), "__metadata__" an object of strings, every other key a tensor {"dtype", "shape",
/// "data_offsets"} of a known dtype whose shape's elements fill [begin, end) exactly, and the tensors'
/// ranges, in order, tiling [0, dataBytes): no overlap, no gap, nothing after the last (the format requires
/// no alignment of the offsets). Throws Error "WHERE: not a safetensors file: ..." naming the tensor.
/// Reads nothing but the header: its memory is the entries, not a JSON tree.
std::map<std::string, TensorInfo> parseHeader(std::string_view header, uint64_t dataBytes, const std::string &where);

/// A safetensors file opened for reading: the header read and checked when it is opened (parseHeader; a
/// regular file, a header of at most kMaxHeaderBytes), a tensor's bytes read only when asked for.
class Reader {
public:
  /// Throws Error naming the file when it cannot be read or is not a safetensors file.
  explicit Reader(const std::string &path);
  ~Reader();
  Reader(const Reader &) = delete;
  Reader &operator=(const Reader &) = delete;

  const std::string &path() const { return path_; }
  /// The tensors by name ("__metadata__" is not one).
  const std::map<std::string, TensorInfo> &tensors() const { return tensors_; }
  /// The bytes of tensor `name` (a key of tensors()), read from the file.
  std::string read(const std::string &name) const;
  /// Where the bytes of tensor `name` (a key of tensors()) start in the file.
  uint64_t fileOffset(const std::string &name) const { return dataStart_ + tensors_.at(name).begin; }

private:
  std::string path_;
  int fd_ = -1;
  uint64_t dataStart_ = 0;
  std::map<std::string, TensorInfo> tensors_;
};

/// A tensor with its bytes.
struct Tensor {
  std::string dtype;          ///< safetensors code, as TensorInfo's
  std::vector<int64_t> shape;
  std::string data;
};

/// Every tensor of a file by name (Reader, then each read); throws Error as Reader does.
std::map<std::string, Tensor> readFile(const std::string &path);
/// Writes the tensors (sorted by name, deterministic bytes) atomically (IR/Files.h); throws Error when the
/// file cannot be written.
void writeFile(const std::string &path, const std::map<std::string, Tensor> &tensors);
/// uopc's dtype name (float32) to the safetensors code (F32); throws Error for a dtype safetensors lacks.
std::string codeOf(const std::string &dtype);

/// What uopc-run needs from a manifest to bind safetensors: per parameter slot, its name, dtype, bytes per
/// device, device count and role.
struct ParamBinding {
  int64_t slot = 0;
  std::string name, dtype, role;
  int64_t numel = 0, bytes = 0; ///< per device
  size_t devices = 0;
  std::optional<std::vector<int64_t>> shape; ///< the manifest's (the exporter's shape), numel elements
  /// the tensor name of device d's buffer (NAME, or NAME@d for a multi-device parameter)
  std::string tensorName(size_t d) const { return devices == 1 ? name : name + "@" + std::to_string(d); }
};
std::vector<ParamBinding> manifestParams(const std::string &manifestPath);

/// --inputs FILE: adds each input (and inout) parameter's tensors, as regions of FILE (read straight into
/// the parameter's buffer when the run loads its inputs), to `regions` (a slot in `given`, by --input, is
/// left alone). A missing tensor, or one of another dtype or size, or of another shape than the parameter's
/// (where the manifest has one; a flat tensor of its elements is taken too), is an Error naming it.
void bindInputs(const std::string &manifestPath, const std::string &file,
                const std::map<int64_t, std::vector<std::string>> &given,
                std::map<int64_t, std::vector<InputRegion>> &regions);
/// --outputs FILE: adds a raw output file under `dir` for every written (output, inout) parameter not
/// already in outputFiles; returns the slots to pack.
std::vector<ParamBinding> bindOutputs(const std::string &manifestPath, const std::string &dir,
                                      std::map<int64_t, std::vector<std::string>> &outputFiles);
/// After the run: packs those parameters' raw files into FILE, written atomically (IR/Files.h), each tensor
/// with the parameter's shape where the manifest has one, else flat.
void packOutputs(const std::vector<ParamBinding> &params, const std::map<int64_t, std::vector<std::string>> &outputFiles,
                 const std::string &file);

} // namespace uopc::safetensors
